"""The rule that turns a run's per-iteration records into one throughput, visible and changeable.

Every format documents a default (which records are warm-up, which mean); a Rule overrides any
part of it. The DLPerf tables, for instance, skip the first 20 of 120 logged iterations and take
the arithmetic mean: `Rule(warmup=20, method="mean")`.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

Method = Literal["mean", "median", "harmonic", "elapsed"]

METHODS = {
    "mean": "arithmetic mean of the logged rates",
    "median": "median of the logged rates",
    "harmonic": "images / time implied by the logged rates (step-weighted harmonic mean)",
    "elapsed": "images / wall-clock time between the first and last measured records' timestamps",
}


class Rule(BaseModel):
    """How to recompute a run's throughput from its records; None means the format's default."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    warmup: int | None = Field(None, ge=0, description="leading records of each run to skip")
    window: int | None = Field(None, ge=1, description="records to use after the warm-up (all if unset)")
    method: Method | None = Field(None, description="how to average: " + ", ".join(METHODS))
    tolerance: float = Field(0.03, gt=0, description="relative gap to the reported value that earns a warning")

    def describe(self, default_method: str, default_warmup: str) -> str:
        """The rule in words, as applied to a format with these defaults."""
        warm = f"skip the first {self.warmup} records" if self.warmup is not None else f"skip {default_warmup}"
        window = f", then use at most {self.window} records" if self.window else ""
        return f"{warm}{window}; {METHODS[self.method or default_method]}"


def throughput(records: dict, method: str, global_batch: int | None) -> float | None:
    """One throughput from measured records (numpy columns) by `method`; None when they cannot give one."""
    rates = np.asarray(records["throughput"], dtype=float)
    if rates.size == 0:
        return None
    if method == "mean":  # np.mean's value: its sum over the count
        return float(rates.sum() / rates.size)
    if method == "median":  # np.median's value, without its generic machinery (it runs once per run)
        ordered, middle = np.sort(rates), rates.size // 2
        return float(ordered[middle] if rates.size % 2 else (ordered[middle - 1] + ordered[middle]) / 2)
    steps = np.asarray(records["steps"], dtype=float)
    if method == "harmonic":
        ok = rates > 0
        return float(steps[ok].sum() / (steps[ok] / rates[ok]).sum()) if ok.any() else None
    # elapsed: images between the first and last record over the time between them.
    times = np.asarray(records["timestamp"], dtype=float)
    if rates.size < 2 or not global_batch:
        return None
    seconds = float(times[-1]) - float(times[0])  # NaN when either is
    return float(global_batch * steps[1:].sum() / seconds) if seconds > 0 else None
