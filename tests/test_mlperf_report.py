"""mlperf.report and notebooks/mlperf (jupytext pair, thin, parameters first), executed by papermill on a
results repository built here."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import nbformat
import papermill
import pytest

from benchbook.errors import BenchbookError
from benchbook.mlperf.page import MLPerfPage
from benchbook.mlperf.report import MLPerfReport
from test_mlperf_score import repository

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "mlperf.ipynb"


@pytest.fixture
def source(tmp_path):
    repository(tmp_path, (10, 30, 12, 11, 13))
    repository(tmp_path, (60, 61, 62, 63, 64), version="v2.1", benchmark="maskrcnn", accuracies=(0.2, 0.3, 0.4),
               overrides={1: {"status": "aborted"}})
    return tmp_path


def test_sections(source):
    report = MLPerfReport(str(source))
    published = report.published()
    assert list(published["benchmark"]) == ["resnet", "maskrcnn"]
    assert list(published["minutes"]) == pytest.approx([12.0, (62 + 63 + 64) / 3])
    assert list(report.per_accelerator()["accelerator-minutes"]) == pytest.approx([12.0 * 16, 63.0 * 16])
    spread = report.spread()
    assert spread[spread["file"] == "result_1.txt"]["role"].tolist() == [
        "dropped: slowest", "dropped: did not converge (a slowest slot)"]
    evals = report.evaluations()
    assert set(evals["metric"]) == {"accuracy", "BBOX", "SEGM"}
    assert evals[evals["metric"] == "SEGM"]["target"].unique().tolist() == [0.339]
    assert len(report.curves().axes) == 3  # resnet accuracy, maskrcnn BBOX and SEGM
    assert report.initialisation()["seconds"].tolist() == pytest.approx([45.0] * 10)
    assert report.verdicts().empty


def test_filters_and_summary(source, tmp_path):
    report = MLPerfReport(str(source), benchmark="maskrcnn", submitters="acme")
    assert [f.benchmark for f in report.folders] == ["maskrcnn"]
    summary = MLPerfPage(report, out=str(tmp_path)).finish()
    assert json.loads((tmp_path / "summary.json").read_text()) == summary.as_dict()
    assert summary.kind == "mlperf" and summary.verdict == "1 of 1 results valid" and summary.complete == 4
    with pytest.raises(BenchbookError, match="no result folder"):
        MLPerfReport(str(source), submitters="nobody")


def test_notebook_is_thin_paired_and_stored_without_outputs():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    assert nb.metadata["jupytext"]["formats"] == "ipynb,py:percent"
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert "parameters" in code[0].metadata.get("tags", []) and all(not c.outputs for c in code)
    for c in code[1:]:
        assert len([line for line in c.source.splitlines() if line.strip()]) <= 5, c.source
        tree = ast.parse(c.source.rstrip(";"))
        assert not [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.For, ast.comprehension))]
    assert all(p["help"] for p in papermill.inspect_notebook(str(NOTEBOOK)).values())


def test_notebook_executes(source, tmp_path):
    out = tmp_path / "out.ipynb"
    papermill.execute_notebook(str(NOTEBOOK), str(out), parameters={"results": str(source)},
                               kernel_name="python3", progress_bar=False, cwd=str(tmp_path))
    text = json.dumps(nbformat.read(out, as_version=4).cells)
    assert "12.0000" in text and "Widget W1" in text and "dropped: did not converge" in text
    assert text.count('"image/png"') == 2  # the best time to train against accelerators, the convergence curves
    assert text.count("<img src=") == 2 and "No description" not in text  # each with its description (alt)
    assert "MLPerf Training results" in text and "mlperf-logging-s-own-checks" not in text  # check=False: no section
    assert "<th>division</th>" in text and "widget-view" not in text  # the round's table, not a dead widget


def test_notebook_sets_each_score_beside_the_published_one(source, tmp_path):
    """The comparison is a cell's own output (it was once the last line of an `if` block, which a
    notebook does not display): with a published set's expected.yaml, and without one."""
    expected = tmp_path / "expected.yaml"
    expected.write_text("training_results_v0.7/Acme/results/box8/resnet:\n  score_minutes: 12.0001\n",
                        encoding="utf-8")
    for given, shown in ((str(expected), ["12.0001", "-0.0008%"]), (None, ["no published score of these results"])):
        out = tmp_path / "out.ipynb"
        papermill.execute_notebook(str(NOTEBOOK), str(out), parameters={"results": str(source), "expected": given},
                                   kernel_name="python3", progress_bar=False, cwd=str(tmp_path))
        text = json.dumps(nbformat.read(out, as_version=4).cells)
        assert all(s in text for s in shown), (given, shown)
