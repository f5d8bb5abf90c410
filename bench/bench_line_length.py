"""Benchmark: every log format reads a line in time linear in its length (issue 49, cause 3).

A log may hold one long line: a progress bar never ended, or a hostile file of one format's line
openings repeated (`DLL <date> - a : b DLL <date> - a : b ...`), which the reader keeps up to 8 MiB
(`textio.LINE_BYTES`). A pattern that scans a line for a later key (`[^\\n]*?key`), or backs a greedy
`[^\\n]*` off to a literal, is tried again from each next candidate on the line when the key is not
there: quadratic in the line's length. Before: the BERT formats took 5.6 / 18.2 / 69.1 / 272.9 s at
128 / 256 / 512 / 1024 KiB.

For each registered format and each of its line openings (`PREFIXES`; a format without any is read
with the DLLogger one, and said), one line of the opening repeated, of `--sizes` KiB (default 128,
1024 and 8191: the longest the reader keeps), is written and read as `analyze` reads it: the reader's
chunks (`textio.chunks`), the format's scan with the other formats' run openings looked for
(`registry.scan`), and the failure signs (`scanning.failures`). Prints a table: the seconds at each
size and the worst growth per doubling of the length, (t2 / t1) ** (1 / log2(size2 / size1)): 2 is
linear, 4 quadratic. Exits 1 when a growth passes `--growth-limit` (2.8). The defaults run in about
a minute.
"""

from __future__ import annotations

import argparse
import math
import multiprocessing
import sys
import tempfile
import time
from pathlib import Path

from benchbook.core import catalog
from benchbook.logs import textio
from benchbook.logs.parsers import registry, scanning

STAMP = "2021-01-01 00:00:00.000000"
DLL = f"DLL {STAMP} - "
MEGATRON = "[2024-01-01 00:00:00] iteration        1/     100 | consumed samples:            8 | "
# The openings of each format's lines (modelled on the logs the formats' modules cite), each the start of a
# line a pattern of the format reads, with the keys that make a pattern look further along the line.
PREFIXES = {
    "benchbook_cpu": (DLL, f"{DLL}Epoch: 0 Iteration: 1  train.loss : 1.0  "),
    "megatron_lm": (MEGATRON, "Step Time : 1.0s GPU utilization: 1.0"),
    "megatron_deepspeed": (MEGATRON,),
    "primus": (MEGATRON,),
    "mllog": (':::MLLOG {"namespace": "", "time_ms": 1, "event_type": "POINT_IN_TIME", "key": "x", ',),
    "nemo2": ("Training epoch 0, iteration 1/100 | ", "Initializing distributed: GLOBAL_RANK: 0, MEMBER: 1/"),
    "ngc_bert_pytorch": (f"{DLL}Training Epoch: 0 Training Iteration: 1  average_loss : 1.0 ",
                         f"{DLL}e2e_train_time : 1.0 ", f'{DLL}PARAMETER Config : ["Namespace(a=1, ',
                         "torchrun --nproc_per_node=8 "),
    "ngc_bert_tf1": (f"{DLL}Iteration: 1  throughput_train : 1.0 ", f"{DLL}(1)  throughput_train : 1.0 ",
                     f"{DLL}Iteration: 1  throughput_train : 1.0 total_loss : nan ",
                     "INFO:tensorflow:Saving dict for global step 1: loss = 1, ",
                     "INFO:tensorflow:Using config: {'_model_dir': '/r/"),
    "ngc_tf2_maskrcnn": ("[MaskRCNN] INFO    : ", "mpirun -np 8 python mask_rcnn_main.py "),
    "ngc_mxnet_resnet50": ("2021-01-01 00:00:00,000:INFO: Epoch[0] Batch [0-19]\tSpeed: 1.0 samples/sec\t",
                           f"{DLL}Epoch: 0 ", ":INFO: Start with arguments Namespace(a=1, "),
    "ngc_pytorch_convnets": (f"{DLL}(0, 1) ", "['/usr/bin/python', '-u', '"),
    "ngc_tf1_convnets": (f"{DLL}(0, 1) ", f"{DLL}() ", "[1,0]<stdout>:"),
    "torchtitan": ("[titan] 2024-01-01 00:00:00,000 - root - INFO - ", "Building 2-D device mesh with ["),
}


