"""A published report's tables as data (issue 40, item 5): CSV and JSON beside report.html, linked from the page
and the index, each value the report's own (its frames, unrounded), a missing value an empty cell or null."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from benchbook.core import catalog
from benchbook.mlperf import page as mlperf_page
from benchbook.mlperf.report import MLPerfReport
from benchbook.reports import configs, data_files, index_page, publish_files
from benchbook.reports.report import Report
from benchbook.reports.sections import Page, opening
from benchbook.reports.sections import runs as runs_section
from benchbook.runfolder import records
from test_mlperf_page import _Hrefs
from test_mlperf_score import repository

FIXTURES = Path(__file__).parent / "fixtures"
AXES = {a.key for a in catalog.default().axes}


def _hrefs(markup: str) -> list[str]:
    parser = _Hrefs()
    parser.feed(markup)
    return parser.hrefs


@pytest.fixture(scope="module")
def report() -> Report:
    """The MXNet fixture logs against the MXNet reference: runs, configurations and a comparison."""
    return Report(log_dir=FIXTURES / "ngc_mxnet", reference="ngc_mxnet_resnet50")


@pytest.fixture(scope="module")
def written(report, tmp_path_factory) -> tuple[Path, list[str]]:
    folder = tmp_path_factory.mktemp("report")
    return folder, data_files.write(folder, data_files.report_tables(report))


def _same(a, b) -> bool:
    """Two cells equal as data: both missing, equal numbers, or equal as text."""
    missing = [(isinstance(x, str) and x == "") or (not isinstance(x, str) and pd.isna(x)) for x in (a, b)]
    if all(missing):
        return True
    if any(missing):
        return False
    try:
        return float(a) == float(b) and not isinstance(a, bool) and not isinstance(b, bool)
    except (TypeError, ValueError):
        return str(a) == str(b)


def _as_frame(path: Path) -> pd.DataFrame:
    return pd.read_csv(path, keep_default_na=False, dtype=str)


def _expected(value):
    """A report's value as the data holds it: a list "; "-joined, no text and an unknown axis ("?") missing."""
    if isinstance(value, list | tuple):
        value = "; ".join(map(str, value))
    if isinstance(value, str) and value in ("", "?"):
        return None
    return str(value) if isinstance(value, bool | np.bool_) else value


def _equal(csv_frame: pd.DataFrame, frame: pd.DataFrame) -> list[str]:
    """Where the CSV differs from the report's frame, cell by cell; a column of the frame the CSV leaves out must
    be an axis no row gives."""
    left_out = [c for c in frame.columns if c not in csv_frame]
    wrong = [f"{c} left out, though given" for c in left_out
             if c not in AXES or frame[c].map(_expected).notna().any()]
    wrong += [] if list(csv_frame.columns) == [c for c in frame.columns if c in csv_frame] else ["column order"]
    wrong += [] if len(csv_frame) == len(frame) else [f"{len(csv_frame)} rows, not {len(frame)}"]
    for i in range(min(len(csv_frame), len(frame))):
        for c in (c for c in frame.columns if c in csv_frame):
            want = _expected(frame.iloc[i][c])
            if not _same(csv_frame.iloc[i][c], want):
                wrong.append(f"row {i} {c}: {csv_frame.iloc[i][c]!r} in the CSV, {want!r} in the report")
    return wrong


def test_a_model_report_writes_its_runs_configurations_and_comparison(written):
    folder, names = written
    assert names == ["runs", "configurations", "iterations", "evaluations", "measures", "comparison"]
    assert data_files.present(folder) == names
    for name in names:
        assert (folder / f"{name}.csv").is_file() and (folder / f"{name}.json").is_file()


