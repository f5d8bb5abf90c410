"""NGC MXNet ResNet-50 v1.5 runner logs, in both of its versions, and `benchmark.py` tables.

Older containers (19.07) log through Python logging: `Start with arguments Namespace(...)` opens a
run and `Epoch[E] Batch [a-b]<TAB>Speed: x samples/sec` are the records. Newer ones (20.12+, 22.x)
print DLLogger lines: `PARAMETER` (whose `gpus` lists the node's devices and `dllogger_log` ends in
`-GPUS,BATCH`), `Epoch: E Iteration: I  train.ips : x` every 20 iterations, `Epoch: E  train.ips : x`
for each epoch, and `Summary:` (the mean over all epochs, warm-up included: not the published
number). Under Horovod only rank 0 prints DLLogger lines. `benchmark.py` ends the file with tables
(`train.total_ips` or `train.ips`: a row per GPU count, a column per per-GPU batch), the numbers
it reports. `batch_size` in the arguments is the global batch.

The default (`nvidia`) rule is benchmark.py's: the harmonic mean of the epochs' rates after the
first (`-w 1`); an epoch's rate is the logged per-epoch `train.ips` where there is one, else, as
19.07's fit.py computes it, images over time from iteration 20 of epoch 0 (its list of durations
is never reset) to the end of the epoch.
"""

from __future__ import annotations

import ast
import functools
import re
from typing import TYPE_CHECKING

import numpy as np

from ..rules import NamedRule
from . import scanning
from .dllogger import LINE, parameters, step_of, values
from .registry import LogFormat, register

if TYPE_CHECKING:  # a rule reads one run; the analysis imports run.py, listing the formats does not
    from ..rules import Run

_ARGS = re.compile(r":INFO: Start with arguments Namespace\(([^\n]*)")  # up to the line's last `)`: _start
# A batch line: `2020-12-11 03:13:49,587:INFO: Epoch[0] Batch [0-19]\tSpeed: 633.1 samples/sec\tLR: 0.0019`,
# found by its `:INFO: Epoch[` (Python logging's 23-character time stands before it). A rate of `nan` or `inf`
# (MXNet's Speedometer prints what float division gives) is read, and said among the run's warnings.
# The time is caught by a lookbehind (23 characters), the pattern begins with the literal after it.
_BATCH = (rf":INFO: Epoch\[(?<=(?P<timestamp>{scanning.DATE_TIME}[.,][0-9]{{3}}):INFO: Epoch\[)"
          rf"(?P<epoch>{scanning.INT})\] Batch \[(?P<first>{scanning.INT})-(?P<last>{scanning.INT})\]\t"
          rf"Speed: (?P<throughput>{scanning.NUM}|nan|-?inf) samples/sec(?:[^\n]*?LR: (?P<lr>{scanning.NUM}))?"
          r"[^\n]*")  # (the rest of the line: the scan for LR made once a line, not once a candidate on it)
_TOOK = re.compile(r"Experiment took: ([0-9.]+) sec")
# fit.py's `logging.info('Starting epoch {}')`, which every rank logs (DLLogger lines: rank 0 alone).
_EPOCH_START = re.compile(r":INFO: [Ss]tarting epoch \d")
_DIGITS = re.compile(r"\d+")
_TABLE = re.compile(r"\n((?:train|val)\.[a-z_0-9]+)\n( *\|[^\n]*)\n-+\n((?: *\d+ *\|[^\n]*\n)+)")


@functools.lru_cache(maxsize=256)
def namespace(body: str) -> dict:
    """The arguments of a printed argparse Namespace, as Python values (literals only)."""
    try:
        call = ast.parse(f"f({body})", mode="eval").body
        return {kw.arg: ast.literal_eval(kw.value) for kw in call.keywords}
    except (SyntaxError, ValueError):
        return {}


def _args_meta(args: dict) -> dict:
    dtype = str(args.get("dtype", "float32"))
    gpus = args.get("gpus")
    per_process = len(gpus) if isinstance(gpus, (list, tuple)) else (
        len(str(gpus).split(",")) if gpus not in (None, "") else 1)
    meta = {
        "params": {k: str(v) for k, v in args.items()},
        "mode": args.get("mode"),
        "arch": args.get("arch"),
        # benchmark.py's float16 is what the published tables call AMP.
        "precision": "amp" if dtype in ("float16", "fp16") or args.get("amp") is True else "fp32",
        "xla": False,
        "dali": str(args.get("data_backend", "")).startswith("dali"),
        "synthetic": str(args.get("data_backend", "")) == "synthetic",
        "global_batch_size": int(args["batch_size"]) if str(args.get("batch_size", "")).isdigit() else None,
        "gpus_per_process": per_process,
        "kv_store": args.get("kv_store"),
    }
    m = re.search(r"-(\d+),(\d+)$", str(args.get("report") or args.get("dllogger_log") or ""))
    if m:
        meta["report_gpus"], meta["report_batch"] = int(m.group(1)), int(m.group(2))
    return meta


