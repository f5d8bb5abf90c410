"""A run's throughput from its records by a resolved rule (`rules.NamedRule`): numpy arithmetic over
the records of all runs of a file at once."""

from __future__ import annotations

import numpy as np

from .rules import NamedRule


def rates_read(cols: dict[str, np.ndarray], preset: NamedRule, run: np.ndarray) -> dict[str, np.ndarray]:
    """The records as the preset reads their rates: each the median over the ranks that logged the
    same (epoch, iteration) of its run where it says so (DLPerf's MXNet script), rounded where it
    rounds them (DLPerf rounds each logged speed to 2 decimals first)."""
    rates = cols["throughput"]
    if preset.decimals is not None:  # Python's round(), as DLPerf's scripts round each speed they read
        rates = np.array([round(r, preset.decimals) for r in rates.tolist()], dtype=float)
    if preset.across_ranks and len(rates):
        import pandas as pd  # here alone: a grouped median, for the one rule that reads every rank

        keys = pd.DataFrame({"run": run, "epoch": cols["epoch"], "iteration": cols["iteration"], "rate": rates})
        rates = keys.groupby(["run", "epoch", "iteration"], sort=False)["rate"].transform("median").to_numpy()
    return cols if rates is cols["throughput"] else dict(cols, throughput=rates)


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
    if method == "last":  # each run's last measured record
        at = np.flatnonzero(measured)
        out[some] = rates[at[np.cumsum(counts)[some] - 1]]
        return out
    steps = records["steps"]
    if method == "epochs":
        return _epochs(records, measured, bounds)
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


def _epochs(records: dict, measured: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """MXNet benchmark.py's number for each run: the harmonic mean of the rates of its epochs after
    its first (`-w 1`; the first alone where it has no other). Where every measured record of a
    run is a whole epoch's (no iteration), each carries that epoch's rate (fit.py of 20.12+ logs
    it); otherwise an epoch's rate is images / time of the measured records from the first to the
    epoch's end, as fit.py of 19.07 divides the batch by the mean of a list of durations it never
    resets. All runs at once: a (run, epoch) segment of measured records is one epoch."""
    runs = len(bounds) - 1
    out = np.full(runs, np.nan)
    at = np.flatnonzero(measured)
    if not len(at):
        return out
    sizes = np.diff(bounds)
    epoch = records["epoch"]
    first = np.zeros(runs, dtype=epoch.dtype)
    filled = np.flatnonzero(sizes)
    first[filled] = np.minimum.reduceat(epoch, bounds[:-1][filled])
    run = np.repeat(np.arange(runs), sizes)[at]
    e, rate, steps = epoch[at], records["throughput"][at], records["steps"][at]
    whole_run = np.bincount(run, weights=records["iteration"][at] >= 0, minlength=runs) == 0
    starts = np.flatnonzero(np.concatenate(([True], (run[1:] != run[:-1]) | (e[1:] != e[:-1]))))
    ends = np.append(starts[1:], len(at)) - 1
    seg_run = run[starts]
    with np.errstate(invalid="ignore", divide="ignore"):
        counted = ~whole_run[run]  # a whole epoch's record has no iterations to add up
        images = np.cumsum(np.add.reduceat(np.where(counted, steps, 0.0), starts))
        seconds = np.cumsum(np.add.reduceat(np.where(counted, steps / rate, 0.0), starts))
        opens = np.flatnonzero(np.concatenate(([True], seg_run[1:] != seg_run[:-1])))  # each run's first segment
        before = np.repeat(np.concatenate(([0], opens[1:])), np.diff(np.append(opens, len(starts))))
        images -= np.where(before > 0, images[before - 1], 0.0)  # from the run's first measured record
        seconds -= np.where(before > 0, seconds[before - 1], 0.0)
        per_epoch = np.where(whole_run[seg_run], rate[ends], images / seconds)
    after = e[starts] > first[seg_run]
    use = after | ~(np.bincount(seg_run, weights=after, minlength=runs) > 0)[seg_run]
    who, value = seg_run[use], per_epoch[use]
    n = np.bincount(who, minlength=runs)
    bad = np.bincount(who, weights=~(value > 0), minlength=runs) > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        inverse = np.bincount(who, weights=1.0 / value, minlength=runs)
    ok = (n > 0) & ~bad
    out[ok] = n[ok] / inverse[ok]
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


def fill_steps(cols: dict[str, np.ndarray], run: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """Iterations each record covers: as logged, else the gap to the previous record of its rank
    in its run, else the median gap of its run (1 without any)."""
    steps = cols["steps"]
    missing = np.isnan(steps)
    if not missing.any():
        return steps
    it, rank = cols["iteration"], cols["rank"]
    # Each (run, rank)'s records in file order, one group after the other: the file order itself
    # when every run has one rank (the usual case), else a stable sort by (run, rank).
    low = int(rank.min())
    group = run * (int(rank.max()) - low + 1) + (rank - low)
    order = None if (group[1:] >= group[:-1]).all() else np.argsort(group, kind="stable")
    if order is not None:
        group, it_ = group[order], it[order]
    else:
        it_ = it
    gaps = np.empty(len(it))
    gaps[0] = np.nan
    np.subtract(it_[1:], it_[:-1], out=gaps[1:], casting="unsafe")  # exact: iterations are far below 2**53
    gaps[1:][group[1:] != group[:-1]] = np.nan
    if order is not None:
        gaps[order] = gaps.copy()
    gaps[(gaps <= 0) | (it < 0)] = np.nan
    fill = _median_gaps(gaps, run, bounds)
    whole_epoch = (it < 0) & (cols["epoch"] >= 0) if "epoch" in cols else False  # a whole epoch: unknown
    holes = np.flatnonzero(np.isnan(gaps) & ~whole_epoch)
    gaps[holes] = fill[run[holes]]
    if missing.all():
        return gaps
    steps = steps.copy()
    steps[missing] = gaps[missing]
    return steps


def _median_gaps(gaps: np.ndarray, run: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """Each run's median of its known gaps, as np.median gives it (1 for a run without any): the
    gap itself where a run's known gaps are all the same (the usual case), else sorted."""
    runs = len(bounds) - 1
    known = ~np.isnan(gaps)
    counts = per_run_sum(known, bounds, np.int64)
    fill = np.ones(runs)
    filled = np.flatnonzero(counts)
    if not len(filled):
        return fill
    starts = bounds[:-1][filled]
    least, most = np.fmin.reduceat(gaps, starts), np.fmax.reduceat(gaps, starts)
    fill[filled] = least
    varied = filled[least != most]
    if len(varied):
        rows = known & np.isin(run, varied)
        by_run, values = run[rows], gaps[rows]
        values = values[np.lexsort((values, by_run))]
        count = counts[varied]
        first = np.cumsum(count) - count
        fill[varied] = (values[first + (count - 1) // 2] + values[first + count // 2]) / 2
    return fill
