"""A published report's tables as data, beside its report.html: `<table>.csv` and `<table>.json` per table.

A reader who wants the numbers (a spreadsheet, a script, another plot) takes them from these files, not from the
page. The tables, each present only where the report has it:

- `runs`: one row per run, the columns of the page's runs table (its keys, not its headers), unrounded;
- `configurations`: one row per configuration, its statistics over repeats (`metrics.STAT_COLUMNS`);
- `iterations`: one row per logged step, with its run's name and configuration (`reports.tidy`);
- `evaluations`: one row per evaluation and quality metric (long: metric, value, unit);
- `measures`: one row per run and measure (throughput, tokens/s...), with its unit and the rule that gave it;
- `comparison`: one row per published number, the recomputed one beside it, the deviation, the rule and whether it
  is within the tolerance;
- `scores` (an MLPerf report): one row per result, its score as MLCommons publishes it;
- `ratios` (a comparison of sources): each configuration's ratio to the baseline with its interval.

The CSV has one header row of column names and no index; a missing value is an empty cell. The JSON is an object:
`table`, `unit` (of the throughputs, where the table has any), `columns` (each column's name, what it holds and its
`type`: integer, number, boolean or text, in order) and `rows` (one object per row, a missing value `null`).
`load(csv)` reads a CSV back by those types: printed digits stay text ("3038.730"), an empty text cell stays "".
A text cell a spreadsheet would run as a formula (=, +, -, @, a tab or CR first) is written after an apostrophe
(OWASP's neutralisation; `load` takes it off again); the JSON holds every value as it is.
Lists (a run's warnings) are joined with "; "; an axis the logs do not give is missing (the page's "?"), and an axis
no row gives is left out.
The values are the report's own frames, unrounded: the page shows them to the digits of the published numbers.
"""

from __future__ import annotations

import csv
import html
import io
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

from ..core.catalog import default as catalog
from ..runfolder import records
from . import publish_files

if TYPE_CHECKING:  # publish reads which tables are there (`present`) without pandas: only the kernel makes frames
    import pandas as pd

# every table a report may write, in page order
NAMES = ("runs", "configurations", "iterations", "evaluations", "measures", "scores", "comparison", "ratios")
FORMATS = ("csv", "json")


UNKNOWN = "?"  # an axis value the logs do not give, as metrics.aggregate groups it: written as a missing value


def _cell(value, axis: bool):
    """One value as written: plain JSON (records.clean: NaN and NA None, numpy scalars Python's), a list (a run's
    warnings, a comparison's differences) its items joined with "; ", empty text (no warning: a CSV cannot tell
    it from a missing value) and an axis's unknown "?" None; text from a name that is not UTF-8 as UTF-8."""
    value = "; ".join(str(v) for v in value) if isinstance(value, list | tuple) else records.clean(value)
    if isinstance(value, str) and not value.isascii():  # a log's name that is not UTF-8: its bad bytes replaced
        value = os.fsencode(value).decode("utf-8", errors="replace")
    return None if isinstance(value, str) and (value == "" or (axis and value == UNKNOWN)) else value


def table_rows(frame: pd.DataFrame) -> tuple[list[str], list[list]]:
    """`frame` as written: its columns and its rows of plain values (`_cell`), without the axes no row gives (a
    ResNet-50 report has no sequence length, BERT's axis). Read once, a column at a time: pandas' operations on a
    whole frame, and its rows, cost more than writing these small tables."""
    axes = {a.key for a in catalog().axes}  # the common axes and every model's own
    columns = [str(c) for c in frame.columns]
    axis = [c in axes for c in columns]
    values = [frame.iloc[:, i].tolist() for i in range(len(columns))]  # pandas' row access is slow
    rows = [[_cell(v, a) for v, a in zip(row, axis, strict=True)] for row in zip(*values, strict=True)]
    keep = [i for i, c in enumerate(columns) if not axis[i] or any(r[i] is not None for r in rows)]
    return [columns[i] for i in keep], [[r[i] for i in keep] for r in rows]


#: What a spreadsheet reads as a formula at the start of a cell (OWASP, "CSV Injection"): a text cell that starts
#: with one is written with a leading apostrophe, so that it opens as the text it is.
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _as_text(value):
    return "'" + value if isinstance(value, str) and value.startswith(FORMULA_START) else value


def csv_text(columns: list[str], rows: list[list]) -> str:
    """A header row, then a row per row; a missing value an empty cell (never "nan" or "None"). A text column's
    cells that a spreadsheet would run as a formula are neutralised (`FORMULA_START`; a number column's -7.14 is
    a number, untouched: the column's type decides); a cell holding a CR or LF is quoted (the csv module quotes
    only the characters of its line end, so a bare CR in a file name would start a row)."""
    buffer, line = io.StringIO(), io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    quoting_cr = csv.writer(line, lineterminator="\r\n")  # its line end makes it quote a cell with a CR too
    text = [column_type([row[i] for row in rows]) == "text" for i in range(len(columns))]
    writer.writerow([_as_text(c) for c in columns])
    for row in rows:  # the csv module writes None as an empty cell, a float as repr() does: every digit
        cells = [_as_text(v) if t else v for v, t in zip(row, text, strict=True)]
        if not any(isinstance(v, str) and "\r" in v for v in cells):
            writer.writerow(cells)
            continue
        line.seek(0)
        line.truncate()
        quoting_cr.writerow(cells)
        buffer.write(line.getvalue()[:-2] + "\n")
    return buffer.getvalue()


