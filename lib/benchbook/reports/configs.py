"""One name and one order for a configuration, everywhere on a report's page.

A configuration is where it ran (GPUs, or the CPU and its processes), its precision, its per-GPU batch
and the flags that tell tables apart (XLA, DALI, synthetic data). The grid, the tables, the plots and
the index page name and order configurations through these only: `Configuration` (a configuration as a value,
each spelling a method: sentence, column, run, label), `precision_order` orders precisions, `column_label` names a
precision x batch column, `place_label` a row, and `order` puts them in the reference's order (the order its rows list
them), the others after in `precision_order`, then batch.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from ..core import config
from ..core.catalog import default as catalog

# The axes a report lays configurations out on, by their keys in core.config's COMMON_AXES (every other report
# module reads them from here, or lists axes through the catalog): where a configuration ran (GPUs, nodes, and a
# CPU run's processes), its per-GPU batch and precision (a grid's columns), the flags (XLA, DALI, synthetic data)
# and a run's repeat.
GPUS, NODES, PROCESSES, BATCH, PRECISION = "gpus", "nodes", "processes", "batch_size", "precision"
XLA, DALI, SYNTHETIC, REPEAT = "xla", "dali", "synthetic", "repeat"
assert {GPUS, NODES, PROCESSES, BATCH, PRECISION, XLA, DALI, SYNTHETIC, REPEAT} <= {a.key for a in config.COMMON_AXES}
PRECISION_NAMES = {"fp32": "FP32", "tf32": "TF32", "bf16": "BF16", "fp16": "FP16", "amp": "AMP"}
_PRECISIONS = list(PRECISION_NAMES)


def precision_order(precision) -> int:
    """FP32 first, then TF32, BF16, FP16, AMP; an unknown precision last."""
    text = str(precision).lower()
    return _PRECISIONS.index(text) if text in _PRECISIONS else len(_PRECISIONS)


def precision_name(precision) -> str:
    return PRECISION_NAMES.get(str(precision).lower(), str(precision))


as_int = config.as_int  # a count (GPUs, processes, batch) as an int; None when missing or not a number
flag = config.as_bool  # a flag column's value: True, False, or None when unknown


def column_label(precision, batch, flags: dict | None = None) -> str:
    """A precision x batch column: "AMP bs256", with the flags that tell columns apart: "AMP bs224 XLA"."""
    words = [f"{precision_name(precision)} bs{as_int(batch)}"]
    words += [catalog().axis(name).say(value) for name, value in (flags or {}).items()]
    return " ".join(words)


def place(gpus, processes=None) -> tuple[int, int]:
    """Where a configuration ran, as a row key: (GPUs, 0), or (0, processes) on the CPU."""
    count = as_int(gpus)
    if count is None:
        return (-1, 0)
    if count:
        return (count, 0)
    return (0, as_int(processes) or 1)


def place_label(key: tuple[int, int]) -> str:
    """A row of the grid: "8" (GPUs), "CPU", "CPU, 2 processes", "?" (GPUs unknown)."""
    gpus, processes = key
    if gpus < 0:
        return "?"
    return config.where(0, processes) if gpus == 0 else str(gpus)


@dataclass(frozen=True)
class Configuration:
    """One configuration as a value: where it ran, its precision, per-GPU batch and XLA, and the model's own axes
    that vary where it is shown (`own`: (key, value) pairs, a phase or a sequence length, `own_varying`). Every
    table, label, plot, headline and index row spells a configuration through one of its methods, so that a
    model's own axis reaches all of them and a phase-1 and a phase-2 row never read the same."""

    gpus: object
    processes: object
    precision: object
    batch: object
    xla: object = None
    own: tuple = ()

    @classmethod
    def of(cls, row, own_keys=()) -> Configuration:
        """The configuration of a row (a mapping, a pandas row or a record), with its own axes `own_keys`."""
        get = row.get if hasattr(row, "get") else (lambda k, d=None: getattr(row, k, d))
        own = tuple((k, get(k)) for k in own_keys)
        return cls(get(GPUS), get(PROCESSES), get(PRECISION), get(BATCH), get(XLA), own)

    def own_words(self) -> list[str]:
        known = catalog()
        return [known.axis(key).say(value) for key, value in self.own]

    def sentence(self) -> str:
        """For a line of text or the index page: "8 GPUs, AMP, batch 256, XLA", "1 GPU, FP32, batch 64", "CPU, 2
        processes, FP32, batch 8" (processes only on the CPU), then its own axes ("sequence length 512, phase 2")."""
        words = [config.where(self.gpus, self.processes), precision_name(self.precision), f"batch {as_int(self.batch)}"]
        return ", ".join(words + (["XLA"] if flag(self.xla) is True else []) + self.own_words())

    def column_on(self) -> str:
        """Its column and where it ran: "AMP bs256 on 8 GPUs" ("AMP bs256 phase 2 on 8 GPUs")."""
        where = config.where(self.gpus, self.processes)
        return f"{column_label(self.precision, self.batch, dict(self.own))} on {where}"

    def run(self, source_name: str, run) -> str:
        """A run in a table of its records: "file.log:0 (8 GPUs, amp, bs 256)" ("..., phase 2)")."""
        said = "".join(f", {w}" for w in self.own_words())
        return f"{source_name}:{run} ({config.where(self.gpus)}, {self.precision}, bs {self.batch}{said})"

    def label(self, prefix: str = "", with_gpus: bool = True, with_xla: bool = True) -> str:
        """For a plot: "8 GPUs · amp · bs224 · xla" ("CPU" when gpus == 0), after `prefix` (a framework and model
        where they vary); `with_xla` False leaves XLA out (where every configuration has the same)."""
        parts = [prefix] if prefix else []
        if with_gpus:
            parts.append(config.where(self.gpus, self.processes))
        parts.append("?" if config.missing(self.precision) else str(self.precision))
        batch = as_int(self.batch)
        parts.append(f"bs{batch}" if batch is not None else "bs?")
        xla = flag(self.xla) if with_xla else None
        if xla is not None:
            parts.append(catalog().axis(XLA).words[xla].lower())
        parts += self.own_words()
        return " · ".join(p for p in parts if p)


