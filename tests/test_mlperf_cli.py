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
    assert "box8" in captured.out and "3/5 converged" in captured.out
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


def _expected(tmp_path, score=12.0):
    folder = repository(tmp_path)
    name = str(folder.relative_to(tmp_path))
    expected = {name: {"benchmark": "resnet", "round": "v0.7", "submitter": "Acme", "system": "box8",
                       "result_files": 5, "score_minutes": score}}
    (tmp_path / "expected.yaml").write_text(yaml.safe_dump(expected), encoding="utf-8")


def test_check_tool_agrees(tmp_path):
    _expected(tmp_path)
    out = subprocess.run([sys.executable, str(TOOL), str(tmp_path)], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "1 of 1 result folders as expected" in out.stdout


def test_check_tool_finds_a_wrong_score(tmp_path):
    _expected(tmp_path, score=12.001)
    out = subprocess.run([sys.executable, str(TOOL), str(tmp_path)], capture_output=True, text=True)
    assert out.returncode == 1
    assert "12.000000 minutes, expected 12.001 (within 0.0001)" in out.stdout
