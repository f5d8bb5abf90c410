"""The parsing benchmark runs on the project's example logs and agrees with itself: benchbook and
both naive loops find the same per-iteration values, overall and for each format (no timing is
checked here: ratios are measured by `make bench` and CI, on the reference logs)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _bench():
    spec = importlib.util.spec_from_file_location("bench_analyze", ROOT / "bench" / "bench_analyze.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_bench_runs_on_the_examples_and_every_loop_finds_the_same_values(capsys):
    assert _bench().main(["--megabytes", "0.2", "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    assert "WARNING" not in out
    counts = re.findall(r"\((?:[0-9.]+) s, (\d+) values", out)
    assert len(counts) == 3 and len(set(counts)) == 1 and int(counts[0]) > 0
    assert re.search(r"ratio benchbook/naive +: +[0-9.]+x", out)
    formats = re.findall(r"^  (\w+) *: .* ratio [0-9.]+x; reading is \d+% of benchbook's time$", out, re.M)
    assert sorted(formats) == ["maskrcnn", "mxnet", "tf1"]
    assert re.search(r"^logs as they are: \d+ files, [0-9.]+ MB: .* ratio [0-9.]+x$", out, re.M)


def test_bench_fails_when_analyzing_one_log_takes_more_memory_than_the_limit(capsys):
    # One 1 MB log of each folder of example logs, each analyzed in a fresh process: none fits in 1 MB.
    assert _bench().main(["--megabytes", "0.1", "--repeat", "1", "--single-file-megabytes", "1",
                          "--memory-limit", "1"]) == 1
    out = capsys.readouterr().out
    peaks = re.findall(r"^memory: one 1 MB log of (\S+) \(\d+ records\): peak (\d+) MB resident$", out, re.M)
    assert len(peaks) >= 3 and all(int(mb) > 1 for _, mb in peaks)  # a folder of logs each
    failed = re.findall(r"^FAIL: analyzing the 1 MB log of (\S+) took \d+ MB, above the limit of 1 MB$", out, re.M)
    assert sorted(failed) == sorted(name for name, _ in peaks)
