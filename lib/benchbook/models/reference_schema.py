"""Reference files: the schema of what a report published (`Reference`), finding a file by name
inside the references folder (and refusing names that leave it), and `load`, whose errors name the
file, the line, the field and what is allowed. Used through `benchbook.reports.references`."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model, field_validator, model_validator

from .. import models
from ..core import project, yamlfile
from ..core.catalog import default as catalog
from ..core.config import Metric
from ..core.problems import FieldProblems
from ..errors import BenchbookError, UnknownNameError
from . import reference_messages

if TYPE_CHECKING:
    import pandas as pd

SCHEMA_VERSION = 1
ENV_VAR = "BENCHBOOK_REFERENCES"
# The models a reference may name, with their framework, from the registry (as a study's `model:`).
MODELS = {spec.name: spec.framework for spec in models.specs()}
ModelName = Literal[models.names()]  # a Literal, so that a wrong name lists the known ones
DEFAULT_ROOT = project.REFERENCES
PRECISIONS = ("fp32", "amp", "fp16", "tf32", "bf16", "fp8", "mxfp8", "nvfp4")  # (the last three: the LLM logs')
FLAGS = tuple(catalog().flags())  # a row's on/off axes (XLA, DALI, synthetic data): None, not stated, matches any
# The axes a published row states, as core.config names them: its GPUs (all nodes), node count, per-GPU batch
# and precision; the comparison reads the keys from here, and the flags from FLAGS.
GPUS, NODES, BATCH, PRECISION = "gpus", "nodes", "batch_size", "precision"
SYNTHETIC = "synthetic"  # the flag a study's `data: synthetic` sets
assert {GPUS, NODES, BATCH, PRECISION} <= set(catalog().run_keys()) and SYNTHETIC in FLAGS
# How each study model appears in the `framework` and `model` columns of an Analysis (the parsers' names).
LOG_NAMES = {spec.name: spec.log_names for spec in models.specs()}
LOGGED_AS = ("framework", "model")  # those columns, the configuration's first two axes
assert catalog().run_keys()[:2] == list(LOGGED_AS)
VERDICTS = ("reproduced", "slower", "faster", "not measured")
QUALITY_TOLERANCE = 0.5  # a final quality value's default tolerance, in its metric's unit (points of top-1)
#: YAML values a reference file may build, aliases expanded (the largest shipped one builds about 1,500).
MAX_YAML_NODES = 50000

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


Precision = Literal["fp32", "amp", "fp16", "tf32", "bf16", "fp8", "mxfp8", "nvfp4"]
#: A row's headline measure by default: the throughput in the reference's unit.
DEFAULT_MEASURE = "throughput"


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


# A number as a report prints it: digits, a point and digits. Its text is kept (3038.730, 7.30), because
# the YAML number drops trailing zeros and a report shows the digits its publication printed.
PRINTED = re.compile(r"^[0-9]+(\.[0-9]+)?$")


class _Printed(_Strict):
    """`printed`: field -> the number as the publication printed it. `load` fills it in from the YAML text of
    each number (where the file writes `throughput: 3038.730`, the text keeps the zero the float loses)."""

    # `printed` is declared last in each subclass, so that error messages list it after the published fields.

    @model_validator(mode="after")
    def _printed_is_the_number(self):
        for name, text in self.printed.items():  # type: ignore[attr-defined]
            value = getattr(self, name, None) if name != "printed" else None
            if not isinstance(value, int | float) or isinstance(value, bool):
                raise ValueError(f"printed: {name!r} is not a number of this entry")
            if not PRINTED.match(text) or float(text) != float(value):
                raise ValueError(f"printed.{name} = {text!r} is not the number {value!r} written with digits")
        return self

    def as_printed(self, name: str) -> str | None:
        """The number as the publication printed it (None when the entry has no such number)."""
        value = getattr(self, name)
        if value is None:
            return None
        printed = self.printed.get(name)  # type: ignore[attr-defined]
        return printed or f"{float(value):.6f}".rstrip("0").rstrip(".")


class Row(_Printed):
    """One published row: a configuration and the numbers the report printed for it, its headline `measure`
    (throughput by default) and any other measure of the catalog (tokens/s/GPU, TFLOP/s/GPU, ...), and speedup
    when the report gives one."""

    table: str | None = Field(None, description="label of the report's table, when it has several")
    gpus: int = Field(ge=1)
    nodes: int | None = Field(None, ge=1)
    batch_size: int = Field(ge=1, description="per-GPU batch size (an LLM table's micro batch, MBS)")
    global_batch_size: int | None = Field(None, ge=1, description="batch over all GPUs (an LLM table's GBS); None: "
                                                                  "not stated, any measured value matches")
    precision: Precision
    xla: bool | None = Field(None, description="None: the report does not say")
    dali: bool | None = None
    synthetic: bool | None = None
    measure: str = Field(DEFAULT_MEASURE, description="the row's headline measure, a measure of the catalog "
                         "(throughput, tokens_per_gpu, tflops_per_gpu, step_time, mfu, ...): the number compared")
    throughput: float | None = Field(None, gt=0, description="throughput in the reference's unit (the default "
                                                            "headline measure: required where it is the row's)")
    speedup: float | None = Field(None, gt=0)
    note: str = ""
    exact_rule: bool = Field(True, description="False: no rule gives this number from its log exactly (a "
                             "publisher's cell that follows no rule; its note says how far each rule lands)")
    printed: dict[str, str] = Field({}, description="field -> the number's printed text; filled in by load")

    @model_validator(mode="after")
    def _headline_is_given(self):
        if catalog_measure(self.measure) is None:
            raise ValueError(f"measure {self.measure!r} is no measure benchbook knows: one of "
                             f"{', '.join(m.key for m in catalog().measures)}")
        if getattr(self, self.measure, None) is None:
            raise ValueError(f"the row's measure is {self.measure}: give its published value, `{self.measure}: ...`")
        return self

    @property
    def published(self) -> float:
        """The headline measure's published value."""
        return getattr(self, self.measure)

    def measures(self) -> dict[str, float]:
        """Every measure the row publishes, headline first: key -> value."""
        given = {m.key: getattr(self, m.key, None) for m in catalog().measures}
        return {self.measure: self.published, **{k: v for k, v in given.items() if v is not None}}

    @property
    def key(self) -> tuple:
        """The configuration, without the table label and the node count."""
        return tuple(getattr(self, k) for k in (*MATCHED, *FLAGS, *STATED))

    def nodes_of(self, gpus_per_node: int) -> int:
        """Its nodes: stated, or its GPUs over the reference's GPUs per node."""
        return self.nodes or max(1, -(-self.gpus // gpus_per_node))


def catalog_measure(key: str):
    """The catalog's measure of `key`, or None."""
    return next((m for m in catalog().measures if m.key == key), None)


def _with_model_axes(row: type[Row]) -> type[Row]:
    """`Row` with a field for each configuration axis a model declares (`ModelSpec.axes`: a sequence length),
    None where the report does not state it, and one for each measure of the catalog but throughput (in its
    unit), None where the report prints none."""
    own = {a.key: a for spec in models.specs() for a in spec.axes if a.key not in row.model_fields}
    fields: dict[str, Any] = {key: (axis.kind | None, Field(None, description=f"{axis.doc}; None: not stated"))
                              for key, axis in own.items()}
    fields.update({m.key: (float | None, Field(None, gt=0, description=f"{m.name} as published, {m.unit}"))
                   for m in catalog().measures if m.key not in row.model_fields})
    return create_model("Row", __base__=row, __module__=__name__, **fields) if fields else row


Row = _with_model_axes(Row)  # type: ignore[misc]
# What a measured configuration must share with a published row (the compared common axes that are no flag),
# the axes a model adds and the global batch, which a row may state (None: any measured value), and the axes of a
# row in the configuration's order (the comparison's columns).
STATED = tuple(k for k in dict.fromkeys([*(a.key for spec in models.specs() for a in spec.axes), "global_batch_size"])
               if k in Row.model_fields)  # (in the models' order: a new model's axes come after the others')
MATCHED = tuple(k for k in catalog().compared() if k not in FLAGS and k not in STATED and k in Row.model_fields)
ROW_AXES = (*(k for k in catalog().run_keys() if k in Row.model_fields and k not in STATED), *STATED)


Quality = dict[str, Annotated[float, Field(gt=0)]]  # a quality metric's key -> a value in its unit


class Outcome(_Printed):
    """A published training outcome: the time to a quality target (`time_to_train`) or the quality at the
    end of the run (`accuracy`). Quality values are keyed by the model's quality metrics (`ModelSpec.quality`),
    in their units: `target: {<metric>: 76.10}`, `quality: {box_ap: 37.7, mask_ap: 34.1}`."""

    gpus: int = Field(ge=1)
    batch_size: int = Field(ge=1)
    precision: Precision
    epochs: int = Field(ge=1)
    seconds: float | None = Field(None, gt=0, description="time to train, seconds")
    target: Quality = Field({}, description="metric -> the quality the run trained to (time_to_train: one)")
    quality: Quality = Field({}, description="metric -> its value at the end of the run")
    throughput: float | None = Field(None, gt=0)
    note: str = ""
    exact_rule: bool = Field(True, description="False: no rule gives this number from its log exactly (a "
                             "publisher's cell that follows no rule; its note says how far each rule lands)")
    printed: dict[str, str] = Field({}, description="field -> the number's printed text; filled in by load")


def _rows_unit(rows) -> str | None:
    """The unit of rows that all publish one measure with a unit of its own (tokens/s/GPU), else None."""
    keys = {r.get("measure", DEFAULT_MEASURE) for r in rows if isinstance(r, dict)} if isinstance(rows, list) else set()
    measure = catalog_measure(next(iter(keys))) if len(keys) == 1 else None
    return measure.unit if measure is not None else None


class Reference(_Strict):
    """A reference file, validated. `name` defaults to the file name; `path` is filled in by `load`."""

    schema_version: Literal[1]
    name: str | None = Field(None, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    title: str
    description: str = ""
    model: ModelName  # type: ignore[valid-type]
    unit: str = Field(description="the throughput unit of its numbers; by default its model's (ModelSpec.unit)")
    statistic: str = Field(description="what the published number is, e.g. median of 5 runs")
    method: str = Field("", description="how the number was computed from the logs")
    tolerance: float = Field(0.05, gt=0, lt=1, description="relative; |measured / published - 1| within it")
    quality_tolerance: Quality = Field({}, description="metric -> how far a final value may be from the published "
                                                       f"one, in the metric's unit (default {QUALITY_TOLERANCE})")
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

    @model_validator(mode="before")
    @classmethod
    def _model_unit(cls, data):
        """A reference that names no unit publishes its model's (a wrong model name is told by its field)."""
        if isinstance(data, dict) and data.get("unit") is None and data.get("model") in MODELS:
            return {**data, "unit": _rows_unit(data.get("rows")) or models.get(data["model"]).unit}
        return data

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
        problems += self._quality_problems()
        if problems:
            raise FieldProblems(problems)
        return self

    def _quality_problems(self) -> list[tuple[tuple, str]]:
        """Quality values keyed by the model's metrics, percents at most 100; a time to train has its seconds
        and one target, an accuracy entry a value."""
        metrics = {m.key: m for m in models.get(self.model).quality}
        allowed = ", ".join(metrics) or "none"
        problems: list[tuple[tuple, str]] = []
        values = [(("quality_tolerance", key), key, v) for key, v in self.quality_tolerance.items()]
        for section, entries in (("time_to_train", self.time_to_train), ("accuracy", self.accuracy)):
            for i, entry in enumerate(entries):
                values += [((section, i, name, key), key, v) for name in ("target", "quality")
                           for key, v in getattr(entry, name).items()]
        for loc, key, value in values:
            if key not in metrics:
                problems.append((loc, f"{key!r} is not a quality metric of {self.model} (its metrics: {allowed})"))
            elif metrics[key].unit == "%" and value > 100 and loc[0] != "quality_tolerance":
                problems.append((loc, f"{value:g} is above 100: {metrics[key].name} is a percent"))
        for i, entry in enumerate(self.time_to_train):
            if entry.seconds is None:
                problems.append((("time_to_train", i, "seconds"), "is required for a time-to-train entry"))
            if len(entry.target) != 1:
                problems.append((("time_to_train", i, "target"), f"a time-to-train entry names one target: "
                                 f"`target: {{metric: value}}`, a metric of {allowed}"))
        for i, entry in enumerate(self.accuracy):
            if not entry.quality:
                problems.append((("accuracy", i, "quality"), f"is required for an accuracy entry: "
                                 f"`quality: {{metric: value}}`, a metric of {allowed}"))
        return problems

    def metric(self, key: str) -> Metric:
        """The model's quality metric of `key` (a key of an entry's `target` or `quality`)."""
        return next(m for m in models.get(self.model).quality if m.key == key)

    def quality_tolerance_of(self, key: str) -> float:
        """How far a final value of the metric may be from the published one, in its unit."""
        return self.quality_tolerance.get(key, QUALITY_TOLERANCE)

    @property
    def framework(self) -> str:
        return self.software.framework or MODELS[self.model]

    def frame(self) -> pd.DataFrame:
        """The published rows as a table (the columns of `Row`); pandas imported here, not by every reader of
        a reference file (`benchbook publish` reads them before any report needs a table)."""
        import pandas as pd

        cols = ["table", *ROW_AXES, "throughput", "speedup", "note"]
        frame = pd.DataFrame([r.model_dump() for r in self.rows], columns=cols)
        frame["throughput_printed"] = [r.as_printed("throughput") for r in self.rows]
        frame["speedup_printed"] = [r.as_printed("speedup") for r in self.rows]
        return frame


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


_COUNTS = ("gpus", "nodes", "batch_size", "epochs", *ROW_AXES)  # counts and axes: no printed digits to keep


def _with_printed(doc: dict, node: yaml.Node) -> dict:
    """rows, time_to_train and accuracy with each entry's `printed` filled in from the YAML text of its
    numbers (a `printed` the file writes itself is kept, and checked against the numbers)."""
    out = {}
    for section in ("rows", "time_to_train", "accuracy"):
        entries = doc.get(section)
        if not isinstance(entries, list):
            continue
        seq = next((v for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == section), None)
        if not isinstance(seq, yaml.SequenceNode) or len(seq.value) != len(entries):
            continue
        filled = []
        for entry, item in zip(entries, seq.value, strict=True):
            if isinstance(entry, dict) and "printed" not in entry and isinstance(item, yaml.MappingNode):
                printed = {k.value: v.value for k, v in item.value
                           if isinstance(v, yaml.ScalarNode) and v.tag.endswith((":float", ":int"))
                           and not v.style and PRINTED.match(v.value) and isinstance(entry.get(k.value), int | float)
                           and not isinstance(entry.get(k.value), bool) and k.value not in _COUNTS}
                entry = {**entry, "printed": printed} if printed else entry
            filled.append(entry)
        out[section] = filled
    return out


def load(name_or_path: str | os.PathLike, root: str | os.PathLike | None = None) -> Reference:
    """A reference by name (a file in the references folder) or by path, validated.

    Every problem of the file is reported at once, each with the file, line and field.
    """
    path = _resolve(name_or_path, root)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ReferenceError(f"{path}: cannot read the reference file ({exc})") from None
    try:  # the line-numbered reader: a duplicate key is refused, the size of aliases bounded
        doc = yamlfile.plain(yamlfile.parse(text, path, MAX_YAML_NODES))
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except (yamlfile.YamlSyntaxError, yamlfile.YamlSizeError) as exc:
        raise ReferenceError(str(exc)) from None
    if not isinstance(doc, dict):
        raise ReferenceError(f"{path}: a reference file is a YAML mapping "
                             "(schema_version, title, model, statistic, source, hardware, software, rows, ...)")
    if "schema_version" not in doc:
        raise ReferenceError(f"{path}: schema_version is missing; this benchbook reads schema_version: "
                             f"{SCHEMA_VERSION}")
    if doc["schema_version"] != SCHEMA_VERSION:
        raise ReferenceError(f"{path}:{reference_messages.node_line(node, ('schema_version',))}: schema_version "
                             f"{doc['schema_version']!r} is not supported; this benchbook reads "
                             f"schema_version: {SCHEMA_VERSION}")
    if doc.get("name") is not None and doc["name"] != path.stem:
        line = reference_messages.node_line(node, ("name",))
        raise ReferenceError(f"{path}:{line}: name {doc['name']!r} differs from the file name; references are "
                             "found by file name: rename the file or drop `name`")
    data = {**doc, "name": doc.get("name") or path.stem, "path": path, **_with_printed(doc, node)}
    try:
        return Reference.model_validate(data)
    except ValidationError as exc:
        lines = [line for e in exc.errors() for line in reference_messages.describe(e, node, path, Reference)]
        raise ReferenceError("\n".join(sorted(dict.fromkeys(lines), key=reference_messages.line_of))) from None

