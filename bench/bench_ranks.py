"""Benchmark: rank pieces that never close are read in time linear in the log (issue 38, item 13).

Under `mpirun --tag-output` a rank's partial line is closed by a later piece of the same rank. A
log whose every physical line holds a piece of a rank that never ends its line
(`[1,0]<stdout>:step 12 [1,1]<stdout>:partial`) keeps that rank's partial line open to the end.
For each size in `--megabytes` (default 1, 2 and 10 MB) this times reading such a log
(`textio.chunks`, where the ranks' pieces are put back together) against a log of the same bytes
whose pieces each stand on a line of their own, in the same run. Prints the times and the ratio
for each size; exits 1 when a ratio is above `--ratio-limit` (5). Before: the open partial line
was copied whole at every piece added to it (1 MB 6.9 s, 2 MB 19 s, 10 MB past 120 s in the issue).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from benchbook.logs import textio

LINE = "[1,0]<stdout>:DLL 2021-01-01 00:00:00.000000 - (0, {step}) total_ips : 991.5 [1,1]<stdout>:partial\n"
APART = "[1,0]<stdout>:DLL 2021-01-01 00:00:00.000000 - (0, {step}) total_ips : 991.5 \n[1,1]<stdout>:partial\n"


def write(path: Path, line: str, megabytes: float) -> None:
    lines, size = [], 0
    while size < megabytes * 1e6:
        lines.append(line.format(step=len(lines)))
        size += len(lines[-1])
    path.write_text("".join(lines))


def read(path: Path) -> tuple[float, int]:
    """(seconds, lines) to read the log as chunks of whole lines."""
    start = time.perf_counter()
    lines = sum(len(chunk.ends) - 1 for chunk in textio.chunks(path))
    return time.perf_counter() - start, lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--megabytes", type=float, nargs="+", default=[1, 2, 10])
    p.add_argument("--ratio-limit", type=float, default=5.0)
    args = p.parse_args(argv)
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        write(Path(tmp) / "warm.log", LINE, 0.1)
        read(Path(tmp) / "warm.log")  # (the first read's one-time costs on neither side)
        for mb in args.megabytes:
            pieces, apart = Path(tmp) / "pieces.log", Path(tmp) / "apart.log"
            write(pieces, LINE, mb)
            write(apart, APART, mb)
            (open_s, open_lines), (apart_s, _) = read(pieces), read(apart)
            ratio = open_s / apart_s
            print(f"ranks: {pieces.stat().st_size / 1e6:.1f} MB, {open_lines} lines each ending a piece of a rank "
                  f"that never closes its line: {open_s:.2f} s; the pieces on lines of their own: {apart_s:.2f} s; "
                  f"ratio {ratio:.2f} (limit {args.ratio_limit:.2f})", flush=True)
            failed |= ratio > args.ratio_limit
    if failed:
        print("FAIL: reading rank pieces that never close took more than the limit times the same bytes apart")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
