"""Study files as YAML: line numbers for every key and item, duplicate keys refused, the
document's size (aliases expanded) bounded before anything is built from it, and validation
errors told as `file:line: field = value: what is allowed`."""

from __future__ import annotations

import difflib
from pathlib import Path

import yaml
from pydantic import BaseModel, ValidationError

from ..errors import BenchbookError


class YamlSizeError(BenchbookError, ValueError):
    """Raised when a YAML file would expand (through its aliases) past the size a study file can have,
    or holds an alias that refers to its own node."""


class _LineLoader(yaml.SafeLoader):
    """A YAML loader that remembers the line of every mapping key and sequence item."""


def _construct_mapping(loader, node, deep=False):
    seen: dict = {}
    for key_node, _ in node.value:
        if isinstance(key_node, yaml.ScalarNode):
            if key_node.value in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key_node.value!r} (first on line {seen[key_node.value]}); "
                    "YAML would keep only the last one", key_node.start_mark)
            seen[key_node.value] = key_node.start_mark.line + 1
    mapping = yaml.SafeLoader.construct_mapping(loader, node, deep=deep)
    lines = {key_node.value: key_node.start_mark.line + 1 for key_node, _ in node.value
             if isinstance(key_node, yaml.ScalarNode)}
    return Mapping(mapping, lines, node.start_mark.line + 1)


def _construct_sequence(loader, node, deep=False):
    items = yaml.SafeLoader.construct_sequence(loader, node, deep=True)
    return Sequence(items, [n.start_mark.line + 1 for n in node.value], node.start_mark.line + 1)


class Mapping(dict):
    def __init__(self, data, lines, line):
        super().__init__(data)
        self.lines, self.line = lines, line


class Sequence(list):
    def __init__(self, data, lines, line):
        super().__init__(data)
        self.lines, self.line = lines, line


_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _construct_sequence)


# The most text a YAML file of benchbook's may expand to, its aliases repeated: study files, entries and
# references are a few kB (the largest shipped, params/references/mlperf/rules/training.yaml, 93 kB).
MAX_EXPANDED_BYTES = 4 << 20  # (counted in characters: what a str holds)


def expanded_size(node: yaml.Node, path: Path, limit: int, max_bytes: int = MAX_EXPANDED_BYTES) -> tuple[int, int]:
    """(values, characters of text) the document builds once its aliases are expanded (they are, by the copy
    that validation makes: one 2 MiB string aliased 5,000 times is 5,001 values and 10 GB); YamlSizeError
    past `limit` values or `max_bytes`, or on an alias that holds itself. Each node is measured once."""
    sizes: dict[int, tuple[int, int] | None] = {}

    def size(n: yaml.Node) -> tuple[int, int]:
        key = id(n)
        if key in sizes:
            if sizes[key] is None:
                raise YamlSizeError(f"{path}:{n.start_mark.line + 1}: a YAML alias refers to a node that holds it")
            return sizes[key]
        sizes[key] = None
        children = [c for pair in n.value for c in pair] if isinstance(n, yaml.MappingNode) else \
            n.value if isinstance(n, yaml.SequenceNode) else []
        values, text = 1, len(n.value) if isinstance(n, yaml.ScalarNode) else 0
        for child in children:
            more, longer = size(child)
            values, text = values + more, text + longer
            if values > limit:
                raise YamlSizeError(f"{path}:{n.start_mark.line + 1}: the file expands to more than {limit} "
                                    "YAML values (aliases repeat what they refer to); a study file is a few dozen "
                                    "lines: write it without nested aliases")
            if text > max_bytes:
                raise YamlSizeError(f"{path}:{n.start_mark.line + 1}: the file expands to more than {max_bytes} "
                                    "characters of text (aliases repeat what they refer to); a study file is a few kB: "
                                    "write it without aliases of long values")
        sizes[key] = values, text
        return values, text

    found = size(node)
    if found[1] > max_bytes:  # (a document of one long scalar)
        raise YamlSizeError(f"{path}:{node.start_mark.line + 1}: the file expands to more than {max_bytes} characters "
                            "of text; a study file is a few kB")
    return found


class YamlSyntaxError(BenchbookError, ValueError):
    """Raised when a file is not valid YAML; the message names the file and the line."""


