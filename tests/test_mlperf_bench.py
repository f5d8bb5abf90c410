"""bench/bench_mlperf.py runs both sides end to end on the same copies (no timing is checked here: the
ratio is measured by `python bench/bench_mlperf.py` on ../shared/mlperf-results)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

from test_mlperf_score import repository

ROOT = Path(__file__).resolve().parents[1]


def _bench():
    spec = importlib.util.spec_from_file_location("bench_mlperf", ROOT / "bench" / "bench_mlperf.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_both_sides_read_the_same_copies(tmp_path, capsys):
    source = tmp_path / "results"
    repository(source)
    repository(source, version="v2.1", benchmark="maskrcnn", accuracies=(0.3, 0.4))
    assert _bench().main(["--source", str(source), "--copies", "3", "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    records = re.search(r"^plain loop .*: [0-9.]+ s \((\d+) MLLOG records\)$", out, re.M)
    folders = re.search(r"^benchbook mlperf score --json, end to end: [0-9.]+ s \((\d+) result folders\)$", out,
                        re.M)
    assert records and folders and re.search(r"^ratio plain/benchbook \(target >= 0.8\): [0-9.]+x$", out, re.M)
    assert int(folders.group(1)) == 2 * 3
    per_copy = sum(p.read_text().count(":::MLLOG ") for p in source.rglob("result_*.txt"))
    assert int(records.group(1)) == 3 * per_copy


def test_plain_loop_counts_mllog_lines_only(tmp_path):
    (tmp_path / "result_0.txt").write_text(':::MLLOG {"key": "a"}\n:::MLL 1.0 b: {}\nx\n[0] :::MLLOG {}\n')
    assert _bench().plain(tmp_path) == 2