def write_line(path: Path, prefix: str, kib: int) -> None:
    """One line of `kib` KiB: `prefix` repeated, then a newline."""
    size = kib << 10
    path.write_text((prefix * (size // len(prefix) + 1))[:size] + "\n")


def read(path: Path, fmt) -> float:
    """Seconds to read the file as `analyze` does in `fmt`: chunks, the scan, the failure signs."""
    start = time.perf_counter()
    for chunk in textio.chunks(path):
        try:
            registry.scan(chunk, fmt)
        except scanning.Refused:  # (another format's run opening: the file would be a problem)
            pass
        scanning.failures(chunk)
    return time.perf_counter() - start


def timed(path: Path, fmt, limit: float) -> float:
    """`read`'s seconds, in a forked process stopped at `limit` seconds (math.inf then): a quadratic
    reading of 8 MiB would take hours."""
    parent, child = multiprocessing.get_context("fork").Pipe(duplex=False)
    worker = multiprocessing.get_context("fork").Process(target=lambda: child.send(read(path, fmt)), daemon=True)
    worker.start()
    got = parent.recv() if parent.poll(limit) else math.inf
    worker.kill()
    worker.join()
    return got


def growth(sizes: list[int], seconds: list[float]) -> float:
    """The worst growth per doubling of the length between two sizes measured one after the other."""
    pairs = list(zip(sizes, seconds, strict=True))
    return max((b / max(a, 1e-6)) ** (1 / math.log2(y / x)) for (x, a), (y, b) in zip(pairs, pairs[1:], strict=False))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[128, 1024, 8191], help="line lengths in KiB")
    p.add_argument("--growth-limit", type=float, default=2.8)
    p.add_argument("--formats", nargs="*", help="the formats to read (default: every registered one)")
    args = p.parse_args(argv)
    if len(args.sizes) < 2 or sorted(args.sizes) != args.sizes:
        p.error("--sizes: two or more lengths, growing")
    catalog.default()  # (every format registered)
    names = args.formats or list(registry.FORMATS)
    print(f"{'format':22} {'line opening':34} " + " ".join(f"{s:>8} KiB" for s in args.sizes) + "  growth", flush=True)
    failed = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "line.log"
        for name in names:
            fmt = registry.get(name)
            prefixes = PREFIXES.get(name) or (DLL,)
            for prefix in prefixes:
                seconds: list[float] = []
                for kib in args.sizes:
                    if seconds and math.isinf(seconds[-1]):
                        seconds.append(math.inf)
                        continue
                    write_line(path, prefix, kib)
                    # Stopped at twice what the limit allows after the size before (and a second more).
                    allowed = 1 + 2 * seconds[-1] * args.growth_limit ** math.log2(kib / args.sizes[len(seconds) - 1]) \
                        if seconds else 600.0
                    best = math.inf
                    for _ in range(3 if kib < 1024 else 1):  # (the short ones, whose times are small, at their best)
                        best = min(best, timed(path, fmt, allowed))
                        if math.isinf(best):
                            break
                    seconds.append(best)
                worst = growth(args.sizes, seconds)
                shown = ascii(prefix[:30])[1:-1] + ("" if name in PREFIXES else " (none declared)")
                print(f"{name:22} {shown:34} " + " ".join(f"{s:10.3f} s" if s < math.inf else "   stopped"
                                                          for s in seconds)
                      + f"  {worst:.2f}{'  FAIL' if worst > args.growth_limit else ''}", flush=True)
                if worst > args.growth_limit:
                    failed.append(f"{name} ({shown})")
    if failed:
        print(f"FAIL: reading a long line grows faster than {args.growth_limit} a doubling of its length: "
              + ", ".join(failed))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
