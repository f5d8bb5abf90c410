"""A configuration's axes, declared once: what a run was (framework, model, GPUs, processes, batch,
precision, XLA, DALI, synthetic data...), each axis with its key, its place in the order, its name in
words, its type and the one conversion of a missing, int or bool value; and what a quality metric is.

`COMMON_AXES` are every configuration's; a model's own (a sequence length) is declared by its `ModelSpec.axes`,
and the catalog (`core.catalog`) joins them: every layer reads the keys from the catalog (`run_keys`,
`identity`, `baseline`, `flags`, `compared`, `headers`...), never from a list that imports change. Adding
an axis every model has is one `Axis(...)` line in `COMMON_AXES`.

A model's quality metrics (top-1 accuracy, box AP, MLM accuracy...) are `Metric`s its `ModelSpec.quality`
declares (and a log format's, `LogFormat.quality`, for the columns of its evaluations). A metric's `key` is its
column in the evaluations frame (values in `unit`: a percent logged as a fraction, 0.759, is 75.9); `final`
makes `final_<key>` a column of the runs frame (the run's last value) and of `analyze --json`.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from typing import Literal

#: What an axis is to a configuration: `identity` tells configurations apart; `scale` is what a
#: configuration scales over (a speedup compares along it); `flag` is an identity that is on or off
#: (said in a label only where it varies); `derived` and `record` are columns of a run, no identity.
Role = Literal["identity", "scale", "flag", "derived", "record"]


@dataclass(frozen=True)
class Axis:
    """One axis of a configuration: `key` (the column), `kind` (int, str, bool), `role`, `header` (its
    name in a table's header), `doc` (what the analysis's column holds), `words` (a flag's words for
    on, off and unknown), `compared` (configurations of several sources are matched on it)."""

    key: str
    kind: type
    role: Role
    header: str
    doc: str
    words: dict = field(default_factory=dict)
    compared: bool = False
    recorded: bool = True  # a run record's `config` may give it (the log's value wins)
    labelled: bool = True  # an identity a column label names where it varies (not those a label always says)

    def value(self, value):
        """A value of the axis as a label compares it: a flag True/False/None, a count an int or None."""
        return as_bool(value) if self.kind is bool else as_int(value) if self.kind is int else (
            None if missing(value) else str(value))

    def say(self, value) -> str:
        """A value in words: a flag's own ("XLA", "no XLA", "XLA unknown"), else "sequence length 128"."""
        if self.kind is bool:
            return self.words[as_bool(value)]
        shown = self.value(value)
        return f"{self.header} {shown if shown is not None else '?'}"


def _flag(key: str, on: str, off: str, unknown: str, doc: str, compared: bool = False) -> Axis:
    return Axis(key, bool, "flag", on, doc, {True: on, False: off, None: unknown}, compared)


#: The axes every configuration has, in the order of the analysis's columns and `analyze --json`; a model's own
#: follow them in the catalog (`core.catalog`).
COMMON_AXES: tuple[Axis, ...] = (
    Axis("framework", str, "identity", "framework", "framework that ran", labelled=False),
    Axis("model", str, "identity", "model", "model that was trained", recorded=False, labelled=False),
    Axis("gpus", int, "scale", "GPUs", "GPUs in the run, all nodes", compared=True),
    Axis("nodes", int, "scale", "nodes", "nodes, when known"),
    Axis("processes", int, "scale", "processes", "processes of the run: MPI ranks of a CPU run; GPUs of an NGC "
                                                 "run unless the script starts its own workers", recorded=False),
    Axis("batch_size", int, "identity", "per-GPU batch", "per-GPU batch size (per process of a CPU run)",
         compared=True, labelled=False),
    Axis("global_batch_size", int, "derived", "global batch",
         "batch size over all GPUs (over all processes of a CPU run)", recorded=False),
    Axis("precision", str, "identity", "precision", "fp32, amp, fp16, tf32 or bf16", compared=True,
         labelled=False),
    _flag("xla", "XLA", "no XLA", "XLA unknown", "XLA on", compared=True),
    _flag("dali", "DALI", "no DALI", "DALI unknown", "DALI data loading on"),
    _flag("synthetic", "synthetic data", "real data", "data unknown", "synthetic input data"),
    Axis("repeat", int, "record", "repeat", "repeat number, when the file name or run record gives one"),
)


