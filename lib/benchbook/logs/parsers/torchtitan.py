"""torchtitan pre-training logs (pytorch/torchtitan torchtitan/train.py and components/metrics.py): the `[titan]`
logger's lines, one step line every `--metrics.log_freq` steps.

What a log holds: `Building device mesh with parallelism: pp=1, dp_replicate=1, dp_shard=8, cp=1, tp=1, ep=1`
(older versions `Building 1-D device mesh with ['dp'], [8]`, and `wps` for `tps`), `CUDA capacity: NVIDIA B200
with ...`, the trainer's batch and sequence (`local batch size 160, global batch size 1280, ..., sequence length
128, total steps 10`, in one line or, in older versions, in `Training starts at step 1, with ...`), then
`[titan] 2026-03-24 10:11:12,345 - root - INFO - step: 90  loss:  7.12345  grad_norm:  1.2345  memory:
61.80GiB(64.93%)  tps: 8,380  tflops: 416.12  mfu: 42.07%`, in ANSI colours unless disabled, `mfu: N/A` where
torchtitan has no peak for the precision (FP8/MX), `Training completed` at the end. Under torchrun the lines carry
`[rankN]:` prefixes; the pattern starts at `[titan]`, wherever a prefix ends. A resume logs `Training starts at
step N` with N past 1.

A step line states no step time: its record's rate is its `tps` (tokens a second a device, what torchtitan's
benchmarks publish) made the run's samples a second once its GPUs and sequence length are known (`rate_scale`);
the tps as logged is its `tokens_per_gpu`, with `tflops_per_gpu` and `mfu`.
"""

from __future__ import annotations

import math
import re

from ...core.measures import LOSS, MFU, TFLOPS_PER_GPU, THROUGHPUT, TOKENS_PER_GPU
from ..rules import NamedRule
from . import scanning
from .megatron_lm import LLM_AXES, _once
from .registry import LogFormat, register

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_PREFIX = rf"\[titan\] ({scanning.STAMP}) - [\w.]+ - INFO - "
_STEP = re.compile(_PREFIX + r"(?:\x1b\[[0-9;]*m)?step: +([0-9]{1,18}) ([^\n]*)")
_ITEM = re.compile(r"(\w+): +(\S+)")
_MESH = re.compile(r"Building device mesh with parallelism: ([^\n]*)")
# older versions; the scans bounded, so that a line of repeated openings reads in linear time
_MESH_1D = re.compile(r"Building [0-9]-D device mesh with \[[^\]\n]{0,400}\], \[([0-9, ]{1,400})\]")
_SIZES = {"local batch size": "batch_size", "global batch size": "global_batch_size", "sequence length": "seq_len",
          "total steps": "iterations_planned"}
_SIZE = re.compile(rf"\b({'|'.join(_SIZES)}) ([0-9]{{1,12}})\b")
_GPU = re.compile(r"CUDA capacity: ([^\n]*)")
_START = re.compile(_PREFIX + r"Training starts at step ([0-9]{1,18})")
_DTYPE = re.compile(r"--training\.(?:dtype|mixed_precision_param)[= ](\w+)")
_CONVERTERS = re.compile(r"--model\.converters[= ]([\w,]+)")
_BUILDING = re.compile(_PREFIX + r"Building ([\w.-]+ [\w.-]+)\n")  # `Building qwen3 14B` (not `Building device mesh`)
_PEAK = re.compile(r"Peak FLOPS used for computing MFU: ([0-9.e+]+)")


def _number(text: str | None) -> float:
    """A value as logged (`8,380`, `42.07%`, `N/A`): NaN where it is none."""
    got = None if text is None else scanning.number(text.replace(",", "").rstrip("%"))
    return math.nan if got is None else got


def _step(m: re.Match):
    items = dict(_ITEM.findall(_ANSI.sub("", m.group(3))))
    tps = _number(items.get("tps", items.get("wps")))  # `wps` (words a second) before torchtitan named it tps
    extra = {"tokens_per_gpu": tps, "tflops_per_gpu": _number(items.get("tflops")), "mfu": _number(items.get("mfu"))}
    return scanning.STEP, scanning.step(None, int(m.group(2)), m.group(1), None if math.isnan(tps) else tps,
                                        _number(items.get("loss")), extra=extra)


