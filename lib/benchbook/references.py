"""Published numbers as data (`params/references/*.yaml`), and how a measurement compares with them.

A reference file holds what one report published (throughput rows, time to train, final accuracy)
together with the report's address and the hardware and software it ran on, so that a notebook can
say "reproduced" or "5% slower, on another GPU" instead of leaving the reader to look it up.

- `load(name_or_path)` validates a file, or raises a `ReferenceError` that names the file, the line,
  the field and what is allowed; `available()` lists the shipped names.
- `compare(stats, ref)` puts the statistics of `metrics.aggregate` next to the published rows: one
  row per published row with a verdict (columns in `COLUMNS`); `verdict_summary` condenses it.
- `differences(ref, environment, config)` says in words how the measured set-up (an environment
  capture, a run's configuration) differs from the published one, most significant first.
- `time_to_train_check(evaluations, ref)` compares time to the target accuracy and final top-1.
"""

from __future__ import annotations

import difflib
import math
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from . import metrics
from .errors import BenchbookError, UnknownNameError
from .study import MODELS

SCHEMA_VERSION = 1
ENV_VAR = "BENCHBOOK_REFERENCES"
DEFAULT_ROOT = Path(__file__).resolve().parents[2] / "params" / "references"
PRECISIONS = ("fp32", "amp", "fp16", "tf32", "bf16")
FLAGS = ("xla", "dali", "synthetic")
# How each study model appears in the `framework` and `model` columns of an Analysis (the parsers' names).
LOG_NAMES = {"resnet50_tf": ("tensorflow", "resnet50"), "resnet50_mxnet": ("mxnet", "resnet50"),
             "maskrcnn_tf2": ("tensorflow2", "maskrcnn")}
VERDICTS = ("reproduced", "slower", "faster", "not measured")

COLUMNS = {
    "table": "label of the report's table the row comes from (None when the report has one table)",
    "gpus": "GPUs of the published row, all nodes",
    "nodes": "nodes of the published row (stated, or GPUs over the reference's GPUs per node)",
    "batch_size": "per-GPU batch size",
    "precision": "fp32, amp, fp16, tf32 or bf16",
    "xla": "XLA on in the published row; None: the report does not say, any measured value matches",
    "dali": "DALI on in the published row; None: not stated, any measured value matches",
    "synthetic": "synthetic data in the published row; None: not stated, any measured value matches",
    "published": "the published throughput, in the reference's unit",
    "measured": "the measured statistic (`value`, the median by default) of the matching configuration; "
                "NaN when none matches",
    "runs": "measured runs behind `measured` (0 when not measured)",
    "ratio": "measured / published",
    "delta_pct": "(ratio - 1) x 100: percent faster (+) or slower (-) than published",
    "verdict": "reproduced (|ratio - 1| <= tolerance), slower, faster, or not measured",
    "published_speedup": "speedup the report gives for the row (NaN when it gives none)",
    "measured_speedup": "speedup of the matching configuration (metrics.aggregate's DLPerf rule)",
    "differences": "how the measured configuration differs from the published row, in words (a list)",
}
TIME_COLUMNS = {
    "kind": "time_to_train (seconds to the target top-1) or accuracy (final top-1)",
    "source": "log file of the measured run (None when not measured)",
    "run": "run index in its file",
    "gpus": "GPUs of the published entry", "batch_size": "per-GPU batch size", "precision": "precision",
    "epochs": "epochs of the published run",
    "measured_epochs": "last evaluated epoch of the measured run, as logged (NaN when unknown)",
    "target_top1": "target top-1 accuracy, percent",
    "published_seconds": "published time to train, seconds", "measured_seconds": "measured time to the target",
    "ratio": "measured_seconds / published_seconds", "delta_pct": "(ratio - 1) x 100",
    "published_top1": "published top-1, percent", "measured_top1": "final top-1 of the measured run, percent",
    "top1_delta": "measured_top1 - published_top1, percentage points",
    "reached": "the measured run reached the target",
    "verdict": "time_to_train: reproduced, slower, faster, not reached, not measured; "
               "accuracy: reproduced (within top1_tolerance), lower, higher, not measured",
    "differences": "what to know about the comparison, in words (a list)",
}


class ReferenceError(BenchbookError, ValueError):  # shadows the builtin (weakref's) inside this module only
    """A reference file that cannot be used as written, or a comparison asked of it that makes no sense."""


class UnknownReferenceError(ReferenceError, UnknownNameError):
    """Raised for a reference name that no file in the references folder has."""

    def __init__(self, name: str, known: list[str], root: Path):
        self.root = root
        UnknownNameError.__init__(self, "reference", name, known)

    def __str__(self) -> str:
        return f"{super().__str__()} (looked in {self.root}; set {ENV_VAR} or pass root= to look elsewhere)"


class ReferenceOutsideError(ReferenceError):
    """Raised when a reference name (`--reference`, a study's `reference:`, a notebook parameter) points
    outside the references folder: `../../etc/passwd`, an absolute path, a link that leaves the folder."""

    def __init__(self, name: str, root: Path):
        self.name, self.root = name, root
        super().__init__(f"reference {name!r} is not a file of the references folder {root}: give the name of "
                         f"a file there ({', '.join(available(root)) or 'none'}), or set {ENV_VAR} to another "
                         "folder of references")


# ------------------------------------------------------------------------------------------- the schema


