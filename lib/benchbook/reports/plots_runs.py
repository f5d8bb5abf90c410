"""Figures of the runs themselves: throughput over the iterations of each run (warm-up shaded, the
recomputed value as a line), the spread between repeats, and the components of the loss over the
iterations. Used through `benchbook.reports.plots`."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from ..core.catalog import default as catalog
from .configs import REPEAT
from .plot_base import (
    METRICS,
    PALETTE,
    WARMUP_LINE,
    WARMUP_SHADE,
    config_labels,
    is_missing,
    left_out_note,
    new_figure,
    no_data_figure,
    rate_unit,
    repeat_name,
    set_title,
    styled,
    time_unit,
)

# ---------------------------------------------------------------- 1. throughput over time


def _run_records(iterations: pd.DataFrame, positions, x: str, divisor: float):
    """(x values, throughput, warm-up mask, measured mask, x fallback used) of the rule's rank of a run."""
    rec = iterations.iloc[positions]
    if rec["rank"].notna().any():
        rec = rec[rec["rank"] == rec["rank"].min()]
    rec = rec[rec["throughput"].notna()].sort_values("line", kind="stable")
    y = rec["throughput"].to_numpy(float)
    steps = rec["steps"].to_numpy(float) if "steps" in rec else np.full(len(rec), np.nan)
    fallback = False
    if x == "iteration":
        xs = rec["iteration"].to_numpy(float)
        if len(xs) and (xs >= 0).any() and ((xs < 0) | np.isnan(xs)).any():
            # an epoch's own line (MXNet 20.12+'s per-epoch train.ips) has no iteration: it closes the epoch,
            # so it sits at the iteration before it
            xs = pd.Series(np.where(xs >= 0, xs, np.nan)).ffill().bfill().to_numpy(float)
        if len(xs) and (np.diff(xs) < 0).any() and not (np.isfinite(steps).all() and (steps > 0).all()):
            xs = np.array(xs, dtype=float)  # a copy to write into (a frame's column may be read-only)
            for start in np.flatnonzero(np.diff(xs) < 0) + 1:  # counters that restart every epoch: go on counting
                xs[start:] += xs[start - 1] + 1 - xs[start]
        if len(xs) and (np.isnan(xs).any() or (xs < 0).any() or (np.diff(xs) < 0).any()):
            # Iterations that restart every epoch (or were not logged): count them over the run instead.
            if np.isfinite(steps).all() and (steps > 0).all():
                xs = np.cumsum(steps)
            else:
                xs, fallback = np.arange(len(rec), dtype=float), True
    else:
        xs = rec["elapsed"].to_numpy(float) / divisor
        if len(xs) and np.isnan(xs).any():
            xs, fallback = np.arange(len(rec), dtype=float), True
    warm = rec["warmup"].fillna(False).to_numpy(bool) if "warmup" in rec else np.zeros(len(rec), bool)
    meas = rec["measured"].fillna(False).to_numpy(bool) if "measured" in rec else ~warm
    epochs = rec["epoch"].to_numpy(float) if "epoch" in rec else np.full(len(rec), np.nan)
    return xs, y, warm, meas, fallback, epochs


def _mark_epochs(ax, xs: np.ndarray, epochs: np.ndarray) -> None:
    """A faint line where each epoch after the first begins, named at the top: where a per-epoch rule's
    epochs are (MXNet's warm-up epoch, the epochs it averages)."""
    known = np.isfinite(epochs) & (epochs >= 0)
    if len(np.unique(epochs[known])) < 2:
        return
    starts = np.flatnonzero(known[1:] & (np.diff(epochs) > 0)) + 1
    for i in starts:
        ax.axvline(xs[i], color="0.55", ls=":", lw=0.8, zorder=1, gid="epoch")
        ax.text(xs[i], 1.0, f" epoch {int(epochs[i])}", transform=ax.get_xaxis_transform(), fontsize="x-small",
                color="0.4", va="top", ha="left")


