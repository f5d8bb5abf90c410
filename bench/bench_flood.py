"""Benchmark: whether `benchbook run` slows a workload that floods its output with `\\r` progress updates.

A progress bar (tqdm, Keras) ends each update with `\\r` alone: megabytes of output without a
`\\n`. The workload here writes such a flood (by default 64 MB, in 64 KiB writes, the harshest
case: a fast writer) and times its own writing, from the first write to the last one's return:
the time the run spent blocked on its output pipe. It runs in pairs, piped to `cat` into a file
and through `benchbook run` (a one-run study whose CPU workload is this file; output teed to the
log, the last lines kept for the record, the terminal echo on), the order alternating from pair to
pair. The ratio is piped seconds / benchbook seconds: 1.0 means the workload writes as fast under
benchbook as into `cat`; the target is at least 0.95. A flood takes tenths of a second, so on a
shared machine the ratio of one pair scatters widely with the other work: the ratio checked is
that of each side's fastest time over the pairs (what the writing costs when nothing else
interferes); the median of the pairs' ratios is printed too. It also prints the size of the run's
record (its last lines are cut at 4 KiB each, whatever the flood), and a measure that the machine's
other work does not move: the CPU time benchbook's reader spends copying the flood (the launcher's
`execute`, as `benchbook run` calls it, echo on, in this process) against the CPU time of `cat`.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchbook.runfolder import records
from benchbook.studies.commands import Command
from benchbook.studies.launchers import process

STUDY = """\
schema_version: 1
name: flood
model: resnet50_tf
runtime: cpu
sweep: {{batch_size: 8, data: synthetic}}
repeats: 1
iterations: 1
warmup_steps: 0
timeout: 10m
options: {{flood_megabytes: {megabytes}, flood_seconds: {seconds}}}
"""
# `benchbook run` with this file as the CPU workload and the running Python as its environment
DRIVE = """\
import sys
from pathlib import Path
from benchbook import cli
from benchbook.environment import envs
from benchbook.studies import commands
commands.models.workload_script = lambda framework, model=None: Path({script!r})
envs.ensure = lambda framework, say=print, study_python=None: Path(sys.executable)
sys.exit(cli.main(["run", *sys.argv[1:]]))
"""
UPDATE = b"\r 42%|####2     | 420/1000 [00:10<00:14, 41.17it/s, loss=6.9012]"


def flood(megabytes: int, seconds: Path) -> None:
    """The workload: `megabytes` MB of `\\r` progress updates in 64 KiB writes; the time it took, to `seconds`."""
    block = UPDATE * (65536 // len(UPDATE))
    left = megabytes << 20
    start = time.perf_counter()
    while left > 0:
        view = memoryview(block)[:left]
        left -= len(view)
        while view:
            view = view[os.write(1, view):]
    seconds.write_text(f"{time.perf_counter() - start}\n")


def piped(megabytes: int, tmp: Path) -> float:
    seconds = tmp / "piped.seconds"
    with open(tmp / "piped.log", "wb") as out:
        writer = subprocess.Popen([sys.executable, __file__, "--flood_megabytes", str(megabytes),
                                   "--flood_seconds", str(seconds)], stdout=subprocess.PIPE)
        cat = subprocess.Popen(["cat"], stdin=writer.stdout, stdout=out)
        writer.stdout.close()
        if writer.wait() or cat.wait():
            raise SystemExit(f"the piped flood failed: exit {writer.returncode} | {cat.returncode}")
    return float(seconds.read_text())


def through_benchbook(megabytes: int, tmp: Path, i: int) -> tuple[float, int]:
    """(the workload's seconds, the size of its run record in bytes)."""
    seconds = tmp / f"benchbook-{i}.seconds"
    study = tmp / f"flood-{i}.yaml"
    study.write_text(STUDY.format(megabytes=megabytes, seconds=seconds))
    out = tmp / f"runs-{i}"
    r = subprocess.run([sys.executable, "-c", DRIVE.format(script=str(Path(__file__).resolve())), str(study),
                        "--out", str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    (record,) = (out / "flood").glob(f"*/{records.RECORD}")
    if not seconds.exists():
        raise SystemExit(f"benchbook run did not run the flood (exit {r.returncode}): {r.stderr[-2000:]}")
    return float(seconds.read_text()), record.stat().st_size


def cpu(who: int) -> float:
    r = resource.getrusage(who)
    return r.ru_utime + r.ru_stime


def copy_cpu(megabytes: int, tmp: Path) -> tuple[float, float]:
    """(CPU seconds of benchbook's reader, of `cat`) to copy the flood into a file."""
    writer = [sys.executable, __file__, "--flood_megabytes", str(megabytes), "--flood_seconds", str(tmp / "cpu.s")]
    before = cpu(resource.RUSAGE_SELF)  # the writer is a child: not counted here
    process.execute(Command(writer), tmp / "cpu.log", echo=lambda line: None)
    reader = cpu(resource.RUSAGE_SELF) - before
    (tmp / "cpu.log").unlink()
    with open(tmp / "cpu.cat", "wb") as out:
        flood_proc = subprocess.Popen(writer, stdout=subprocess.PIPE)
        cat = subprocess.Popen(["cat"], stdin=flood_proc.stdout, stdout=out)
        flood_proc.stdout.close()
        flood_proc.wait()
        before = cpu(resource.RUSAGE_CHILDREN)  # the writer's counted; cat's is once it is waited for
        cat.wait()
    return reader, cpu(resource.RUSAGE_CHILDREN) - before


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--megabytes", type=int, default=64)
    p.add_argument("--pairs", type=int, default=5)
    p.add_argument("--check", action="store_true", help="exit 1 when the ratio is below 0.95")
    p.add_argument("--flood_megabytes", type=int, help=argparse.SUPPRESS)  # run as the workload
    p.add_argument("--flood_seconds", type=Path, help=argparse.SUPPRESS)
    args, _ = p.parse_known_args(argv)  # as the workload, it is given the study's flags too
    if args.flood_seconds:
        flood(args.flood_megabytes, args.flood_seconds)
        return 0
    ratios, cats, runs, cpus = [], [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for _ in range(args.pairs):
            cpus.append(copy_cpu(args.megabytes, tmp))
        for i in range(args.pairs):
            if i % 2 == 0:
                cat = piped(args.megabytes, tmp)
                run, size = through_benchbook(args.megabytes, tmp, i)
            else:
                run, size = through_benchbook(args.megabytes, tmp, i)
                cat = piped(args.megabytes, tmp)
            ratios.append(cat / run)
            cats.append(cat)
            runs.append(run)
            print(f"pair {i + 1} ({'piped' if i % 2 == 0 else 'benchbook'} first): {args.megabytes} MB of \\r "
                  f"updates written in {cat:.3f} s piped to cat, {run:.3f} s under benchbook run, ratio "
                  f"{ratios[-1]:.3f}; run.json {size / 1024:.0f} kB", flush=True)
    reader, cat = min(c[0] for c in cpus), min(c[1] for c in cpus)
    print(f"CPU time to copy {args.megabytes} MB (least of {len(cpus)}): benchbook's reader {reader:.3f} s, "
          f"cat {cat:.3f} s")
    ratio = min(cats) / min(runs)
    print(f"median of the pairs' ratios {statistics.median(ratios):.3f} (range {min(ratios):.3f}-{max(ratios):.3f})")
    print(f"fastest of {len(ratios)}: {min(cats):.3f} s piped to cat, {min(runs):.3f} s under benchbook run: "
          f"piped/benchbook ratio {ratio:.3f}: {'OK, at least 0.95' if ratio >= 0.95 else 'BELOW 0.95'}")
    return 1 if args.check and ratio < 0.95 else 0


if __name__ == "__main__":
    sys.exit(main())
