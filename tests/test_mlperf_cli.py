"""`benchbook mlperf score` and tools/check_mlperf_results.py on result repositories built here."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from benchbook.cli import main
from test_mlperf_score import digests, repository

TOOL = Path(__file__).resolve().parents[1] / "tools" / "check_mlperf_results.py"
FIELDS = {"folder", "round", "benchmark", "submitter", "system", "score_minutes", "valid", "runs", "runs_failed",
          "scaling_factor", "accelerators", "accelerator", "framework", "problems"}


def test_json_lines(tmp_path, capsys):
    repository(tmp_path, (10, 30, 12, 11, 13), scaling=1.5)
    repository(tmp_path, (20, 21, 22, 23), version="v2.1", benchmark="maskrcnn", accuracies=(0.2, 0.4))
    assert main(["mlperf", "score", "--json", str(tmp_path)]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(rows) == 2 and all(FIELDS <= set(r) for r in rows)
    resnet, maskrcnn = rows
    assert resnet["score_minutes"] == pytest.approx(18.0) and resnet["valid"] and resnet["scaling_factor"] == 1.5
    assert (resnet["round"], resnet["accelerators"], resnet["accelerator"]) == ("v0.7", 16, "Widget W1")
    assert maskrcnn["score_minutes"] is None and not maskrcnn["valid"]
    assert maskrcnn["reason"] == "4 of the 5 result files maskrcnn needs"


def test_table_and_problems(tmp_path, capsys):
    folder = repository(tmp_path, system=None, overrides={0: {"status": "aborted"}, 1: {"status": "aborted"}})
    assert main(["mlperf", "score", str(folder)]) == 0
    captured = capsys.readouterr()
    assert "box8" in captured.out and "│ 3/5 " in captured.out and "converged" in captured.out
    assert "invalid: box8/resnet (v0.7): 2 runs did not converge" in " ".join(captured.out.split())
    assert "systems/box8.json: missing" in captured.err


def test_round_option(tmp_path, capsys):
    folder = repository(tmp_path)
    moved = tmp_path / "copy" / "resnet"
    moved.parent.mkdir()
    folder.rename(moved)
    assert main(["mlperf", "score", "--json", "--round", "1.0", str(moved)]) == 0
    row = json.loads(capsys.readouterr().out)
    assert row["round"] == "v1.0" and row["valid"]


def test_no_results_is_an_error(tmp_path, capsys):
    assert main(["mlperf", "score", str(tmp_path)]) == 2
    assert "no result_N.txt" in capsys.readouterr().err


def test_the_command_leaves_the_tree_byte_identical(tmp_path, capsys):
    repository(tmp_path, scaling=1.1)
    repository(tmp_path, benchmark="maskrcnn", version="v2.1", accuracies=(0.3, 0.4))
    before = digests(tmp_path)
    assert main(["mlperf", "score", str(tmp_path)]) == 0
    assert main(["mlperf", "score", "--json", str(tmp_path)]) == 0
    assert digests(tmp_path) == before


def _expected(tmp_path, score=12.0, listed=12.0):
    """A repository (12.0 minutes), its expected.yaml, and the published scores (under published/)."""
    folder = repository(tmp_path)
    name = str(folder.relative_to(tmp_path))
    expected = {name: {"benchmark": "resnet", "round": "v0.7", "submitter": "Acme", "system": "box8",
                       "result_files": 5, "score_minutes": listed}}
    (tmp_path / "expected.yaml").write_text(yaml.safe_dump(expected), encoding="utf-8")
    published = {"schema_version": 1, "title": "Acme", "round": "v0.7",
                 "source": {"repository": "mlcommons/training_results_v0.7", "commit": "0a8a85a2",
                            "url": "https://example.org/v0.7"},
                 "scores": [{"submitter": "Acme", "system": "box8", "benchmark": "resnet", "minutes": score,
                             "folder": "Acme/results/box8/resnet", "published": "a test"}]}
    (tmp_path / "published").mkdir()
    (tmp_path / "published" / "v0.7.yaml").write_text(yaml.safe_dump(published), encoding="utf-8")
    return [sys.executable, str(TOOL), str(tmp_path), "--published", str(tmp_path / "published")]


def test_check_tool_agrees(tmp_path):
    out = subprocess.run(_expected(tmp_path), capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "1 of 1 result folders as expected" in out.stdout


def test_check_tool_finds_a_wrong_score(tmp_path):
    out = subprocess.run(_expected(tmp_path, score=12.001, listed=12.001), capture_output=True, text=True)
    assert out.returncode == 1
    assert "12.000000 minutes, published 12.001 (within 0.0001; mlcommons/training_results_v0.7@0a8a85a2:" \
           "Acme/results/box8/resnet)" in out.stdout


def test_check_tool_compares_with_the_published_scores_not_expected_yaml(tmp_path):
    out = subprocess.run(_expected(tmp_path, score=12.5), capture_output=True, text=True)
    assert out.returncode == 1
    assert "expected.yaml says 12.0 minutes, the published score is 12.5" in out.stdout
    assert "12.000000 minutes, published 12.5" in out.stdout
    out = subprocess.run(_expected(tmp_path / "none", score=12.0)[:-2] + ["--published", str(tmp_path / "empty")],
                         capture_output=True, text=True)
    assert out.returncode == 1 and "no published score for it in" in out.stdout
