"""Benchmark: the rule search of `benchbook explain` (issue 51) is bounded: a log of 100,000 records, and
the shipped BERT sets against their references, each explained in at most `--limit` seconds (5).

The 100,000-record logs are written here: an NGC TF1 BERT log in run_pretraining.py's DLLogger line shape
(`Iteration: N  throughput_train : X sequences/s`), whose published value is the mean of its last 20
records (the 2020 edition's rule), and an MXNet 19.07 log of 8 ranks under `mpirun --tag-output`, each rank
its own `Speed: X samples/sec` lines, whose value is the mean of rank 3's last 50 (every rank's record sets
are searched). Reading is timed apart from the search, which must find that rule first.
The sets: examples/published/ngc-tf1-bert (reference ngc_tf1_bert) and ngc-pytorch-bert (ngc_pytorch_bert),
every published cell searched (reading the archives is timed apart). Prints one line a case; exits 1 when a
search takes more than the limit or the tail rule is not found first.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np

from benchbook.logs.explain import explain, logged_runs

ROOT = Path(__file__).resolve().parents[1]
SETS = (("ngc-tf1-bert", "ngc_tf1_bert"), ("ngc-pytorch-bert", "ngc_pytorch_bert"))


def write_log(path: Path, records: int) -> float:
    """The log, and the mean of its last 20 rates (printed with 4 decimals by the caller)."""
    rates = np.random.default_rng(51).normal(1000.0, 40.0, records).round(3)
    start = datetime(2020, 7, 1, 10, 0, 0)
    head = ["+ bash scripts/run_pretraining_lamb.sh 96 64 8 7.5e-4 5e-4 fp16 true 8 2000 200 50 200 88 512 base",
            "INFO:tensorflow:  train_batch_size: 96", "INFO:tensorflow:***** Running training *****"]
    lines = [f"DLL {(start + timedelta(seconds=0.5 * k)).strftime('%Y-%m-%d %H:%M:%S.%f')} - Iteration: {k + 1}  "
             f"throughput_train : {rate} sequences/s mlm_loss : 10.4  nsp_loss : 0.69  total_loss : 11.0  "
             "avg_loss_step : 11.1  learning_rate : 0.0  loss_scaler : 134217728 "
             for k, rate in enumerate(rates.tolist())]
    path.write_text("\n".join(head + lines) + "\n")
    return statistics.fmean(rates[-20:].tolist())


def write_ranks_log(path: Path, records: int, ranks: int = 8) -> float:
    """The MXNet log of `ranks` ranks, records in all, and the mean of rank 3's last 50 rates."""
    rates = np.random.default_rng(52).normal(1000.0, 40.0, (ranks, records // ranks)).round(3)
    args = (f"Namespace(amp=False, arch='resnetv15', batch_size={64 * ranks}, data_backend='dali-gpu', "
            f"disp_batches=20, dtype='float16', gpus={list(range(ranks))}, kv_store='horovod', mode='train')")
    lines = [f"[1,{r}]<stderr>:2021-04-01 10:00:00,000:INFO: Start with arguments {args}" for r in range(ranks)]
    start = datetime(2021, 4, 1, 10, 0, 5)
    for k in range(rates.shape[1]):
        stamp = (start + timedelta(seconds=2.2 * k)).strftime("%Y-%m-%d %H:%M:%S,%f")[:-3]
        lines += [f"[1,{r}]<stderr>:{stamp}:INFO: Epoch[0] Batch [{20 * k}-{20 * k + 19}]\tSpeed: {rates[r, k]} "
                  "samples/sec\tLR: 0.08\t" for r in range(ranks)]
    path.write_text("\n".join(lines) + "\n")
    return statistics.fmean(rates[3, -50:].tolist())


def _big_log(records: int, limit: float, ranks: bool = False) -> bool:
    with tempfile.TemporaryDirectory() as tmp:
        if ranks:
            write_ranks_log(Path(tmp) / "warm_gpu8.txt", 800)  # (pandas' import, for the median over ranks)
            explain(logged_runs([Path(tmp) / "warm_gpu8.txt"])[0][0], "1000.0")
        log = Path(tmp) / ("mxnet_gpu8_amp_bs64.txt" if ranks else "tf_bert_pretraining_lamb_base_fp16_bs96_gpu1.log")
        # (6 decimals: a mean of 3-decimal rates printed with 4 may be a record's own rate, of 100,000)
        printed = f"{(write_ranks_log if ranks else write_log)(log, records):.6f}"
        start = time.perf_counter()
        runs, problems = logged_runs([log])
        read_s = time.perf_counter() - start
        if problems or len(runs) != 1:
            print(f"FAIL: the {records}-record log did not read as one run: {problems}")
            return False
        start = time.perf_counter()
        cell = explain(runs[0], printed)
        search_s = time.perf_counter() - start
    best = cell.best()
    want = "--rule nvidia --tail 50 --rank 3 --method mean" if ranks else "--rule perf --tail 20"
    found = best is not None and best.rule.cli() == want
    what = "of 8 ranks" if ranks else "of one rank"
    print(f"explain: a log {what} of {len(runs[0].run.all['line'])} records: read in {read_s:.2f} s, searched in "
          f"{search_s:.2f} s (limit {limit:.1f} s; {cell.found.space.split(' of the records')[0]}); first rule: "
          f"{best.rule.cli() if best else 'none'}", flush=True)
    if not found:
        print(f"FAIL: {want} is not the first rule found")
    if search_s > limit:
        print(f"FAIL: searching {records} records took more than {limit:.1f} s")
    return found and search_s <= limit


def _shipped_set(folder: str, reference: str, limit: float) -> bool:
    from benchbook.cli_explain import _matches
    from benchbook.models.reference_schema import load

    start = time.perf_counter()
    runs, problems = logged_runs([ROOT / "examples" / "published" / folder])
    read_s = time.perf_counter() - start
    ref = load(reference)
    start = time.perf_counter()
    cells = [explain(run, row.as_printed("throughput")) for row in ref.rows for run in runs if _matches(row, run)]
    search_s = time.perf_counter() - start
    records = sum(len(r.run) for r in runs)
    reproduced = sum(c.best() is not None for c in cells)
    print(f"explain: {folder} against {reference}: {len(cells)} cells of {len(runs)} runs ({records} records): read in "
          f"{read_s:.2f} s, searched in {search_s:.2f} s (limit {limit:.1f} s); {reproduced} reproduced", flush=True)
    if problems or not cells:
        print(f"FAIL: {folder}: {problems or 'no cell matched a run'}")
    if search_s > limit:
        print(f"FAIL: searching the cells of {folder} took more than {limit:.1f} s")
    return not problems and bool(cells) and search_s <= limit


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--records", type=int, default=100_000, help="records of the written log (default 100,000)")
    p.add_argument("--limit", type=float, default=5.0, help="seconds a search may take (default 5)")
    p.add_argument("--no-sets", action="store_true", help="time the written log alone")
    args = p.parse_args(argv)
    ok = _big_log(args.records, args.limit) & _big_log(args.records, args.limit, ranks=True)
    for folder, reference in () if args.no_sets else SETS:
        ok &= _shipped_set(folder, reference, args.limit)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
