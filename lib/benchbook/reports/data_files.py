"""A published report's tables as data, beside its report.html: `<table>.csv` and `<table>.json` per table.

A reader who wants the numbers (a spreadsheet, a script, another plot) takes them from these files, not from the
page. The tables, each present only where the report has it:

- `runs`: one row per run, the columns of the page's runs table (its keys, not its headers), unrounded;
- `configurations`: one row per configuration, its statistics over repeats (`metrics.STAT_COLUMNS`);
- `comparison`: one row per published number, the recomputed one beside it, the deviation, the rule and whether it
  is within the tolerance;
- `scores` (an MLPerf report): one row per result, its score as MLCommons publishes it;
- `ratios` (a comparison of sources): each configuration's ratio to the baseline with its interval.

The CSV has one header row of column names and no index; a missing value is an empty cell. The JSON is an object:
`table`, `unit` (of the throughputs, where the table has any), `columns` (each column's name and what it holds, in
order) and `rows` (one object per row, a missing value `null`). Lists (a run's warnings) are joined with "; ";
an axis the logs do not give is missing (the page's "?"), and an axis no row gives is left out.
The values are the report's own frames, unrounded: the page shows them to the digits of the published numbers.
"""

from __future__ import annotations

import html
import io
import json
from pathlib import Path
from urllib.parse import quote

import pandas as pd

from ..core import config
from ..runfolder import records
from . import metrics, publish_files

NAMES = ("runs", "configurations", "scores", "comparison", "ratios")  # every table a report may write, page order
FORMATS = ("csv", "json")


def _joined(value):
    """A list (a run's warnings, a comparison's differences) as one cell, its items joined with "; "; empty text
    (no warning) as a missing value, which a CSV cannot tell from it."""
    value = "; ".join(str(v) for v in value) if isinstance(value, list | tuple) else value
    return None if isinstance(value, str) and value == "" else value


def tidy(frame: pd.DataFrame) -> pd.DataFrame:
    """`frame` as written: a plain index, lists joined, empty text and missing values None."""
    out = frame.reset_index(drop=True)
    for column in out.columns:
        if not (pd.api.types.is_numeric_dtype(out[column]) or pd.api.types.is_bool_dtype(out[column])):
            out[column] = out[column].astype(object).map(_joined)  # pandas' text dtype would keep ""
    return out


def csv_text(frame: pd.DataFrame) -> str:
    """The CSV of a tidy frame: a header row, a missing value an empty cell (never "nan" or "None")."""
    buffer = io.StringIO()
    frame.astype(object).where(frame.notna(), None).to_csv(buffer, index=False, na_rep="", lineterminator="\n")
    return buffer.getvalue()


def json_text(name: str, frame: pd.DataFrame, columns: dict[str, str], unit: str | None) -> str:
    """The JSON of a tidy frame: what it is, its columns in words, its rows (a missing value null)."""
    rows = [records.clean(row) for row in frame.astype(object).to_dict("records")]
    doc = {"table": name, "unit": unit,
           "columns": [{"name": c, "about": columns.get(c, "")} for c in frame.columns], "rows": rows}
    return json.dumps(doc, indent=1, allow_nan=False) + "\n"


def write(folder: Path, tables: dict[str, tuple[pd.DataFrame, dict[str, str], str | None]]) -> list[str]:
    """Each table (name -> frame, its columns in words, unit) as `<name>.csv` and `<name>.json` in `folder`, whole
    or not at all; the names written, in `NAMES`' order. A table without a row is not written."""
    written = []
    for name in (n for n in NAMES if n in tables):
        frame, columns, unit = tables[name]
        if frame is None or frame.empty:
            continue
        data = tidy(frame)
        publish_files.write_text(folder / f"{name}.csv", csv_text(data))
        publish_files.write_text(folder / f"{name}.json", json_text(name, data, columns, unit))
        written.append(name)
    return written


def clear(folder: Path) -> None:
    """Remove the data of an earlier publish: a table the report no longer has must not stay linked."""
    for name in NAMES:
        for fmt in FORMATS:
            path = folder / f"{name}.{fmt}"
            if path.is_file() or path.is_symlink():
                path.unlink()


def present(folder: Path) -> list[str]:
    """The tables whose CSV and JSON are both in `folder` (what the index links)."""
    return [n for n in NAMES if all((folder / f"{n}.{fmt}").is_file() for fmt in FORMATS)]


def links(names: list[str], prefix: str = "") -> str:
    """The links to the files of `names`, relative (`prefix`: the report's folder, from the index)."""
    return " · ".join(f'<a href="{html.escape(quote(prefix + name + "." + fmt))}">{html.escape(name)}.{fmt}</a>'
                      for name in names if name in NAMES for fmt in FORMATS)


