"""NGC TensorFlow 1 ConvNets (ResNet-50 v1.5) `main.py` logs: DLLogger stdout.

Runs open with a `PARAMETER` line; per-step lines are `(epoch, step) total_ips : x` or, in older
containers, `(epoch, step) imgs_per_sec : x cross_entropy : ... total_loss : ... learning_rate : ...`;
`() train_throughput : x` is the summary and `top1_accuracy` lines are evaluations. `total_ips` is
the global rate (all GPUs) of one step; the script's summary is their arithmetic mean after the
`warmup_steps`, so the default recompute rule is the mean of the records at or past that step.

In `--mode train` and `train_and_evaluate`, the training hook (TrainingLoggingHook) logs only the
steps it averages, so its summary is the mean of every logged training record. After training,
`train_and_evaluate` evaluates one epoch, whose hook logs `(0, step) total_ips` lines after the
`() train_throughput` line: those are evaluation steps, not training records.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import numpy as np

from ..rules import NamedRule
from . import scanning
from .dllogger import LINE, before_warmup_steps, parameters, step_of, truthy, values
from .registry import LogFormat, register

if TYPE_CHECKING:  # a rule reads one run; the analysis imports run.py, listing the formats does not
    from ..rules import Run

# The one-metric step lines that make up most of a benchmark log get their own pattern.
_BULK = scanning.BulkRule(
    pattern=rf"DLL (?P<timestamp>{scanning.STAMP}) - \((?P<epoch>{scanning.INT}), (?P<iteration>{scanning.INT})\) "
            rf"total_ips : (?P<throughput>{scanning.NUM})",
    types={"timestamp": "stamp", "epoch": "int", "iteration": "int", "throughput": "float"},
)
# Every other DLLogger line, a step line the bulk pattern does not read among them (a rate of `nan`, a
# step of 20 digits: read, or said, one by one).
_OTHER = re.compile(LINE.pattern.replace(
    " - (", f" - (?!\\({scanning.INT}, {scanning.INT}\\) total_ips : {scanning.NUM})(", 1))
_GPUS = re.compile(r"Num GPUs (\d+)")
_BATCH = re.compile(r"Per-GPU Batch Size (\d+)")
_END = re.compile(r"Ending Model Training")
_EVALUATION = re.compile(r"Starting Model Evaluation")  # runner.evaluate(): its hook counts steps from 0
_TRAINING_END = re.compile(rf"DLL ({scanning.STAMP}) - \(\) train_throughput : ")
_RATE_KEYS = ("total_ips", "imgs_per_sec", "train_throughput_step")
_LOSS_KEYS = ("total_loss", "loss", "cross_entropy")


def _params_meta(p: dict[str, str]) -> dict:
    amp = truthy(p.get("use_tf_amp")) or truthy(p.get("amp")) or p.get("precision") in ("fp16", "amp")
    data_dir = p.get("data_dir")
    meta = {
        "params": p,
        "mode": p.get("mode"),
        "arch": p.get("arch"),
        "precision": "amp" if amp else (p.get("precision") or "fp32"),
        "xla": truthy(p.get("use_xla")) or truthy(p.get("xla")) or False,
        "dali": truthy(p.get("use_dali")) or truthy(p.get("dali")) or False,
        "synthetic": data_dir in (None, "None", "", "none"),
    }
    for key in ("batch_size", "warmup_steps", "num_iter", "display_every"):
        if p.get(key, "").isdigit():
            meta[key] = int(p[key])
    return meta


def _dll(m: re.Match):
    kind, epoch, step = step_of(m)
    rest = m.group(9)
    if kind == "step":
        kv = values(rest)
        rate = next((kv[k] for k in _RATE_KEYS if k in kv), None)
        loss = next((kv[k] for k in _LOSS_KEYS if k in kv), None)
        if rate is None and loss is None:
            return None
        return scanning.STEP, scanning.step(
            epoch, step, m.group(1), scanning.number(rate) if rate else None,
            scanning.number(loss) if loss else None,
            scanning.number(kv["learning_rate"]) if "learning_rate" in kv else None)
    if kind == "parameter":
        meta = _params_meta(parameters(rest))
        meta["start_time"] = m.group(1)
        return scanning.RUN_START, meta
    kv = values(rest)
    if "top1_accuracy" in kv or "top1" in kv:
        return scanning.EVAL, {
            "epoch": epoch, "timestamp": m.group(1),
            "top1": scanning.number(kv.get("top1_accuracy", kv.get("top1", ""))),
            "top5": scanning.number(kv.get("top5_accuracy", kv.get("top5", "")) or ""),
            "eval_throughput": scanning.number(kv.get("eval_throughput", "")),
        }
    if kind == "summary" and kv:
        out = {k: scanning.number(v) for k, v in kv.items()}
        if "train_throughput" in out:
            out["throughput"] = out["train_throughput"]
        return scanning.SUMMARY, out
    return None


_RULES = [
    (_OTHER, _dll),
    (_GPUS, lambda m: (scanning.META, {"gpus": int(m.group(1))})),
    (_BATCH, lambda m: (scanning.META, {"batch_size": int(m.group(1))})),
    (_END, lambda m: (scanning.END, "Ending Model Training")),
    (_TRAINING_END, lambda m: (scanning.META, {"training_end": m.group(1)})),
    (_EVALUATION, lambda m: (scanning.PHASE, None)),
]


def sniff(head: str) -> bool:
    """DLLogger lines with the ConvNets parameters or per-step rates."""
    return "DLL " in head and (
        "PARAMETER arch : " in head or " total_ips : " in head or " imgs_per_sec : " in head
        or "train_throughput" in head
    )


_SOURCE_NVIDIA = ("NVIDIA/DeepLearningExamples TensorFlow/Classification/ConvNets/utils/hooks/benchmark_hooks.py"
                  "@bd257e14 (training_benchmark: mean of the per-step rates from warmup_steps on), "
                  "utils/hooks/training_hooks.py@33110132 (train modes: mean of the steps it logs, from its own "
                  "warmup_steps on) and runtime/runner.py@169b0818 (evaluation after training: its own hook)")
_TRAIN_MODES = ("train", "train_and_evaluate")  # runner.train() logs through TrainingLoggingHook


def warmup(run: Run):
    """training_benchmark (BenchmarkLoggingHook, and logs without a mode): records before the
    PARAMETER warmup_steps; train modes: none, TrainingLoggingHook logs only the steps it averages
    (from its own warmup_steps, which runner.py may leave at the hook's default 20)."""
    return before_warmup_steps(run) & (run.meta.get("mode") not in _TRAIN_MODES)


def training(run: Run):
    """Records logged before the run's `() train_throughput` line: the evaluation that
    train_and_evaluate runs after training logs its own steps after it."""
    stamp = run.meta.get("training_end")
    return ~(run["timestamp"] > (scanning.seconds(stamp) if stamp else np.inf))


_SOURCE_DLPERF = ("Oneflow-Inc/DLPerf NVIDIADeepLearningExamples/TensorFlow/Classification/ConvNets/resnet50v1.5/"
                  "extract_tensorflow_logs.py@8eea6403")
DLPERF_WARMUP_STEPS = 20  # extract_tensorflow_logs.py --warmup_batches 20 (its logs start after them)


def _dlperf_warmup(run: Run):
    """Steps before the 20th: the logs DLPerf read had none (the hook logged from warmup_steps=20
    on), so its `avg_speed_list[warmup_batches - 20 : train_batches - 20]` is [0:100]."""
    return run["iteration"] < DLPERF_WARMUP_STEPS


DLPERF = NamedRule("dlperf", "mean", f"records before step {DLPERF_WARMUP_STEPS}", _SOURCE_DLPERF,
                   mark_warmup=_dlperf_warmup, window=100, decimals=2)


def warn(meta: dict) -> list[str]:
    """Both hooks average every step after their warm-up but log one in `display_every`
    (`current_step % logging_steps == 0`, benchmark_hooks.py@bd257e14, training_hooks.py@33110132)."""
    every = meta.get("display_every") or 1
    if every <= 1:
        return []
    return [f"display_every is {every}: the logged steps are one in {every} of those the script averaged, so "
            "the recomputed throughput is the mean of a sample"]


NVIDIA = NamedRule(
    "nvidia", "mean", "records before the run's warmup_steps (PARAMETER line), none in the train modes (train, "
    "train_and_evaluate); records after the training summary (evaluation steps) are not read", _SOURCE_NVIDIA,
    mark_warmup=warmup, select=training)


FORMAT = register(
    LogFormat(
        name="ngc_tf1_convnets",
        framework="tensorflow",
        model="resnet50",
        sniff=sniff,
        patterns=_RULES,
        bulk=_BULK,
        rules=(NVIDIA, DLPERF),
        quality=scanning.IMAGE_CLASSIFICATION,
        opens=(re.compile(r" - PARAMETER arch : \S+  mode : "),),  # (MXNet's: `num_layers` second)
        warn=warn,
    )
)
