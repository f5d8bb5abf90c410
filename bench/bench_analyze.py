"""Benchmark: `benchbook analyze DIR --json` end to end against a naive regex loop end to end.

What a user meets is the command on a folder of real-size logs, start-up included. So the corpus
is `--copies` copies of the logs of `--source` (the 20 reference logs, 40 copies: 800 files, about
41 MB), each copy its own folder of files of their real size, and both sides run as fresh
processes on the same folder, taking turns (best of `--repeat`), so that both see the same load
on a shared machine:

- naive: `python bench_analyze.py --naive DIR`, what a user who knows the formats writes: each
  file gets the pattern of its format, chosen from its first 64 KiB, then `for line in file:
  m = pattern.search(line)`; every match gives the per-iteration values benchbook extracts,
  converted (`datetime.fromisoformat(...).timestamp()`, `int()`, `float()`) and kept as records
  (Mask R-CNN: each value stored in the record its last `timestamp` line opened); it prints one
  JSON line a file with its record count and mean throughput.
- benchbook: `benchbook analyze DIR --json` (format detection, rank tags, several runs per file,
  metadata, the warm-up rule, recomputed throughputs, summaries, one JSON object a run).

Prints both times, the ratio naive/benchbook (>= 1.0: benchbook is at least as fast), and the
start-up time of `benchbook formats`. With `--single-file-megabytes N` it also writes, for each
format (each folder of `--source`), one N MB log of its logs repeated, and reports the peak
resident memory of analyzing it in a fresh process; with `--memory-limit MB` it exits 1 when a
peak is above MB (CI: 400 MB logs within 1000 MB).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

_NUM = r"([0-9.eE+-]+)"
_TF1 = r"DLL (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+) - \((\d+), (\d+)\) (?:total_ips|imgs_per_sec) : " + _NUM
_MXNET = (r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}):INFO: Epoch\[(\d+)\] Batch \[(\d+)-(\d+)\]\tSpeed: " + _NUM
          + r" samples/sec(?:\tLR: " + _NUM + ")?")
_MASKRCNN = (r"\[MaskRCNN\] INFO    : (?:timestamp: ([0-9.]+)|iteration: (\d+)|throughput: " + _NUM
             + r"|Total loss: " + _NUM + r"|Learning rate: " + _NUM + ")")
PATTERNS = {"tf1": re.compile(_TF1), "mxnet": re.compile(_MXNET), "maskrcnn": re.compile(_MASKRCNN)}
ROOT = Path(__file__).resolve().parents[1]


def _logs(source: Path) -> list[Path]:
    """The logs under `source`: its .txt and .log files, in path order."""
    return sorted(p for p in source.rglob("*") if p.is_file() and p.suffix in (".txt", ".log"))


def build_corpus(source: Path, out: Path, copies: int) -> list[Path]:
    """`copies` copies of the logs of `source`, each in its own folder, files of their real size."""
    files = _logs(source)
    if not files:
        raise SystemExit(f"no .txt or .log files under {source}")
    written = []
    for i in range(copies):
        for p in files:
            target = out / f"copy-{i:03d}" / p.relative_to(source)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(p, target)
            written.append(target)
    return written


def _kind(path: Path) -> str:
    with open(path, encoding="utf-8", errors="replace") as f:
        head = f.read(64 << 10)
    return "maskrcnn" if "[MaskRCNN]" in head else "mxnet" if "Speed: " in head else "tf1"


def naive_file(path: Path) -> list:
    """The per-iteration records of one file, the naive way (the pattern of the file's format)."""
    kind = _kind(path)
    pattern = PATTERNS[kind]
    records: list = []
    record: dict = {}
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            m = pattern.search(line)
            if not m:
                continue
            if kind == "tf1":
                stamp, epoch, iteration, rate = m.groups()
                records.append({"timestamp": datetime.fromisoformat(stamp).timestamp(), "epoch": int(epoch),
                                "iteration": int(iteration), "throughput": float(rate)})
            elif kind == "mxnet":
                stamp, epoch, first, last, rate, lr = m.groups()
                records.append({"timestamp": datetime.fromisoformat(stamp).timestamp(), "epoch": int(epoch),
                                "first": int(first), "last": int(last), "throughput": float(rate),
                                "lr": float(lr) if lr else None})
            else:
                stamp, iteration, rate, loss, lr = m.groups()
                if stamp is not None:
                    record = {"timestamp": float(stamp)}
                    records.append(record)
                elif iteration is not None:
                    record["iteration"] = int(iteration)
                elif rate is not None:
                    record["throughput"] = float(rate)
                elif loss is not None:
                    record["loss"] = float(loss)
                else:
                    record["lr"] = float(lr)
    return [r for r in records if "throughput" in r]


def naive_main(folder: Path) -> int:
    """The naive program: one JSON line a log under `folder`, its record count and mean rate."""
    for p in _logs(folder):
        rates = [r["throughput"] for r in naive_file(p)]
        print(json.dumps({"source": str(p), "records": len(rates),
                          "mean_throughput": sum(rates) / len(rates) if rates else None}))
    return 0


def _commands(folder: Path) -> dict[str, list[str]]:
    return {"naive": [sys.executable, str(Path(__file__).resolve()), "--naive", str(folder)],
            "benchbook": [sys.executable, "-m", "benchbook", "analyze", str(folder), "--json"]}


def timed(commands: dict[str, list[str]], repeat: int) -> tuple[dict[str, float], dict[str, str]]:
    """(best wall seconds, last stdout) of each command, run as fresh processes taking turns in an
    order rotated at every turn."""
    best = dict.fromkeys(commands, float("inf"))
    out: dict[str, str] = {}
    names = list(commands)
    for turn in range(repeat):
        for name in names[turn % len(names):] + names[: turn % len(names)]:
            t = time.perf_counter()
            done = subprocess.run(commands[name], capture_output=True, text=True, check=False)
            best[name] = min(best[name], time.perf_counter() - t)
            if done.returncode != 0:
                raise SystemExit(f"{name} failed ({done.returncode}): {done.stderr[-2000:]}")
            out[name] = done.stdout
    return best, out


def peak_memory(path: Path) -> tuple[int, float]:
    """(records, peak resident MB) of a fresh process that analyzes one file."""
    code = ("import resource, benchbook, sys; a = benchbook.analyze([sys.argv[1]]); "
            "print(len(a.iterations), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)")
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True)
    records, kib = out.stdout.split()
    return int(records), int(kib) * 1024 / 1e6


