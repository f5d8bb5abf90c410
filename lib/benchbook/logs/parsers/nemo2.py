"""NeMo 2 pre-training logs (NVIDIA/NeMo nemo/lightning/pytorch/callbacks/progress_printer.py, the recipes that
NVIDIA/dgxc-benchmarking runs through NeMo-Run): one line a logged step from Lightning's progress printer.

What a log holds: the recipe's configuration as Python reprs (`tensor_model_parallel_size=2,
pipeline_model_parallel_size=1, ... seq_length=8192, micro_batch_size=1, global_batch_size=128`), Lightning's
`Initializing distributed: GLOBAL_RANK: 0, MEMBER: 1/64` (the GPUs), then `Training epoch 0, iteration 74/99 | lr:
... | global_batch_size: 128 | global_step: 74 | reduced_train_loss: 11.87 | train_step_timing in s: 8.768 |
TFLOPS_per_GPU: 865.7 | consumed_samples: 9600`. The iteration is zero-based and the total the last one (`99` of
100 steps); the step time is the step's own, not an interval's. Some versions name the FLOPs callback's figure
`tflops_per_sec_per_gpu`, some recipes add `tokens_per_sec_per_gpu`; the first steps may log no TFLOP/s.
dgxc-benchmarking's windows are by the iteration as printed (35-44 zero-based here, one-based for Megatron).
"""

from __future__ import annotations

import math
import re

from ...core.measures import LOSS, MFU, STEP_TIME, TFLOPS_PER_GPU, THROUGHPUT, TOKENS_PER_GPU
from ..rules import NamedRule
from . import scanning
from .megatron_lm import _ARG, LLM_AXES, _arg, _first, _once, dgxc_status, finish
from .registry import LogFormat, register

_STEP = re.compile(r"Training epoch ([0-9]{1,18}), iteration ([0-9]{1,18})/([0-9]{1,18}) \|([^\n]*)")
_MEMBERS = re.compile(r"Initializing distributed: GLOBAL_RANK: [0-9]+, MEMBER: [0-9]+/([0-9]+)")
_DONE = re.compile(r"Training epoch [0-9]{1,18}, iteration ([0-9]{1,18})/\1 \||`Trainer\.fit` stopped: ")
_FIELDS = {"train_step_timing in s": "step_time", "TFLOPS_per_GPU": "tflops_per_gpu",
           "tflops_per_sec_per_gpu": "tflops_per_gpu", "tokens_per_sec_per_gpu": "tokens_per_gpu"}


def _step(m: re.Match):
    """One record: the step's rate (global batch / step time), loss, lr and its logged fields."""
    fields = {}
    for part in m.group(4).split("|"):
        name, sep, value = part.partition(":")
        if sep:
            fields[name.strip()] = value.strip()
    extra = {field: _first(fields[name]) for name, field in _FIELDS.items() if name in fields}
    batch, step = _first(fields.get("global_batch_size", "")), extra.get("step_time", math.nan)
    loss = _first(fields.get("reduced_train_loss", ""))
    return scanning.STEP, scanning.step(int(m.group(1)), int(m.group(2)), None, batch / step if step > 0 else None,
                                        loss, scanning.number(fields.get("lr", "")), extra=extra)


# A run's first step, or Lightning's restore from a checkpoint: a new run (the lines carry no time from which a
# pasted second run could be told).
_OPENS = re.compile(r"Training epoch 0, iteration 0/|Restored all states from the checkpoint")

# The progress line's total is the last step's zero-based index (`iteration 74/99`): the steps planned, one more.
_TOTAL = re.compile(r"Training epoch [0-9]{1,18}, iteration [0-9]{1,18}/([0-9]{1,18}) \|")

_RULES = [(_OPENS, lambda m: (scanning.RUN_START, {})), (_STEP, _step), (_ARG, _arg),
          (_TOTAL, lambda m: (scanning.META, {"iterations_planned": int(m.group(1)) + 1})),
          (_MEMBERS, lambda m: (scanning.META, {"gpus": int(m.group(1))})), (_DONE, lambda m: (scanning.END, "done"))]


def sniff(head: str) -> bool:
    """Lightning's progress line with NeMo's step timing."""
    return "Training epoch " in head and ("train_step_timing in s:" in head or "reduced_train_loss:" in head)


def _window(first: int, last: int):
    return lambda run: _once(run) & (run["iteration"] >= first) & (run["iteration"] <= last)


def _second_half(run):
    """NeMo's FLOPs callback: the mean of the second half of the step times."""
    import numpy as np

    keep = _once(run) & ~np.isnan(run["throughput"])
    at = np.flatnonzero(keep)
    keep[at[: len(at) // 2]] = False
    return keep


def _last(run):
    import numpy as np

    keep = _once(run) & ~np.isnan(run["throughput"])
    keep[np.flatnonzero(keep)[:-1]] = False
    return keep


SOURCE = "NVIDIA/NeMo nemo/lightning/pytorch/callbacks/progress_printer.py (train_step_timing: the step's time)"
ALL = NamedRule("all", "harmonic", "no records", SOURCE + "; every logged step", select=_once)
DGXC_2508 = NamedRule("nvidia", "harmonic", "iterations 0-34", "NVIDIA/dgxc-benchmarking v25.08 on (mean of "
                      "iterations 35-44 as printed, zero-based for NeMo 2)", select=_window(35, 44),
                      verdict=dgxc_status(35, 44, base=0))
DGXC_2505 = NamedRule("dgxc_v25.05", "harmonic", "iterations 0-10", "NVIDIA/dgxc-benchmarking v25.05-v25.07 (mean "
                      "of iterations 11-44 as printed)", select=_window(11, 44), verdict=dgxc_status(11, 44, base=0))
LAST = NamedRule("dgxc_v24.11", "harmonic", "every step but the last", "NVIDIA/dgxc-benchmarking v24.11 (the last "
                 "step's timing)", select=_last, verdict=dgxc_status(None, None, base=0))
FLOPS = NamedRule("second_half", "harmonic", "the first half of the steps", "NVIDIA/NeMo nemo/lightning/pytorch/"
                  "callbacks/flops_callback.py (the mean of the second half of the step times)", select=_second_half)

FORMAT = register(
    LogFormat(
        name="nemo2",
        framework="nemo",
        model="llm",
        sniff=sniff,
        patterns=_RULES,
        rules=(DGXC_2508, ALL, DGXC_2505, LAST, FLOPS),
        measures=(THROUGHPUT, STEP_TIME, TOKENS_PER_GPU, TFLOPS_PER_GPU, MFU, LOSS),
        logged={"step_time": "step_time", "tflops_per_gpu": "tflops_per_gpu", "loss": "loss"},
        axes=LLM_AXES,
        finish=finish,
        opens=(re.compile(r"Training epoch [0-9]+, iteration [0-9]+/[0-9]+ \| "),),
    )
)
