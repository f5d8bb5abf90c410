"""What a run measures, each measure with its key, unit, per-step volume and direction.

A log format or a model declares the measures its runs have (`LogFormat.measures`, `ModelSpec.measures`); the
catalog (`core.catalog`) holds them. A measure's value comes from the same records the rule reads: a rate is
the volume a step moves (`volume`: the samples of a global batch, or those times the sequence length for
tokens) over the step's time, so throughput and tokens/s are one arithmetic with another volume.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

#: What one step of a run carries, from which a rate is computed: `samples` (the global batch, in the model's
#: unit), `tokens` (the global batch times the sequence length), `tokens_per_gpu` (those over the GPUs); `logged`: no
#: rate, a field the records state (a step time), over the rule's records.
Volume = Literal["samples", "tokens", "tokens_per_gpu", "logged"]

#: (the run's row of the runs frame: its axes and `meta`, the measures of its format computed before this one, by
#: key) -> (the value, the rule's words), or (None, why it is not computed).
Derive = Callable[[Mapping[str, Any], Mapping[str, float]], "tuple[float | None, str]"]


@dataclass(frozen=True)
class Measure:
    """One measure of a run: `key` (its name in data: `throughput`, `tokens_per_s`), `name` in words, `unit`
    (None: the model's sample unit a second), `volume` (what a step moves), `direction` (higher or
    lower is better), `doc` (what it is, for the data dictionary), `derive` (for a run whose log gives no value:
    the value from its configuration and its other measures, e.g. MFU from TFLOP/s/GPU and the GPU's peak)."""

    key: str
    name: str
    volume: Volume
    doc: str
    unit: str | None = None
    direction: Literal["higher", "lower"] = "higher"
    derive: Derive | None = None


#: Every run's: the samples a second, in its model's unit (`ModelSpec.unit`).
THROUGHPUT = Measure("throughput", "throughput", "samples", "samples a second over all GPUs, by the rule, in the "
                                                             "model's unit")
#: A model with a sequence length (BERT, an LLM): tokens a second, the samples times the sequence length.
TOKENS = Measure("tokens_per_s", "tokens/s", "tokens", "tokens a second over all GPUs: the throughput times the "
                                                        "sequence length", unit="tokens/s")

#: The LLM measures (issue 50): tokens/s per GPU as dgxc-benchmarking states it (sequence length x global batch /
#: step time / GPUs), or as a log prints it per device (torchtitan's tps: its format reads that field instead).
TOKENS_PER_GPU = Measure("tokens_per_gpu", "tokens/s/GPU", "tokens_per_gpu", "tokens a second a GPU: the "
                         "throughput times the sequence length over the GPUs, or as logged per device",
                         unit="tokens/s/GPU")
STEP_TIME = Measure("step_time", "step time", "logged", "seconds an iteration, the rule's window over the step "
                    "times the log states", unit="s", direction="lower")


def _tflops(row: Mapping[str, Any], measures: Mapping[str, float]) -> tuple[float | None, str]:
    from .flops import tflops_per_gpu

    return tflops_per_gpu(row, measures)


def _mfu(row: Mapping[str, Any], measures: Mapping[str, float]) -> tuple[float | None, str]:
    from .peaks import mfu

    return mfu(measures.get("tflops_per_gpu"), row.get("gpu_type"), row.get("precision"))


TFLOPS_PER_GPU = Measure("tflops_per_gpu", "TFLOP/s/GPU", "logged", "model TFLOP/s a GPU as the log states it "
                         "(each tool counts a model's FLOPs by its own formula), the rule's window over its records; "
                         "where the log prints none, a dense decoder's by Megatron-LM's FLOPs formula from the log's "
                         "arguments (core.flops), never a mixture of experts'", unit="TFLOP/s/GPU", derive=_tflops)
MFU = Measure("mfu", "MFU", "logged", "model FLOPs utilisation as the log states it (TFLOP/s/GPU over the GPU's "
              "peak its tool assumes), the rule's window over its records; where the log prints none, TFLOP/s/GPU "
              "over the dense peak of the run's GPU and precision (core/gpu_peaks.yaml)", unit="%", derive=_mfu)
LOSS = Measure("loss", "loss", "logged", "the training loss the log states, the rule's window over its records",
               unit="nats", direction="lower")
