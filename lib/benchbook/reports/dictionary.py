"""The data dictionary: every column of the frames and data files a user builds on (`runs`, `configurations`,
`iterations`, `evaluations`, `measures`), with what it holds, its unit and its type, in one place.

The meanings are the frames' own (`logs.frames`, `reports.metrics`, `reports.tidy`): this module only gathers
them and adds the unit and type of each, so that the docs (`docs/data-dictionary.md`, written by
`tools/write_data_dictionary.py` and checked by a test) and the data files' JSON say the same.
"""

from __future__ import annotations

#: A column's unit where it has one: for rates the model's throughput unit (`ModelSpec.unit`).
RATE = "the model's throughput unit"
UNITS = {"elapsed": "s", "timestamp": "s since 1970", "start_time": "s since 1970", "throughput": RATE,
         "reported_throughput": RATE, "recomputed_throughput": RATE, "elapsed_throughput": RATE,
         "eval_throughput": RATE, "mean": RATE, "median": RATE, "std": RATE, "min": RATE, "max": RATE,
         "cv": "fraction", "efficiency": "fraction", "speedup": "ratio", "value": "`unit`"}
# The types of the columns that are no configuration axis (an axis's is its `Axis.kind`).
_INTEGER = {"line", "line_start", "line_end", "iterations", "warmup_records", "ranks", "rank", "epoch", "iteration",
            "steps", "runs", "incomplete"}
_BOOLEAN = {"warmup", "measured"}
_TEXT = {"run", "source", "format", "rule", "status", "failure", "warnings", "configuration", "metric", "name",
         "unit", "measure"}
_KINDS = {int: "integer", bool: "boolean", str: "text", float: "number"}


def kind(column: str) -> str:
    """integer, number, boolean or text: the type a data file's JSON gives the column."""
    from ..core.catalog import default

    axis = next((a for a in default().axes if a.key == column), None)
    if axis is not None:
        return _KINDS[axis.kind]
    return "integer" if column in _INTEGER else "boolean" if column in _BOOLEAN else "text" if column in _TEXT \
        else "number"


def frames() -> dict[str, dict[str, str]]:
    """Each public frame's columns in words, in the frame's order."""
    from ..core.catalog import default
    from ..logs.frames import ITERATION_COLUMNS, LOGGED_COLUMNS, MEASURE_COLUMNS, run_columns
    from . import metrics, tidy

    catalog = default()
    axes = {a.key: a.doc for a in catalog.axes}
    return {
        "runs": {**tidy.NAMED, **{k: v for k, v in run_columns(catalog).items() if k != "run"}},
        "configurations": {**axes, **metrics.STAT_COLUMNS},
        "iterations": {**tidy.NAMED, **{k: ITERATION_COLUMNS[k] for k in tidy.ITERATION_SHOWN
                                         if k in ITERATION_COLUMNS and k != "run"}, **LOGGED_COLUMNS},
        "evaluations": {**tidy.NAMED, **tidy.EVALUATION_COLUMNS},
        "measures": {**tidy.NAMED, **{k: v for k, v in MEASURE_COLUMNS.items() if k not in ("source", "run")}},
    }


def rows() -> list[dict[str, str]]:
    """One row per frame and column: frame, column, meaning, unit, type."""
    return [{"frame": frame, "column": column, "meaning": meaning, "unit": UNITS.get(column, ""),
             "type": kind(column)} for frame, columns in frames().items() for column, meaning in columns.items()]


def markdown() -> str:
    """The dictionary as the docs page: a table per frame."""
    out = ["# Data dictionary", "",
           "The columns of a report's frames (`report.runs`, `report.iterations`, `report.evaluations`, "
           "`report.measures` in a notebook) and of the data files beside each `report.html` (`runs.csv`, "
           "`configurations.csv`, `iterations.csv`, `evaluations.csv`, `measures.csv`, each with its `.json`). "
           "Written by `tools/write_data_dictionary.py` from `benchbook.reports.dictionary`.", ""]
    for frame, columns in frames().items():
        out += [f"## {frame}", "", "| column | meaning | unit | type |", "|---|---|---|---|"]
        out += [f"| `{c}` | {m.replace('|', '/')} | {UNITS.get(c, '')} | {kind(c)} |" for c, m in columns.items()]
        out.append("")
    return "\n".join(out)