def _fit_measured(ax, shown: list[np.ndarray], measured: list[np.ndarray]) -> None:
    """Fit the y axis to the measured records, so that slow warm-up steps do not flatten their spread."""
    if not measured or not np.concatenate(measured).size:
        return
    every, meas = np.concatenate(shown + measured), np.concatenate(measured)
    # the steady state: the slowest 2% of the measured records (a script with no warm-up measures its
    # first, slow iterations too) run off the bottom edge rather than flatten the rest
    lo, hi = float(np.nanpercentile(meas, 2)), float(np.nanmax(meas))
    pad = max(hi - lo, 0.01 * abs(hi), 1e-9)
    bottom, top = max(float(np.nanmin(every)), lo - pad), min(float(np.nanmax(every)), hi + pad)
    ax.set_ylim(bottom - 0.05 * pad, top + 0.05 * pad)


@styled
def throughput_over_time(iterations: pd.DataFrame, runs: pd.DataFrame, x: str = "iteration",
                         max_runs: int = 48, max_facets: int = 12,
                         value: str = "recomputed_throughput") -> Figure:
    """Throughput of every logged record, a facet per configuration, a line per repeat.

    Warm-up records (the `warmup` column) are drawn grey over a grey band, records the rule measured
    (`measured`) solid in the run's colour, other records faint; a dashed line marks each run's
    `value` (its recomputed throughput by default). Only the rank whose records the rule used is
    drawn (every rank logs the same global rate). Each facet's y axis fits the measured records, so
    that slow first steps do not flatten their spread (those run off the bottom edge). Iterations
    that restart every epoch are counted over the run (from `steps`); without iteration numbers the
    x axis counts records. At most `max_facets` configurations and `max_runs` runs (shared out
    round-robin between the facets) are drawn; the title says what was left out.

    Parameters
    ----------
    iterations, runs : the frames of an Analysis.
    x : "iteration" (as logged) or "elapsed" (wall-clock since the run's first timestamp).
    """
    if x not in ("iteration", "elapsed"):
        raise ValueError(f"x must be 'iteration' or 'elapsed', not {x!r}")
    title = f"Throughput per {'iteration' if x == 'iteration' else 'record over time'} ({rate_unit(runs)})"
    if runs is None or runs.empty:
        return no_data_figure(title, "no runs")
    if iterations is None or iterations.empty or iterations["throughput"].notna().sum() == 0:
        return no_data_figure(title, "no iteration records with a throughput in these logs")

    labels, order = config_labels(runs)
    groups = iterations.groupby(["source", "run"], sort=False).indices
    shown_configs, hidden_configs = order[:max_facets], order[max_facets:]
    members = {c: runs[labels == c].assign(_rep=runs[REPEAT] if REPEAT in runs else pd.NA)
               .sort_values(["_rep", "source", "run"], na_position="last") for c in shown_configs}

    # Share the run budget out round-robin, so that every facet gets lines before any gets many.
    picked: dict[str, list] = {c: [] for c in shown_configs}
    queues = {c: [r for _, r in m.iterrows() if (r["source"], r["run"]) in groups] for c, m in members.items()}
    budget, depth = max(1, max_runs), 0
    while budget and any(len(q) > depth for q in queues.values()):
        for c in shown_configs:
            if budget and len(queues[c]) > depth:
                picked[c].append(queues[c][depth])
                budget -= 1
        depth += 1

    divisor, unit = 1.0, "s"
    if x == "elapsed":
        positions = [groups[(r["source"], r["run"])] for rs in picked.values() for r in rs]
        elapsed = iterations["elapsed"].to_numpy(float)[np.concatenate(positions)] if positions else np.array([])
        divisor, unit = time_unit(float(np.nanmax(elapsed)) if np.isfinite(elapsed).any() else np.nan)
    xlabel = "iteration" if x == "iteration" else f"elapsed time ({unit})"

    n = len(shown_configs)
    ncols = min(n, 3)
    nrows = math.ceil(n / ncols)
    fig = new_figure(4.3 * ncols, 2.7 * nrows + 1.0)
    axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
    for extra in axes[n:]:
        extra.remove()
    drawn_runs = 0
    any_warmup = False
    for ax, config in zip(axes, shown_configs, strict=False):
        total = len(members[config])
        with_records = len(queues[config])
        spans: set[tuple[float, float]] = set()
        fell_back = False
        shown_y: list[np.ndarray] = []
        measured_y: list[np.ndarray] = []
        for i, r in enumerate(picked[config]):
            xs, y, warm, meas, fb, epochs = _run_records(iterations, groups[(r["source"], r["run"])], x, divisor)
            if not len(xs):
                continue
            if i == 0:
                _mark_epochs(ax, xs, epochs)
            fell_back |= fb
            shown_y.append(y)
            measured_y.append(y[meas])
            color = PALETTE[i % len(PALETTE)]
            name = repeat_name(r, i)
            ax.plot(xs, y, color=color, lw=0.7, alpha=0.35, gid="other")
            if meas.any():
                sparse = meas.sum() <= 20  # a per-epoch rule measures a few records: points, not a broken line
                ax.plot(xs, np.where(meas, y, np.nan), color=color, lw=1.5, label=name, gid="measured",
                        marker="o" if sparse else None, ms=4)
            if warm.any():
                any_warmup = True
                ax.plot(xs, np.where(warm, y, np.nan), color=WARMUP_LINE, lw=1.0, marker=".", ms=3, gid="warmup")
                last = int(np.flatnonzero(warm)[-1])
                hi = xs[last + 1] if last + 1 < len(xs) else xs[last]
                spans.add((float(xs[warm].min()), float(hi)))
            rate = r.get(value)
            if not is_missing(rate):
                ax.axhline(float(rate), color=color, ls="--", lw=1.0, gid="rate")
                measured_y.append(np.array([float(rate)]))
            drawn_runs += 1
        for lo, hi in sorted(spans):
            ax.axvspan(lo, hi if hi > lo else lo + 0.5, color=WARMUP_SHADE, zorder=0, lw=0, gid="warmup-span")
        _fit_measured(ax, shown_y, measured_y)
        facet = f"{config}\n{total} run{'s' if total != 1 else ''}"
        if len(picked[config]) < with_records:
            facet += f", {len(picked[config])} drawn"
        if with_records < total:
            facet += f", {total - with_records} without records"
        ax.set_title(facet)
        if not with_records:
            ax.text(0.5, 0.5, "no records logged", ha="center", va="center", color="0.4", transform=ax.transAxes)
            ax.set_xticks([])
            ax.set_yticks([])
        if fell_back:
            ax.set_xlabel("record number (no " + ("iteration" if x == "iteration" else "timestamp") + " logged)")
        if len(picked[config]) > 1 and len(picked[config]) <= 6:
            # beside the facet, never over its curves
            ax.legend(title=catalog().headers()[REPEAT], fontsize="x-small", title_fontsize="x-small", loc="upper left",
                      bbox_to_anchor=(1.0, 1.0), borderaxespad=0.2)

    for col in range(ncols):  # the x label under the lowest facet of each column
        column = [ax for ax in axes[col:n:ncols]]
        if column and not column[-1].get_xlabel():
            column[-1].set_xlabel(xlabel)
    fig.supylabel(f"throughput ({rate_unit(runs)})")
    handles = [Line2D([], [], color="0.2", lw=1.5, label="measured records"),
               Line2D([], [], color="0.2", lw=0.7, alpha=0.35, label="other records"),
               Line2D([], [], color="0.2", ls="--", lw=1.0, label=f"{METRICS.get(value, value)} of the run")]
    if any_warmup:
        handles[1:1] = [Line2D([], [], color=WARMUP_LINE, marker=".", lw=1.0, label="warm-up records (skipped)"),
                        Patch(color=WARMUP_SHADE, label="warm-up")]
    # one column of entries under a single narrow facet, so that no entry is wider than the figure
    fig.legend(handles=handles, loc="outside lower center", ncols=1 if ncols == 1 else min(2, len(handles)),
               fontsize="small")
    notes = []
    if hidden_configs:
        notes.append(left_out_note("configurations", hidden_configs))
    with_any = sum(len(q) for q in queues.values())
    hidden_runs = sum(len(m) for m in members.values()) - drawn_runs
    hidden_runs += int(sum((labels == c).sum() for c in hidden_configs))
    if hidden_runs:
        notes.append(f"{drawn_runs} of {len(runs)} runs drawn"
                     + (f" (max_runs={max_runs})" if with_any > drawn_runs else ""))
    set_title(fig, title, notes)
    return fig


