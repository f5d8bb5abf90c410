"""Megatron-LM pre-training logs and its forks' (Megatron-DeepSpeed, AMD Primus, Megatron-Bridge): the iteration
line `training_log` prints every `--log-interval` iterations (NVIDIA/Megatron-LM megatron/training/training.py).

What a log holds: the arguments dump (`  tensor_model_parallel_size ........ 1`, every rank's copy or rank 0's),
or a fork's command line (`--seq_length 4096`); then one line a logged interval,
`[2026-08-22 15:22:22.123456] iteration 50/ 5000 | consumed samples: 51200 | elapsed time per iteration (ms):
61674.3 | throughput per GPU (TFLOP/s/GPU): 68.2 | learning rate: ... | global batch size: 1024 | lm loss:
6.681113E+00 | ... | number of skipped iterations: 0 | number of nan iterations: 0 |`. The iteration is one-based
and the time the interval's average; the timestamp had no microseconds before January 2026 and Megatron-Bridge
prints seconds only; the TFLOP/s field only with `--log-throughput`. Megatron-DeepSpeed adds `samples per second`,
`tokens per gpu per second (tgs)` and `TFLOPs` (per GPU); AMD Primus prints `instant/running-average` pairs
(`596.2/596.2`) from its third iteration, whose first value is read; Megatron-Bridge adds a line `Step Time :
8.77s GPU utilization: 865.7MODEL_TFLOP/s/GPU` after the iteration line. Under srun and torchrun the lines carry
rank prefixes (`0: [default0]:`), under Primus a coloured logger prefix: the pattern starts at the timestamp or
at `iteration`, wherever the prefix ends.

Each record's rate is the samples a second of its interval (global batch / step time), so that the `harmonic`
rules give the global batch over the mean step time, as dgxc-benchmarking computes tokens/s; its step time,
TFLOP/s/GPU and tokens/s/GPU as logged are the record's logged fields (`scanning.LOGGED_FIELDS`).
"""

from __future__ import annotations

import math
import re

from ...core.config import Axis
from ...core.measures import LOSS, MFU, STEP_TIME, TFLOPS_PER_GPU, THROUGHPUT, TOKENS_PER_GPU
from ..rules import NamedRule
from . import scanning
from .registry import LogFormat, register

# The parallel sizes of an LLM run, which the LLM formats share (torchtitan's module imports them from here). The
# sequence length is the catalog's `seq_len` (SEQ_LEN, declared once with BERT's and given by the models' part, whose
# place in the columns stays).
TENSOR_PARALLEL = Axis("tensor_parallel", int, "identity", "TP", "tensor-parallel size")
PIPELINE_PARALLEL = Axis("pipeline_parallel", int, "identity", "PP", "pipeline-parallel size")
CONTEXT_PARALLEL = Axis("context_parallel", int, "identity", "CP", "context-parallel size")
EXPERT_PARALLEL = Axis("expert_parallel", int, "identity", "EP", "expert-parallel size")
GPU_TYPE = Axis("gpu_type", str, "identity", "GPU", "the GPU the log names (torchtitan's `CUDA capacity` line)")
LLM_SHAPE = Axis("llm", str, "identity", "LLM", "the model as the log names it (torchtitan: `qwen3 14B`), else its "
                                                "shape (Megatron: `16 layers, hidden 2048`)")
RULE_STATUS = Axis("rule_status", str, "record", "rule status", "the run's status as its rule's script defines it: "
                   "NVIDIA/dgxc-benchmarking's SUCCESS (every iteration of the rule's window timed and the last "
                   "planned iteration logged), INCOMPLETE (either not) or INVALID_GRAD_NORM (a grad norm of NaN); "
                   "empty where the rule defines none", recorded=False)
LLM_AXES = (LLM_SHAPE, GPU_TYPE, TENSOR_PARALLEL, PIPELINE_PARALLEL, CONTEXT_PARALLEL, EXPERT_PARALLEL, RULE_STATUS)
# (TFLOP/s/GPU before MFU: where the log prints neither, MFU is derived from the TFLOP/s, `core.measures`.)
LLM_MEASURES = (THROUGHPUT, STEP_TIME, TOKENS_PER_GPU, TFLOPS_PER_GPU, MFU, LOSS)

