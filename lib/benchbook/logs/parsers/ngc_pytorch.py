"""NGC PyTorch ConvNets (ResNet-50 v1.5) `main.py` logs: DLLogger stdout of rank 0.

`multiproc.py` prints the argv list of each process it spawns (`['/usr/bin/python', '-u',
'./main.py', '--arch', 'resnet50', ...]`), then `main.py` prints `PARAMETER` lines (its arguments:
`batch_size` per GPU, `amp`, `world_size`), `Epoch: E Iteration: I  train.loss : x None
train.compute_ips : x images/s train.total_ips : x images/s train.lr : x ...` every `print_freq`
iterations (older containers: `img/s`), `Epoch: E  ...` with the epoch's means (and validation
values) and `Summary:` with the run's means. Only rank 0 has a DLLogger backend; under `mpirun
--tag-output --timestamp-output` (several nodes, each with its own `multiproc.py`) the lines carry
rank tags. `train.total_ips` is `calc_ips`: the global rate, world_size * batch / iteration time.

The default (`nvidia`) rule is the script's own: the logger's `PERF_METER` averages the
per-iteration `train.total_ips` over each epoch and the epochs' averages (weighted by their
iterations) over the run, with no warm-up, and `--raport-file benchmark.json` keeps that summary:
the mean of every logged record.
"""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING

import numpy as np

from ..rules import NamedRule
from . import scanning
from .dllogger import LINE, parameters, step_of, truthy, values
from .registry import LogFormat, register

if TYPE_CHECKING:  # a rule reads one run; the analysis imports run.py, listing the formats does not
    from ..rules import Run

# `DLL <time> - Epoch: E Iteration: I  train.loss : ...`: the per-iteration lines, as columns. The
# two spaces then `train.` keep validation iterations (`Iteration: I Validation Iteration: V`) out.
# The loss, rate and learning rate are sought further along the line, each may be missing.
_BULK = scanning.BulkRule(
    pattern=rf"DLL (?P<timestamp>{scanning.STAMP}) - Epoch: (?P<epoch>{scanning.INT}) "
            rf"Iteration: (?P<iteration>{scanning.INT})  train\.(?:[^\n]*?loss : (?P<loss>{scanning.NUM}))?"
            rf"(?:[^\n]*?train\.total_ips : (?P<throughput>{scanning.NUM}))?"
            rf"(?:[^\n]*?train\.lr : (?P<lr>{scanning.NUM}))?",
    types={"timestamp": "stamp", "epoch": "int", "iteration": "int", "loss": "float", "throughput": "float",
           "lr": "float"},
)
# multiproc.py's `print(cmd)`: a Python list whose third item is the training script.
_ARGV_LIST = r"\[(?:'[^'\n]*python[^'\n]*'|\"[^\"\n]*python[^\"\n]*\"), '-u', '[^'\n]*main\.py'[^\n]*\]"
_ARGV = re.compile(_ARGV_LIST)
# One launch: multiproc.py@11820597 prints the list of each local process it spawns, one a line.
_LAUNCH = re.compile(rf"{_ARGV_LIST}(?:\n{_ARGV_LIST})*")
_END = re.compile(r"Experiment ended")


def _number(value) -> float | None:
    return scanning.number(str(value)) if value is not None else None


def _params_meta(p: dict[str, str]) -> dict:
    """Run metadata from main.py's arguments (PARAMETER keys, or argv options turned into keys)."""
    amp = truthy(p.get("amp")) or truthy(p.get("fp16")) or str(p.get("precision", "")).lower() in ("amp", "fp16")
    meta: dict = {
        "params": dict(p),
        "mode": "training_only" if truthy(p.get("training_only")) else p.get("mode"),
        "arch": p.get("arch"),
        "precision": "amp" if amp else "fp32",
        "xla": False,
        "dali": str(p.get("data_backend", "")).startswith("dali"),
        "synthetic": str(p.get("data_backend", "")) in ("synthetic", "syntetic"),
        "memory_format": p.get("memory_format"),
    }
    for key in ("batch_size", "world_size", "prof", "print_freq", "epochs"):
        value = str(p.get(key, "")).strip()
        if value.lstrip("-").isdigit():
            meta[key] = int(value)
    return {k: v for k, v in meta.items() if v is not None}


_ARGV_KEYS = {"-b": "batch_size", "--batch-size": "batch_size", "-a": "arch", "--arch": "arch",
              "-p": "print_freq", "--print-freq": "print_freq", "--prof": "prof", "--epochs": "epochs",
              "--data-backend": "data_backend", "--memory-format": "memory_format"}
_ARGV_FLAGS = {"--amp": "amp", "--fp16": "fp16", "--training-only": "training_only"}