def _stamp(m: re.Match) -> str | None:
    """The `2020-12-11 03:13:49,587` that Python logging put before `:INFO:`, if it is there."""
    start = m.start()
    stamp = m.string[max(start - 23, 0) : start]
    return stamp if len(stamp) == 23 and stamp[4] == "-" and stamp[19] == "," else None


@functools.lru_cache(maxsize=256)
def _start_meta(body: str) -> dict:
    """Metadata of a printed Namespace: every rank of a run prints the same one."""
    return _args_meta(namespace(body))


def _start(m: re.Match):
    end = m.group(1).rfind(")")  # (the Namespace's own closing parenthesis: the line's last)
    if end < 0:
        return None
    meta = dict(_start_meta(m.group(1)[:end]))
    meta["params"] = dict(meta["params"])
    meta["start_time"] = _stamp(m)
    return scanning.RUN_START, meta


def _batch(f: dict) -> dict:
    first, last = f["first"], f["last"]
    return {"timestamp": f["timestamp"], "epoch": f["epoch"], "iteration": last + 1,
            "steps": (last - first + 1).astype(float), "throughput": f["throughput"], "lr": f["lr"]}


_BULK = scanning.BulkRule(
    pattern=_BATCH, lead=23, convert=_batch,
    types={"timestamp": "stamp", "epoch": "int", "first": "int", "last": "int", "throughput": "float", "lr": "float"})


def _table(m: re.Match):
    metric, header, body = m.groups()
    columns = [int(c) for c in _DIGITS.findall(header)]
    rows = []
    for row in body.splitlines():
        gpus, _, cells = row.partition("|")
        gpus = int(gpus)
        for batch, cell in zip(columns, cells.split("|"), strict=False):
            value = scanning.number(cell)  # float() first: a plain number, mostly
            if value is None:
                continue
            rows.append(({"gpus": gpus, "batch_size": batch}, {metric: value}))
    return scanning.TABLE, rows


def _dll(m: re.Match):
    kind, epoch, iteration = step_of(m)
    rest = m.group(9)
    if kind == "parameter":
        meta = _args_meta({k: _literal(v) for k, v in parameters(rest).items()})
        meta["start_time"] = m.group(1)
        meta["dllogger"] = True  # printed by rank 0 alone, with the node's devices in `gpus`
        return scanning.RUN_START, meta
    kv = values(rest)
    if kind == "step":
        rate = kv.get("train.ips", kv.get("train.total_ips"))
        if rate is None:
            return None
        return scanning.STEP, scanning.step(epoch, iteration, m.group(1), scanning.number(rate),
                                scanning.number(kv["train.loss"]) if "train.loss" in kv else None,
                                scanning.number(kv["train.lr"]) if "train.lr" in kv else None)
    if kind == "epoch" and ("val.top1" in kv or "val.accuracy" in kv):
        return scanning.EVAL, {"epoch": epoch, "timestamp": m.group(1),
                         "top1": scanning.number(kv.get("val.top1", kv.get("val.accuracy", ""))),
                         "top5": scanning.number(kv.get("val.top5", "")),
                         "eval_throughput": scanning.number(kv.get("val.ips", ""))}
    if kind == "summary":  # the mean over every epoch: kept apart from benchmark.py's number
        return scanning.SUMMARY, {f"summary.{k}": scanning.number(v) for k, v in kv.items()}
    return None


# An epoch's own line (`Epoch: E  train.loss : ...  train.ips : x images/s`, validation values
# after it in train_val mode): its rate is a record without an iteration, which the nvidia rule
# reads; the same line's validation values are an evaluation (LINE's rule).
# Its keys are looked for in the rest of the line (a scan for a key a line lacks, retried from each next
# candidate on the line, is quadratic in its length: issue 49).
_EPOCH_IPS = re.compile(r"DLL (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?) - Epoch: (\d+) +(?!Iteration)([^\n]*)")
_LOSS_KEY, _IPS_KEY = re.compile(r"train\.loss : (\S+)"), re.compile(r"\btrain\.ips : (\S+)")


def _epoch_ips(m: re.Match):
    """The epoch's rate, and its train.loss where one stands before it (the first of each)."""
    stamp, epoch, rest = m.groups()
    loss = _LOSS_KEY.search(rest)
    rate = _IPS_KEY.search(rest, loss.end()) if loss else None
    if rate is None:
        loss, rate = None, _IPS_KEY.search(rest)
    if rate is None:
        return None
    return scanning.STEP, scanning.step(int(epoch), None, stamp, scanning.number(rate[1]),
                                        scanning.number(loss[1]) if loss is not None else None)


def _literal(value: str):
    try:
        return ast.literal_eval(value)
    except (SyntaxError, ValueError):
        return value


_RULES = [
    (_ARGS, _start),
    (_TOOK, lambda m: (scanning.END, f"Experiment took {m.group(1)} s")),
    (_EPOCH_START, lambda m: (scanning.RANK, None)),
    (_TABLE, _table),
    (_EPOCH_IPS, _epoch_ips),
    (LINE, _dll),
]


