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


def throughputs(records: dict, measured: np.ndarray, bounds: np.ndarray, method: str,
                global_batch: np.ndarray) -> np.ndarray:
    """One throughput per run (NaN where its records cannot give one) from the `measured` records
    of all runs of a file at once. `records` holds numpy columns `throughput`, `steps` and
    `timestamp` of every record, grouped by run: run i's records are bounds[i]:bounds[i + 1].
    `global_batch` is per run (NaN where unknown), for `elapsed`. Sums are taken over the columns
    with unmeasured records as zeros: no copy of the measured records is made (a log of hundreds
    of megabytes holds millions)."""
    runs = len(bounds) - 1
    out = np.full(runs, np.nan)
    counts = per_run_sum(measured, bounds, np.int64)
    some = counts > 0
    rates = records["throughput"]
    if method == "mean":
        out[some] = per_run_sum(np.where(measured, rates, 0.0), bounds)[some] / counts[some]
        return out
    if method == "median":  # np.median's value, run by run (the median has no running form)
        for i in np.flatnonzero(some).tolist():
            a, b = bounds[i], bounds[i + 1]
            ordered = np.sort(rates[a:b][measured[a:b]])
            middle = len(ordered) // 2
            out[i] = ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
        return out
    steps = records["steps"]
    if method == "harmonic":  # images over the time the rates imply, positive rates only
        with np.errstate(invalid="ignore", divide="ignore"):
            positive = measured & (rates > 0)
            images = per_run_sum(np.where(positive, steps, 0.0), bounds)
            seconds = per_run_sum(np.where(positive, steps / rates, 0.0), bounds)
        counted = per_run_sum(positive, bounds, np.int64) > 0
        out[counted] = images[counted] / seconds[counted]
        return out
    # elapsed: images between each run's first and last measured record over the time between them.
    at = np.flatnonzero(measured)  # each run's measured records, one run after the other
    end = np.cumsum(counts)
    pairs = np.flatnonzero(counts >= 2)
    first, last = at[end[pairs] - counts[pairs]], at[end[pairs] - 1]
    images = per_run_sum(np.where(measured, steps, 0.0), bounds)[pairs] - steps[first]  # the steps after the first
    times = records["timestamp"]
    seconds = times[last] - times[first]
    with np.errstate(invalid="ignore", divide="ignore"):
        value = global_batch[pairs] * images / seconds
    ok = (seconds > 0) & (global_batch[pairs] > 0)  # False where either is NaN
    out[pairs[ok]] = value[ok]
    return out


def per_run_sum(values: np.ndarray, bounds: np.ndarray, dtype=None) -> np.ndarray:
    """The sum of `values` over each run's records (runs begin at `bounds`; 0 for empty runs),
    added in record order."""
    sizes = np.diff(bounds)
    out = np.zeros(len(sizes), dtype=dtype or values.dtype)
    filled = np.flatnonzero(sizes)
    if len(filled):
        out[filled] = np.add.reduceat(values, bounds[:-1][filled], dtype=dtype)
    return out
