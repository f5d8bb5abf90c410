"""Benchmark: `benchbook analyze` against naive line-by-line regex loops, in the same run.

Builds a corpus of at least `--megabytes` MB by repeating the logs of `--source` (one file per
source file, each the source repeated until the corpus is big enough), then times, on the same
files, taking turns so that all see the same load on a shared machine, best of `--repeat`:

- naive, a pattern per format (the baseline of the ratio): what a user who knows the formats
  writes. Each file gets the pattern of its format, chosen once from its first 64 KiB (as
  benchbook detects it), then `for line in file: m = pattern.search(line)`, and every match gives
  the per-iteration values benchbook extracts, converted and kept as records:
  - TF1 DLLogger step lines: timestamp, epoch, iteration, throughput;
  - MXNet `Epoch[E] Batch [a-b] Speed: x samples/sec LR: y` lines: timestamp, epoch, the batch
    range, throughput, learning rate;
  - Mask R-CNN blocks: the `timestamp`, `iteration`, `throughput`, `Total loss` and `Learning
    rate` lines, each value stored in the record that the last `timestamp` line opened.
  Timestamps become seconds with `datetime.fromisoformat(...).timestamp()`, numbers `int()` and
  `float()`; nothing else is done per line. Of the two naive loops this is the faster, so the
  stricter baseline: with one pattern a file, the regex engine skips to the pattern's literal.
- naive, one pattern for all: the same loop and values with one alternation of the three
  patterns, for a user who does not look at formats (this benchmark used to time such a loop,
  capturing the rate alone); shown beside the baseline.
- benchbook: `benchbook.analyze` (format detection, rank demultiplexing, several runs per file,
  metadata, the warm-up rule and recomputed throughputs, summaries, the tidy frames).

Prints the throughputs in MB/s and the ratios benchbook / naive, and checks that all three found
the same number of per-iteration throughput values; then the ratio against the baseline for each
format's files alone, and the share of benchbook's time that reading the files takes; then the
ratio on the logs of `--source` as they are, unrepeated (per-file costs weigh more there). With
`--single-file-megabytes N` it also writes, for each format (each folder of `--source`), one N MB
log of its logs repeated, and reports the peak resident memory of analyzing it in a fresh process;
with `--memory-limit MB` it exits 1 when a peak is above MB (CI: 400 MB logs within 1000 MB).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

import benchbook
from benchbook import textio

_NUM = r"([0-9.eE+-]+)"
_TF1 = r"DLL (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+) - \((\d+), (\d+)\) (?:total_ips|imgs_per_sec) : " + _NUM
_MXNET = (r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}):INFO: Epoch\[(\d+)\] Batch \[(\d+)-(\d+)\]\tSpeed: " + _NUM
          + r" samples/sec(?:\tLR: " + _NUM + ")?")
_MASKRCNN = (r"\[MaskRCNN\] INFO    : (?:timestamp: ([0-9.]+)|iteration: (\d+)|throughput: " + _NUM
             + r"|Total loss: " + _NUM + r"|Learning rate: " + _NUM + ")")
PATTERN = re.compile(f"{_TF1}|{_MXNET}|{_MASKRCNN}")
PATTERNS = {"tf1": re.compile(_TF1), "mxnet": re.compile(_MXNET), "maskrcnn": re.compile(_MASKRCNN)}


def _logs(source: Path) -> list[Path]:
    """The logs under `source`: its .txt and .log files, in path order."""
    return sorted(p for p in source.rglob("*") if p.is_file() and p.suffix in (".txt", ".log"))


def build_corpus(source: Path, out: Path, megabytes: float) -> list[Path]:
    """One big file per source file, each the source repeated, together at least `megabytes` MB."""
    files = _logs(source)
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


def _kind(path: Path) -> str:
    with open(path, encoding="utf-8", errors="replace") as f:
        head = f.read(64 << 10)
    return "maskrcnn" if "[MaskRCNN]" in head else "mxnet" if "Speed: " in head else "tf1"


def naive_per_format(files: list[Path]) -> int:
    """Per-iteration values the naive way, the pattern of each file's format; returns how many
    throughput values it read."""
    count = 0
    for p in files:
        kind = _kind(p)
        pattern = PATTERNS[kind]
        records: list = []
        with open(p, encoding="utf-8", errors="replace") as f:
            if kind == "tf1":
                for line in f:
                    m = pattern.search(line)
                    if m:
                        stamp, epoch, iteration, rate = m.groups()
                        records.append((datetime.fromisoformat(stamp).timestamp(), int(epoch), int(iteration),
                                        float(rate)))
            elif kind == "mxnet":
                for line in f:
                    m = pattern.search(line)
                    if m:
                        stamp, epoch, first, last, rate, lr = m.groups()
                        records.append((datetime.fromisoformat(stamp).timestamp(), int(epoch), int(first), int(last),
                                        float(rate), float(lr) if lr else None))
            else:
                record: dict = {}
                for line in f:
                    m = pattern.search(line)
                    if m:
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
        count += sum(1 for r in records if "throughput" in r) if kind == "maskrcnn" else len(records)
    return count


def naive_one_pattern(files: list[Path]) -> int:
    """The same values with one pattern for all formats; returns how many throughput values it read."""
    count = 0
    for p in files:
        records: list = []
        record: dict = {}
        with open(p, encoding="utf-8", errors="replace") as f:
            for line in f:
                m = PATTERN.search(line)
                if m:
                    g = m.groups()
                    if g[0] is not None:  # TF1
                        records.append((datetime.fromisoformat(g[0]).timestamp(), int(g[1]), int(g[2]), float(g[3])))
                        count += 1
                    elif g[4] is not None:  # MXNet
                        records.append((datetime.fromisoformat(g[4]).timestamp(), int(g[5]), int(g[6]), int(g[7]),
                                        float(g[8]), float(g[9]) if g[9] else None))
                        count += 1
                    elif g[10] is not None:  # Mask R-CNN: a new record
                        record = {"timestamp": float(g[10])}
                        records.append(record)
                    elif g[11] is not None:
                        record["iteration"] = int(g[11])
                    elif g[12] is not None:
                        record["throughput"] = float(g[12])
                        count += 1
                    elif g[13] is not None:
                        record["loss"] = float(g[13])
                    else:
                        record["lr"] = float(g[14])
    return count


def _timed(loops: dict, files: list[Path], repeat: int) -> tuple[dict[str, float], dict]:
    """(best seconds, last result) of each loop over the files; they take turns, so that all see
    the same load on a shared machine, in an order rotated at every turn: what one loop leaves
    behind (a heap grown by millions of small objects) then weighs on each of the others alike."""
    best = dict.fromkeys(loops, float("inf"))
    found: dict = {}
    names = list(loops)
    for turn in range(repeat):
        for name in names[turn % len(names):] + names[: turn % len(names)]:
            t = time.perf_counter()
            found[name] = loops[name](files)
            best[name] = min(best[name], time.perf_counter() - t)
    return best, found


def per_format(files: list[Path], repeat: int) -> None:
    """The same ratio for each format's files alone (taking turns, best of `repeat`), and how much
    of benchbook's time reading the files takes (decoding, rank tags, the line index): where the
    overall ratio comes from."""
    groups: dict[str, list[Path]] = {}
    for p in files:
        groups.setdefault(_kind(p), []).append(p)
    for kind, group in sorted(groups.items()):
        size = sum(p.stat().st_size for p in group) / 1e6
        best, _ = _timed({"naive": naive_per_format, "benchbook": benchbook.analyze, "reading": _read_all},
                         group, repeat)
        print(f"  {kind:9s}: {size:5.1f} MB, naive {size / best['naive']:6.1f} MB/s, benchbook "
              f"{size / best['benchbook']:6.1f} MB/s, ratio {best['naive'] / best['benchbook']:.2f}x; "
              f"reading is {best['reading'] / best['benchbook']:.0%} of benchbook's time")


def as_they_are(source: Path, repeat: int) -> None:
    """The same ratio on the logs of `source` unrepeated: logs of real runs are often tens of
    kilobytes, where what benchbook spends on each file (opening it, numpy calls whatever the
    number of lines, a run's metadata) weighs more than in the corpus's big files."""
    files = _logs(source)
    size = sum(p.stat().st_size for p in files) / 1e6
    best, _ = _timed({"naive": naive_per_format, "benchbook": benchbook.analyze}, files, max(repeat, 5))
    print(f"logs as they are: {len(files)} files, {size:.2f} MB: naive {best['naive'] * 1e3:.1f} ms, benchbook "
          f"{best['benchbook'] * 1e3:.1f} ms ({best['benchbook'] * 1e3 / len(files):.2f} ms a file), "
          f"ratio {best['naive'] / best['benchbook']:.2f}x")


def _read_all(files: list[Path]) -> None:
    for p in files:
        for _ in textio.chunks(p):
            pass


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


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--source", type=Path, default=Path(__file__).resolve().parents[1] / "examples" / "logs")
    p.add_argument("--megabytes", type=float, default=40)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--single-file-megabytes", "--memory-file", type=float, metavar="MB",
                   help="also measure the peak memory of analyzing one MB-sized log of each format")
    p.add_argument("--memory-limit", type=float, metavar="MB",
                   help="with --single-file-megabytes: exit 1 when a peak is above MB (issue 2: 400 MB logs in 1 GB)")
    args = p.parse_args(argv)
    if args.memory_limit is not None and not args.single_file_megabytes:
        p.error("--memory-limit needs --single-file-megabytes: the limit is on analyzing those logs")
    with tempfile.TemporaryDirectory() as tmp:
        files = build_corpus(args.source, Path(tmp), args.megabytes)
        size = sum(f.stat().st_size for f in files) / 1e6
        loops = {"per_format": naive_per_format, "one_pattern": naive_one_pattern, "benchbook": benchbook.analyze}
        best, found = _timed(loops, files, args.repeat)
        analysis = found.pop("benchbook")
        found["benchbook"] = int(analysis.iterations["throughput"].notna().sum())
        print(f"corpus: {size:.1f} MB in {len(files)} files from {args.source}")
        labels = {"per_format": "naive, a pattern per format", "one_pattern": "naive, one pattern for all",
                  "benchbook": "benchbook"}
        for name, label in labels.items():
            extra = f", {len(analysis.runs)} runs, {len(analysis.problems)} problems" if name == "benchbook" else ""
            print(f"{label:28s}: {size / best[name]:7.1f} MB/s ({best[name]:.2f} s, {found[name]} values{extra})")
        print(f"ratio benchbook/naive       : {best['per_format'] / best['benchbook']:7.2f}x "
              f"(one pattern for all: {best['one_pattern'] / best['benchbook']:.2f}x)")
        if len(set(found.values())) > 1:
            print(f"WARNING: they found different numbers of values ({found})")
        per_format(files, args.repeat)
        as_they_are(args.source, args.repeat)
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