# ---------------------------------------------------------------- 2. repeats


@styled
def repeats(runs: pd.DataFrame, value: str = "recomputed_throughput", complete_only: bool = True,
            max_configs: int = 40) -> Figure:
    """Every repeat as a point per configuration, the median marked, so run-to-run spread shows.

    Left: the values of `value` in the models' unit (log scale when configurations differ by more than 30x).
    Right: each repeat's distance from its configuration's median in percent, with the number of
    repeats and the coefficient of variation. Runs whose status is not complete are left out
    unless `complete_only` is False.
    """
    title = f"Repeats per configuration: {METRICS.get(value, value)}"
    if runs is None or runs.empty or value not in runs:
        return no_data_figure(title, "no runs" if runs is None or runs.empty else f"no column {value!r}")
    data = runs[pd.to_numeric(runs[value], errors="coerce").notna()]
    if complete_only and "status" in data:
        data = data[data["status"] == "complete"]
    if data.empty:
        return no_data_figure(title, f"no {'complete ' if complete_only else ''}run has a {METRICS.get(value, value)}")
    labels, order = config_labels(data)
    data = data.assign(_config=labels, _value=pd.to_numeric(data[value], errors="coerce").astype(float))
    hidden = order[max_configs:]
    order = order[:max_configs]
    data = data[data["_config"].isin(order)]
    stats = data.groupby("_config")["_value"].agg(["median", "std", "mean", "count"]).reindex(order)
    data = data.assign(_rel=100 * (data["_value"] / data["_config"].map(stats["median"]) - 1))

    fig = new_figure(11, 1.6 + 0.38 * len(order))
    ax_abs, ax_rel = fig.subplots(1, 2, sharey=True, width_ratios=[3, 2])
    positions = np.arange(len(order))
    row = data["_config"].map({c: i for i, c in enumerate(order)}).to_numpy()
    jitter = np.random.default_rng(0).uniform(-0.18, 0.18, len(data))  # points of one row apart, the same each time
    for ax, column in ((ax_abs, "_value"), (ax_rel, "_rel")):  # a strip plot: one row per configuration
        ax.scatter(data[column], row + jitter, c=[PALETTE[i % len(PALETTE)] for i in row], s=25, alpha=0.85, lw=0)
        ax.set_yticks(positions, order)
        ax.set_ylim(len(order) - 0.5, -0.5)  # the first configuration on top
        ax.yaxis.grid(False)
    ax_abs.plot(stats["median"].to_numpy(), positions, ls="", marker="|", ms=18, mew=2.2, color="black",
                label="median", zorder=5)
    ax_rel.plot(np.zeros(len(order)), positions, ls="", marker="|", ms=18, mew=2.2, color="black",
                label="median", zorder=5)
    medians = stats["median"].to_numpy(float)
    if np.nanmin(medians) > 0 and np.nanmax(medians) / np.nanmin(medians) > 30:
        ax_abs.set_xscale("log")
    ax_abs.set_xlabel(f"{METRICS.get(value, value)} ({rate_unit(runs)})")
    ax_rel.set_xlabel("difference from the median (%)")
    ax_rel.axvline(0, color="0.5", lw=0.8)
    span = float(np.nanmax(np.abs(data["_rel"]))) if len(data) else 0.0
    ax_rel.set_xlim(-max(span, 0.5) * 1.3, max(span, 0.5) * 1.9)
    for pos, config in enumerate(order):
        count, std, mean = stats.loc[config, ["count", "std", "mean"]]
        text = f"n={int(count)}" + (f", CV {100 * std / mean:.2f}%" if count > 1 and mean else "")
        ax_rel.annotate(text, (1, pos), xycoords=("axes fraction", "data"), xytext=(-4, 0),
                        textcoords="offset points", ha="right", va="center", fontsize="x-small", color="0.3")
    fig.legend(handles=[Line2D([], [], ls="", marker="o", color="0.4", label="one run"),
                        Line2D([], [], ls="", marker="|", ms=12, mew=2.2, color="black", label="median of the runs")],
               loc="outside lower center", ncols=2, fontsize="small")
    dropped = len(runs) - len(data) - int(labels.isin(hidden).sum())
    notes = [left_out_note("configurations", hidden)] if hidden else []
    if dropped:
        notes.append(f"{dropped} run{'s' if dropped != 1 else ''} without a value"
                     + (" or not complete" if complete_only else "") + " left out")
    set_title(fig, title, notes)
    return fig