def test_the_runs_csv_holds_the_pages_runs_table_unrounded(report, written):
    folder, _ = written
    runs = _as_frame(folder / "runs.csv")
    assert list(runs.columns) == [c for c in runs_section.RUN_TABLE if c != "repeat"]  # no log gives a repeat
    page = runs_section.table(report)  # the page's table before its digits: the same rows, named by headers
    assert _equal(runs, page.set_axis(runs_section.RUN_TABLE, axis=1)) == []
    # the number a page rounds is there whole: 605.0686... logged, shown as 605.07
    assert "605.0686123748287" in set(runs["recomputed_throughput"])


def test_the_configurations_csv_is_the_reports_statistics(report, written):
    folder, _ = written
    stats = configs.sort_frame(report.stats, report.reference)
    shown = _as_frame(folder / "configurations.csv")
    assert {"runs", "mean", "median", "std", "min", "max"} <= set(shown.columns)
    assert "seq_len" not in shown  # an axis no row gives (BERT's) is left out
    assert _equal(shown, stats) == []


def test_the_comparison_csv_has_each_published_number_the_recomputed_one_and_whether_it_holds(report, written):
    folder, _ = written
    comparison = report.reproduction()
    shown = _as_frame(folder / "comparison.csv")
    assert {"published", "measured", "ratio", "delta_pct", "rule", "tolerance", "within_tolerance"} <= set(shown)
    assert _equal(shown[[c for c in comparison if c in shown]], comparison) == []
    assert set(shown["rule"]) == {"nvidia"}
    measured = shown["verdict"] != "not measured"
    assert set(shown.loc[~measured, "within_tolerance"]) == {""}
    assert list(shown.loc[measured, "within_tolerance"]) == [str(v == "reproduced")
                                                             for v in shown.loc[measured, "verdict"]]


def test_no_cell_says_nan_or_none_and_the_json_holds_the_csvs_rows_with_null(written):
    folder, names = written
    for name in names:
        with (folder / f"{name}.csv").open(newline="") as f:
            rows = list(csv.reader(f))
        cells = {cell.lower() for row in rows[1:] for cell in row}
        assert not cells & {"nan", "none", "null", "<na>", "nat"}, name
        doc = json.loads((folder / f"{name}.json").read_text())
        assert doc["table"] == name and [c["name"] for c in doc["columns"]] == rows[0]
        assert all(c["about"] for c in doc["columns"]), f"{name}: a column without its description"
        assert len(doc["rows"]) == len(rows) - 1
        for row, cells_of in zip(doc["rows"], rows[1:], strict=True):
            for (column, value), cell in zip(row.items(), cells_of, strict=True):
                assert (value is None) == (cell == ""), (name, column, value, cell)
                assert value is None or _same(value if not isinstance(value, bool) else str(value), cell)
    assert json.loads((folder / "runs.json").read_text())["unit"] == "images/s"


def test_the_published_page_links_its_data_beside_it(report, tmp_path):
    here = tmp_path / "reports" / "mxnet"
    here.mkdir(parents=True)
    page = Page(report, out=str(here))
    links = opening.navigation(page)
    page.finish()
    data = [h for h in _hrefs(links.markup) if h.endswith((".csv", ".json"))]
    assert data == [f"{n}.{f}" for n in ("runs", "configurations", "iterations", "evaluations", "measures",
                                         "comparison")
                    for f in ("csv", "json")]
    assert all((here / h).is_file() for h in data)
    assert "data: runs.csv · runs.json · configurations.csv" in links.plain


def test_an_earlier_publishs_tables_are_cleared_and_no_longer_present(tmp_path):
    for name in ("comparison", "runs"):
        for fmt in data_files.FORMATS:
            (tmp_path / f"{name}.{fmt}").write_text("old")
    (tmp_path / "scores.csv").write_text("only the CSV")
    assert data_files.present(tmp_path) == ["runs", "comparison"]
    data_files.clear(tmp_path)
    assert data_files.present(tmp_path) == [] and not list(tmp_path.iterdir())


def test_a_table_without_rows_is_not_written(tmp_path):
    assert data_files.write(tmp_path, {"runs": (pd.DataFrame(columns=["run"]), {"run": "r"}, None)}) == []
    assert not list(tmp_path.iterdir())