class _Strict(BaseModel):
    # strict: a published number typed as text ("362.44") or a flag as a string is a mistake to report.
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


Precision = Literal["fp32", "amp", "fp16", "tf32", "bf16"]


class Source(_Strict):
    """Where the numbers were published: the report's title and address, the commit of the page."""

    title: str
    url: str | None = Field(None, pattern=r"^https?://\S+$")
    commit: str | None = Field(None, pattern=r"^[0-9a-f]{7,40}$", description="commit of the report's page")
    note: str = ""


class Hardware(_Strict):
    """What the report ran on."""

    gpu: str = Field(description="GPU model as nvidia-smi names it, without Tesla/NVIDIA: V100-SXM2-16GB")
    gpus_per_node: int = Field(ge=1, le=16)
    nodes: int = Field(1, ge=1, description="nodes of the largest published run")
    cpu: str | None = None
    driver: str | None = None
    note: str = ""


class Software(_Strict):
    """The software stack of the report: container, framework, model code at a commit."""

    container: str | None = Field(None, description="the NGC base image, e.g. nvcr.io/nvidia/tensorflow:20.03-tf1-py3")
    image: str | None = Field(None, description="the image the report built and ran (name as it gave it)")
    framework: str | None = Field(None, description="tensorflow or mxnet; default: the model's framework")
    framework_version: str | None = None
    code: str | None = Field(None, pattern=r"^https?://\S+$", description="repository of the model code")
    subfolder: str | None = None
    commit: str | None = Field(None, pattern=r"^[0-9a-f]{7,40}$")
    libraries: dict[str, str] = Field({}, description="cuda, cudnn, nccl, dali, horovod, ... -> version")
    changes: list[str] = Field([], description="changes the report made to the model code")
    note: str = ""

    @field_validator("libraries", mode="before")
    @classmethod
    def _versions_as_text(cls, v):
        # `cuda: 11` or `cudnn: 8.0` read as numbers in YAML; a version is text.
        if isinstance(v, dict):
            return {k: str(x) if isinstance(x, int | float) and not isinstance(x, bool) else x for k, x in v.items()}
        return v


class Row(_Strict):
    """One published throughput: a configuration and its number (and speedup, when the report gives it)."""

    table: str | None = Field(None, description="label of the report's table, when it has several")
    gpus: int = Field(ge=1)
    nodes: int | None = Field(None, ge=1)
    batch_size: int = Field(ge=1, description="per-GPU batch size")
    precision: Precision
    xla: bool | None = Field(None, description="None: the report does not say")
    dali: bool | None = None
    synthetic: bool | None = None
    throughput: float = Field(gt=0)
    speedup: float | None = Field(None, gt=0)
    note: str = ""

    @property
    def key(self) -> tuple:
        """The configuration, without the table label."""
        return (self.gpus, self.batch_size, self.precision, self.xla, self.dali, self.synthetic)


class Outcome(_Strict):
    """A published training outcome: time to a target top-1 (`time_to_train`) or final top-1 (`accuracy`)."""

    gpus: int = Field(ge=1)
    batch_size: int = Field(ge=1)
    precision: Precision
    epochs: int = Field(ge=1)
    seconds: float | None = Field(None, gt=0, description="time to train, seconds")
    target_top1: float | None = Field(None, gt=0, le=100)
    top1: float | None = Field(None, gt=0, le=100, description="top-1 at the end of the run, percent")
    throughput: float | None = Field(None, gt=0)
    note: str = ""


class _Problems(ValueError):
    """Cross-field problems, each with where it is, so that `load` can give every one its line."""

    def __init__(self, problems: list[tuple[tuple, str]]):
        self.problems = problems
        super().__init__("; ".join(f"{_where(loc)}: {msg}" for loc, msg in problems))


