"""What is wrong in a reference file, in words: a pydantic error of `reference_schema.Reference` as
"file:line: field: what is wrong", the line found in the YAML node tree, the keys allowed where an unknown
key stands, and what to write for a key of the first, metric-named spelling."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel

from ..core.catalog import default as catalog
from ..core.problems import FieldProblems


def where_of(loc: Iterable) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def node_line(node: yaml.Node | None, loc: Iterable) -> int | None:
    """The line of the deepest part of `loc` the YAML node tree holds."""
    if node is None:
        return None
    line = node.start_mark.line + 1
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                if isinstance(key, yaml.ScalarNode) and key.value == str(part):
                    line, node = key.start_mark.line + 1, value
                    break
            else:
                break
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value):
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            break
    return line


def _submodel(annotation: Any) -> type[BaseModel] | None:
    stack = [annotation]
    while stack:
        a = stack.pop()
        if isinstance(a, type) and issubclass(a, BaseModel):
            return a
        stack.extend(getattr(a, "__args__", ()))
    return None


def _fields_at(loc: tuple, schema: type[BaseModel]) -> list[str]:
    """The keys allowed where `loc` points."""
    model = schema
    for part in loc:
        if isinstance(part, int):
            continue
        field = model.model_fields.get(part)
        sub = _submodel(field.annotation) if field is not None else None
        if sub is None:
            break
        model = sub
    return [f for f in model.model_fields if f != "path"]


def describe(error: dict, node: yaml.Node | None, path: Path, schema: type[BaseModel]) -> list[str]:
    """One pydantic error of a reference file as lines "file:line: field: what is wrong", in its words."""
    def at(loc):
        line = node_line(node, loc)
        return f"{path}:{line}: " if line else f"{path}: "

    cause = (error.get("ctx") or {}).get("error")
    if isinstance(cause, FieldProblems):
        return [f"{at(loc)}{where_of(loc)}: {msg}" for loc, msg in cause.problems]
    loc = tuple(p for p in error["loc"] if not (isinstance(p, str) and "[" in p))
    where = where_of(loc)
    if error["type"] == "extra_forbidden":
        key = str(loc[-1])
        renamed = _renamed(loc, error.get("input"))
        if renamed:
            return [f"{at(loc)}{where}: {key!r} is the old spelling of a quality value; write {renamed} instead "
                    "(keyed by the model's quality metric, in its unit)"]
        allowed = _fields_at(loc[:-1], schema)
        close = difflib.get_close_matches(key, allowed, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        return [f"{at(loc)}unknown key {where!r}{hint} (allowed here: {', '.join(allowed)})"]
    value = error.get("input")
    shown = "" if isinstance(value, dict | list) or value is None else f" = {value!r}"
    msg = error["msg"].removeprefix("Value error, ")
    if error["type"] == "literal_error":
        msg = "must be one of " + msg.removeprefix("Input should be ")
    elif error["type"] == "missing":
        msg = "is required"
    elif error["type"] == "bool_type":
        msg = "must be true or false" + (" (or null: not stated)" if loc and loc[-1] in catalog().flags() else "")
    elif error["type"] == "string_pattern_mismatch":
        msg = _PATTERN_HINTS.get(str(loc[-1]) if loc else "", msg)
    return [f"{at(loc)}{where}{shown}: {msg}"]


def _renamed(loc: tuple, value: Any) -> str | None:
    """What to write for a key of schema 1's first spelling, which named the metric in the key
    (`target_<metric>`, `<metric>`, `<metric>_tolerance`), for any declared quality metric; None otherwise."""
    key, shown = str(loc[-1]), value if isinstance(value, int | float) and not isinstance(value, bool) else "..."
    for metric in catalog().metrics:
        if len(loc) == 1 and key == f"{metric.key}_tolerance":
            return f"`quality_tolerance: {{{metric.key}: {shown}}}`"
        if len(loc) == 3 and loc[0] in ("time_to_train", "accuracy") and key == f"target_{metric.key}":
            return f"`target: {{{metric.key}: {shown}}}`"
        if len(loc) == 3 and loc[0] in ("time_to_train", "accuracy") and key == metric.key:
            return f"`quality: {{{metric.key}: {shown}}}`"
    return None


_PATTERN_HINTS = {
    "url": "must be an http:// or https:// address", "code": "must be an http:// or https:// address",
    "commit": "must be a git commit: 7 to 40 lowercase hexadecimal digits",
    "name": "must be letters, digits, '.', '_' or '-', starting with a letter or digit",
}


def line_of(message: str) -> int:
    m = re.match(r"^.*?:(\d+): ", message)
    return int(m.group(1)) if m else 0
