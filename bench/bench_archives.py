"""Benchmark: a zip of N logs is analyzed in about the time of a folder of the same N files (issue 38, item 3).

Writes `--members` small TF1 logs (a PARAMETER line and `--records` records each) into a folder and
into a zip (deflated) of the same files, then times `benchbook.analyze` of each in this process, the
order alternating over `--repeat` rounds; the least time of each side is compared. Prints both and
the ratio zip/folder; exits 1 when it is above `--ratio-limit` (1.5). Before: each member opened a
new `ZipFile`, reading the whole central directory again (1,000 members 13 s against 5.7 s for
the folder in the issue; the cost grew with the square of the member count).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import zipfile
from pathlib import Path

from benchbook import analyze

PARAMETER = ("DLL 2021-01-01 00:00:00.000000 - PARAMETER arch : resnet50  mode : training_benchmark  "
             "batch_size : 256  warmup_steps : 0  precision : fp16 \n")
RECORD = "DLL 2021-01-01 00:{minute:02d}:{second:02d}.000000 - (0, {step}) total_ips : {rate:.1f} \n"


def log_text(records: int) -> str:
    return PARAMETER + "".join(RECORD.format(minute=s // 60 % 60, second=s % 60, step=s, rate=900 + s % 50)
                               for s in range(records))


def timed(path: Path, members: int) -> float:
    start = time.perf_counter()
    result = analyze([path])
    seconds = time.perf_counter() - start
    if len(result.runs) != members or result.problems:
        raise SystemExit(f"{path}: {len(result.runs)} runs of {members}, problems {result.problems[:3]}")
    return seconds


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--members", type=int, default=1000)
    p.add_argument("--records", type=int, default=20)
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--ratio-limit", type=float, default=1.5)
    args = p.parse_args(argv)
    text = log_text(args.records)
    with tempfile.TemporaryDirectory() as tmp:
        folder, archive = Path(tmp) / "logs", Path(tmp) / "logs.zip"
        folder.mkdir()
        with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
            for i in range(args.members):
                name = f"run{i:05d}_gpu1_bs256.log"
                (folder / name).write_text(text)
                zf.writestr(name, text)
        timed(folder / name, 1)  # the first analysis imports pandas and the formats: on neither side
        times: dict[str, list[float]] = {"folder": [], "zip": []}
        for i in range(args.repeat):
            for side in ("folder", "zip") if i % 2 == 0 else ("zip", "folder"):
                times[side].append(timed(folder if side == "folder" else archive, args.members))
    best = {side: min(values) for side, values in times.items()}
    ratio = best["zip"] / best["folder"]
    print(f"archives: {args.members} logs of {args.records} records: a folder {best['folder']:.2f} s, a zip "
          f"{best['zip']:.2f} s (least of {args.repeat}); ratio zip/folder {ratio:.2f} (limit {args.ratio_limit:.2f})")
    if ratio > args.ratio_limit:
        print("FAIL: the zip takes more than the limit times the folder")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
