"""Benchmark: the reading stage holds no whole file, whatever its line ends (issue 26, item 8).

Three logs that once made `analyze` hold them whole, each analyzed in a fresh process, its peak
resident memory against a log of the same records with LF line ends:

- one line of `--line-megabytes` MB (default 128) with no newline: a progress bar never ended, a
  binary blob. Limit: `--line-limit` MB (400). Before: the line was carried whole and re-joined at
  every read (1 GB: 156 s, 5.3 GB).
- a TF1 log of `--megabytes` MB (default 64) with CR-only line ends, against the same log with LF.
  Limit: `--ratio-limit` (1.3) times the LF peak. Before: no chunk ended before the file did (a
  400 MB log: 4.3 GB, 0.84 GB with LF).
- `--runs` runs (default 50,000) pasted into one file, two lines each (a PARAMETER line that
  starts a run, one record), against the same number of records as one run. What a run costs
  above its records (its draft, metadata, row) is printed per run; limit `--run-bytes` (3,000)
  bytes a run. Before: about 5.5 kB a run (10**6 runs in 183 MB: 5.5 GB). The same through the
  command, `benchbook analyze --json` (the same limit): before issue 38, 200,000 runs took 1.05 GB.

The defaults run in about 30 s in all (CI). Prints one line per case; exits 1 when a limit is passed.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PARAMETER = ("DLL {stamp} - PARAMETER arch : resnet50  mode : training_benchmark  batch_size : 256  "
             "warmup_steps : 0  precision : fp16 \n")
RECORD = "DLL {stamp} - (0, {step}) total_ips : {rate:.1f} \n"


def _stamp(seconds: int) -> str:
    day, rest = divmod(seconds, 86400)
    clock = f"{rest // 3600:02d}:{rest // 60 % 60:02d}:{rest % 60:02d}"
    return f"2021-{1 + day // 28 % 12:02d}-{1 + day % 28:02d} {clock}.000000"


def tf1_log(path: Path, megabytes: float, end: str = "\n") -> None:
    """A TF1 log of one run: its PARAMETER line, then records a second apart, lines ended by `end`."""
    size, step = 0, 0
    with open(path, "w", newline="") as f:
        f.write(PARAMETER.format(stamp=_stamp(0)).replace("\n", end))
        block = []
        while size < megabytes * 1e6:
            line = RECORD.format(stamp=_stamp(step), step=step, rate=900 + step % 100).replace("\n", end)
            block.append(line)
            size += len(line)
            step += 1
            if len(block) == 10000:
                f.write("".join(block))
                block = []
        f.write("".join(block))


def pasted_runs(path: Path, runs: int) -> None:
    """`runs` runs one after the other, two lines each: the PARAMETER line, one record."""
    with open(path, "w") as f:
        for i in range(runs):
            stamp = _stamp(120 * i)
            f.write(PARAMETER.format(stamp=stamp) + RECORD.format(stamp=stamp, step=1, rate=991.5))


def one_run(path: Path, records: int) -> None:
    """The records of `pasted_runs` as one run: a PARAMETER line, then `records` records."""
    with open(path, "w") as f:
        f.write(PARAMETER.format(stamp=_stamp(0)))
        for i in range(records):
            f.write(RECORD.format(stamp=_stamp(i), step=i, rate=991.5))


def peak(path: Path) -> tuple[int, int, float, float]:
    """(runs, problems, peak resident MB, seconds) of a fresh process that analyzes one file."""
    code = ("import resource, benchbook, sys; a = benchbook.analyze([sys.argv[1]]); "
            "print(len(a.runs), len(a.problems), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)")
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True)
    runs, problems, kib = out.stdout.split()
    return int(runs), int(problems), int(kib) * 1024 / 1e6, time.perf_counter() - t


def peak_cli(path: Path) -> tuple[float, float]:
    """(peak resident MB, seconds) of `benchbook analyze --json` of one file, its lines thrown away:
    the command a user runs (issue 38 item 7 measured it: 1.05 GB for 200,000 pasted runs)."""
    code = ("import resource, sys, contextlib, os; from benchbook import cli\n"
            "with open(os.devnull, 'w') as out, contextlib.redirect_stdout(out): cli.main(['analyze', '--json', "
            "sys.argv[1]])\nprint(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)")
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True)
    return int(out.stderr.split()[-1]) * 1024 / 1e6, time.perf_counter() - t


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--line-megabytes", type=float, default=128)
    p.add_argument("--line-limit", type=float, default=400, help="MB, for the log of one line")
    p.add_argument("--megabytes", type=float, default=64, help="size of the CR and LF logs")
    p.add_argument("--ratio-limit", type=float, default=1.3, help="CR peak over LF peak")
    p.add_argument("--runs", type=int, default=50_000)
    p.add_argument("--run-bytes", type=float, default=3000, help="peak bytes a pasted run may cost above its records")
    args = p.parse_args(argv)
    failed = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        line = folder / "one_line.log"
        with open(line, "wb") as f:
            f.write(PARAMETER.format(stamp=_stamp(0)).encode().rstrip(b"\n"))  # a log, then no line end
            left = int(args.line_megabytes * 1e6) - f.tell()
            while left > 0:
                f.write(b"#" * min(left, 1 << 20))
                left -= 1 << 20
        _, _, mb, s = peak(line)
        print(f"reading: one {line.stat().st_size / 1e6:.0f} MB line, no newline: peak {mb:.0f} MB resident "
              f"(limit {args.line_limit:.0f} MB), {s:.1f} s")
        if mb > args.line_limit:
            failed.append("one line")
        line.unlink()

        peaks = {}
        for name, end in (("LF", "\n"), ("CR", "\r")):
            log = folder / f"tf1_{name}.log"
            tf1_log(log, args.megabytes, end)
            runs, problems, peaks[name], s = peak(log)
            if runs != 1 or problems:
                failed.append(f"{name}: {runs} runs, {problems} problems")
            log.unlink()
        ratio = peaks["CR"] / peaks["LF"]
        print(f"reading: one {args.megabytes:.0f} MB log, CR line ends: peak {peaks['CR']:.0f} MB resident, "
              f"LF: {peaks['LF']:.0f} MB, ratio {ratio:.2f} (limit {args.ratio_limit:.2f})")
        if ratio > args.ratio_limit:
            failed.append("CR line ends")

        pasted, single = folder / "pasted.log", folder / "one_run.log"
        pasted_runs(pasted, args.runs)
        one_run(single, args.runs)
        runs, _, mb, s = peak(pasted)
        _, _, base, _ = peak(single)
        per_run = (mb - base) * 1e6 / args.runs
        print(f"reading: {runs} pasted runs of two lines ({pasted.stat().st_size / 1e6:.1f} MB): peak {mb:.0f} MB "
              f"resident, the same records as one run: {base:.0f} MB, ratio {mb / base:.2f}; {per_run:.0f} bytes a "
              f"run above its records (limit {args.run_bytes:.0f}), {s:.1f} s")
        if runs != args.runs:
            failed.append(f"pasted runs: {runs} runs found of {args.runs}")
        if per_run > args.run_bytes:
            failed.append("pasted runs")
        (mb, s), (base, _) = peak_cli(pasted), peak_cli(single)
        per_run = (mb - base) * 1e6 / args.runs
        print(f"reading: the same through `benchbook analyze --json`: peak {mb:.0f} MB resident, as one run: "
              f"{base:.0f} MB; {per_run:.0f} bytes a run above its records (limit {args.run_bytes:.0f}), {s:.1f} s")
        if per_run > args.run_bytes:
            failed.append("pasted runs, analyze --json")
    for case in failed:
        print(f"FAIL: {case}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
