"""Published sets as reports (issue 30): `benchbook publish params/published/<set>.yaml` publishes a set's
reproduction report from its shipped logs, MLPerf scores are compared with the published ones, and the
index shows the published sets apart from the runs of this machine."""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest
import yaml

from benchbook.mlperf.report import MLPerfReport
from benchbook.reports import index_page, publish
from test_mlperf_score import repository

ROOT = Path(__file__).resolve().parents[1]


def test_every_shipped_set_is_a_publish_target_with_its_publisher():
    entries = sorted((ROOT / "params" / "published").glob("*.yaml"))
    assert len(entries) >= 6
    for path in entries:
        assert publish.is_published_set(path)
        target = publish.for_published(path)
        assert target.about["publisher"] and target.about["hardware"] and target.about["software"]
        assert str(path.resolve().relative_to(ROOT)) in target.inputs  # an edited entry publishes its report again
        # relative to the repository (where the kernel runs): entry.json and code.html name no folder of this machine
        assert not [p for p in [*target.inputs, *target.parameters.values(), target.about["entry"]]
                    if str(p).startswith(("/", "~"))], (target.inputs, target.parameters)
        if target.notebook.name == "mlperf.ipynb":
            assert Path(target.parameters["expected"]).name == "expected.yaml"
            assert target.parameters["results"].endswith(".tar.xz")
        else:
            assert target.parameters["log_dir"].endswith(".tar.xz") and target.parameters["launch"] is False
            assert target.parameters["reference"], path  # each set has its published numbers as a reference
    assert not publish.is_published_set(ROOT / "params" / "resnet50_tf" / "cpu.yaml")
    pytorch = publish.for_published(ROOT / "params" / "published" / "ngc_pytorch_resnet50.yaml")
    assert pytorch.parameters["rule"] == "perf"  # the rule that printed its number, not the default


def test_mlperf_scores_are_compared_with_the_published_ones_inside_an_archive(tmp_path):
    folder = repository(tmp_path / "tree", (10, 30, 12, 11, 13))  # scored 12.0 minutes
    key = folder.relative_to(tmp_path / "tree").as_posix()
    archive = tmp_path / "results.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(tmp_path / "tree" / "training_results_v0.7", arcname="training_results_v0.7")
    expected = tmp_path / "expected.yaml"
    expected.write_text(yaml.safe_dump({key: {"score_minutes": 12.0}}))
    report = MLPerfReport(str(archive), expected=str(expected))
    compared = report.against_published()
    assert compared["agrees"].tolist() == [True] and compared["minutes"].tolist() == pytest.approx([12.0])
    assert len(report.evaluations())  # the runs are read again inside the archive, where they are
    summary = report.summary().as_dict()
    assert (summary["verdict"], summary["within"], summary["published"]) == ("consistent", 1, 1)
    expected.write_text(yaml.safe_dump({key: {"score_minutes": 12.5}}))
    summary = MLPerfReport(str(archive), expected=str(expected)).summary().as_dict()
    assert summary["verdict"] == "not consistent" and summary["within"] == 0
    assert summary["deviation"] == "ratio 0.9600, deviation -4.00%"  # the reports' one form (issue 39)


def test_the_index_shows_published_sets_apart_from_runs(tmp_path):
    published = {"name": "ngc-set", "status": "ok", "executed": "executed/x.ipynb",
                 "summary": {"title": "t", "verdict": "consistent", "within": 8, "published": 8,
                             "tolerance": "±5%", "deviation": "ratios 1.0000–1.0002, largest deviation +0.02%"},
                 "target": {"about": {"publisher": "wanghuancoder/PerformanceReport", "hardware": "8x V100",
                                      "software": "NGC 20.06 <tf1>", "title": "NGC TF1 ResNet-50"}}}
    run = {"name": "resnet50_tf-cpu", "status": "ok", "summary": {"title": "CPU", "verdict": "no reference"}}
    html = index_page.write_index(tmp_path, [run, published]).read_text()
    first, second = html.index("Published results reproduced from their logs"), html.index("Runs on this machine")
    assert first < html.index("NGC TF1 ResNet-50") < second < html.index("resnet50_tf-cpu")
    assert "8 of 8 within ±5%" in html and "largest deviation +0.02%" in html
    assert "NGC 20.06 &lt;tf1&gt;" in html  # escaped
    # a repository or a range wraps at its parts, not mid-word; a table too wide for the window scrolls
    assert "wanghuancoder/<wbr>PerformanceReport" in html and "ratios 1.0000–<wbr>1.0002" in html
    assert "overflow-wrap: anywhere" not in html
    assert html.count('<div class="scroll"><table id=') == 2 and html.count("</table></div>") == 2
    only_runs = index_page.write_index(tmp_path, [run]).read_text()
    assert "Published results" not in only_runs and "Runs on this machine" in only_runs
