"""Numbers across runs: statistics over repeats, speedup and scaling, time to train and accuracy.

Each function takes the tidy `runs` (and `evaluations`) frames of an Analysis and returns a new
frame; nothing here reads logs.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..core import config
from ..core.catalog import Catalog
from ..core.catalog import default as default_catalog
from ..logs.frames import one_metric

# A configuration is `Catalog.identity()` (framework, model, GPUs, nodes, processes, batch, precision and the
# flags); its 1-GPU baseline shares `Catalog.baseline()`, every key but what it scales over.
STAT_COLUMNS = {
    "runs": "runs with a value in this configuration",
    "mean": "mean over repeats, in the model's unit (ModelSpec.unit)",
    "median": "median over repeats, in the model's unit",
    "std": "sample standard deviation over repeats",
    "cv": "coefficient of variation (std / mean)",
    "min": "slowest repeat", "max": "fastest repeat",
    "speedup": "median / median of the 1-GPU runs of the same per-GPU batch and precision (DLPerf rule); "
               "on the CPU, of the 1-process runs; NaN where there is no other run to compare with "
               "(no baseline, or a baseline no other configuration is compared with)",
    "efficiency": "speedup / GPUs (processes on the CPU)",
    "incomplete": "runs counted whose log has no end-of-run summary (their number is their logged records')",
}
# Where a configuration's exact 1-GPU baseline is missing, one that differs only in flags (`Catalog.flags()`)
# where either side is unknown ("?") is taken, if there is exactly one.


def _keys(frame: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    # groupby drops NaN keys; unknown values are grouped as the string "?" instead.
    return frame.assign(**{k: frame[k].astype(object).where(frame[k].notna(), "?") for k in keys})


def aggregate(runs: pd.DataFrame, value: str = "recomputed_throughput", complete_only: bool = True,
              catalog: Catalog | None = None) -> pd.DataFrame:
    """One row per configuration: mean, median, std, CV, min, max over repeats, speedup, efficiency.

    Parameters
    ----------
    runs : the `runs` frame of an Analysis.
    value : the throughput column to aggregate (`recomputed_throughput` or `reported_throughput`).
    complete_only : leave out runs whose status is not `complete`.
    catalog : the catalog whose axes tell configurations apart (None: `core.catalog.default()`; a report's is its
        analysis's).
    """
    known = catalog or default_catalog()
    data = runs[runs["status"] == "complete"] if complete_only else runs
    data = config.with_processes(data)
    keys = [k for k in known.identity() if k in data]  # (an axis a model declares: only its runs have it)
    data = _keys(data[data[value].notna()], keys)
    if data.empty:
        return pd.DataFrame(columns=[*keys, *STAT_COLUMNS])
    data = data.assign(_incomplete=data["status"] == "incomplete" if "status" in data else False)
    grouped = data.groupby(keys, sort=True, dropna=False)
    stats = grouped[value].agg(runs="count", mean="mean", median="median", std="std", min="min",
                               max="max").reset_index()
    stats["incomplete"] = grouped["_incomplete"].sum().to_numpy().astype(int)
    stats["cv"] = stats["std"] / stats["mean"]
    workers = config.workers(stats)
    stats["speedup"] = _speedups(stats, workers, known)
    stats["efficiency"] = stats["speedup"] / workers
    return stats[[*keys, *STAT_COLUMNS]]


def _speedups(stats: pd.DataFrame, workers: pd.Series, known: Catalog) -> pd.Series:
    """Median over the median of the configuration's 1-GPU (1-process on the CPU) baseline, DLPerf's rule.

    The baseline is the 1-worker configuration of the same BASELINE keys on the same kind of device (a
    CPU run is never divided by a GPU run); where there is none, `_loose_baseline`. A 1-worker row gets
    1.0 only when some other row was divided by it: a row with no other run to compare with has no
    speedup (NaN), rather than a 1.0 that says it scaled perfectly.
    """
    keys = [*(k for k in known.baseline() if k in stats), "_cpu"]
    frame = stats.assign(_cpu=config.on_cpu(stats))
    ones = frame[workers == 1]
    ones = ones[~ones.duplicated(keys)]
    first = pd.Series(ones.index, index=pd.MultiIndex.from_frame(ones[keys]))
    baseline = pd.Series(first.reindex(pd.MultiIndex.from_frame(frame[keys])).to_numpy(), index=frame.index)
    for i in baseline.index[baseline.isna()]:
        baseline[i] = _loose_baseline(frame.loc[i], ones, known)
    scaled = (workers != 1) & baseline.notna()
    used = set(baseline[scaled].astype(int))
    keep = scaled | ((workers == 1) & baseline.index.isin(list(used)) & (baseline == baseline.index))
    chosen = baseline[keep].astype(int)
    speedup = pd.Series(np.nan, index=stats.index)
    speedup[chosen.index] = (stats["median"].loc[chosen.index].to_numpy()
                             / stats["median"].loc[chosen.to_numpy()].to_numpy())
    return speedup


def _loose_baseline(row: pd.Series, ones: pd.DataFrame, known: Catalog) -> float:
    """The one 1-worker configuration that differs from `row` only in XLA, DALI or synthetic data known on
    one side and unknown ("?") on the other; NaN when there is none, or more than one."""
    loose = [k for k in known.flags() if k in ones]
    strict = [k for k in [*known.baseline(), "_cpu"] if k in ones and k not in loose]
    same = ones[(ones[strict] == row[strict]).all(axis=1)]
    for k in loose:
        same = same[(same[k] == row[k]) | (same[k] == "?") | (row[k] == "?")]
    return float(same.index[0]) if len(same) == 1 else np.nan


def time_to_target(evaluations: pd.DataFrame, target: float,
                   metric: config.Metric | str, catalog: Catalog | None = None) -> pd.DataFrame:
    """Per run: seconds from the run's first log line to its first evaluation that reaches the target: at or
    above it where higher is better (top-1), at or below it where lower is (a loss; `Metric.direction`).

    `evaluations` is the long frame of an Analysis (`frames.EVAL_COLUMNS`: the rows of `metric` are read) or a
    frame with the metric's own column. `metric` is a quality metric (a model's `ModelSpec.quality`) or its key
    (looked up in the catalog), `target`
    in its unit (76.10 % top-1 for the AI-Rank ResNet-50 target). Runs that never reach it get NaN seconds and
    `reached` False; the columns `<metric>` (the value that reached it) and `final_<metric>` (the run's last).
    """
    if not isinstance(metric, config.Metric):
        metric = (catalog or default_catalog()).metric(metric) or config.Metric(metric, metric, "")
    key, final = metric.key, metric.final_key
    cols = ["source", "run", "reached", "seconds", "epoch", "line", key, final]
    evaluations = one_metric(evaluations, key)
    if evaluations.empty:
        return pd.DataFrame(columns=cols)
    out = []
    for (source, run), group in evaluations.sort_values("line").groupby(["source", "run"], sort=False):
        hit = group[group[key] <= target] if metric.direction == "lower" else group[group[key] >= target]
        first = hit.iloc[0] if len(hit) else None
        out.append({
            "source": source, "run": run, "reached": first is not None,
            "seconds": float(first["elapsed"]) if first is not None else np.nan,
            "epoch": first["epoch"] if first is not None else np.nan,
            "line": int(first["line"]) if first is not None else np.nan,
            key: float(first[key]) if first is not None else np.nan,
            final: float(group[key].dropna().iloc[-1]) if group[key].notna().any() else np.nan,
        })
    return pd.DataFrame(out, columns=cols)