def column_type(values) -> str:
    """A written column's type, from its values (missing ones aside): boolean, integer, number, else text."""
    given = [v for v in values if v is not None]
    if given and all(isinstance(v, bool) for v in given):
        return "boolean"
    if all(isinstance(v, int) and not isinstance(v, bool) for v in given):
        return "integer"
    if all(isinstance(v, int | float) and not isinstance(v, bool) for v in given):
        return "number"
    return "text"


def json_text(name: str, columns: list[str], rows: list[list], about: dict[str, str], unit: str | None) -> str:
    """What the table is, its columns in words and types, its rows as objects (a missing value null)."""
    types = [column_type([row[i] for row in rows]) for i in range(len(columns))]
    doc = {"table": name, "unit": unit,
           "columns": [{"name": c, "about": about.get(c, ""), "type": t} for c, t in zip(columns, types, strict=True)],
           "rows": [dict(zip(columns, row, strict=True)) for row in rows]}
    return json.dumps(doc, indent=1, allow_nan=False) + "\n"


def load(csv_path: str | Path) -> pd.DataFrame:
    """A data file's CSV read back by the types its JSON beside it gives: text as text (printed digits kept, an
    empty cell ""), integers as nullable integers, booleans as booleans, numbers as floats."""
    import pandas as pd

    path = Path(csv_path)
    header = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))
    types = {c["name"]: c["type"] for c in header["columns"]}
    numbers = {c: [""] for c, t in types.items() if t in ("integer", "number")}
    frame = pd.read_csv(path, dtype={c: str for c, t in types.items() if t in ("text", "boolean")},
                        keep_default_na=False, na_values=numbers)
    for column, kind in types.items():
        if kind == "text":  # a neutralised formula (`csv_text`) is read back as the text it was
            frame[column] = frame[column].map(lambda v: v[1:] if v[:1] == "'" and v[1:2] in FORMULA_START else v)
        if kind == "integer":
            frame[column] = frame[column].astype("Int64")
        elif kind == "boolean":
            frame[column] = frame[column].map({"True": True, "False": False, "": None}).astype("boolean")
    return frame


def write(folder: Path, tables: dict[str, tuple[pd.DataFrame, dict[str, str], str | None]]) -> list[str]:
    """Each table (name -> frame, its columns in words, unit) as `<name>.csv` and `<name>.json` in `folder`, whole
    or not at all; the names written, in `NAMES`' order. A table without a row is not written."""
    written = []
    for name in (n for n in NAMES if n in tables):
        frame, about, unit = tables[name]
        if frame is None or frame.empty:
            continue
        columns, rows = table_rows(frame)
        publish_files.write_text(folder / f"{name}.csv", csv_text(columns, rows))
        publish_files.write_text(folder / f"{name}.json", json_text(name, columns, rows, about, unit))
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


DEFAULT_RULE = "nvidia"  # every format's rule when the report names none (`Rule.name` None)


def report_tables(report) -> dict[str, tuple[pd.DataFrame, dict[str, str], str | None]]:
    """A model report's (`Report`) runs, configurations and, where it has a reference, comparison."""
    from ..logs.frames import ITERATION_COLUMNS, LOGGED_COLUMNS, MEASURE_COLUMNS, run_columns
    from . import configs, metrics
    from .sections import runs as runs_section
    from .tidy import EVALUATION_COLUMNS, NAMED

    unit = report.unit
    known = report.analysis.catalog
    named = runs_section.headers(unit, known)
    keys = {header: key for key, header in named.items()}
    runs = runs_section.table(report).rename(columns=keys)
    stats = configs.sort_frame(report.stats, report.reference) if len(report.stats) else report.stats
    axes = {a.key: a.doc for a in known.axes}
    tables = {"runs": (runs, {**run_columns(known), **RUN_KEYS}, unit),
              "configurations": (stats, {**axes, **metrics.STAT_COLUMNS}, unit),
              "iterations": (report.iterations, {**ITERATION_COLUMNS, **LOGGED_COLUMNS, **NAMED}, unit),
              "evaluations": (report.evaluations, {**EVALUATION_COLUMNS, **NAMED}, None),
              "measures": (report.measures, {**MEASURE_COLUMNS, **NAMED}, None)}
    if report.reference is not None:
        from .reference_compare import COLUMNS
        comparison = report.reproduction()
        tolerance = comparison.attrs.get("tolerance", report.reference.tolerance)
        measured = comparison["verdict"] != "not measured"
        within = (comparison["verdict"] == "reproduced").astype(object).where(measured, None)
        comparison = comparison.assign(rule=report.rule.name or DEFAULT_RULE, tolerance=tolerance,
                                       within_tolerance=within)
        tables["comparison"] = (comparison, {**COLUMNS, **COMPARISON_EXTRA}, report.reference.unit)
    return tables


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


def mlperf_tables(report) -> dict[str, tuple[pd.DataFrame, dict[str, str], str | None]]:
    """An MLPerf report's (`mlperf.report.MLPerfReport`) scores and their comparison with the published ones."""
    return {"scores": (report.published(), SCORE_COLUMNS, "minutes"),
            "comparison": (report.against_published(), MLPERF_COMPARISON_COLUMNS, "minutes")}