def parse(text: str, path: Path, limit: int):
    """The YAML document, its size bounded before anything is built from it; YamlSyntaxError (file and
    line) where the text is not YAML or is nested too deeply for the parser."""
    loader = _LineLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        expanded_size(node, path, limit)
        return loader.construct_document(node)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark else str(path)
        raise YamlSyntaxError(f"{where}: not valid YAML ({getattr(exc, 'problem', exc)})") from None
    except RecursionError:
        raise YamlSyntaxError(f"{path}: the YAML is nested too deeply to be read (a study file or an entry is "
                              "a few levels deep)") from None
    finally:
        loader.dispose()


def read_mapping(path: Path, error: type[Exception], kind: str, holds: str, limit: int):
    """The YAML mapping of the file at `path` (its size bounded by `limit` values), else `error` naming
    the file (and the line where there is one): a file that cannot be read, is not YAML, or is no
    mapping. `kind` is what the file is ("launch study"), `holds` the keys a mapping of it has."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise error(f"{path}: no such {kind}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise error(f"{path}: cannot read the {kind} ({getattr(exc, 'strerror', None) or exc})") from None
    try:
        doc = parse(text, path, limit)
    except (YamlSizeError, YamlSyntaxError) as exc:
        raise error(str(exc)) from None
    if not isinstance(doc, dict):
        raise error(f"{path}: a {kind} is a YAML mapping ({holds})")
    return doc


def validated(doc, path: Path, model: type[BaseModel], error: type[Exception]):
    """`doc` (from read_mapping) as `model`, its `path` field set; every problem at once in one `error`,
    each with its file and line."""
    try:
        return model.model_validate({**plain(doc), "path": path})
    except ValidationError as exc:
        raise error("\n".join(describe(e, doc, path, model) for e in exc.errors())) from None


def line_of(doc, loc: tuple) -> int | None:
    """The line of the deepest part of `loc` that the document holds."""
    node, line = doc, getattr(doc, "line", None)
    for part in loc:
        if isinstance(node, Mapping) and part in node:
            line, node = node.lines.get(part, line), node[part]
        elif isinstance(node, Sequence) and isinstance(part, int) and part < len(node):
            line, node = node.lines[part], node[part]
        elif isinstance(node, Mapping) and part == 0:  # a single mapping where a list is allowed
            continue
        else:
            break
    return line


def _fields(model: type[BaseModel], loc: tuple) -> list[str]:
    """The field names allowed where `loc` points (for 'did you mean')."""
    for part in loc:
        if isinstance(part, int):
            continue
        field = model.model_fields.get(part)
        if field is None:
            break
        inner = field.annotation
        candidates = [inner, *getattr(inner, "__args__", ())]
        for c in candidates:
            for a in [c, *getattr(c, "__args__", ())]:
                if isinstance(a, type) and issubclass(a, BaseModel):
                    model = a
                    break
    return [f for f in model.model_fields if f != "path"]


def describe(error: dict, doc, path: Path, schema: type[BaseModel]) -> str:
    """One pydantic error as `file:line: field = value: what is allowed`. A validator that names the
    fields concerned (an exception with `problems`: (loc below the model, message) pairs) gets a line
    per problem at that field's line, not the line of the model that holds them (the top of the file)."""
    loc = tuple(p for p in error["loc"] if not (isinstance(p, str) and ("[" in p or p in _UNION_TAGS)))
    problems = getattr((error.get("ctx") or {}).get("error"), "problems", None)
    if problems:
        return "\n".join(f"{path}:{line_of(doc, loc + sub)}: {'.'.join(map(str, loc + sub))}: {msg}"
                         for sub, msg in problems)
    where = ".".join(str(p) for p in loc) or "(top level)"
    line = line_of(doc, loc)
    prefix = f"{path}:{line}: " if line else f"{path}: "
    if error["type"] == "extra_forbidden":
        key = str(loc[-1])
        allowed = _fields(schema, loc[:-1])
        close = difflib.get_close_matches(key, allowed, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        return f"{prefix}unknown key {where!r}{hint} (allowed here: {', '.join(allowed)})"
    value = error.get("input")
    shown = "" if isinstance(value, dict | list) or value is None else f" = {value!r}"
    msg = error["msg"].removeprefix("Value error, ")
    if error["type"] == "literal_error":
        msg = "must be one of " + msg.removeprefix("Input should be ")
    return f"{prefix}{where}{shown}: {msg}"


_UNION_TAGS = frozenset({"int", "str", "float", "bool", "list[int]", "list[str]", "list[bool]", "function-after"})


def plain(obj):
    """The document as plain dicts and lists (what validation reads)."""
    if isinstance(obj, dict):
        return {k: plain(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [plain(v) for v in obj]
    return obj
