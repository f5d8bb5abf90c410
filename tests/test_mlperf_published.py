"""Published MLPerf scores as data (params/references/mlperf/): the shipped files, their schema's errors
(file and line), and the report comparing with them rather than with expected.yaml."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from benchbook.mlperf import published
from benchbook.mlperf.report import MLPerfReport
from test_mlperf_score import repository

ROOT = Path(__file__).resolve().parents[1]
GOOD = {"schema_version": 1, "title": "Acme", "round": "v0.7",
        "source": {"repository": "mlcommons/training_results_v0.7", "commit": "0a8a85a2",
                   "url": "https://example.org/v0.7"},
        "scores": [{"submitter": "Acme", "system": "box8", "benchmark": "resnet", "minutes": 12.0,
                    "folder": "Acme/results/box8/resnet", "published": "a test"}]}


def test_the_shipped_published_scores_are_those_of_the_shipped_set():
    files = published.files()
    assert [f.round for f in files] == ["v0.6", "v0.7", "v2.1", "v4.0", "v5.0"]
    expected = yaml.safe_load((ROOT / "examples" / "published" / "mlperf" / "expected.yaml").read_text("utf-8"))
    shared = ROOT.parent / "shared" / "mlperf-results" / "expected.yaml"  # the three more real folders, if here
    if shared.is_file():
        expected |= yaml.safe_load(shared.read_text("utf-8"))
    assert sum(len(f.scores) for f in files) == 7 if shared.is_file() else len(expected) == 4
    for name, want in expected.items():
        score, source = published.lookup(want["round"], want["submitter"], want["system"], want["benchmark"])
        assert score.minutes == want["score_minutes"]
        assert name.endswith(score.folder) and name.startswith(f"training_results_{source.round}/")
        assert want["source"].startswith(f"github {source.source.repository}@{source.source.commit}:")
    assert published.lookup("v0.7", "NVIDIA", "dgxa100_ngc20.06_mxnet", "maskrcnn") is None


def _write(tmp_path, doc) -> Path:
    path = tmp_path / "v0.7.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


def _line(path: Path, text: str) -> int:
    return next(i for i, t in enumerate(path.read_text("utf-8").splitlines(), 1) if text in t)


@pytest.mark.parametrize("change, at, message", [
    (lambda d: d["scores"][0].update(minutes="12.0"), "minutes:", "scores.0.minutes = '12.0': Input should be a "
                                                                   "valid number"),
    (lambda d: d["scores"][0].update(minutes=-1.0), "minutes:", "greater than 0"),
    (lambda d: d["source"].update(commit="main"), "commit:", "source.commit = 'main': String should match"),
    (lambda d: d["scores"][0].update(system="box 8"), "system:", "scores.0.system = 'box 8'"),
    (lambda d: d.update(extra=1), "extra:", "unknown key 'extra'"),
])
def test_bad_files_name_the_file_and_line(tmp_path, change, at, message):
    doc = yaml.safe_load(yaml.safe_dump(GOOD))
    change(doc)
    path = _write(tmp_path, doc)
    with pytest.raises(published.PublishedScoreError) as err:
        published.load(path)
    assert str(err.value).startswith(f"{path}:{_line(path, at)}: ") and message in str(err.value)


@pytest.mark.parametrize("change, message", [
    (lambda d: d.update(round="v1.0"), "is not the repository of round v1.0"),
    (lambda d: d["scores"].append(dict(d["scores"][0])), "two scores for Acme/box8/resnet"),
    (lambda d: d["scores"][0].update(folder="Acme/results/box9/resnet"), "is not Acme/results/box8/resnet"),
])
def test_inconsistent_files_are_refused(tmp_path, change, message):
    doc = yaml.safe_load(yaml.safe_dump(GOOD))
    change(doc)
    with pytest.raises(published.PublishedScoreError, match=message):
        published.load(_write(tmp_path, doc))


def test_the_report_compares_with_the_published_scores_and_names_their_source(tmp_path):
    folder = repository(tmp_path / "tree", (10, 30, 12, 11, 13))  # 12.0 minutes
    root = tmp_path / "published"
    root.mkdir()
    _write(root, GOOD)
    expected = tmp_path / "expected.yaml"  # a set's expected.yaml saying otherwise: the published data wins
    expected.write_text(yaml.safe_dump({folder.relative_to(tmp_path / "tree").as_posix(): {"score_minutes": 99.0}}))
    report = MLPerfReport(str(tmp_path / "tree"), expected=str(expected), published_root=str(root))
    compared = report.against_published()
    assert compared["published"].tolist() == [12.0] and compared["agrees"].tolist() == [True]
    assert compared["source"].tolist() == ["mlcommons/training_results_v0.7@0a8a85a2:Acme/results/box8/resnet"]
    doc = yaml.safe_load(yaml.safe_dump(GOOD))
    doc["scores"][0]["minutes"] = 12.5
    other = tmp_path / "other"
    other.mkdir()
    _write(other, doc)
    summary = MLPerfReport(str(tmp_path / "tree"), published_root=str(other)).summary().as_dict()
    assert summary["verdict"] == "not consistent"
    assert summary["deviation"] == "ratio 0.9600, deviation -4.00%"  # the reports' one form (issue 39)