def single_files(source: Path, out: Path, megabytes: float) -> dict[str, float]:
    """For each folder of logs under `source` (a format), one `megabytes` MB log of them repeated,
    and the peak memory of analyzing it: {folder: peak resident MB}."""
    peaks = {}
    logs = _logs(source)
    for folder in sorted({p.parent for p in logs}):
        data = b"".join(p.read_bytes() for p in logs if p.parent == folder)
        big = out / f"{folder.name}.log"
        with open(big, "wb") as f:
            for _ in range(max(1, int(megabytes * 1e6 / len(data) + 0.999))):
                f.write(data)
        records, mb = peak_memory(big)
        print(f"memory: one {big.stat().st_size / 1e6:.0f} MB log of {folder.name} ({records} records): "
              f"peak {mb:.0f} MB resident")
        big.unlink()
        peaks[folder.name] = mb
    return peaks


def startup(repeat: int) -> float:
    """Best wall seconds of `benchbook formats` in a fresh process."""
    best, _ = timed({"formats": [sys.executable, "-m", "benchbook", "formats"]}, repeat)
    return best["formats"]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--source", type=Path, default=ROOT / "examples" / "logs")
    p.add_argument("--copies", type=int, default=40, help="copies of the source logs in the corpus (default 40)")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--naive", type=Path, metavar="DIR", help=argparse.SUPPRESS)  # the naive program itself
    p.add_argument("--single-file-megabytes", type=float, metavar="MB",
                   help="also measure the peak memory of analyzing one MB-sized log of each format")
    p.add_argument("--memory-limit", type=float, metavar="MB",
                   help="with --single-file-megabytes: exit 1 when a peak is above MB (400 MB logs in 1 GB)")
    args = p.parse_args(argv)
    if args.naive is not None:
        return naive_main(args.naive)
    if args.memory_limit is not None and not args.single_file_megabytes:
        p.error("--memory-limit needs --single-file-megabytes: the limit is on analyzing those logs")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "corpus"
        files = build_corpus(args.source, folder, args.copies)
        size = sum(f.stat().st_size for f in files) / 1e6
        best, out = timed(_commands(folder), args.repeat)
        naive = [json.loads(line) for line in out["naive"].splitlines()]
        runs = [json.loads(line) for line in out["benchbook"].splitlines()]
        print(f"corpus: {len(files)} files, {size:.1f} MB ({args.copies} copies of {args.source})")
        print(f"naive regex loop, end to end    : {best['naive']:6.2f} s ({size / best['naive']:5.1f} MB/s, "
              f"{sum(r['records'] for r in naive)} records in {sum(1 for r in naive if r['records'])} files)")
        fast = best["benchbook"]
        print(f"benchbook analyze --json, end to end: {fast:6.2f} s ({size / fast:5.1f} MB/s, "
              f"{len(runs)} runs of {len({r['source'] for r in runs})} files)")
        print(f"ratio naive/benchbook (>= 1: benchbook as fast or faster): {best['naive'] / best['benchbook']:.2f}x")
        print(f"start-up: benchbook formats in {startup(args.repeat):.3f} s")
        if args.single_file_megabytes:
            peaks = single_files(args.source, Path(tmp), args.single_file_megabytes)
            over = {name: mb for name, mb in peaks.items() if args.memory_limit is not None and mb > args.memory_limit}
            for name, mb in over.items():
                print(f"FAIL: analyzing the {args.single_file_megabytes:.0f} MB log of {name} took {mb:.0f} MB, "
                      f"above the limit of {args.memory_limit:.0f} MB")
            if over:
                return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