def _mesh(m: re.Match):
    """The parallel sizes, and the GPUs their product (ep is carved out of the data and context dimensions)."""
    sizes = {k: int(v) for k, v in re.findall(r"(\w+)=([0-9]+)", m.group(1))}
    meta = {key: sizes[name] for name, key in (("tp", "tensor_parallel"), ("pp", "pipeline_parallel"),
                                              ("cp", "context_parallel"), ("ep", "expert_parallel")) if name in sizes}
    dims = [sizes.get(name, 1) for name in ("pp", "dp_replicate", "dp_shard", "cp", "tp")]
    if all(d > 0 for d in dims):
        meta["gpus"] = math.prod(dims)
    return scanning.META, meta


def _precision(m: re.Match):
    return scanning.META, {"precision": {"bfloat16": "bf16", "float32": "fp32", "float16": "fp16"}.get(m.group(1))}


def _converters(m: re.Match):
    names = m.group(1).split(",")
    found = "mxfp8" if any(n.startswith("mx") for n in names) else "fp8" if "float8" in names else None
    return scanning.META, {"precision": found}


_RULES = [
    (_STEP, _step),
    (_START, lambda m: (scanning.RUN_START, {"start_time": m.group(1), "first_step": int(m.group(2))})),
    (_MESH, _mesh),
    (_MESH_1D, lambda m: (scanning.META, {"gpus": math.prod(int(d) for d in m.group(1).split(",") if d.strip())})),
    (_SIZE, lambda m: (scanning.META, {_SIZES[m.group(1)]: int(m.group(2))})),
    (_GPU, lambda m: (scanning.META, {"gpu_type": m.group(1).rpartition(" with ")[0] or m.group(1).strip()})),
    (_CONVERTERS, _converters),  # (before the dtype: float8 training is its precision, not the bf16 dtype)
    (_DTYPE, _precision),
    (_BUILDING, lambda m: None if m.group(2).startswith("device ") else (scanning.META, {"llm": m.group(2)})),
    (_PEAK, lambda m: (scanning.META, {"peak_flops": float(m.group(1))})),
    (re.compile(_PREFIX + "Training completed"), lambda m: (scanning.END, "Training completed")),
]


def sniff(head: str) -> bool:
    """The `[titan]` logger's prefix."""
    return "[titan] " in head


def _at(step: int):
    return lambda run: run["iteration"] == step


TITAN_SOURCE = "pytorch/torchtitan torchtitan/components/metrics.py@df248332 (log: tps per device, tflops, mfu)"
ALL = NamedRule("all", "mean", "no records", TITAN_SOURCE + "; every logged step (each once: every torchrun rank may "
                "print it)", select=_once)
STEP90 = NamedRule("torchtitan", "last", "every step but step 90", "pytorch/torchtitan "
                   "benchmarks/llama3_h100_202412_torchtitan.md@31a17bfd (TPS/GPU 'always read at the (arbitrarily "
                   "determined) 90th iteration'); " + TITAN_SOURCE, select=_at(90))
STEP100 = NamedRule("step100", "last", "every step but step 100", "pytorch/torchtitan "
                    "benchmarks/llama3_8b_h200_2025-06_torchtitan.md@bcdeaa37 (TPS 'arbitrarily sampled at the 100th "
                    "iteration'); " + TITAN_SOURCE, select=_at(100))
LAST = NamedRule("titan_last", "last", "every step but the last logged", TITAN_SOURCE + "; the last logged step's "
                 "values (its autoresearch program.md: 'Use tps as reported by TorchTitan')",
                 select=lambda run: run["line"] == run["line"].max())

def rate_scale(meta: dict) -> float:
    """tps is tokens a second a device, normalised by the non-data-parallel size (metrics.py: the tokens of a data-
    parallel rank over the time and its tp x pp x cp devices), so that tps x GPUs is the run's tokens a second, and
    that over the sequence length its samples a second; NaN where the log gives either not."""
    gpus, seq = meta.get("gpus"), meta.get("seq_len")
    return gpus / seq if gpus and seq else math.nan


FORMAT = register(
    LogFormat(
        name="torchtitan",
        framework="torchtitan",
        model="llm",
        sniff=sniff,
        patterns=_RULES,
        rules=(STEP90, ALL, LAST, STEP100),
        measures=(THROUGHPUT, TOKENS_PER_GPU, TFLOPS_PER_GPU, MFU, LOSS),
        rate_scale=rate_scale,
        logged={"tokens_per_gpu": "tokens_per_gpu", "tflops_per_gpu": "tflops_per_gpu", "mfu": "mfu",
                "loss": "loss"},
        axes=LLM_AXES,
        opens=(re.compile(r"\[titan\] [0-9-]+ [0-9:,]+ - [\w.]+ - INFO - Training starts at step"),),
    )
)