def sniff(head: str) -> bool:
    """The runner's Namespace with the NGC MXNet arguments, its batch lines, or its DLLogger keys."""
    return ("Start with arguments Namespace(" in head and "data_backend=" in head) or (
        ":INFO: Epoch[" in head and "Speed:" in head) or "train.ips : " in head


def _epoch_records(run: Run):
    """Records of a whole epoch (DLLogger `Epoch: E  train.ips`): no iteration, an epoch."""
    return (run["iteration"] < 0) & (run["epoch"] >= 0)


def select(run: Run):
    """benchmark.py's records: a run's per-epoch records where it logged any, else every record."""
    whole = _epoch_records(run)
    return whole | (len(run) > 0 and run["iteration"].min() >= 0)


def warmup(run: Run):
    """The first epoch's record where the run logs one per epoch and has several (benchmark.py
    -w 1); else iterations 0-19 of the first epoch, which fit.py (19.07) leaves out of its
    durations (`durations[20:]`): the rest of that epoch still counts towards the next ones'."""
    epoch = run["epoch"]
    first = epoch == epoch.min()
    several = epoch.max() != epoch.min()
    return np.where(_epoch_records(run), first & several, first & (run["iteration"] <= 20))


def finish(meta: dict, ranks: set) -> dict:
    """GPUs from benchmark.py's `-GPUS,BATCH` suffix, the ranks that logged or the devices listed;
    per-GPU batch from the global one in the arguments.

    Under Horovod each process drives one GPU and `gpus` lists one node's GPUs. In DLLogger logs
    only rank 0 prints records, but every rank logs `Starting epoch`: where the rank tags show more
    processes than the list (several nodes), the processes are the GPUs (fit.py@135fbd91: total
    batch = local batch x GPUs x hvd.size(); data.py@ef5b97d0: local batch = batch_size //
    hvd.size()). With a `device` kvstore one process drives every GPU listed.
    """
    tagged = {r for r in ranks if r is not None}
    per_process = int(meta.get("gpus_per_process") or 1)
    if meta.get("kv_store") == "horovod":
        if meta.get("dllogger"):
            gpus = int(meta.get("report_gpus") or max(per_process, len(tagged)))
        else:
            gpus = len(tagged) if tagged else int(meta.get("report_gpus") or per_process)
    else:
        gpus = per_process * max(len(tagged), 1)
    out: dict = {"gpus": gpus}
    gb = meta.get("global_batch_size")
    if gb:
        out["batch_size"] = gb // gpus
    return out


_SOURCE_NVIDIA = ("NVIDIA/DeepLearningExamples MxNet/Classification/RN50v1.5/benchmark.py@52c60d2e "
                  "(harmonic mean after -w epochs), fit.py@e470c215 (20.12+: per-epoch train.ips) and "
                  "fit.py@99b1c898 (19.07, the reference runs' commit: durations[20:], never reset)")
_SOURCE_DLPERF = (
    "Oneflow-Inc/DLPerf NVIDIADeepLearningExamples/MxNet/Classification/RN50v1.5/extract_mxnet_logs.py@0b0f0881")


def _dlperf_records(run: Run):
    """DLPerf reads the ` Epoch[0] Batch ` lines: the first epoch's 20-iteration records."""
    return (run["epoch"] == 0) & (run["iteration"] >= 0)


DLPERF = NamedRule(
    "dlperf", "mean", "the first 20 of epoch 0's records (speeds[20:120])", _SOURCE_DLPERF,
    select=_dlperf_records, skip=20, window=100, decimals=2, across_ranks=True)


NVIDIA = NamedRule(
    "nvidia", "epochs", "the first epoch's record (benchmark.py -w 1), else, where no epoch logs its own rate "
    "(19.07), iterations 0-19 of the first epoch (fit.py: durations[20:]) and the method drops the first epoch",
    _SOURCE_NVIDIA, mark_warmup=warmup, select=select)


def arch(meta: dict) -> str | None:
    """The model a log names: `--arch` and `--num-layers` (`resnetv15-50`), the layers 50 where the log does
    not print them (models.py@e470c215 add_model_args: `--arch` default resnetv15, `--num-layers` 50)."""
    if meta.get("arch") is None:
        return None
    return f"{meta['arch']}-{(meta.get('params') or {}).get('num_layers') or 50}"


FORMAT = register(
    LogFormat(
        name="ngc_mxnet_resnet50",
        framework="mxnet",
        model="resnet50",
        sniff=sniff,
        patterns=_RULES,
        bulk=_BULK,
        rules=(NVIDIA, DLPERF),
        quality=scanning.IMAGE_CLASSIFICATION,
        finish=finish,
        arch=arch,
        opens=(_ARGS, re.compile(r" - PARAMETER arch : \S+  num_layers : ")),
    )
)
