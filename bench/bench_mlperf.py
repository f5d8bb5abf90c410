"""Benchmark: `benchbook mlperf score DIR --json` end to end against a plain loop end to end.

The corpus is `--copies` copies of `--source` (default: ../shared/mlperf-results, its four result
folders in the repository layout), each copy its own folder. Both sides run as fresh processes on
the same folder, taking turns (best of `--repeat`), so that both see the same load:

- plain: `python bench_mlperf.py --plain DIR`: for every result_N.txt, `for line in file:` and
  `json.loads` of what follows every `:::MLLOG ` token; it prints one line with the record count.
- benchbook: `benchbook mlperf score DIR --json` (both line forms, the runs, evaluations, targets,
  systems files, the score of every folder, one JSON object per folder).

Prints both times and the ratio plain/benchbook (1.0: as fast as the plain loop; the target is 0.8).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOKEN = ":::MLLOG "


def plain(folder: Path) -> int:
    """The plain loop: json.loads every :::MLLOG line of every result file."""
    records = 0
    for path in sorted(folder.rglob("result_*.txt")):
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                at = line.find(TOKEN)
                if at >= 0:
                    json.loads(line[at + len(TOKEN):])
                    records += 1
    return records


def build_corpus(source: Path, out: Path, copies: int) -> int:
    """`copies` copies of `source` (its result folders and systems files), each in its own folder."""
    if not any(source.rglob("result_*.txt")):
        raise SystemExit(f"no result_N.txt under {source}")
    for i in range(copies):
        shutil.copytree(source, out / f"copy-{i:03d}", ignore=shutil.ignore_patterns("expected.yaml", "*.md"))
    return sum(p.stat().st_size for p in out.rglob("*") if p.is_file())


def _best(cmd: list[str], repeat: int) -> tuple[float, str]:
    best, out = float("inf"), ""
    for _ in range(repeat):
        start = time.perf_counter()
        done = subprocess.run(cmd, capture_output=True, text=True, check=True)
        best, out = min(best, time.perf_counter() - start), done.stdout
    return best, out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--source", type=Path, default=ROOT.parent / "shared" / "mlperf-results")
    p.add_argument("--copies", type=int, default=20)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--plain", type=Path, metavar="DIR", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.plain:
        print(f"{plain(args.plain)} MLLOG records")
        return 0
    with tempfile.TemporaryDirectory(prefix="bench-mlperf-") as tmp:
        corpus = Path(tmp)
        size = build_corpus(args.source, corpus, args.copies)
        plain_cmd = [sys.executable, str(Path(__file__).resolve()), "--plain", str(corpus)]
        ours_cmd = [sys.executable, "-m", "benchbook.cli", "mlperf", "score", "--json", str(corpus)]
        plain_s = ours_s = float("inf")
        for _ in range(args.repeat):  # taking turns: both sides see the same load
            t, plain_out = _best(plain_cmd, 1)
            plain_s = min(plain_s, t)
            t, ours_out = _best(ours_cmd, 1)
            ours_s = min(ours_s, t)
        folders = len(ours_out.splitlines())
        print(f"corpus: {args.copies} copies of {args.source} ({size / 1e6:.1f} MB)")
        print(f"plain loop (json.loads every :::MLLOG line), end to end: {plain_s:.2f} s ({plain_out.strip()})")
        print(f"benchbook mlperf score --json, end to end: {ours_s:.2f} s ({folders} result folders)")
        print(f"ratio plain/benchbook (target >= 0.8): {plain_s / ours_s:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