# ---------------------------------------------------------------- 3. loss components


@styled
def loss_components(losses: pd.DataFrame, runs: pd.DataFrame, max_components: int = 9,
                    max_configs: int = len(PALETTE)) -> Figure:
    """Each component of the loss over the iterations: a panel per component (in the order the logs
    print them), a colour per configuration, a line per run (repeats share their configuration's colour).

    `losses` is `Analysis.losses` (source, run, line, iteration, component, value; iteration -1, a
    component printed before the run's first record, is not drawn); `runs` names each run's configuration.
    At most `max_components` panels and `max_configs` configurations are drawn; the title says what was
    left out.
    """
    title = "Loss components per iteration"
    if losses is None or losses.empty:
        return no_data_figure(title, "no run logged the components of its loss")
    data = losses[pd.to_numeric(losses["iteration"], errors="coerce") >= 0].dropna(subset=["value"])
    if data.empty:
        return no_data_figure(title, "no loss component was logged with an iteration")
    components = list(dict.fromkeys(data.sort_values("line", kind="stable")["component"]))
    shown, hidden = components[:max_components], components[max_components:]
    labels, order = config_labels(runs)
    config = dict(zip(zip(runs["source"], runs["run"], strict=True), labels, strict=True))
    data = data.assign(_config=[config.get(key, "?") for key in zip(data["source"], data["run"], strict=True)])
    configs = [c for c in [*order, "?"] if c in set(data["_config"])]
    drawn, left = configs[:max_configs], configs[max_configs:]
    colors = {c: PALETTE[i % len(PALETTE)] for i, c in enumerate(drawn)}

    ncols = min(len(shown), 3)
    nrows = math.ceil(len(shown) / ncols)
    fig = new_figure(4.3 * ncols, 2.5 * nrows + 1.0)
    axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
    for extra in axes[len(shown):]:
        extra.remove()
    for ax, component in zip(axes, shown, strict=False):
        part = data[(data["component"] == component) & data["_config"].isin(drawn)]
        for (_source, _run), rows in part.groupby(["source", "run"], sort=False, observed=True):
            rows = rows.sort_values(["iteration", "line"], kind="stable")
            ax.plot(rows["iteration"].to_numpy(float), rows["value"].to_numpy(float),
                    color=colors[rows["_config"].iloc[0]], lw=1.2, marker=".", ms=3)
        ax.set_title(str(component))
    for col in range(ncols):  # the x label under the lowest panel of each column
        column = list(axes[col:len(shown):ncols])
        if column:
            column[-1].set_xlabel("iteration")
    fig.supylabel("loss")
    fig.legend(handles=[Line2D([], [], color=colors[c], lw=1.2, marker=".", label=c) for c in drawn],
               loc="outside lower center", ncols=min(len(drawn), 3), fontsize="small")
    notes = []
    if hidden:
        notes.append(left_out_note("components", hidden))
    if left:
        notes.append(left_out_note("configurations", left))
    set_title(fig, title, notes)
    return fig
