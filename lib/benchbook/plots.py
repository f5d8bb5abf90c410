"""The figures of the reports, drawn from the tidy frames of an Analysis and `metrics.aggregate` output.

Every function returns a `matplotlib.figure.Figure` built without pyplot: nothing is shown, nothing is
left open in pyplot's list of figures (so Jupyter's inline backend never draws a figure twice and a
papermill run with hundreds of figures holds no memory), and the Agg backend is all it needs. In a
notebook a figure shows as the value of a cell or with `display(fig)`; nbconvert embeds it as a PNG.

Configurations are named the same way everywhere: "8 GPUs · amp · bs224 · xla" ("CPU" for gpus == 0,
prefixed by framework and model when a frame mixes several). Input with nothing to draw gives a figure
that says "no data" and why, never an exception.
"""

from __future__ import annotations

import base64
import functools
import html
import io
import math
import textwrap
from collections.abc import Callable, Sequence

import matplotlib as mpl
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from . import metrics

__all__ = [
    "ReportFigure", "comparison", "config_label", "explore", "figure_to_png", "repeats", "scaling",
    "throughput_over_time", "time_to_train",
]

#: Columns that make a configuration in the figures; framework and model join when they vary.
CONFIG_KEYS = ["gpus", "precision", "batch_size", "xla"]
METRICS = {
    "recomputed_throughput": "recomputed throughput",
    "reported_throughput": "reported throughput",
    "elapsed_throughput": "wall-clock throughput",
}
RATE_UNIT = "images/s"
_PRECISION_ORDER = {"fp32": 0, "tf32": 1, "bf16": 2, "fp16": 3, "amp": 4}
_STYLE = {
    **sns.axes_style("whitegrid"),
    **sns.plotting_context("notebook", font_scale=0.85),
    "figure.dpi": 100,
    "savefig.dpi": 100,
    "figure.facecolor": "white",
    "axes.formatter.useoffset": False,
    "axes.titlesize": 10,
    "figure.titlesize": 12,
    "legend.frameon": False,
}
_PALETTE = sns.color_palette("colorblind", 10)
_MARKERS = ["o", "s", "^", "D", "v", "P", "X", "<", ">", "h"]
_WARMUP_SHADE = "0.90"
_WARMUP_LINE = "0.60"


class ReportFigure(Figure):
    """A Figure that IPython displays as a PNG even where no inline backend was set up."""

    def _repr_png_(self) -> bytes:
        return figure_to_png(self)

    def _repr_html_(self) -> str:
        """The PNG with alt text (its title and axis labels), which a bare image/png output cannot carry."""
        png = base64.b64encode(figure_to_png(self)).decode("ascii")
        return f'<img src="data:image/png;base64,{png}" alt="{html.escape(alt_text(self), quote=True)}">'


def alt_text(fig: Figure) -> str:
    """What a figure shows, in words: its title, then each axes' title and axis labels."""
    parts = [fig.get_suptitle()] if fig.get_suptitle() else []
    for ax in fig.axes:
        labels = [ax.get_title(), ax.get_xlabel() and f"x: {ax.get_xlabel()}",
                  ax.get_ylabel() and f"y: {ax.get_ylabel()}"]
        parts.append(", ".join(x for x in labels if x))
    text = "; ".join(" ".join(p.split()) for p in parts if p)
    return text or "figure"


def rate_unit(frame: pd.DataFrame | None) -> str:
    """The throughput unit word of a report: "samples/s" when every run is Mask R-CNN (whose logs and
    published tables say samples), otherwise "images/s"; one word for a report's tables and axes."""
    if frame is not None and not frame.empty and "model" in frame:
        if frame["model"].astype(str).str.contains("maskrcnn").all():
            return "samples/s"
    return RATE_UNIT


def figure_to_png(fig: Figure, dpi: float | None = None) -> bytes:
    """The figure rendered as PNG bytes with Agg (works headless, for any Figure)."""
    buf = io.BytesIO()
    FigureCanvasAgg(fig)  # a canvas of its own: the figure need not belong to pyplot or a GUI
    fig.savefig(buf, format="png", dpi=dpi or fig.dpi, facecolor="white")
    return buf.getvalue()


