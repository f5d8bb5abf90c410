"""The documented frames of an analysis: each frame's columns in words (`*_COLUMNS`: the frame's
shape as the README and the reports read it), kept apart from the code that reads the logs.

`analysis` builds the frames itself: the path of a log line to its number (issue 27 keeps it at ten
files, `tools/trace_rule_path.py`) runs through the frame builders, and data here adds no step to it.
"""

from __future__ import annotations

from ..core import config

_SOURCE = {
    "source": "path of the log file",
    "run": "0-based index of the run in its file, in file order",
    "format": "log format (registry name)",
}
# After them, the configuration's axes (`core.config`: framework, model, GPUs ... repeat), then these.
_RUN = {
    "line_start": "first line of the run in its file",
    "line_end": "last line of the run in its file",
    "reported_throughput": "images/s the script reported in its summary",
    "recomputed_throughput": "images/s recomputed from the records by the rule",
    "elapsed_throughput": "images/s from wall-clock timestamps of the measured records",
    "rule": "the recompute rule in words",
    "iterations": "records used by the rule",
    "warmup_records": "records skipped as warm-up",
    "ranks": "ranks that logged records or a line every rank logs (MXNet's `Starting epoch`)",
    "status": "complete, incomplete or failed",
    "failure": "cause of failure, when failed",
    "final_top1": "last evaluated top-1 accuracy, percent",
    "start_time": "first timestamp of the run, seconds since the epoch",
    "warnings": "what looked wrong, as sentences",
}


def run_columns() -> dict[str, str]:
    """The columns of the `runs` frame in words, the configuration's axes as `core.config` declares them
    now (with those a model adds)."""
    return {**_SOURCE, **{a.key: a.doc for a in config.AXES}, **_RUN}


def row_columns() -> list[str]:
    """A row of `runs`: RUN_COLUMNS, then the reported values and the metadata as logged."""
    return [*run_columns(), "reported", "meta"]


RUN_COLUMNS = run_columns()  # the common axes' (a model's own axis joins `run_columns()`)
ROW_COLUMNS = row_columns()
ITERATION_COLUMNS = {
    "source": "path of the log file",
    "run": "run index in the file",
    "line": "line of the record",
    "rank": "mpirun rank that logged it (-1 when untagged)",
    "epoch": "epoch as logged (-1 when not logged)",
    "iteration": "iteration as logged (-1 when not logged)",
    "timestamp": "seconds since the epoch",
    "elapsed": "seconds since the run's first timestamp",
    "throughput": "images/s as logged (all GPUs)",
    "loss": "loss as logged",
    "lr": "learning rate as logged",
    "steps": "iterations the record covers",
    "warmup": "skipped as warm-up by the rule",
    "measured": "used by the rule",
}
EVAL_COLUMNS = {
    "source": "path of the log file", "run": "run index in the file", "line": "line of the evaluation",
    "epoch": "epoch evaluated", "top1": "top-1 accuracy, percent", "top5": "top-5 accuracy, percent",
    "eval_throughput": "evaluation images/s", "timestamp": "seconds since the epoch",
    "elapsed": "seconds since the run's first timestamp",
}
# Only where an analyzed log names its metrics (MLLOG: an `eval_accuracy` row per metric): the others'
# evaluation frames keep EVAL_COLUMNS alone.
EVAL_NAMED_COLUMNS = {
    "metric": "the metric as the log names it (MLLOG: accuracy, or Mask R-CNN's BBOX and SEGM); NaN for others",
    "value": "its value as logged (a fraction: 0.759 is 75.9%); `top1` holds an accuracy's value, in percent",
}
LOSS_COLUMNS = {
    "source": "path of the log file",
    "run": "run index in the file",
    "line": "line of the loss component",
    "iteration": "iteration of the run's last record at or before that line (-1 when none)",
    "component": "the component's name as logged, e.g. \"FastRCNN box loss\"",
    "value": "its value as logged",
}
EPOCH_COLUMNS = {  # only runs whose rule is per epoch (MXNet's benchmark.py: `rules.METHODS["epochs"]`)
    "source": "path of the log file",
    "run": "run index in the file",
    "epoch": "epoch as logged",
    "rate": "images/s the rule gives the epoch (all GPUs): its logged per-epoch rate, else images / time of "
            "the run's measured records from the first to the epoch's end",
    "used": "the rule's value is the harmonic mean of the used epochs' rates (the first epoch is benchmark.py's "
            "-w 1 warm-up, unless it is the only one)",
    "line_start": "first line of the epoch's records the rule reads",
    "line_end": "last line of the epoch's records the rule reads",
}
EPOCH_TYPES = {"run": "int64", "epoch": "int64", "rate": "float64", "used": "bool", "line_start": "int64",
               "line_end": "int64"}  # the epochs frame's dtypes, empty or not