def test_the_index_links_each_reports_data_and_nothing_an_entry_names_otherwise(tmp_path):
    entries = [{"name": "a", "status": "ok", "summary": {}, "data": ["runs", "configurations"]},
               {"name": "b", "status": "ok", "summary": {}, "data": ["../../etc/passwd", "javascript:x"]},
               {"name": "c", "status": "ok", "summary": {}}]
    hrefs = _hrefs(index_page.write_index(tmp_path, entries).read_text())
    data = [h for h in hrefs if h.endswith((".csv", ".json"))]
    assert data == ["a/runs.csv", "a/runs.json", "a/configurations.csv", "a/configurations.json"]
    assert not any("passwd" in h or h.startswith("javascript") for h in hrefs)


def test_an_entry_whose_data_is_not_a_list_of_names_is_unreadable(tmp_path):
    path = tmp_path / "entry.json"
    records.write(path, {"name": "a", "data": "runs"})
    with pytest.raises(records.RecordError, match="field data"):
        publish_files.read_entry(path)


def test_an_mlperf_report_writes_its_scores_and_the_published_comparison(tmp_path):
    root = tmp_path / "results"
    repository(root, (10, 30, 12, 11, 13))
    expected = tmp_path / "expected.yaml"
    expected.write_text("training_results_v0.7/Acme/results/box8/resnet:\n  score_minutes: 12.0\n", encoding="utf-8")
    report = MLPerfReport(str(root), expected=str(expected))
    here = tmp_path / "reports" / "set"
    here.mkdir(parents=True)
    page = mlperf_page.MLPerfPage(report, out=str(here))
    links = mlperf_page.navigation(page)
    page.finish()
    assert [h for h in _hrefs(links.markup) if h.endswith((".csv", ".json"))] == [
        "scores.csv", "scores.json", "comparison.csv", "comparison.json"]  # (no iterations: no model report)
    scores = _as_frame(here / "scores.csv")
    assert _equal(scores, report.published()) == []
    assert _equal(_as_frame(here / "comparison.csv"), report.against_published()) == []
    assert float(scores["minutes"].iloc[0]) == 12.0


def test_a_csv_cell_that_a_spreadsheet_would_run_stays_text(tmp_path):
    """Issue 49, cause 6: a text cell starting with =, +, -, @, a tab or a CR (a log's file name, a precision read
    from a log, a submitter) reached the CSV as a formula, and a bare CR was not quoted (csv.reader read another
    row). Now each is neutralised by OWASP's rule in every CSV benchbook writes; a number column's -7.14 is a
    number, untouched; the JSON keeps the values; `load` reads the texts back."""
    import csv as csv_module
    import json

    import pandas as pd

    frame = pd.DataFrame({"run": ["=HYPERLINK(\"http://x\")", "+1", "-cmd|' /C calc'!A0", "@SUM(A1)", "\tx",
                                  "a\rb", "plain"],
                          "delta": [-7.14, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0]})
    assert data_files.write(tmp_path, {"runs": (frame, {}, None)}) == ["runs"]
    with open(tmp_path / "runs.csv", newline="", encoding="utf-8") as f:
        rows = list(csv_module.reader(f))
    assert len(rows) == 8  # the header and seven rows: the CR stayed inside its quoted cell
    assert [r[0][0] for r in rows[1:6]] == ["'"] * 5 and rows[6][0] == "a\rb" and rows[7][0] == "plain"
    assert rows[1][1] == "-7.14"  # a number, not neutralised
    back = data_files.load(tmp_path / "runs.csv")
    assert back["run"].tolist() == frame["run"].tolist() and back["delta"].tolist() == frame["delta"].tolist()
    doc = json.loads((tmp_path / "runs.json").read_text(encoding="utf-8"))
    assert [r["run"] for r in doc["rows"]] == frame["run"].tolist()