# The iteration line from its timestamp (optional) on; the fields after the counters are read by `_fields`.
_ITERATION = re.compile(rf"(?:\[({scanning.STAMP})\] )?iteration +([0-9]{{1,18}})/ *([0-9]{{1,18}}) \|([^\n]*)")
_BRIDGE = re.compile(r"Step Time : ([0-9.]+)s GPU utilization: ([0-9.]+)MODEL_TFLOP/s/GPU")
# The arguments dump (`  name ...... value`) or a command line (`--name value`): the names below alone.
_ARGS = ("tensor_model_parallel_size", "pipeline_model_parallel_size", "context_parallel_size",
         "expert_model_parallel_size", "seq_length", "micro_batch_size", "global_batch_size", "world_size",
         "train_iters", "bf16", "fp16", "fp8", "fp8_recipe", "fp4", "num_layers", "hidden_size",
         # the model's shape, for its FLOPs where the log prints no TFLOP/s (core.flops)
         "ffn_hidden_size", "num_attention_heads", "num_query_groups", "group_query_attention", "kv_channels",
         "padded_vocab_size", "vocab_size", "swiglu", "num_experts", "moe_router_topk")
_ARG = re.compile(rf"(?<![\w-])(?:--)?({'|'.join(_ARGS)})(?: \.+ | |=)([^\s,|]+)")
_META_OF = {"tensor_model_parallel_size": "tensor_parallel", "pipeline_model_parallel_size": "pipeline_parallel",
            "context_parallel_size": "context_parallel", "expert_model_parallel_size": "expert_parallel",
            "seq_length": "seq_len", "micro_batch_size": "batch_size", "global_batch_size": "global_batch_size",
            "world_size": "gpus", "train_iters": "iterations_planned", "num_layers": "num_layers",
            "hidden_size": "hidden_size"}
# Field names of the line -> the record field they give; times in ms are made seconds.
_FIELDS = {"elapsed time per iteration (ms)": "step_time", "throughput per GPU (TFLOP/s/GPU)": "tflops_per_gpu",
           "TFLOPs": "tflops_per_gpu", "tokens per gpu per second (tgs)": "tokens_per_gpu",
           "tokens per GPU (tokens/s/GPU)": "tokens_per_gpu"}


def _first(text: str) -> float:
    """A field's value: its first number (Primus's `instant/running` pair gives the instant); NaN if none."""
    got = scanning.number(text.split("/")[0])
    return math.nan if got is None else got


def _fields(rest: str) -> dict[str, str]:
    """The `name: value |` fields of an iteration line after its counters."""
    out = {}
    for part in rest.split("|"):
        name, sep, value = part.partition(":")
        if sep:
            out[name.strip()] = value.strip()
    return out


def _iteration(m: re.Match):
    """One record: the interval's rate (global batch / step time), loss, lr, and the logged fields."""
    fields = _fields(m.group(4))
    extra = {field: _first(fields[name]) for name, field in _FIELDS.items() if name in fields}
    if "step_time" in extra:
        extra["step_time"] /= 1000.0
    for name, field in (("number of skipped iterations", "skipped_iterations"),
                        ("number of nan iterations", "nan_iterations")):
        if name in fields:
            extra[field] = _first(fields[name])
    if "grad norm" in fields:  # 1 where it is NaN: dgxc-benchmarking's INVALID_GRAD_NORM (0 where it is a number)
        extra["nan_grad_norm"] = float(fields["grad norm"].lower() in ("nan", "-nan", "inf", "-inf"))
    batch = _first(fields.get("global batch size", ""))
    step = extra.get("step_time", math.nan)
    rate = batch / step if step > 0 else None
    loss = next((_first(v) for k, v in fields.items() if k.endswith(" loss") and k != "loss scale"), None)
    return scanning.STEP, scanning.step(None, int(m.group(2)), m.group(1), rate, loss,
                                        scanning.number(fields.get("learning rate", "")), extra=extra)


def _arg(m: re.Match):
    name, value = m.group(1), m.group(2).strip("'\"")
    if value.startswith("--"):  # a flag of a command line (`--swiglu --normalization RMSNorm`): on
        value = "True"
    if name in _META_OF:
        return (scanning.META, {_META_OF[name]: int(value)}) if value.isdigit() else None
    return scanning.META, {f"arg_{name}": value}


def _bridge(m: re.Match):
    """Megatron-Bridge's line after the iteration line: its step time and model TFLOP/s/GPU (the record's own)."""
    return scanning.FIELD, {"step_time": float(m.group(1)), "tflops_per_gpu": float(m.group(2))}


# The run's end: Megatron's `[after training is done]`, or the planned last iteration logged (`50/ 50`).
_DONE = re.compile(r"\[after training is done\]|iteration +([0-9]{1,18})/ *\1 \|")
# Primus's logger names each process `rank-R/WORLD`.
_PRIMUS_RANK = re.compile(r"rank-[0-9]{1,7}/([0-9]{1,7})\b")

