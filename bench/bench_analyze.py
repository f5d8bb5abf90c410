"""Benchmark: `benchbook analyze` against a naive line-by-line regex loop, in the same run.

Builds a corpus of at least `--megabytes` MB by repeating the logs of `--source` (one file per
format, the source files concatenated until big enough), then times, on the same files:
- naive: `for line in file: m = pattern.search(line)` extracting the same per-iteration values;
- benchbook: `benchbook.analyze` (detection, rank demultiplexing, runs, metadata, recompute).
Prints both throughputs in MB/s and their ratio (benchbook / naive), best of `--repeat` runs each,
and checks both found the same number of per-iteration values. With `--memory-file N` it also
writes one N MB log and reports the peak memory of analyzing it in a fresh process.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import benchbook

NAIVE = re.compile(
    r"(?:total_ips|imgs_per_sec) : ([0-9.eE+-]+)|Speed: ([0-9.eE+-]+) samples/sec|INFO    : throughput: ([0-9.]+)"
)


def build_corpus(source: Path, out: Path, megabytes: float) -> list[Path]:
    """One big file per source file, each the source repeated, together at least `megabytes` MB."""
    files = sorted(p for p in source.rglob("*") if p.is_file() and p.suffix in (".txt", ".log"))
    if not files:
        raise SystemExit(f"no .txt or .log files under {source}")
    total = sum(p.stat().st_size for p in files)
    times = max(1, int(megabytes * 1e6 / total + 0.999))
    written = []
    for p in files:
        data = p.read_bytes()
        target = out / p.relative_to(source)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data * times)
        written.append(target)
    return written


def naive(files: list[Path]) -> int:
    count = 0
    for p in files:
        with open(p, encoding="utf-8", errors="replace") as f:
            for line in f:
                m = NAIVE.search(line)
                if m:
                    float(m.group(1) or m.group(2) or m.group(3))
                    count += 1
    return count


def best(fn, repeat: int):
    times, result = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t)
    return min(times), result


def peak_memory(path: Path) -> float:
    """Peak resident MB of a fresh process that analyzes one file."""
    code = ("import resource, benchbook, sys; a = benchbook.analyze([sys.argv[1]]); "
            "print(len(a.iterations), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)")
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True)
    records, mb = out.stdout.split()
    print(f"memory: analyzing one {path.stat().st_size / 1e6:.0f} MB log ({records} records) "
          f"peaked at {float(mb):.0f} MB resident")
    return float(mb)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--source", type=Path, default=Path(__file__).resolve().parents[1] / "examples" / "logs")
    p.add_argument("--megabytes", type=float, default=40)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--memory-file", type=float, metavar="MB", help="also measure peak memory on one MB-sized log")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        files = build_corpus(args.source, Path(tmp), args.megabytes)
        size = sum(f.stat().st_size for f in files) / 1e6
        t_naive, n_naive = best(lambda: naive(files), args.repeat)
        t_bb, analysis = best(lambda: benchbook.analyze(files), args.repeat)
        n_bb = int(analysis.iterations["throughput"].notna().sum())
        print(f"corpus: {size:.1f} MB in {len(files)} files from {args.source}")
        print(f"naive line loop : {size / t_naive:8.1f} MB/s ({t_naive:.2f} s, {n_naive} values)")
        print(f"benchbook       : {size / t_bb:8.1f} MB/s ({t_bb:.2f} s, {n_bb} values, "
              f"{len(analysis.runs)} runs, {len(analysis.problems)} problems)")
        print(f"ratio benchbook/naive: {t_naive / t_bb:.2f}x")
        if n_naive != n_bb:
            print(f"WARNING: the two found different numbers of values ({n_naive} vs {n_bb})")
        if args.memory_file:
            big = Path(tmp) / "big.log"
            data = files[0].read_bytes()
            with open(big, "wb") as f:
                for _ in range(max(1, int(args.memory_file * 1e6 / len(data)))):
                    f.write(data)
            peak_memory(big)
    return 0


if __name__ == "__main__":
    sys.exit(main())