def _argv(m: re.Match):
    """A launch's commands (one a spawned process): the first's options as PARAMETER keys (older logs
    print no PARAMETER), and how many processes it spawned (`launch_processes`)."""
    lines = m.group(0).split("\n")
    try:
        argv = ast.literal_eval(lines[0])
    except (SyntaxError, ValueError):
        return None
    p: dict[str, str] = {}
    args = [str(a) for a in argv[3:]]
    for i, arg in enumerate(args):
        name, eq, inline = arg.partition("=")
        if name in _ARGV_FLAGS:
            p[_ARGV_FLAGS[name]] = "True"
        elif name in _ARGV_KEYS:
            value = inline if eq else (args[i + 1] if i + 1 < len(args) else "")
            p[_ARGV_KEYS[name]] = value
    meta = _params_meta(p)
    if "data_backend" not in p:  # main.py's default (it changed between versions): the PARAMETER line's
        del meta["dali"], meta["synthetic"]
    meta["command"] = " ".join(str(a) for a in argv)
    meta["launch_processes"] = len(lines)
    return scanning.RUN_START, meta


def _dll(m: re.Match):
    kind, epoch, iteration = step_of(m)
    rest = m.group(9)
    if kind == "parameter":
        p = parameters(rest)
        if "batch_size" not in p and "arch" not in p:  # `model.*` parameters: nothing about the run
            return None
        meta = _params_meta(p)
        meta["start_time"] = m.group(1)
        return scanning.RUN_START, meta
    kv = values(rest)
    if kind == "step":  # a step line the layout did not take (other spacing), or a validation one
        if "train.total_ips" not in kv:
            return None
        return scanning.STEP, scanning.step(epoch, iteration, m.group(1), _number(kv["train.total_ips"]),
                                _number(kv.get("train.loss")), _number(kv.get("train.lr")))
    top1 = _number(kv.get("val.top1"))
    if kind == "epoch" and top1 is not None:
        return scanning.EVAL, {"epoch": epoch, "timestamp": m.group(1), "top1": top1,
                         "top5": _number(kv.get("val.top5")), "eval_throughput": _number(kv.get("val.total_ips"))}
    if kind == "summary":
        out = {k: v for k, v in ((k, _number(v)) for k, v in kv.items()) if v is not None}
        if "train.total_ips" in out:
            out["throughput"] = out["train.total_ips"]
        return (scanning.SUMMARY, out) if out else None
    return None


_RULES = [
    (LINE, _dll),
    (_LAUNCH, _argv),
    (_END, lambda m: (scanning.END, "Experiment ended")),
]


def sniff(head: str) -> bool:
    """DLLogger lines with main.py's per-iteration rates, or its arguments."""
    return "DLL " in head and (
        "train.compute_ips : " in head or "train.total_ips : " in head and " Iteration: " in head
        or ("PARAMETER " in head and " raport_file : " in head)
    ) or bool(_ARGV.search(head))


def finish(meta: dict, ranks: set) -> dict:
    """GPUs from the PARAMETER `world_size` (main.py sets it from WORLD_SIZE), else the processes
    multiproc.py spawned (one argv list each, one process a GPU) or the ranks that logged, whichever
    is more; batch_size is already per GPU (`-b`: mini-batch size per GPU). A log that names no
    data backend anywhere reads as it always did: no DALI, real data."""
    tagged = {r for r in ranks if r is not None}
    spawned = int(meta.get("launch_processes") or 1)
    return {"gpus": int(meta.get("world_size") or max(len(tagged), spawned, 1)), "dali": False, "synthetic": False}


def every_record(run: Run):
    """No warm-up: main.py's meters average every iteration of the run."""
    return np.zeros(len(run), dtype=bool)


_SOURCE_NVIDIA = (
    "NVIDIA/DeepLearningExamples PyTorch/Classification/ConvNets/image_classification/logger.py@48dc9ada "
    "(PERF_METER: AverageMeter per iteration, epoch and run) and training.py@0107cf27 (total_ips = "
    "calc_ips(bs, it_time), logged every iteration; no warm-up)")

PERF_FIRST_ITERATION = 10
_SOURCE_PERF = ("PaddlePaddle/Perf ResNet50V1.5/OtherReports/PyTorch README.md@e7a07c4d results table: no script is "
                "published; the mean of the records from iteration 10 on gives its 790.033 for logs/V100-LOG/"
                "pytorch_gpu1_amp_bs256.txt to the last digit (the mean of all: 782.00)")


def _before_iteration_10(run: Run):
    return run["iteration"] < PERF_FIRST_ITERATION


PERF = NamedRule("perf", "mean", f"records before iteration {PERF_FIRST_ITERATION}", _SOURCE_PERF,
                 mark_warmup=_before_iteration_10)


NVIDIA = NamedRule("nvidia", "mean", "no records (main.py's meters average every iteration)", _SOURCE_NVIDIA,
                   mark_warmup=every_record)


FORMAT = register(
    LogFormat(
        name="ngc_pytorch_convnets",
        framework="pytorch",
        model="resnet50",
        sniff=sniff,
        patterns=_RULES,
        bulk=_BULK,
        rules=(NVIDIA, PERF),
        quality=scanning.IMAGE_CLASSIFICATION,
        finish=finish,
        opens=(re.compile(r" - PARAMETER data : "), re.compile(r", '-u', '[^'\n]*main\.py'")),  # (the launch: _ARGV)
    )
)
