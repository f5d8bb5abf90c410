"""One folded run and the rule applied to it: which of its records are warm-up, which are measured,
and the value they give.

A `Run` is one run of a file after `assemble.fold`: views of its own part of the file's record
columns (no copy: a run of a 400 MB log holds millions of records) and its metadata. A format's
named rule (`rules.NamedRule`) reads one run: `select(run)` and `mark_warmup(run)` answer with a
boolean array over `run[name]`, the records of the run's lowest rank (every rank prints the same
global rate; the rule reads one). Within a run everything is numpy; a file of 50,000 pasted runs
costs a few numpy calls a run.
"""

from __future__ import annotations

import math

import numpy as np

from .rules import NamedRule


class Run:
    """A run's records (`all`: views of the file's columns, every rank; `run[name]`: its lowest
    rank's, the records a rule reads) and its metadata."""

    __slots__ = ("all", "meta", "own", "_cache")

    def __init__(self, columns: dict[str, np.ndarray], meta: dict) -> None:
        self.all, self.meta, self._cache = columns, meta, {}
        rank = columns["rank"]
        lowest = rank == rank.min() if len(rank) else np.ones(0, dtype=bool)
        self.own = slice(None) if lowest.all() else np.flatnonzero(lowest)  # the lowest rank's rows of `all`

    def __getitem__(self, name: str) -> np.ndarray:
        """A column of the lowest rank's records."""
        if name not in self._cache:
            self._cache[name] = self.all[name][self.own]
        return self._cache[name]

    def __len__(self) -> int:
        return len(self["line"])

    def on_all(self, own_mask: np.ndarray) -> np.ndarray:
        """A mask over the lowest rank's records as a mask over all the run's records."""
        if isinstance(self.own, slice):
            return own_mask
        out = np.zeros(len(self.all["line"]), dtype=bool)
        out[self.own[own_mask]] = True
        return out


def fill_steps(cols: dict[str, np.ndarray]) -> np.ndarray:
    """Iterations each of a run's records covers: as logged, else the gap to the previous record of
    its rank, else the run's median gap (1 without any); a whole epoch's record (no iteration) only
    as logged."""
    steps = cols["steps"]
    missing = np.isnan(steps)
    if not missing.any():
        return steps
    it, rank = cols["iteration"], cols["rank"]
    order = None if (rank[1:] >= rank[:-1]).all() else np.argsort(rank, kind="stable")  # each rank's records
    ranks, its = (rank, it) if order is None else (rank[order], it[order])
    gaps = np.full(len(it), np.nan)
    np.subtract(its[1:], its[:-1], out=gaps[1:], casting="unsafe")  # exact: iterations are far below 2**53
    gaps[1:][ranks[1:] != ranks[:-1]] = np.nan
    if order is not None:
        gaps[order] = gaps.copy()
    gaps[(gaps <= 0) | (it < 0)] = np.nan
    known = gaps[~np.isnan(gaps)]
    whole_epoch = (it < 0) & (cols["epoch"] >= 0)
    gaps[np.isnan(gaps) & ~whole_epoch] = np.median(known) if len(known) else 1.0
    return np.where(missing, gaps, steps)


def marks(run: Run, rule: NamedRule) -> tuple[np.ndarray, np.ndarray]:
    """(warm-up, measured) over the run's lowest rank's records: records without a rate and those
    the rule does not read are neither; then the rule's warm-up (its own marks, or its first
    `skip` records); then at most `window` records."""
    reads = ~np.isnan(run["throughput"])
    if rule.select is not None:
        reads &= np.asarray(rule.select(run), dtype=bool)
    if rule.mark_warmup is None:  # the first records (of those the rule reads, if it chooses them)
        at = np.arange(len(reads)) if rule.select is None else np.cumsum(reads) - 1
        warm = (at < (rule.skip or 0)) & reads
    else:
        warm = np.asarray(rule.mark_warmup(run), dtype=bool) & reads
    use = ~warm & reads
    if rule.window:
        use &= np.cumsum(use) <= rule.window
    return warm, use