def link_line(names: list[str]) -> tuple[str, str]:
    """The page's "data: runs.csv · runs.json · ..." (markup, plain), or empty strings without data."""
    if not names:
        return "", ""
    return "data: " + links(names), "data: " + " · ".join(f"{n}.{fmt}" for n in names for fmt in FORMATS)


# --- a model report's tables ------------------------------------------------------------------------------

RUN_KEYS = {"run": "run id (its folder in the study folder) or, analysis-only, log file:run index in the file"}
COMPARISON_EXTRA = {
    "rule": "the named rule the measured number was recomputed with (`benchbook formats`; nvidia: each format's "
            "default)",
    "tolerance": "the largest |ratio - 1| that counts as reproduced",
    "within_tolerance": "the verdict is reproduced: |ratio - 1| <= tolerance (empty where not measured)",
}


UNKNOWN = "?"  # an axis value the logs do not give, as metrics.aggregate groups it
DEFAULT_RULE = "nvidia"  # every format's rule when the report names none (`Rule.name` None)


def _known_axes(frame: pd.DataFrame) -> pd.DataFrame:
    """`frame` without the axes no row gives (a ResNet-50 report has no sequence length, BERT's axis)."""
    empty = [a.key for a in config.AXES if a.key in frame and frame[a.key].isna().all()]
    return frame.drop(columns=empty)


def report_tables(report) -> dict[str, tuple[pd.DataFrame, dict[str, str], str | None]]:
    """A model report's (`Report`) runs, configurations and, where it has a reference, comparison."""
    from ..logs.frames import run_columns
    from . import configs
    from .sections import runs as runs_section

    unit = report.unit
    named = runs_section.headers(unit)
    keys = {header: key for key, header in named.items()}
    runs = runs_section.table(report).rename(columns=keys)
    stats = configs.sort_frame(report.stats, report.reference) if len(report.stats) else report.stats
    stats = _known_axes(stats.astype(object).where(stats != UNKNOWN, None))  # grouped as "?": unknown, empty
    axes = {a.key: a.doc for a in config.AXES}
    tables = {"runs": (runs, {**run_columns(), **RUN_KEYS}, unit),
              "configurations": (stats, {**axes, **metrics.STAT_COLUMNS}, unit)}
    if report.reference is not None:
        from .reference_compare import COLUMNS
        comparison = report.reproduction()
        tolerance = comparison.attrs.get("tolerance", report.reference.tolerance)
        measured = comparison["verdict"] != "not measured"
        within = (comparison["verdict"] == "reproduced").astype(object).where(measured, None)
        comparison = comparison.assign(rule=report.rule.name or DEFAULT_RULE, tolerance=tolerance,
                                       within_tolerance=within)
        tables["comparison"] = (_known_axes(comparison), {**COLUMNS, **COMPARISON_EXTRA}, report.reference.unit)
    return tables


def write_report(report, folder: Path) -> list[str]:
    """A model report's tables beside its page (`folder`, where report.html goes); the names written."""
    return write(folder, report_tables(report))


# --- an MLPerf report's tables ----------------------------------------------------------------------------

SCORE_COLUMNS = {
    "round": "MLPerf Training round (v1.0...)", "submitter": "the submitting organisation",
    "system": "the system's name in the results repository", "benchmark": "the benchmark (resnet, bert...)",
    "accelerators": "accelerators of the result", "accelerator": "the accelerator's name",
    "framework": "framework as the system description gives it",
    "minutes": "the score by the MLPerf rule: the mean of the counted runs' minutes, times scaling.json's factor",
    "valid": "yes, or no and why (too few runs, a run that did not converge...)",
}
MLPERF_COMPARISON_COLUMNS = {
    "result": "submitter, system, benchmark and round", "published": "the published score, minutes",
    "minutes": "the score recomputed from the result files by the MLPerf rule, minutes",
    "deviation": "minutes / published - 1", "agrees": "within 0.0001 minutes (the 4 decimals published)",
    "source": "where the published score comes from (results repository@commit, or the set's expected.yaml)",
}


def write_mlperf(report, folder: Path) -> list[str]:
    """An MLPerf report's (`mlperf.report.MLPerfReport`) scores and their comparison with the published ones."""
    return write(folder, {"scores": (report.published(), SCORE_COLUMNS, "minutes"),
                          "comparison": (report.against_published(), MLPERF_COMPARISON_COLUMNS, "minutes")})