# The one conversion of a configuration's values, used by every reader of them.
MISSING_TEXT = frozenset({"", "-", "?", "none", "nan", "<na>", "nat", "null", "[]", "{}"})  # "-": records' "none"

def missing(value) -> bool:
    """None, NaN, pandas' NA or NaT, an empty list or mapping, and the text pandas or a log uses for them."""
    if value is None:
        return True
    pandas = sys.modules.get("pandas")  # its NA and NaT exist only where pandas is imported already
    if pandas is not None and (value is pandas.NA or value is pandas.NaT):
        return True
    if isinstance(value, str):
        return value.strip().lower() in MISSING_TEXT
    if isinstance(value, float) or getattr(getattr(value, "dtype", None), "kind", "") == "f" and not hasattr(
            value, "__len__"):
        return math.isnan(value)
    if isinstance(value, list | tuple | set | dict) or hasattr(value, "__len__") and hasattr(value, "dtype"):
        return len(value) == 0
    return False


def as_int(value) -> int | None:
    """A count (GPUs, processes, batch) as an int; None when missing or not a number."""
    try:
        return None if missing(value) else int(value)
    except (TypeError, ValueError):
        return None


def as_bool(value) -> bool | None:
    """A flag: True, False, or None when unknown (missing, "?", text that is no boolean)."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    return True if text == "true" else False if text == "false" else None


def typed(axis: Axis, value):
    """A value as its axis's type, or None (the one conversion of a run record's `config`): a count is a
    non-negative whole number (digits in a string are read as one), a flag a bool, a name a string."""
    kind = axis.kind
    if kind is int:
        if isinstance(value, str) and value.strip().isdigit():
            return int(value)
        return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None
    return value if isinstance(value, kind) else None


def workers(frame):
    """What each row of a frame of configurations scales over: its GPUs, or its processes (MPI ranks) on
    the CPU; a frame from before the processes column ran one process per GPU."""
    import pandas as pd

    gpus = pd.to_numeric(frame["gpus"], errors="coerce")
    processes = pd.to_numeric(frame["processes"], errors="coerce").fillna(1) if "processes" in frame else gpus
    return gpus.where(gpus != 0, processes)


def on_cpu(frame):
    """Whether each row of a frame of configurations ran on the CPU (no GPU)."""
    import pandas as pd

    return pd.to_numeric(frame["gpus"], errors="coerce").eq(0)


def with_processes(frame):
    """A frame of runs with its processes column (older frames lack it: one process per GPU)."""
    return frame if "processes" in frame else frame.assign(processes=frame["gpus"])


def where_of(row) -> str:
    """`where` of a row (a mapping, a pandas row) of a configuration."""
    return where(row.get("gpus"), row.get("processes"))


def where(gpus, processes=None) -> str:
    """Where a configuration ran, in words, one spelling for tables, plots, headlines and the index:
    "8 GPUs", "1 GPU", "CPU", "CPU, 2 processes", "? GPUs" (unknown)."""
    count = as_int(gpus)
    if count is None:
        return "? GPUs"
    if count == 0:
        many = as_int(processes)
        return "CPU" + (f", {many} processes" if many and many > 1 else "")
    return f"{count} GPU" + "s" * (count != 1)


# ---------------------------------------------------------------- quality metrics, as the models declare them


@dataclass(frozen=True)
class Metric:
    """A quality metric: `key` (its column), `name` in words ("top-1 accuracy"), `unit` ("%", "AP"),
    `direction` (whether higher or lower is better), `final` (the run's last value is a run column)."""

    key: str
    name: str
    unit: str
    direction: Literal["higher", "lower"] = "higher"
    final: bool = False

    final_key: str = field(init=False, repr=False)  # `final_<key>`: the runs frame's column of its last value

    def __post_init__(self):
        object.__setattr__(self, "final_key", f"final_{self.key}")

    def as_logged(self, value):
        """A logged value in the metric's unit: a percent logged as a fraction (0.759) is 75.9."""
        import math

        if value is None or (isinstance(value, float) and math.isnan(value)):
            return None
        return value * 100 if self.unit == "%" and value <= 1.0 else value
