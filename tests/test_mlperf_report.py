"""mlperf.report: what the MLPerf notebook's cells call, on a results repository built here."""

from __future__ import annotations

import json

import pytest

from benchbook.errors import BenchbookError
from benchbook.mlperf.report import MLPerfReport
from test_mlperf_score import repository


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
    summary = report.save_summary(tmp_path / "summary.json")
    assert json.loads((tmp_path / "summary.json").read_text()) == summary
    assert summary["verdict"] == "1 of 1 results valid" and summary["complete"] == 4
    with pytest.raises(BenchbookError, match="no result folder"):
        MLPerfReport(str(source), submitters="nobody")