def _styled(fn: Callable[..., Figure]) -> Callable[..., Figure]:
    """Build the figure inside the report style, without touching the global rcParams."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with mpl.rc_context(_STYLE):
            fig = fn(*args, **kwargs)
            for ax in fig.axes:  # ticks are made lazily; make the first ones now, in this style
                for axis in (ax.xaxis, ax.yaxis):
                    axis.get_major_ticks(1)
                    axis.get_minor_ticks(1)
            return fig

    return wrapper


def _figure(width: float, height: float) -> ReportFigure:
    fig = ReportFigure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _no_data(title: str, reason: str) -> ReportFigure:
    fig = _figure(6, 2.2)
    ax = fig.add_subplot()
    ax.set_axis_off()
    ax.text(0.5, 0.6, "no data", ha="center", va="center", fontsize=16, color="0.35", transform=ax.transAxes)
    ax.text(0.5, 0.3, reason, ha="center", va="center", fontsize=10, color="0.45", transform=ax.transAxes, wrap=True)
    fig.suptitle(title)
    return fig


# ---------------------------------------------------------------- configurations and their names


def _missing(value) -> bool:
    if value is None or value is pd.NA or value is pd.NaT:
        return True
    if isinstance(value, str):
        return value in ("", "?")
    try:
        return bool(np.isnan(value))
    except (TypeError, ValueError):
        return False


def _int(value) -> int | None:
    if _missing(value):
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _xla(value) -> bool | None:
    if _missing(value):
        return None
    if isinstance(value, str):
        return value.strip().lower() in ("true", "1", "yes", "on", "xla")
    return bool(value)


def _gpus_text(gpus, processes=None) -> str:
    n = _int(gpus)
    if n is None:
        return "? GPUs"
    if n == 0:
        ranks = _int(processes)
        return f"CPU x{ranks} ranks" if ranks and ranks > 1 else "CPU"
    return "1 GPU" if n == 1 else f"{n} GPUs"


def config_label(row, prefix: Sequence[str] = (), with_gpus: bool = True) -> str:
    """'8 GPUs · amp · bs224 · xla' for a row with gpus, precision, batch_size, xla ('CPU' when gpus == 0).

    `prefix` names columns (framework, model) whose values start the label.
    """
    get = row.get if hasattr(row, "get") else (lambda k, d=None: getattr(row, k, d))
    parts = [" ".join(str(get(k)) for k in prefix if not _missing(get(k)))] if prefix else []
    if with_gpus:
        parts.append(_gpus_text(get("gpus"), get("processes")))
    precision = get("precision")
    parts.append("?" if _missing(precision) else str(precision))
    batch = _int(get("batch_size"))
    parts.append(f"bs{batch}" if batch is not None else "bs?")
    xla = _xla(get("xla"))
    if xla is not None:
        parts.append("xla" if xla else "no xla")
    return " · ".join(p for p in parts if p)


def _prefix(frame: pd.DataFrame) -> list[str]:
    return [k for k in ("framework", "model") if k in frame and frame[k].astype(str).nunique() > 1]


def _sort_key(row, prefix: Sequence[str], with_gpus: bool = True) -> tuple:
    precision = str(row.get("precision")).lower()
    batch, gpus, xla = _int(row.get("batch_size")), _int(row.get("gpus")), _xla(row.get("xla"))
    key = tuple(str(row.get(k)) for k in prefix)
    key += (_PRECISION_ORDER.get(precision, 9), precision, batch if batch is not None else 1 << 30,
            {True: 0, False: 1, None: 2}[xla])
    ranks = _int(row.get("processes")) or 1
    return key + ((gpus if gpus is not None else 1 << 30, ranks) if with_gpus else ())


def _configs(frame: pd.DataFrame, with_gpus: bool = True) -> tuple[pd.Series, list[str]]:
    """The label of each row and the labels in report order (by model, precision, batch, XLA, GPUs)."""
    prefix = _prefix(frame)
    records = frame.to_dict("records")
    labels = pd.Series([config_label(r, prefix, with_gpus) for r in records], index=frame.index, dtype=object)
    keys: dict[str, tuple] = {}
    for label, r in zip(labels, records, strict=True):
        keys.setdefault(label, _sort_key(r, prefix, with_gpus))
    return labels, sorted(keys, key=lambda lab: (keys[lab], lab))


def _title(fig: Figure, title: str, notes: Sequence[str] = ()) -> None:
    """The figure's title, with what was left out in smaller type, wrapped to the figure's width."""
    width = max(40, int(fig.get_figwidth() * 9))
    text = title
    if notes:
        text += "\n" + textwrap.fill("; ".join(notes), width)
    fig.suptitle(text)


def _left_out(kind: str, names: Sequence[str], shown: int = 2) -> str:
    listed = ", ".join(names[:shown]) + (", …" if len(names) > shown else "")
    return f"{len(names)} {kind} left out ({listed})"


def _time_unit(seconds: float) -> tuple[float, str]:
    if not np.isfinite(seconds) or seconds < 180:
        return 1.0, "s"
    if seconds < 3 * 3600:
        return 60.0, "min"
    return 3600.0, "h"


def _repeat_name(row, fallback: int) -> str:
    rep = _int(row.get("repeat"))
    return f"#{rep}" if rep is not None else f"#{fallback + 1}"


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
    return xs, y, warm, meas, fallback


def _fit_measured(ax, shown: list[np.ndarray], measured: list[np.ndarray]) -> None:
    """Fit the y axis to the measured records, so that slow warm-up steps do not flatten their spread."""
    if not measured or not np.concatenate(measured).size:
        return
    every, meas = np.concatenate(shown + measured), np.concatenate(measured)
    lo, hi = float(np.nanmin(meas)), float(np.nanmax(meas))
    pad = max(hi - lo, 0.01 * abs(hi), 1e-9)
    bottom, top = max(float(np.nanmin(every)), lo - pad), min(float(np.nanmax(every)), hi + pad)
    ax.set_ylim(bottom - 0.05 * pad, top + 0.05 * pad)


@_styled
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
        return _no_data(title, "no runs")
    if iterations is None or iterations.empty or iterations["throughput"].notna().sum() == 0:
        return _no_data(title, "no iteration records with a throughput in these logs")

    labels, order = _configs(runs)
    groups = iterations.groupby(["source", "run"], sort=False).indices
    shown_configs, hidden_configs = order[:max_facets], order[max_facets:]
    members = {c: runs[labels == c].assign(_rep=runs["repeat"] if "repeat" in runs else pd.NA)
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
        divisor, unit = _time_unit(float(np.nanmax(elapsed)) if np.isfinite(elapsed).any() else np.nan)
    xlabel = "iteration" if x == "iteration" else f"elapsed time ({unit})"

    n = len(shown_configs)
    ncols = min(n, 3)
    nrows = math.ceil(n / ncols)
    fig = _figure(4.3 * ncols, 2.7 * nrows + 1.0)
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
            xs, y, warm, meas, fb = _run_records(iterations, groups[(r["source"], r["run"])], x, divisor)
            if not len(xs):
                continue
            fell_back |= fb
            shown_y.append(y)
            measured_y.append(y[meas])
            color = _PALETTE[i % len(_PALETTE)]
            name = _repeat_name(r, i)
            ax.plot(xs, y, color=color, lw=0.7, alpha=0.35, gid="other")
            if meas.any():
                ax.plot(xs, np.where(meas, y, np.nan), color=color, lw=1.5, label=name, gid="measured")
            if warm.any():
                any_warmup = True
                ax.plot(xs, np.where(warm, y, np.nan), color=_WARMUP_LINE, lw=1.0, marker=".", ms=3, gid="warmup")
                last = int(np.flatnonzero(warm)[-1])
                hi = xs[last + 1] if last + 1 < len(xs) else xs[last]
                spans.add((float(xs[warm].min()), float(hi)))
            rate = r.get(value)
            if not _missing(rate):
                ax.axhline(float(rate), color=color, ls="--", lw=1.0, gid="rate")
                measured_y.append(np.array([float(rate)]))
            drawn_runs += 1
        for lo, hi in sorted(spans):
            ax.axvspan(lo, hi if hi > lo else lo + 0.5, color=_WARMUP_SHADE, zorder=0, lw=0, gid="warmup-span")
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
            ax.legend(title="repeat", fontsize="x-small", title_fontsize="x-small", loc="lower right", ncols=2)

    for col in range(ncols):  # the x label under the lowest facet of each column
        column = [ax for ax in axes[col:n:ncols]]
        if column and not column[-1].get_xlabel():
            column[-1].set_xlabel(xlabel)
    fig.supylabel(f"throughput ({rate_unit(runs)})")
    handles = [Line2D([], [], color="0.2", lw=1.5, label="measured records"),
               Line2D([], [], color="0.2", lw=0.7, alpha=0.35, label="other records"),
               Line2D([], [], color="0.2", ls="--", lw=1.0, label=f"{METRICS.get(value, value)} of the run")]
    if any_warmup:
        handles[1:1] = [Line2D([], [], color=_WARMUP_LINE, marker=".", lw=1.0, label="warm-up records (skipped)"),
                        Patch(color=_WARMUP_SHADE, label="warm-up")]
    # one column of entries under a single narrow facet, so that no entry is wider than the figure
    fig.legend(handles=handles, loc="outside lower center", ncols=1 if ncols == 1 else min(2, len(handles)),
               fontsize="small")
    notes = []
    if hidden_configs:
        notes.append(_left_out("configurations", hidden_configs))
    with_any = sum(len(q) for q in queues.values())
    hidden_runs = sum(len(m) for m in members.values()) - drawn_runs
    hidden_runs += int(sum((labels == c).sum() for c in hidden_configs))
    if hidden_runs:
        notes.append(f"{drawn_runs} of {len(runs)} runs drawn"
                     + (f" (max_runs={max_runs})" if with_any > drawn_runs else ""))
    _title(fig, title, notes)
    return fig


# ---------------------------------------------------------------- 2. repeats


@_styled
def repeats(runs: pd.DataFrame, value: str = "recomputed_throughput", complete_only: bool = True,
            max_configs: int = 40) -> Figure:
    """Every repeat as a point per configuration, the median marked, so run-to-run spread shows.

    Left: the values of `value` in images/s (log scale when configurations differ by more than 30x).
    Right: each repeat's distance from its configuration's median in percent, with the number of
    repeats and the coefficient of variation. Runs whose status is not complete are left out
    unless `complete_only` is False.
    """
    title = f"Repeats per configuration: {METRICS.get(value, value)}"
    if runs is None or runs.empty or value not in runs:
        return _no_data(title, "no runs" if runs is None or runs.empty else f"no column {value!r}")
    data = runs[pd.to_numeric(runs[value], errors="coerce").notna()]
    if complete_only and "status" in data:
        data = data[data["status"] == "complete"]
    if data.empty:
        return _no_data(title, f"no {'complete ' if complete_only else ''}run has a {METRICS.get(value, value)}")
    labels, order = _configs(data)
    data = data.assign(_config=labels, _value=pd.to_numeric(data[value], errors="coerce").astype(float))
    hidden = order[max_configs:]
    order = order[:max_configs]
    data = data[data["_config"].isin(order)]
    stats = data.groupby("_config")["_value"].agg(["median", "std", "mean", "count"]).reindex(order)
    data = data.assign(_rel=100 * (data["_value"] / data["_config"].map(stats["median"]) - 1))

    fig = _figure(11, 1.6 + 0.38 * len(order))
    ax_abs, ax_rel = fig.subplots(1, 2, sharey=True, width_ratios=[3, 2])
    palette = [_PALETTE[i % len(_PALETTE)] for i in range(len(order))]
    for ax, column in ((ax_abs, "_value"), (ax_rel, "_rel")):
        sns.stripplot(data=data, x=column, y="_config", order=order, hue="_config", hue_order=order,
                      palette=palette, legend=False, jitter=0.18, size=5, alpha=0.85, orient="h", ax=ax)
        ax.set_ylabel("")
    positions = np.arange(len(order))
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
    notes = [_left_out("configurations", hidden)] if hidden else []
    if dropped:
        notes.append(f"{dropped} run{'s' if dropped != 1 else ''} without a value"
                     + (" or not complete" if complete_only else "") + " left out")
    _title(fig, title, notes)
    return fig


# ---------------------------------------------------------------- 3. scaling


def _key(row) -> tuple:
    return (_int(row.get("batch_size")), str(row.get("precision")).lower(), _xla(row.get("xla")))


def _published(stats: pd.DataFrame, reference: pd.DataFrame | None) -> dict[tuple, list[tuple[int, float]]]:
    """(batch, precision, xla) -> [(gpus, published speedup)], from the stats or the reference frame."""
    out: dict[tuple, list[tuple[int, float]]] = {}
    if reference is not None and not reference.empty:
        ref = reference.to_dict("records")
        base = {_key(r): float(r["published"]) for r in ref
                if _int(r.get("gpus")) == 1 and not _missing(r.get("published"))}
        for r in ref:
            gpus = _int(r.get("gpus"))
            speedup = r.get("published_speedup")
            if _missing(speedup) and not _missing(r.get("published")) and base.get(_key(r)):
                speedup = float(r["published"]) / base[_key(r)]
            if gpus and not _missing(speedup):
                out.setdefault(_key(r), []).append((gpus, float(speedup)))
        # A reference that does not say XLA matches either setting.
        for key in [k for k in out if k[2] is None]:
            for xla in (True, False):
                out.setdefault((key[0], key[1], xla), out[key])
    elif "published_speedup" in stats:
        for r in stats.to_dict("records"):
            gpus = _int(r.get("gpus"))
            if gpus and not _missing(r.get("published_speedup")):
                out.setdefault(_key(r), []).append((gpus, float(r["published_speedup"])))
    return {k: sorted(set(v)) for k, v in out.items()}


@_styled
def scaling(stats: pd.DataFrame, reference: pd.DataFrame | None = None) -> Figure:
    """Speedup over the 1-GPU median against the GPU count, and scaling efficiency, per (precision, batch, xla).

    `stats` is `metrics.aggregate` output. The ideal linear line (and 100 % efficiency) are dashed.
    Published values, from a `published_speedup` column of the stats or from `reference` (columns
    gpus, batch_size, precision, xla, published, published_speedup; the speedup is derived from
    `published` against the 1-GPU row when missing), are hollow markers of the series' colour.
    CPU rows and configurations without a 1-GPU baseline cannot scale and are left out (said in the title).
    """
    title = "Scaling: speedup over 1 GPU (median of repeats)"
    if stats is None or stats.empty or "speedup" not in stats:
        return _no_data(title, "no statistics (metrics.aggregate gave no row)")
    data = stats.assign(_gpus=[_int(g) for g in stats["gpus"]])
    cpu = data[data["_gpus"].isin([0])]
    data = data[data["_gpus"].fillna(0).astype(int) > 0]
    usable = data[pd.to_numeric(data["speedup"], errors="coerce").notna()]
    no_base = data[~data.index.isin(usable.index)]
    if usable.empty:
        return _no_data(title, "no configuration has a 1-GPU baseline to compute a speedup from")
    published = _published(stats, reference)

    labels, order = _configs(usable, with_gpus=False)
    usable = usable.assign(_series=labels)
    fig = _figure(12, 4.6)
    ax_s, ax_e = fig.subplots(1, 2)
    all_gpus = set(usable["_gpus"].astype(int))
    any_published = False
    for i, series in enumerate(order):
        color, marker = _PALETTE[i % len(_PALETTE)], _MARKERS[i % len(_MARKERS)]
        rows = usable[usable["_series"] == series].sort_values("_gpus")
        g = rows["_gpus"].to_numpy(float)
        s = pd.to_numeric(rows["speedup"], errors="coerce").to_numpy(float)
        ax_s.plot(g, s, marker=marker, color=color, label=series, gid="measured")
        ax_e.plot(g, 100 * s / g, marker=marker, color=color, label=series, gid="measured")
        pub = published.get(_key(rows.iloc[0]))
        if pub:
            any_published = True
            pg, ps = (np.array(v, float) for v in zip(*pub, strict=True))
            all_gpus |= {int(v) for v in pg}
            style = dict(ls=":", lw=0.9, marker=marker, ms=9, mfc="none", mew=1.5, color=color, gid="published")
            ax_s.plot(pg, ps, **style)
            ax_e.plot(pg, 100 * ps / pg, **style)
    gpus = sorted(all_gpus)
    ideal = np.unique(np.geomspace(1, max(gpus), 64).tolist() + [1.0, float(max(gpus))]) if max(gpus) > 1 else \
        np.array([1.0])
    ax_s.plot(ideal, ideal, ls="--", color="0.45", lw=1, label="ideal (linear)", gid="ideal", zorder=1)
    ax_e.axhline(100, ls="--", color="0.45", lw=1, label="ideal (100 %)", gid="ideal", zorder=1)
    for ax in (ax_s, ax_e):
        if max(gpus) >= 16:  # many counts: log2 axes, on which the ideal speedup stays a straight line
            ax.set_xscale("log", base=2)
            if ax is ax_s:
                ax.set_yscale("log", base=2)
                ticks = [2**k for k in range(math.ceil(math.log2(max(gpus))) + 1)]
                ax.set_yticks(ticks, [str(t) for t in ticks])
        ax.set_xticks(gpus, [str(g) for g in gpus])
        ax.minorticks_off()
        ax.set_xlabel("GPUs")
    ax_s.set_ylabel("speedup over 1 GPU (×)")
    ax_e.set_ylabel("scaling efficiency (speedup / GPUs, %)")
    ax_s.set_title("Speedup")
    ax_e.set_title("Scaling efficiency")
    low = np.nanmin(100 * pd.to_numeric(usable["speedup"]).to_numpy(float) / usable["_gpus"].to_numpy(float))
    ax_e.set_ylim(min(low - 5, 80), max(105, ax_e.get_ylim()[1]))
    handles, names = ax_s.get_legend_handles_labels()
    if any_published:
        handles += [Line2D([], [], color="0.3", marker="o", label="measured"),
                    Line2D([], [], color="0.3", ls=":", marker="o", mfc="none", ms=8, label="published")]
        names += ["measured (filled)", "published (hollow)"]
    fig.legend(handles, names, loc="outside lower center", ncols=2, fontsize="small")
    notes = []
    if len(cpu):
        notes.append(f"{len(cpu)} CPU configuration{'s' if len(cpu) != 1 else ''} left out")
    if len(no_base):
        notes.append(_left_out("configurations without a 1-GPU baseline", list(_configs(no_base)[1])))
    _title(fig, title, notes)
    return fig


# ---------------------------------------------------------------- 4. time to train


@_styled
def time_to_train(evaluations: pd.DataFrame, runs: pd.DataFrame | None, target: float | None = None,
                  max_runs: int = 20) -> Figure:
    """Top-1 accuracy against elapsed time per run, the target as a line, the time to target starred.

    Time is in seconds, minutes or hours after the run's first log line, whichever reads best
    (epochs when the evaluations have no timestamps). `target` is top-1 in percent (76.1 for the
    AI-Rank ResNet-50 target). Runs are named by configuration and repeat; colours follow the
    configuration. At most `max_runs` runs are drawn.
    """
    title = "Time to train: top-1 accuracy" + (f" (target {target:g} %)" if target is not None else "")
    if evaluations is None or evaluations.empty or evaluations["top1"].notna().sum() == 0:
        return _no_data(title, "no evaluation with a top-1 accuracy in these logs")
    ev = evaluations[evaluations["top1"].notna()]
    keys = list(dict.fromkeys(zip(ev["source"], ev["run"], strict=True)))
    info: dict[tuple, dict] = {}
    config_of: dict[tuple, str] = {}
    order: list[str] = []
    if runs is not None and not runs.empty:
        labels, order = _configs(runs)
        for (_, r), label in zip(runs.iterrows(), labels, strict=True):
            info[(r["source"], r["run"])] = r.to_dict()
            config_of[(r["source"], r["run"])] = label
    for k in keys:
        config_of.setdefault(k, f"{k[0]} run {k[1]}")
    order = [c for c in order if c in set(config_of.values())] + sorted(set(config_of.values()) - set(order))
    keys.sort(key=lambda k: (order.index(config_of[k]), _int(info.get(k, {}).get("repeat")) or 0, k))
    shown, hidden = keys[:max_runs], keys[max_runs:]

    use_time = ev["elapsed"].notna().all()
    divisor, unit = _time_unit(float(ev["elapsed"].max())) if use_time else (1.0, "epoch")
    reached = metrics.time_to_target(ev, target) if target is not None else pd.DataFrame()
    hits = {(r["source"], r["run"]): r for r in reached.to_dict("records") if r["reached"]}

    fig = _figure(9, 5)
    ax = fig.add_subplot()
    groups = ev.sort_values("line").groupby(["source", "run"], sort=False)
    color_of = {c: _PALETTE[i % len(_PALETTE)] for i, c in enumerate(order)}
    seen: dict[str, int] = {}
    for k in shown:
        g = groups.get_group(k)
        config = config_of[k]
        n = seen.setdefault(config, 0)
        seen[config] += 1
        xs = g["elapsed"].to_numpy(float) / divisor if use_time else g["epoch"].to_numpy(float)
        name = f"{config} · {_repeat_name(info.get(k, {}), n)}"
        if target is not None:
            name += f" · {hits[k]['seconds'] / divisor:.2f} {unit}" if k in hits and use_time else (
                "" if k in hits else " · not reached")
        ax.plot(xs, g["top1"].to_numpy(float), marker=".", color=color_of[config],
                ls=("-", "--", "-.", ":")[n % 4], label=name, gid="run")
        if k in hits:
            hit = hits[k]
            hx = hit["seconds"] / divisor if use_time else float(hit["epoch"])
            ax.plot([hx], [hit["top1"]], ls="", marker="*", ms=13, color=color_of[config], mec="black",
                    mew=0.6, zorder=5, gid="time-to-target")
    if target is not None:
        ax.axhline(target, color="0.3", ls="--", lw=1, label=f"target {target:g} %", gid="target")
    ax.set_xlabel(f"elapsed time ({unit})" if use_time else "epoch")
    ax.set_ylabel("top-1 accuracy (%)")
    if hits:
        ax.plot([], [], ls="", marker="*", ms=11, color="0.5", mec="black", label="target first reached")
    fig.legend(*ax.get_legend_handles_labels(), loc="outside lower center", ncols=2, fontsize="x-small")
    _title(fig, title, [f"{len(keys) - len(hidden)} of {len(keys)} runs drawn (max_runs={max_runs})"] if hidden else [])
    return fig


# ---------------------------------------------------------------- 5. comparison with published numbers


_VERDICT_COLOURS = {"reproduced": 2, "ok": 2, "match": 2, "within": 2, "pass": 2,
                    "slow": 3, "below": 3, "fail": 3, "low": 3, "fast": 0, "above": 0, "high": 0}


def _verdict_colour(verdict: str, i: int):
    text = str(verdict).lower()
    for word, idx in _VERDICT_COLOURS.items():
        if word in text:
            return _PALETTE[idx]
    return _PALETTE[(4 + i) % len(_PALETTE)]


@_styled
def comparison(frame: pd.DataFrame, tolerance: float | None = None) -> Figure:
    """Measured / published throughput per configuration, as points on stems from 1.0, in a tolerance band.

    `frame` has columns gpus, batch_size, precision, xla, published, measured, ratio and verdict
    (`references.compare` output; the verdict is derived from the ratio and the tolerance when
    absent); colours follow the verdict. `tolerance` defaults to the frame's `attrs["tolerance"]`,
    else 5 %. Configurations without a ratio (nothing measured, or nothing published) are listed and
    marked "no ratio"; rows of different published tables are told apart by the table's name.
    """
    attrs = getattr(frame, "attrs", {}) or {}
    if tolerance is None:
        tolerance = float(attrs.get("tolerance", 0.05))
    title = f"Measured vs published throughput (tolerance ±{100 * tolerance:g} %)"
    if frame is None or frame.empty:
        return _no_data(title, "nothing to compare")
    data = frame.copy()
    if "ratio" not in data:
        data["ratio"] = pd.to_numeric(data["measured"], errors="coerce") / pd.to_numeric(
            data["published"], errors="coerce")
    data["ratio"] = pd.to_numeric(data["ratio"], errors="coerce").astype(float)
    if "verdict" not in data:
        data["verdict"] = np.select([data["ratio"] < 1 - tolerance, data["ratio"] > 1 + tolerance,
                                     data["ratio"].notna()], ["below", "above", "within"], "no ratio")
    labels, order = _configs(data)
    data = data.assign(_config=labels)
    data["_pos"] = data["_config"].map({c: i for i, c in enumerate(order)})
    data = data.sort_values("_pos", kind="stable")
    if "table" in data and data["table"].dropna().nunique() > 1:
        data["_config"] = [c if _missing(t) else f"{c} [{t}]" for c, t in zip(data["_config"], data["table"],
                                                                              strict=True)]

    fig = _figure(10, 1.8 + 0.4 * len(data))
    ax = fig.add_subplot()
    ax.axvspan(1 - tolerance, 1 + tolerance, color=_PALETTE[2], alpha=0.15, lw=0, gid="tolerance",
               label=f"within ±{100 * tolerance:g} %")
    ax.axvline(1.0, color="0.4", lw=1)
    verdicts = list(dict.fromkeys(data["verdict"].astype(str)))
    colours = {v: _verdict_colour(v, i) for i, v in enumerate(verdicts)}
    ypos = np.arange(len(data))
    valid = data["ratio"].notna().to_numpy()
    for y, r in zip(ypos, data.to_dict("records"), strict=True):
        if np.isnan(r["ratio"]):
            verdict = "" if _missing(r.get("verdict")) or str(r["verdict"]) == "no ratio" else f" ({r['verdict']})"
            ax.text(1.0, y, f"  no ratio{verdict}", va="center", ha="left", fontsize="small", color="0.4")
            continue
        ax.plot([1.0, r["ratio"]], [y, y], color=colours[str(r["verdict"])], lw=1.5, gid="stem")
        pub, meas = r.get("published"), r.get("measured")
        note = f"{r['ratio']:.3f}" + (f"  ({_three_digits(meas)} / {_three_digits(pub)})"
                                      if not _missing(pub) and not _missing(meas) else "")
        ax.annotate(note, (r["ratio"], y), xytext=(6 if r["ratio"] >= 1 else -6, 5), textcoords="offset points",
                    ha="left" if r["ratio"] >= 1 else "right", fontsize="x-small", color="0.25")
    for v in verdicts:
        sel = (data["verdict"].astype(str) == v).to_numpy() & valid
        if sel.any():
            ax.scatter(data["ratio"].to_numpy()[sel], ypos[sel], s=50, color=colours[v], zorder=5, label=v,
                       gid="ratio")
    ax.set_yticks(ypos, data["_config"].tolist())
    ax.invert_yaxis()
    finite = data["ratio"].dropna()
    lo = min(1 - 2 * tolerance, finite.min() - 0.08) if len(finite) else 1 - 2 * tolerance
    hi = max(1 + 2 * tolerance, finite.max() + 0.06) if len(finite) else 1 + 2 * tolerance
    ax.set_xlim(lo, hi)
    unit = attrs.get("unit") or RATE_UNIT
    ax.set_xlabel(f"measured / published throughput (ratio of {unit})")
    ax.legend(loc="lower right", fontsize="small", title="verdict", framealpha=0.92)  # inside: never cut
    fig.suptitle(title)
    return fig


def _three_digits(value) -> str:
    """A throughput to at least 3 significant digits, no exponent: 5.20, 37.5, 379, 3039."""
    x = float(value)
    if x == 0 or not math.isfinite(x):
        return f"{x:g}"
    return f"{x:.{max(0, 2 - math.floor(math.log10(abs(x))))}f}"


# ---------------------------------------------------------------- 6. interactive exploration


KINDS = {"repeats": "repeats", "throughput over time": "over time", "scaling": "scaling"}


def _explorer_class():
    import ipywidgets as widgets

    class Explorer(widgets.VBox):
        """Configuration, metric and plot pickers over an Output that holds the current figure."""

        def __init__(self, analysis, max_runs: int = 48):
            self.analysis = analysis
            self.max_runs = max_runs
            runs = analysis.runs
            labels, order = _configs(runs) if not runs.empty else (pd.Series(dtype=object), [])
            self.labels = labels
            self.configs = widgets.SelectMultiple(options=order, value=tuple(order), rows=min(10, max(3, len(order))),
                                                  description="configs", layout=widgets.Layout(width="420px"))
            self.metric = widgets.Dropdown(options=[(v, k) for k, v in METRICS.items()],
                                           value="recomputed_throughput", description="metric")
            self.kind = widgets.Dropdown(options=list(KINDS), value="repeats", description="plot")
            self.x = widgets.Dropdown(options=["iteration", "elapsed"], value="iteration", description="x")
            self.output = widgets.Output()
            self.figure: Figure | None = None
            self.updates = 0
            super().__init__([widgets.HBox([self.configs, widgets.VBox([self.metric, self.kind, self.x])]),
                              self.output])
            for w in (self.configs, self.metric, self.kind, self.x):
                w.observe(self.update, names="value")
            self.update()

        def selection(self) -> pd.DataFrame:
            """The runs of the selected configurations."""
            runs = self.analysis.runs
            return runs[self.labels.isin(self.configs.value)] if len(runs) else runs

        def draw(self) -> Figure:
            runs, metric, kind = self.selection(), self.metric.value, self.kind.value
            if kind == "throughput over time":
                return throughput_over_time(self.analysis.iterations, runs, x=self.x.value,
                                            max_runs=self.max_runs, value=metric)
            if kind == "scaling":
                return scaling(metrics.aggregate(runs, value=metric) if len(runs) else pd.DataFrame())
            return repeats(runs, value=metric)

        def update(self, change=None) -> Figure:
            """Draw the figure for the current choices into the output (without a kernel: keep it only)."""
            self.figure = self.draw()
            self.updates += 1
            from IPython import get_ipython

            if get_ipython() is not None:
                from IPython.display import display

                with self.output:
                    self.output.clear_output(wait=True)
                    display(self.figure)
            return self.figure

    return Explorer


def explore(analysis, max_runs: int = 48):
    """An ipywidgets UI over an Analysis: pick configurations, metric and plot; the figure re-draws.

    Returns the widget (a VBox); its `figure` is the figure drawn last and `update()` re-draws.
    Works without a running kernel (the figure is then kept, not displayed).
    """
    return _explorer_class()(analysis, max_runs=max_runs)