class Reference(_Strict):
    """A reference file, validated. `name` defaults to the file name; `path` is filled in by `load`."""

    schema_version: Literal[1]
    name: str | None = Field(None, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    title: str
    description: str = ""
    model: Literal["resnet50_tf", "resnet50_mxnet", "maskrcnn_tf2"]
    unit: str = "images/s"
    statistic: str = Field(description="what the published number is, e.g. median of 5 runs")
    method: str = Field("", description="how the number was computed from the logs")
    tolerance: float = Field(0.05, gt=0, lt=1, description="relative; |measured / published - 1| within it")
    top1_tolerance: float = Field(0.5, gt=0, le=100, description="percentage points, for final top-1")
    source: Source
    hardware: Hardware
    software: Software
    tables: dict[str, str] = Field({}, description="table label -> what the table shows")
    rows: list[Row] = []
    time_to_train: list[Outcome] = []
    accuracy: list[Outcome] = []
    path: Path | None = Field(None, exclude=True)

    @field_validator("path", mode="before")
    @classmethod
    def _path(cls, v):
        return Path(v) if isinstance(v, str) else v

    @model_validator(mode="after")
    def _coherent(self):
        problems: list[tuple[tuple, str]] = []
        if not (self.rows or self.time_to_train or self.accuracy):
            problems.append(((), "a reference needs at least one of rows, time_to_train, accuracy"))
        fw = self.software.framework
        if fw is not None and fw != MODELS[self.model]:
            problems.append((("software", "framework"), f"{fw!r} does not run {self.model}; "
                                                         f"write {MODELS[self.model]!r} or leave it out"))
        capacity = self.hardware.gpus_per_node * self.hardware.nodes
        seen: dict[tuple, int] = {}
        for i, row in enumerate(self.rows):
            if self.tables and row.table is not None and row.table not in self.tables:
                problems.append((("rows", i, "table"), f"{row.table!r} is not a label of `tables`; "
                                                        f"allowed: {', '.join(self.tables)}"))
            if row.gpus > capacity:
                problems.append((("rows", i, "gpus"), f"{row.gpus} GPUs but hardware has {self.hardware.nodes} "
                                                       f"node(s) x {self.hardware.gpus_per_node}"))
            if row.nodes is not None and row.nodes > self.hardware.nodes:
                problems.append((("rows", i, "nodes"), f"{row.nodes} nodes but hardware.nodes is "
                                                        f"{self.hardware.nodes}"))
            key = (*row.key, row.table)
            if key in seen:
                problems.append((("rows", i), f"repeats rows[{seen[key]}] (same configuration and table); "
                                              f"give the rows different `table` labels if the report has both"))
            seen.setdefault(key, i)
        for i, entry in enumerate(self.time_to_train):
            for name in ("seconds", "target_top1"):
                if getattr(entry, name) is None:
                    problems.append((("time_to_train", i, name), "is required for a time-to-train entry"))
        for i, entry in enumerate(self.accuracy):
            if entry.top1 is None:
                problems.append((("accuracy", i, "top1"), "is required for an accuracy entry"))
        if problems:
            raise _Problems(problems)
        return self

    @property
    def framework(self) -> str:
        return self.software.framework or MODELS[self.model]

    def frame(self) -> pd.DataFrame:
        """The published rows as a table (the columns of `Row`)."""
        cols = ["table", "gpus", "nodes", "batch_size", "precision", *FLAGS, "throughput", "speedup", "note"]
        return pd.DataFrame([r.model_dump() for r in self.rows], columns=cols)


# ------------------------------------------------------------------------------------ finding and loading


def references_root(root: str | os.PathLike | None = None) -> Path:
    """The references folder: `root`, else $BENCHBOOK_REFERENCES, else the repository's params/references."""
    if root is not None:
        return Path(root)
    env = os.environ.get(ENV_VAR)
    return Path(env) if env else DEFAULT_ROOT


def available(root: str | os.PathLike | None = None) -> list[str]:
    """Names of the reference files in the references folder, sorted."""
    folder = references_root(root)
    if not folder.is_dir():
        return []
    return sorted({p.stem for p in folder.iterdir() if p.suffix in (".yaml", ".yml") and p.is_file()})


def _resolve(name_or_path: str | os.PathLike, root: str | os.PathLike | None) -> Path:
    """The file of a reference. A `Path` (code that holds one, the tests) is read where it is; a name, which
    may come from a user (`--reference`, a study file, a notebook parameter), must be a file inside the
    references folder once `..` and links are resolved: anything else is refused, never read."""
    folder = references_root(root)
    if isinstance(name_or_path, os.PathLike):
        path = Path(name_or_path)
        if path.is_file():
            return path
        raise ReferenceError(f"{path}: no such reference file")
    text = str(name_or_path)
    if not text.strip() or "\0" in text:
        raise ReferenceOutsideError(text, folder)
    names = [text] if text.endswith((".yaml", ".yml")) else [f"{text}.yaml", f"{text}.yml"]
    inside = folder.resolve()
    for name in names:
        candidate = (folder / name).resolve()
        if not candidate.is_relative_to(inside) or candidate == inside:
            raise ReferenceOutsideError(text, folder)
        if candidate.is_file():
            return folder / name
    if "/" in text or os.sep in text:
        raise ReferenceError(f"{folder / names[0]}: no such reference file")
    raise UnknownReferenceError(text.removesuffix(".yaml").removesuffix(".yml"), available(folder), folder)


def _where(loc: Iterable) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def _node_line(node: yaml.Node | None, loc: Iterable) -> int | None:
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


def _fields_at(loc: tuple) -> list[str]:
    """The keys allowed where `loc` points."""
    model: type[BaseModel] = Reference
    for part in loc:
        if isinstance(part, int):
            continue
        field = model.model_fields.get(part)
        sub = _submodel(field.annotation) if field is not None else None
        if sub is None:
            break
        model = sub
    return [f for f in model.model_fields if f != "path"]


def _describe(error: dict, node: yaml.Node | None, path: Path) -> list[str]:
    def at(loc):
        line = _node_line(node, loc)
        return f"{path}:{line}: " if line else f"{path}: "

    cause = (error.get("ctx") or {}).get("error")
    if isinstance(cause, _Problems):
        return [f"{at(loc)}{_where(loc)}: {msg}" for loc, msg in cause.problems]
    loc = tuple(p for p in error["loc"] if not (isinstance(p, str) and "[" in p))
    where = _where(loc)
    if error["type"] == "extra_forbidden":
        key = str(loc[-1])
        allowed = _fields_at(loc[:-1])
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
        msg = "must be true or false" + (" (or null: not stated)" if loc and loc[-1] in FLAGS else "")
    elif error["type"] == "string_pattern_mismatch":
        msg = _PATTERN_HINTS.get(str(loc[-1]) if loc else "", msg)
    return [f"{at(loc)}{where}{shown}: {msg}"]


_PATTERN_HINTS = {
    "url": "must be an http:// or https:// address", "code": "must be an http:// or https:// address",
    "commit": "must be a git commit: 7 to 40 lowercase hexadecimal digits",
    "name": "must be letters, digits, '.', '_' or '-', starting with a letter or digit",
}


def _line_of(message: str) -> int:
    m = re.match(r"^.*?:(\d+): ", message)
    return int(m.group(1)) if m else 0


def load(name_or_path: str | os.PathLike, root: str | os.PathLike | None = None) -> Reference:
    """A reference by name (a file in the references folder) or by path, validated.

    Every problem of the file is reported at once, each with the file, line and field.
    """
    path = _resolve(name_or_path, root)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ReferenceError(f"{path}: cannot read the reference file ({exc})") from None
    try:
        doc = yaml.safe_load(text)
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark else str(path)
        raise ReferenceError(f"{where}: not valid YAML ({getattr(exc, 'problem', None) or exc})") from None
    if not isinstance(doc, dict):
        raise ReferenceError(f"{path}: a reference file is a YAML mapping "
                             "(schema_version, title, model, statistic, source, hardware, software, rows, ...)")
    if "schema_version" not in doc:
        raise ReferenceError(f"{path}: schema_version is missing; this benchbook reads schema_version: "
                             f"{SCHEMA_VERSION}")
    if doc["schema_version"] != SCHEMA_VERSION:
        raise ReferenceError(f"{path}:{_node_line(node, ('schema_version',))}: schema_version "
                             f"{doc['schema_version']!r} is not supported; this benchbook reads "
                             f"schema_version: {SCHEMA_VERSION}")
    if doc.get("name") is not None and doc["name"] != path.stem:
        raise ReferenceError(f"{path}:{_node_line(node, ('name',))}: name {doc['name']!r} differs from the "
                             f"file name; references are found by file name: rename the file or drop `name`")
    data = {**doc, "name": doc.get("name") or path.stem, "path": path}
    try:
        return Reference.model_validate(data)
    except ValidationError as exc:
        lines = [line for e in exc.errors() for line in _describe(e, node, path)]
        raise ReferenceError("\n".join(sorted(dict.fromkeys(lines), key=_line_of))) from None


# ----------------------------------------------------------------------------------------------- compare


def _unknown(v: Any) -> bool:
    if v is None or v is pd.NA or v is pd.NaT:
        return True
    if isinstance(v, float | np.floating):
        return bool(np.isnan(v))
    return isinstance(v, str) and v.strip() in ("", "?")


def _as_int(v: Any) -> int | None:
    if _unknown(v) or isinstance(v, bool | np.bool_):
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return int(f) if math.isfinite(f) and f.is_integer() else None


def _as_bool(v: Any) -> bool | None:
    if _unknown(v):
        return None
    if isinstance(v, bool | np.bool_):
        return bool(v)
    if isinstance(v, int | float | np.integer | np.floating) and v in (0, 1):
        return bool(v)
    text = str(v).strip().lower()
    return True if text in ("true", "yes", "on", "1") else False if text in ("false", "no", "off", "0") else None


def _as_float(v: Any) -> float:
    try:
        return float(v) if not _unknown(v) else math.nan
    except (TypeError, ValueError):
        return math.nan


def _flag_text(flag: str, value: bool | None) -> str:
    if value is None:
        return f"{flag} unknown"
    if flag == "synthetic":
        return "synthetic data" if value else "real data"
    return f"{flag.upper() if flag == 'xla' else 'DALI'} {'on' if value else 'off'}"


def _records(stats: pd.DataFrame, value: str) -> list[dict]:
    out = []
    for raw in stats.to_dict("records"):
        out.append({
            "framework": raw.get("framework"), "model": raw.get("model"),
            "gpus": _as_int(raw.get("gpus")), "nodes": _as_int(raw.get("nodes")),
            "batch_size": _as_int(raw.get("batch_size")),
            "precision": None if _unknown(raw.get("precision")) else str(raw["precision"]).strip().lower(),
            **{flag: _as_bool(raw.get(flag)) for flag in FLAGS},
            "value": _as_float(raw.get(value)), "runs": _as_int(raw.get("runs")) or 0,
            "speedup": _as_float(raw.get("speedup")),
        })
    return out


def _same_model(rec: dict, ref: Reference) -> bool:
    """Whether a measured configuration is of the reference's model (parser names or the study name)."""
    framework, model = LOG_NAMES[ref.model]
    got_model, got_fw = rec.get("model"), rec.get("framework")
    if got_model == ref.model:
        return True
    if _unknown(got_model):
        return _unknown(got_fw) or got_fw == framework
    return got_model == model and (_unknown(got_fw) or got_fw == framework)


def _expected_nodes(row: Row, ref: Reference) -> int:
    return row.nodes or max(1, -(-row.gpus // ref.hardware.gpus_per_node))


def _fmt(x: float) -> str:
    return f"{x:.6g}"


def _match(row: Row, rec: dict) -> tuple[bool, list[str]]:
    """Whether `rec` can stand for `row`, and which stated flags the measurement does not know."""
    if (rec["gpus"], rec["batch_size"], rec["precision"]) != (row.gpus, row.batch_size, row.precision):
        return False, []
    unknown = []
    for flag in FLAGS:
        want, got = getattr(row, flag), rec[flag]
        if want is None:
            continue
        if got is None:
            unknown.append(flag)
        elif got != want:
            return False, []
    return True, unknown


def _compare_row(row: Row, ref: Reference, records: list[dict], duplicates: list[Row]) -> dict:
    unit = ref.unit
    nodes = _expected_nodes(row, ref)
    notes: list[str] = []
    candidates = []
    for rec in records:
        ok, unknown = _match(row, rec)
        if ok and not math.isnan(rec["value"]):
            node_miss = rec["nodes"] is not None and rec["nodes"] != nodes
            flags = tuple(str(rec[f]) for f in FLAGS)
            candidates.append(((len(unknown), node_miss, -rec["runs"], flags, str(rec["nodes"])), rec, unknown))
    candidates.sort(key=lambda c: c[0])
    chosen = candidates[0][1] if candidates else None
    if chosen is not None:
        for flag in candidates[0][2]:
            notes.append(f"{flag}: not known from the logs (published: {_flag_text(flag, getattr(row, flag))})")
        for flag in FLAGS:
            if getattr(row, flag) is None and chosen[flag] is not None:
                notes.append(f"{flag}: not stated by the report; measured with {_flag_text(flag, chosen[flag])}")
        if chosen["nodes"] is not None and chosen["nodes"] != nodes:
            notes.append(f"nodes: {chosen['nodes']} measured vs {nodes} published")
        for _, other, _ in candidates[1:]:
            what = ", ".join(_flag_text(f, other[f]) for f in FLAGS if other[f] != chosen[f])
            if other["nodes"] != chosen["nodes"]:
                what = ", ".join(filter(None, [what, f"{other['nodes']} nodes"]))
            runs = f"{other['runs']} run" + ("" if other["runs"] == 1 else "s")
            notes.append(f"also measured with {what or 'the same flags'}: {_fmt(other['value'])} {unit} "
                         f"({runs}), not used")
    else:
        near = [r for r in records if (r["gpus"], r["batch_size"], r["precision"]) ==
                (row.gpus, row.batch_size, row.precision) and not math.isnan(r["value"])]
        for r in near:
            wrong = [f for f in FLAGS if getattr(row, f) is not None and r[f] is not None and r[f] != getattr(row, f)]
            notes.append(f"measured only with {', '.join(_flag_text(f, r[f]) for f in wrong)} (published: "
                         f"{', '.join(_flag_text(f, getattr(row, f)) for f in wrong)}): {_fmt(r['value'])} {unit}")
        if not near:
            other = sorted({r["batch_size"] for r in records if r["gpus"] == row.gpus
                            and r["precision"] == row.precision and r["batch_size"] is not None})
            if other:
                notes.append(f"batch size: measured at {', '.join(map(str, other))} per GPU, published at "
                             f"{row.batch_size}")
    for dup in duplicates:
        notes.append(f"the same configuration is also published in table {dup.table!r}: "
                     f"{_fmt(dup.throughput)} {unit}")
    measured = chosen["value"] if chosen is not None else math.nan
    ratio = measured / row.throughput if chosen is not None else math.nan
    return {
        "table": row.table, "gpus": row.gpus, "nodes": nodes, "batch_size": row.batch_size,
        "precision": row.precision, "xla": row.xla, "dali": row.dali, "synthetic": row.synthetic,
        "published": row.throughput, "measured": measured, "runs": chosen["runs"] if chosen is not None else 0,
        "ratio": ratio, "delta_pct": (ratio - 1) * 100,
        "published_speedup": row.speedup if row.speedup is not None else math.nan,
        "measured_speedup": chosen["speedup"] if chosen is not None else math.nan,
        "differences": notes,
    }


def _check_tolerance(tolerance: float) -> float:
    if isinstance(tolerance, bool) or not isinstance(tolerance, int | float) or not 0 <= tolerance < 1:
        raise ReferenceError(f"tolerance {tolerance!r} must be a relative number in [0, 1), e.g. 0.05 for 5%")
    return float(tolerance)


def _verdict(ratio: float, tolerance: float, below: str = "slower", above: str = "faster") -> str:
    if math.isnan(ratio):
        return "not measured"
    # A little slack so that a ratio of exactly 1 +/- tolerance, rounded in binary, still counts.
    if abs(ratio - 1) <= tolerance + 1e-12:
        return "reproduced"
    return below if ratio < 1 else above


def compare(stats: pd.DataFrame, ref: Reference, tolerance: float | None = None,
            value: str = "median") -> pd.DataFrame:
    """One row per published row: the published and measured throughput, their ratio and a verdict.

    `stats` is the frame of `metrics.aggregate` (any frame with gpus, batch_size, precision and the
    `value` column will do; framework, model, nodes, xla, dali, synthetic, runs and speedup are used
    when present). Rows of other models are ignored. A published row matches a measured
    configuration of the same GPU count, per-GPU batch size and precision whose xla, dali and
    synthetic agree with the ones the row states (a flag the row leaves as None matches anything; a
    flag the logs did not reveal matches too, and is named in `differences`). When several
    configurations match, the one with the fewest unknown flags, then the published node count,
    then the most runs is used and the others are named in `differences`.

    A configuration published twice (the same configuration in two tables of a report) gives two
    rows, one per published number, told apart by `table`: both are reported, neither wins.

    Columns are documented in `COLUMNS`; `attrs` holds the reference name, tolerance, value and unit.
    """
    tol = ref.tolerance if tolerance is None else _check_tolerance(tolerance)
    if not isinstance(stats, pd.DataFrame):
        raise ReferenceError(f"compare() takes the DataFrame of metrics.aggregate, not {type(stats).__name__}")
    missing = [c for c in ("gpus", "batch_size", "precision", value) if c not in stats.columns]
    if missing and not stats.empty:
        expected = ", ".join([*metrics.CONFIG, *metrics.STAT_COLUMNS])
        raise ReferenceError(f"the statistics lack the column(s) {', '.join(missing)}; compare() takes the "
                             f"frame of metrics.aggregate (columns: {expected})")
    records = [r for r in _records(stats, value) if _same_model(r, ref)] if not stats.empty else []
    rows = []
    for row in ref.rows:
        duplicates = [r for r in ref.rows if r is not row and r.key == row.key]
        out = _compare_row(row, ref, records, duplicates)
        out["verdict"] = _verdict(out["ratio"], tol)
        rows.append(out)
    frame = pd.DataFrame(rows, columns=list(COLUMNS))
    frame.attrs.update(reference=ref.name, tolerance=tol, value=value, unit=ref.unit)
    return frame


def verdict_summary(comparison: pd.DataFrame) -> dict[str, Any]:
    """Counts of each verdict, `rows`, `measured`, and `overall`.

    `overall` is "not measured" when no published row was measured, "reproduced" when every
    published row was reproduced, "not reproduced" when none was, and "partly reproduced" otherwise
    (rows not measured count against "reproduced": a claim is reproduced only as far as it was
    measured). Works on the frames of `compare` and `time_to_train_check`.
    """
    counts: dict[str, Any] = dict.fromkeys(VERDICTS, 0)
    verdicts = list(comparison["verdict"]) if "verdict" in comparison else []
    for v in verdicts:
        counts[v] = counts.get(v, 0) + 1
    total, reproduced = len(verdicts), counts["reproduced"]
    measured = total - counts["not measured"]
    if measured == 0:
        overall = "not measured"
    elif reproduced == total:
        overall = "reproduced"
    elif reproduced == 0:
        overall = "not reproduced"
    else:
        overall = "partly reproduced"
    return {**counts, "rows": total, "measured": measured, "overall": overall}


# ------------------------------------------------------------------------------------------- differences


def _captures(environment: Any) -> list[dict]:
    """The captures in what was given: a capture, a run record ({"environment": ...}) or a list."""
    if environment is None:
        return []
    if isinstance(environment, list | tuple):
        return [c for item in environment for c in _captures(item)]
    if not isinstance(environment, dict):
        return []
    inner = environment.get("environment")
    if inner is not None and "gpus" not in environment:
        return _captures(inner)
    return [environment]


def _section(capture: dict, name: str) -> dict | None:
    """A section of a capture: its dict, or None when the capture does not have it."""
    sec = capture.get(name)
    return sec if isinstance(sec, dict) else None


def _norm_gpu(name: str) -> str:
    return re.sub(r"[\s_-]+", "", re.sub(r"^(tesla|nvidia|geforce|quadro)\s+", "", name.strip().lower()))


def _same_gpu(measured: str, published: str) -> bool:
    a, b = _norm_gpu(measured), _norm_gpu(published)
    return bool(a and b) and (a in b or b in a)


def _norm_image(image: str) -> str:
    image = image.strip().lower().split("@", 1)[0]
    return re.sub(r"^(nvcr\.io/|docker\.io/|index\.docker\.io/)", "", image)


def _same_version(measured: Any, published: str) -> bool:
    m, p = str(measured).split("+", 1)[0].strip(), str(published).split("+", 1)[0].strip()
    return m == p or m.startswith(p + ".") or p.startswith(m + ".")


_LIBRARY_LABELS = {"cuda": "CUDA", "cudnn": "cuDNN", "nccl": "NCCL", "dali": "DALI", "horovod": "Horovod"}


def _environment_differences(ref: Reference, caps: list[dict]) -> list[str]:
    out: list[str] = []
    hw, sw = ref.hardware, ref.software
    # GPU model, count, driver
    models: list[str] = []
    counts: list[int] = []
    drivers: list[str] = []
    no_gpu = recorded = False
    for cap in caps:
        gpus = _section(cap, "gpus")
        if gpus is None:
            continue
        recorded = True
        if gpus.get("available") is False:
            no_gpu = True
            continue
        names = gpus.get("models") or [d.get("name") for d in gpus.get("devices") or [] if isinstance(d, dict)]
        models += [str(n) for n in names if n]
        if _as_int(gpus.get("count")) is not None:
            counts.append(_as_int(gpus.get("count")))
        if gpus.get("driver"):
            drivers.append(str(gpus["driver"]))
    models = list(dict.fromkeys(models))
    if models:
        if not all(_same_gpu(m, hw.gpu) for m in models):
            out.append(f"GPU: measured on {', '.join(models)} vs published {hw.gpu}")
    elif no_gpu:
        out.append(f"GPU: measured on CPU (no GPU) vs published {hw.gpu}")
    elif not recorded:
        out.append(f"GPU: not recorded vs published {hw.gpu}")
    widest = min(max((r.gpus for r in ref.rows), default=1), hw.gpus_per_node)
    if counts and max(counts) < widest:
        out.append(f"GPU count: {max(counts)} per machine measured vs {hw.gpus_per_node} per node published"
                   + (f" ({hw.nodes} nodes)" if hw.nodes > 1 else ""))
    if hw.driver and drivers and not all(_same_version(d, hw.driver) for d in drivers):
        out.append(f"GPU driver: {', '.join(dict.fromkeys(drivers))} measured vs published {hw.driver}")
    first = caps[0]
    # container
    published_images = [x for x in (sw.container, sw.image) if x]
    if published_images:
        shown = sw.container or sw.image
        cont = _section(first, "container")
        image = cont.get("image") if cont else None
        if cont is None:
            out.append(f"container: not recorded vs published {shown}")
        elif image:
            if not any(_norm_image(str(image)) == _norm_image(p) for p in published_images):
                out.append(f"container: {image} measured vs published {shown}")
        elif cont.get("available") is False or cont.get("inside") is False:
            out.append(f"container: none (not in a container) vs published {shown}")
        else:
            out.append(f"container: image not recorded vs published {shown}")
    # framework and libraries
    frameworks = _section(first, "frameworks") or {}
    fw = ref.framework
    info = frameworks.get(fw) if isinstance(frameworks.get(fw), dict) else None
    wanted = f"{fw} {sw.framework_version}" if sw.framework_version else fw
    if info is None:
        out.append(f"framework: {fw} not found in the measured environment vs published {wanted}")
    elif sw.framework_version and info.get("version") and not _same_version(info["version"], sw.framework_version):
        out.append(f"framework: {fw} {info['version']} measured vs published {sw.framework_version}")
    for name, version in sw.libraries.items():
        sec = _section(first, name) if name in ("cuda", "cudnn", "nccl") else frameworks.get(name)
        got = sec.get("version") if isinstance(sec, dict) else None
        if got and not _same_version(got, version):
            out.append(f"{_LIBRARY_LABELS.get(name, name)}: {got} measured vs published {version}")
    # model code
    if sw.commit:
        code = _section(first, "code") or {}
        commit = code.get("commit")
        if not commit:
            out.append(f"model code: commit not recorded vs published {sw.commit[:12]}")
        elif not (str(commit).startswith(sw.commit) or sw.commit.startswith(str(commit))):
            out.append(f"model code: commit {str(commit)[:12]} measured vs published {sw.commit[:12]}")
        if code.get("dirty"):
            stated = "; ".join(sw.changes) if sw.changes else "none stated"
            out.append(f"model code: local changes on top of the commit (published changes: {stated})")
        elif code.get("dirty") is False and sw.changes:
            out.append(f"model code: no local changes, but the report changed the code ({'; '.join(sw.changes)})")
    return out


def _config_differences(ref: Reference, config: dict) -> list[str]:
    out: list[str] = []
    entries = [*ref.rows, *ref.time_to_train, *ref.accuracy]
    precision = None if _unknown(config.get("precision")) else str(config["precision"]).lower()
    batch, gpus = _as_int(config.get("batch_size")), _as_int(config.get("gpus"))
    precisions = list(dict.fromkeys(e.precision for e in entries))
    if precision and precision not in precisions:
        out.append(f"precision: {precision} measured, not published (published: {', '.join(precisions)})")
    same_precision = [e for e in entries if e.precision == precision] or entries
    batches = sorted({e.batch_size for e in same_precision})
    if batch is not None and batch not in batches:
        where = f" for {precision}" if precision in precisions else ""
        out.append(f"batch size: {batch} per GPU measured vs published {'/'.join(map(str, batches))}{where}")
    counts = sorted({e.gpus for e in entries})
    if gpus is not None and gpus not in counts:
        out.append(f"GPUs: {gpus} measured, not among the published counts ({', '.join(map(str, counts))})")
    rows = [r for r in ref.rows if r.precision == precision and r.batch_size == batch] \
        or [r for r in ref.rows if r.precision == precision] or list(ref.rows)
    for flag in FLAGS:
        raw = config.get(flag)
        if flag == "synthetic" and _unknown(raw) and not _unknown(config.get("data")):
            raw = str(config["data"]).lower() == "synthetic"
        got = _as_bool(raw)
        published = {getattr(r, flag) for r in rows} - {None}
        if got is not None and published and got not in published:
            out.append(f"{flag}: {_flag_text(flag, got)} measured vs "
                       f"{' or '.join(_flag_text(flag, v) for v in sorted(published))} published")
    return out


def differences(ref: Reference, environment: dict | list | None = None, config: dict | None = None) -> list[str]:
    """What differs between the published set-up and the measured one, in words, most significant first.

    `environment` is a capture (`benchbook.environment.capture.capture()`, `benchbook env --json`),
    a run record holding one under `environment` (its `config` is used when `config` is not given),
    a list of captures (one per host), or None when nothing was captured. Missing sections and
    fields are tolerated: what cannot be read is reported as not recorded, never raised. `config`
    is a run's configuration (batch_size, precision, gpus, xla, dali, synthetic or data, model).
    Order: model, GPU model, GPU count, driver, container, framework, libraries, model code,
    precision, batch size, GPU count of the run, flags.
    """
    if config is None and isinstance(environment, dict) and isinstance(environment.get("config"), dict):
        config = environment["config"]
    out: list[str] = []
    if config and not _unknown(config.get("model")) and config["model"] != ref.model:
        out.append(f"model: {config['model']} measured vs published {ref.model}")
    caps = _captures(environment)
    if caps:
        out += _environment_differences(ref, caps)
    else:
        published = ", ".join(filter(None, [ref.hardware.gpu, ref.software.container or ref.software.image]))
        out.append(f"environment: not captured, so the GPU, container, framework and code cannot be compared "
                   f"with the published set-up ({published})")
    if config:
        out += _config_differences(ref, config)
    return out


# ------------------------------------------------------------------------------------- time to train


def _last_epochs(evaluations: pd.DataFrame) -> dict[tuple, float]:
    if "epoch" not in evaluations or evaluations.empty:
        return {}
    epochs = pd.to_numeric(evaluations["epoch"], errors="coerce")
    return {key: float(v) for key, v in epochs.groupby([evaluations["source"], evaluations["run"]]).max().items()}


def time_to_train_check(measured: pd.DataFrame, ref: Reference, tolerance: float | None = None) -> pd.DataFrame:
    """Measured time to the target top-1 and final top-1 against the published ones: one row per
    published entry and measured run (one row with verdict "not measured" when there is no run).

    `measured` is the `evaluations` frame of an Analysis (time to target is then computed with each
    entry's own target) or the frame of `metrics.time_to_target` (computed by the caller, with the
    reference's target). Time to train: measured seconds from the run's first log line to its first
    evaluation at or above the target, against the published seconds (which for a report that ran
    a fixed number of epochs is the whole run's); reproduced when within `tolerance` (relative,
    default the reference's). Accuracy: the run's last top-1 within `ref.top1_tolerance` percentage
    points of the published one. Columns are documented in `TIME_COLUMNS`.
    """
    tol = ref.tolerance if tolerance is None else _check_tolerance(tolerance)
    if not isinstance(measured, pd.DataFrame):
        raise ReferenceError(f"time_to_train_check() takes a DataFrame, not {type(measured).__name__}")
    is_ttt = "reached" in measured.columns
    if not is_ttt and not {"source", "run", "top1", "elapsed"} <= set(measured.columns):
        raise ReferenceError("time_to_train_check() takes the `evaluations` frame of an Analysis "
                             "(source, run, epoch, top1, elapsed) or the frame of metrics.time_to_target "
                             f"(source, run, reached, seconds, final_top1); got columns {', '.join(measured.columns)}")
    last_epoch = {} if is_ttt else _last_epochs(measured)

    def per_run(target: float | None) -> pd.DataFrame:
        if is_ttt:
            return measured
        return metrics.time_to_target(measured, target if target is not None else math.inf)

    rows = []
    for kind, entries in (("time_to_train", ref.time_to_train), ("accuracy", ref.accuracy)):
        for entry in entries:
            base = {"kind": kind, "gpus": entry.gpus, "batch_size": entry.batch_size, "precision": entry.precision,
                    "epochs": entry.epochs, "target_top1": entry.target_top1,
                    "published_seconds": entry.seconds if entry.seconds is not None else math.nan,
                    "published_top1": entry.top1 if entry.top1 is not None else math.nan}
            runs = per_run(entry.target_top1)
            if runs.empty:
                rows.append({**base, "source": None, "run": None, "measured_epochs": math.nan,
                             "measured_seconds": math.nan, "ratio": math.nan, "delta_pct": math.nan,
                             "measured_top1": math.nan, "top1_delta": math.nan, "reached": False,
                             "verdict": "not measured", "differences": ["no evaluated run"]})
                continue
            for run in runs.to_dict("records"):
                notes: list[str] = []
                epochs = last_epoch.get((run["source"], run["run"]), math.nan)
                if not math.isnan(epochs) and epochs < 0.9 * entry.epochs:
                    notes.append(f"last evaluation at epoch {epochs:g}; the published run trained {entry.epochs} "
                                 "epochs")
                seconds = _as_float(run.get("seconds"))
                top1 = _as_float(run.get("final_top1"))
                reached = bool(run.get("reached")) and not math.isnan(seconds)
                ratio = seconds / entry.seconds if kind == "time_to_train" and reached else math.nan
                delta = top1 - entry.top1 if entry.top1 is not None else math.nan
                if kind == "time_to_train":
                    # A ratio of seconds above 1 took longer: slower.
                    verdict = _verdict(ratio, tol, below="faster", above="slower") if reached else "not reached"
                    if not reached:
                        notes.append(f"never reached {entry.target_top1:g}% top-1"
                                     + (f" (final {top1:.2f}%)" if not math.isnan(top1) else ""))
                elif math.isnan(top1):
                    verdict = "not measured"
                elif abs(delta) <= ref.top1_tolerance + 1e-9:
                    verdict = "reproduced"
                else:
                    verdict = "lower" if delta < 0 else "higher"
                rows.append({**base, "source": run["source"], "run": run["run"], "measured_epochs": epochs,
                             "measured_seconds": seconds if reached else math.nan, "ratio": ratio,
                             "delta_pct": (ratio - 1) * 100, "measured_top1": top1, "top1_delta": delta,
                             "reached": reached, "verdict": verdict, "differences": notes})
    frame = pd.DataFrame(rows, columns=list(TIME_COLUMNS))
    frame.attrs.update(reference=ref.name, tolerance=tol, top1_tolerance=ref.top1_tolerance)
    return frame
