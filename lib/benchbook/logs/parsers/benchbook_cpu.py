"""The project's own CPU workloads (`lib/benchbook/workloads/`): DLLogger stdout, one run per process.

`PARAMETER workload : <script>  framework : tensorflow ...` opens the run with its whole
configuration; `Epoch: E Iteration: I  train.loss : ...  train.ips : x images/s` is one iteration
(I is the global step, 0-based); `Epoch: E  val.top1 : ...` an evaluation; `Summary: train.ips :`
the end. The workload's summary is the arithmetic mean of the rates of the iterations at or past
`warmup_steps`, the NGC TF1 rule, which is therefore the default recompute rule here too.
"""

from __future__ import annotations

import re

from ..rules import NamedRule
from . import scanning
from .dllogger import LINE, before_warmup_steps, parameters, step_of, truthy, values
from .registry import LogFormat, register

_BULK = scanning.BulkRule(
    pattern=rf"DLL (?P<timestamp>{scanning.STAMP}) - Epoch: (?P<epoch>{scanning.INT}) "
            rf"Iteration: (?P<iteration>{scanning.INT})  train\.loss : (?P<loss>{scanning.NUM})  "
            rf"train\.ips : (?P<throughput>{scanning.NUM}) images/s  train\.lr : (?P<lr>{scanning.NUM})",
    types={"timestamp": "stamp", "epoch": "int", "iteration": "int", "loss": "float", "throughput": "float",
           "lr": "float"},
)
# Everything else, and iteration lines in another key order or with values that are no plain
# numbers (handled one by one).
_NUM = "[0-9.eE+-]+"
_OTHER = re.compile(LINE.pattern.replace(
    " - (", f" - (?!Epoch: \\d+ Iteration: \\d+  train\\.loss : {_NUM}  train\\.ips : {_NUM} images/s  "
            f"train\\.lr : {_NUM})(", 1))


def _meta(p: dict[str, str], stamp: str) -> dict:
    meta = {
        "params": p, "start_time": stamp, "mode": p.get("mode"), "framework": p.get("framework"),
        "model": "maskrcnn" if p.get("model", "").startswith("maskrcnn") else "resnet50",
        "arch": p.get("model"), "device": p.get("device", "cpu"),
        "precision": p.get("precision", "fp32"), "xla": bool(truthy(p.get("xla"))), "dali": False,
        "synthetic": p.get("data") == "synthetic", "nodes": 1,
    }
    for key in ("gpus", "batch_size", "warmup_steps", "num_iter", "image_size", "threads", "seed"):
        if p.get(key, "").isdigit():
            meta[key] = int(p[key])
    # Data-parallel processes (MPI ranks); workloads from before it was logged ran one.
    meta["processes"] = int(p["processes"]) if p.get("processes", "").isdigit() else 1
    return meta


def _dll(m: re.Match):
    kind, epoch, step = step_of(m)
    rest = m.group(9)
    if kind == "parameter":
        return scanning.RUN_START, _meta(parameters(rest), m.group(1))
    kv = values(rest)
    if kind == "step" and "train.ips" in kv:
        return scanning.STEP, scanning.step(epoch, step, m.group(1), scanning.number(kv["train.ips"]),
                                scanning.number(kv.get("train.loss", "")), scanning.number(kv.get("train.lr", "")))
    if kind == "epoch" and "val.top1" in kv:
        return scanning.EVAL, {"epoch": epoch, "timestamp": m.group(1), "top1": scanning.number(kv["val.top1"]),
                         "top5": scanning.number(kv.get("val.top5", "")),
                         "eval_throughput": scanning.number(kv.get("val.ips", ""))}
    if kind == "summary" and "train.ips" in kv:
        out = {k: scanning.number(v) for k, v in kv.items() if k != "target_reached"}
        out["throughput"] = out["train.ips"]
        if "target_reached" in kv:
            out["target_reached"] = truthy(kv["target_reached"])
        return scanning.SUMMARY, out
    return None


_RULES = [(_OTHER, _dll)]


def sniff(head: str) -> bool:
    return "- PARAMETER workload : " in head


NVIDIA = NamedRule(
    "nvidia", "mean", "iterations before the run's warmup_steps (PARAMETER line)",
    "benchbook lib/benchbook/workloads/_common_timing.py (this repository: summarize, the Summary's mean of "
    "train.ips from --warmup_steps on)", mark_warmup=before_warmup_steps)


FORMAT = register(
    LogFormat(
        name="benchbook_cpu",
        framework="tensorflow|mxnet|pytorch",
        model="resnet50",
        sniff=sniff,
        patterns=_RULES,
        bulk=_BULK,
        rules=(NVIDIA,),
        quality=scanning.IMAGE_CLASSIFICATION,
        opens=(re.compile(r" - PARAMETER workload : "),),
    )
)