# The arguments banner opens a run (a resumed job prints it again, its counter going on from the checkpoint).
_BANNER = re.compile(r"-{8,} arguments -{8,}")
# What dgxc-benchmarking fails a run for (INVALID_GRAD_NORM) and what Megatron counts as not trained: said, lines named.
NAN_GRAD = "a grad norm of NaN (dgxc-benchmarking calls such a run INVALID_GRAD_NORM)"
SKIPPED = "iterations skipped or NaN (Megatron's `number of skipped/nan iterations` above 0)"
_TROUBLE = re.compile(r"grad norm: nan\b|number of (?:skipped|nan) iterations: +[1-9]")

# `> padded vocab (size: 50257) with 175 dummy tokens (new size: 50432)` (megatron/training/tokenizer: the logit
# layer's size, which the arguments dump may print as None).
_PADDED = re.compile(r"padded vocab \(size: [0-9]+\) with [0-9]+ dummy tokens \(new size: ([0-9]{1,9})\)")

# The planned iterations as the iteration line counts them (`iteration 50/ 5000`), where no arguments dump says:
# read from the lines of the first 999 iterations only, a handler a line being what reading a long log costs.
_PLANNED = re.compile(r"iteration +[0-9]{1,3}/ *([0-9]{1,18}) \|")

_RULES = [(_ITERATION, _iteration), (_ARG, _arg), (_BRIDGE, _bridge), (_DONE, lambda m: (scanning.END, "done")),
          (_PADDED, lambda m: (scanning.META, {"padded_vocab_size": int(m.group(1))})),
          (_PLANNED, lambda m: (scanning.META, {"iterations_planned": int(m.group(1))})),
          (_PRIMUS_RANK, lambda m: (scanning.META, {"gpus": int(m.group(1))})),
          (_BANNER, lambda m: (scanning.RUN_START, {})),
          (_TROUBLE, lambda m: (scanning.NOTE, NAN_GRAD if m.group(0).startswith("grad") else SKIPPED))]


def sniff(head: str) -> bool:
    """Megatron's iteration line, its arguments dump or its command line (a launcher's echo of it)."""
    return bool(_ITERATION.search(head)) and "consumed samples:" in head or (
        "tensor_model_parallel_size" in head and "pipeline_model_parallel_size" in head) or (
        "--tensor-model-parallel-size" in head and "--pipeline-model-parallel-size" in head)


def precision(meta: dict) -> str | None:
    """The training precision the arguments give: NVFP4 (`--fp4`), MXFP8 (`--fp8-recipe mxfp8`), FP8, BF16, FP16."""
    def on(name):
        return meta.get(f"arg_{name}") not in (None, "None", "null", "False", "false")

    if on("fp4"):
        return "nvfp4"
    if on("fp8"):
        return "mxfp8" if meta.get("arg_fp8_recipe") == "mxfp8" else "fp8"
    return "bf16" if on("bf16") else "fp16" if on("fp16") else None


def finish(meta: dict, ranks: set) -> dict:
    """The precision the arguments give, and the model's shape where the log names no model."""
    out = {}
    if meta.get("precision") is None and precision(meta):
        out["precision"] = precision(meta)
    if meta.get("llm") is None and meta.get("num_layers") and meta.get("hidden_size"):
        out["llm"] = f"{meta['num_layers']} layers, hidden {meta['hidden_size']}"
    return out


def _once(run):
    """Records whose iteration the run logged before (a line printed twice, by two ranks' prefixes) are not read."""
    import numpy as np

    it = run["iteration"]
    _, first = np.unique(it, return_index=True)
    keep = np.zeros(len(it), dtype=bool)
    keep[first] = True
    return keep