def describe(gpus, processes, precision, batch, xla=None, own: tuple = ()) -> str:
    """`Configuration.sentence` of these values: "8 GPUs, AMP, batch 256, XLA"."""
    return Configuration(gpus, processes, precision, batch, xla, own).sentence()


def own_varying(frame) -> list[str]:
    """The model's own axes (a sequence length, a phase) that take more than one value in a frame of runs or
    configurations: every spelling of a configuration says them there, so that a phase-1 and a phase-2 row of
    the same GPUs, batch and precision never read the same."""
    if frame is None or len(frame) == 0:
        return []
    return [key for key in catalog().own() if key in frame
            and len({v for v in frame[key].tolist() if not config.missing(v)}) > 1]


def own_given(frame) -> list[str]:
    """The model's own axes that some row of a frame gives (a runs table's columns: BERT's, not ResNet-50's)."""
    return [key for key in catalog().own() if key in frame and any(not config.missing(v) for v in frame[key].tolist())]


def gpu_counts(runs: pd.DataFrame) -> list[int]:
    """The GPU counts of the runs (0: CPU runs), leaving out runs whose count is unknown."""
    if runs.empty:
        return []
    return sorted({int(g) for g in pd.to_numeric(runs[GPUS], errors="coerce").dropna()})


def join_counts(values) -> str:
    """1 -> "1"; [1, 8] -> "1 and 8"; [1, 4, 8] -> "1, 4 and 8"."""
    values = [str(v) for v in values]
    return values[0] if len(values) == 1 else ", ".join(values[:-1]) + " and " + values[-1]


def default_key(precision, batch, xla=None) -> tuple:
    return (precision_order(precision), as_int(batch) or 0, {True: 0, False: 1, None: 2}[flag(xla)])


def order(keys, reference=None) -> list:
    """Column keys (precision, batch, ...) in the reference's order: the order its rows first list each
    precision x batch; keys it does not list come after, by precision then batch."""
    listed = {}
    for row in (reference.rows if reference is not None else []):
        listed.setdefault((row.precision, row.batch_size), len(listed))
    return sorted(keys, key=lambda k: (listed.get((k[0], as_int(k[1])), len(listed)), default_key(*k[:2])))


def sort_frame(frame: pd.DataFrame, reference=None) -> pd.DataFrame:
    """Rows of a per-configuration frame (precision, batch_size, gpus...) in the page's one order: the
    reference's columns, then GPUs."""
    if frame.empty:
        return frame
    keys = list(zip(frame[PRECISION], frame[BATCH], strict=True))
    rank = {k: i for i, k in enumerate(order(dict.fromkeys(keys), reference))}
    gpus = frame[GPUS] if GPUS in frame else pd.Series(0, index=frame.index)
    processes = frame[PROCESSES] if PROCESSES in frame else pd.Series(None, index=frame.index)
    sort = pd.DataFrame({"column": [rank[k] for k in keys],
                         XLA: [default_key(p, b, x)[2] for p, b, x in
                               zip(frame[PRECISION], frame[BATCH],
                                   frame[XLA] if XLA in frame else [None] * len(frame), strict=True)],
                         "place": [place(g, p) for g, p in zip(gpus, processes, strict=True)]}, index=frame.index)
    return frame.loc[sort.sort_values(["column", XLA, "place"], kind="stable").index]