def rates_read(run: Run, rule: NamedRule) -> np.ndarray:
    """The run's rates (all ranks) as the rule reads them: rounded where its script rounds each
    speed (Python's round(), as DLPerf's scripts do), each the median over the ranks that logged the
    same (epoch, iteration) where it says so (DLPerf's MXNet script)."""
    rates = run.all["throughput"]
    if rule.decimals is not None:
        rates = np.array([round(r, rule.decimals) for r in rates.tolist()], dtype=float)
    if rule.across_ranks and len(rates):
        import pandas as pd  # here alone: a grouped median, for the one rule that reads every rank

        keys = pd.DataFrame({"epoch": run.all["epoch"], "iteration": run.all["iteration"], "rate": rates})
        rates = keys.groupby(["epoch", "iteration"], sort=False)["rate"].transform("median").to_numpy()
    return rates


def _total(values: np.ndarray) -> float:
    """The sum of a run's values as numpy's `add.reduceat` adds a stretch: the order every earlier
    output of benchbook was computed in (numpy's pairwise `sum` and a plain running sum each differ
    from it in the last digits)."""
    return float(np.add.reduceat(values, [0])[0]) if len(values) else 0.0


def value(cols: dict[str, np.ndarray], rates: np.ndarray, measured: np.ndarray, method: str,
          global_batch: float) -> float:
    """The run's throughput by `method` from its `measured` records (a mask over `cols`, all its
    records); NaN where they give none. Sums run over all the records, unmeasured ones as zeros."""
    count = int(np.count_nonzero(measured))
    if not count:
        return math.nan
    if method == "mean":
        return _total(np.where(measured, rates, 0.0)) / count
    if method == "median":
        return float(np.median(rates[measured]))
    if method == "last":
        return float(rates[np.flatnonzero(measured)[-1]])
    steps = cols["steps"]
    if method == "epochs":
        return _epochs(cols, rates, measured)
    if method == "harmonic":  # images over the time the rates imply, positive rates only
        with np.errstate(invalid="ignore", divide="ignore"):
            positive = measured & (rates > 0)
            if not positive.any():
                return math.nan
            images = _total(np.where(positive, steps, 0.0))
            return images / _total(np.where(positive, steps / rates, 0.0))
    # elapsed: images between the first and last measured records over the time between them
    at = np.flatnonzero(measured)
    if count < 2:
        return math.nan
    first, last = at[0], at[-1]
    seconds = cols["timestamp"][last] - cols["timestamp"][first]
    images = _total(np.where(measured, steps, 0.0)) - steps[first]  # the steps after the first
    if not (seconds > 0 and global_batch > 0):  # False where either is NaN
        return math.nan
    return float(global_batch * images / seconds)


def _epochs(cols: dict[str, np.ndarray], rates: np.ndarray, measured: np.ndarray) -> float:
    """MXNet benchmark.py's number: the harmonic mean of the rates of the run's epochs after its
    first (`-w 1`; the first alone where it has no other). Where every measured record is a whole
    epoch's (no iteration), each carries that epoch's rate (fit.py of 20.12+ logs it); otherwise an
    epoch's rate is images / time of the measured records from the first to the epoch's end, as
    fit.py of 19.07 divides the batch by the mean of a list of durations it never resets."""
    at = np.flatnonzero(measured)
    epoch, rate, steps = cols["epoch"][at], rates[at], cols["steps"][at]
    whole = not (cols["iteration"][at] >= 0).any()
    first_epoch = cols["epoch"].min()
    per_epoch = []  # (epoch, its rate), one per stretch of the measured records in one epoch
    images = seconds = 0.0
    with np.errstate(invalid="ignore", divide="ignore"):
        starts = np.flatnonzero(np.concatenate(([True], epoch[1:] != epoch[:-1])))
        for a, b in zip(starts.tolist(), [*starts[1:].tolist(), len(at)], strict=True):
            if whole:
                per_epoch.append((epoch[a], rate[b - 1]))
                continue
            images += _total(steps[a:b])
            seconds += _total(steps[a:b] / rate[a:b])
            per_epoch.append((epoch[a], images / seconds))
    after = [r for e, r in per_epoch if e > first_epoch] or [r for _, r in per_epoch]
    if not all(r > 0 for r in after):
        return math.nan
    return len(after) / sum(1.0 / r for r in after)