def dgxc_status(first: int | None, last: int | None, base: int = 1):
    """dgxc-benchmarking's status of a run by its window of iterations as printed (`first`-`last`, None: the last
    planned iteration alone, v24.11's; `base` 1 where the log counts from one, Megatron's, 0 for NeMo 2's):
    INVALID_GRAD_NORM on any grad norm of NaN, else SUCCESS only if every iteration of the window has a step time
    and the last planned iteration was logged, else INCOMPLETE, with what was missing."""
    def verdict(run) -> tuple[str, str | None]:
        import numpy as np

        if "nan_grad_norm" in run.all and np.nansum(run["nan_grad_norm"]) > 0:
            lines = run["line"][np.nan_to_num(run["nan_grad_norm"]) > 0]
            return "INVALID_GRAD_NORM", f"dgxc-benchmarking: INVALID_GRAD_NORM (a grad norm of NaN, line " \
                                        f"{int(lines[0])}{' and others' if len(lines) > 1 else ''})"
        timed = run["iteration"][~np.isnan(run["step_time"])] if "step_time" in run.all else np.empty(0, np.int64)
        planned, seen = run.meta.get("iterations_planned"), int(timed.max()) if len(timed) else None
        final = planned - 1 + base if planned else None
        lo, hi = (first, last) if first is not None else (final, final)
        untimed = np.setdiff1d(np.arange(lo, hi + 1), timed) if lo is not None else np.empty(0, np.int64)
        why = [f"iterations {_span(untimed)} of its window {lo}-{hi} have no step time"] if len(untimed) else []
        if final is None or seen is None or seen < final:
            why.append(f"its last planned iteration ({final if final is not None else 'unknown'}) was not logged "
                       f"(the last timed: {seen if seen is not None else 'none'})")
        return ("INCOMPLETE", "dgxc-benchmarking: INCOMPLETE, " + "; ".join(why)) if why else ("SUCCESS", None)

    return verdict


def _span(numbers) -> str:
    """Iterations in words: `40-44` where they follow each other, else the first few."""
    values = [int(v) for v in numbers]
    if values == list(range(values[0], values[-1] + 1)):
        return f"{values[0]}-{values[-1]}" if len(values) > 1 else str(values[0])
    return ", ".join(map(str, values[:5])) + (", ..." if len(values) > 5 else "")


SOURCE = "NVIDIA/Megatron-LM megatron/training/training.py@0d1cb6e4 (training_log: elapsed time per iteration the " \
         "interval's mean, throughput per GPU its model TFLOP/s)"
ALL = NamedRule("all", "harmonic", "no records", SOURCE + "; every logged interval", select=_once)
DGXC_2505 = NamedRule(
    "dgxc_v25.05", "harmonic", "iterations 1-10", "NVIDIA/dgxc-benchmarking v25.05-v25.07 (common/parse_train_time: "
    "mean of iterations 11-44)", select=lambda run: _once(run) & (run["iteration"] >= 11) & (run["iteration"] <= 44),
    verdict=dgxc_status(11, 44))
DGXC_2508 = NamedRule(
    "nvidia", "harmonic", "iterations 1-34", "NVIDIA/dgxc-benchmarking v25.08 on (mean of iterations 35-44 as "
    "printed, one-based for Megatron and Megatron-Bridge)",
    select=lambda run: _once(run) & (run["iteration"] >= 35) & (run["iteration"] <= 44), verdict=dgxc_status(35, 44))


def _last(run):
    """The last logged iteration alone (its record is what the rule reads: the measures' window is the same)."""
    import numpy as np

    keep = _once(run) & ~np.isnan(run["throughput"])
    at = np.flatnonzero(keep)
    keep[at[:-1]] = False
    return keep


LAST = NamedRule("dgxc_v24.11", "harmonic", "every record but the last", "NVIDIA/dgxc-benchmarking v24.11 (the "
                 "last step's timing)", select=_last, verdict=dgxc_status(None, None))


def skip_fraction(name: str, fraction: float, where: str) -> NamedRule:
    """Megatron-Bridge's regression check: the steps after the first `fraction` of those logged."""
    def select(run):
        import numpy as np

        keep = _once(run)
        at = np.cumsum(keep) - 1
        return keep & (at >= math.floor(fraction * int(keep.sum())))

    return NamedRule(name, "harmonic", f"the first {fraction:.0%} of the logged iterations",
                     f"NVIDIA-NeMo/Megatron-Bridge scripts/performance ({where}: skip fraction {fraction})",
                     select=select)


BRIDGE_070 = skip_fraction("bridge_skip0.70", 0.70, "README and argument_parser.py default")
BRIDGE_075 = skip_fraction("bridge_skip0.75", 0.75, "argument_parser.py help text")
BRIDGE_010 = skip_fraction("bridge_skip0.1", 0.1, "the check function's own default")

FORMAT = register(
    LogFormat(
        name="megatron_lm",
        framework="megatron",
        model="llm",
        sniff=sniff,
        patterns=_RULES,
        rules=(DGXC_2508, ALL, DGXC_2505, LAST, BRIDGE_070, BRIDGE_075, BRIDGE_010),
        measures=LLM_MEASURES,
        logged={"step_time": "step_time", "tflops_per_gpu": "tflops_per_gpu", "loss": "loss"},
        axes=LLM_AXES,
        finish=finish,
        opens=(re.compile(r"iteration +[0-9]+/ *[0-9]+ \| consumed samples:"),),
    )
)
