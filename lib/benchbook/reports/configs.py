"""One name and one order for a configuration, everywhere on a report's page.

A configuration is where it ran (GPUs, or the CPU and its processes), its precision, its per-GPU batch
and the flags that tell tables apart (XLA, DALI, synthetic data). The grid, the tables, the plots and
the index page name and order configurations through these functions only: `precision_order` orders
precisions, `column_label` names a precision x batch column, `place_label` a row, `describe` a whole
configuration in words, and `order` puts them in the reference's order (the order its rows list
them), the others after in `precision_order`, then batch.
"""

from __future__ import annotations

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


def describe(gpus, processes, precision, batch, xla=None, own: tuple = ()) -> str:
    """A configuration in words, for a line of text or the index page: "8 GPUs, AMP, batch 256, XLA",
    "1 GPU, FP32, batch 64", "CPU, 2 processes, FP32, batch 8" (processes only on the CPU, where they vary),
    then a model's own axes where they vary (`own`: (key, value) pairs, "sequence length 512, phase 2")."""
    words = [config.where(gpus, processes), precision_name(precision), f"batch {as_int(batch)}"]
    return ", ".join(words + (["XLA"] if flag(xla) is True else []) + _said(own))


def _said(own: tuple) -> list[str]:
    known = catalog()
    return [known.axis(key).say(value) for key, value in own]


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


def own_of(row, keys) -> tuple:
    """The (key, value) pairs of a row's own axes `keys` (those `own_varying` found), for the spellings."""
    return tuple((key, row.get(key)) for key in keys)


def describe_row(row, own_keys=()) -> str:
    """`describe` of a row (a mapping, a pandas row) of a configuration, with its own axes `own_keys`."""
    return describe(row.get(GPUS), row.get(PROCESSES), row.get(PRECISION), row.get(BATCH),
                    row.get(XLA), own_of(row, own_keys))


def column_on(row, own_keys=()) -> str:
    """A configuration's column and where it ran, for a sentence: "AMP bs256 on 8 GPUs" ("AMP bs256 phase 2 on
    8 GPUs" where the phase varies)."""
    return f"{column_label(row[PRECISION], row[BATCH], dict(own_of(row, own_keys)))} on {config.where_of(row)}"


def run_label(source_name: str, run, row, own_keys=()) -> str:
    """A run in a table of its records: "file.log:0 (8 GPUs, amp, bs 256)", its own axes where they vary
    ("file.log:0 (8 GPUs, amp, bs 256, phase 2)")."""
    said = "".join(f", {w}" for w in _said(own_of(row, own_keys)))
    return f"{source_name}:{run} ({config.where(row.get(GPUS))}, {row.get(PRECISION)}, bs {row.get(BATCH)}{said})"


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
