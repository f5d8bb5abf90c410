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


def throughputs(records: dict, run: np.ndarray, runs: int, method: str, global_batch: np.ndarray) -> np.ndarray:
    """One throughput per run (NaN where its records cannot give one) from the measured records
    of all runs at once: numpy columns `throughput`, `steps` and `timestamp`, grouped by `run`
    (0 to runs - 1, in order); `global_batch` per run (NaN where unknown) for `elapsed`."""
    rates = np.asarray(records["throughput"], dtype=float)
    counts = np.bincount(run, minlength=runs)
    out = np.full(runs, np.nan)
    some = counts > 0
    if method == "mean":
        out[some] = np.bincount(run, weights=rates, minlength=runs)[some] / counts[some]
        return out
    if method == "median":  # np.median's value: the middle one, or the mean of the middle two
        ordered = rates[np.lexsort((rates, run))]
        first = np.cumsum(counts) - counts
        high = first + counts // 2
        low = np.where(counts % 2, high, high - 1)
        out[some] = (ordered[low[some]] + ordered[high[some]]) / 2
        return out
    steps = np.asarray(records["steps"], dtype=float)
    if method == "harmonic":  # images over the time the rates imply, positive rates only
        ok = rates > 0
        images = np.bincount(run[ok], weights=steps[ok], minlength=runs)
        seconds = np.bincount(run[ok], weights=steps[ok] / rates[ok], minlength=runs)
        counted = np.bincount(run[ok], minlength=runs) > 0
        out[counted] = images[counted] / seconds[counted]
        return out
    # elapsed: images between each run's first and last record over the time between them.
    times = np.asarray(records["timestamp"], dtype=float)
    last = np.cumsum(counts) - 1
    first = last - counts + 1
    pairs = np.flatnonzero(counts >= 2)
    images = np.bincount(run, weights=steps, minlength=runs)[pairs] - steps[first[pairs]]  # steps after the first
    seconds = times[last[pairs]] - times[first[pairs]]
    with np.errstate(invalid="ignore", divide="ignore"):
        value = global_batch[pairs] * images / seconds
    ok = (seconds > 0) & (global_batch[pairs] > 0)  # False where either is NaN
    out[pairs[ok]] = value[ok]
    return out
