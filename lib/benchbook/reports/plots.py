"""The figures of the reports, drawn from the tidy frames of an Analysis and `metrics.aggregate` output.

Every function returns a `matplotlib.figure.Figure` built without pyplot: nothing is shown, nothing is
left open in pyplot's list of figures (so Jupyter's inline backend never draws a figure twice and a
papermill run with hundreds of figures holds no memory), and the Agg backend is all it needs. In a
notebook a figure shows as the value of a cell or with `display(fig)`; nbconvert embeds it as a PNG.

Configurations are named the same way everywhere: "8 GPUs · amp · bs224 · xla" ("CPU" for gpus == 0,
prefixed by framework and model when a frame mixes several). Input with nothing to draw gives a figure
that says "no data" and why, never an exception.

The shared pieces are in `plot_base`, the per-run figures (throughput over time, repeats) in
`plots_runs`; this module draws scaling, time to train and the comparison with published numbers,
and is the one entry point.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from ..core.config import Metric
from ..logs.frames import one_metric
from . import metrics
from .configs import BATCH, GPUS, PRECISION, REPEAT, XLA
from .plot_base import (
    MARKERS,
    METRICS,
    PALETTE,
    RATE_UNIT,
    ReportFigure,
    _xla,
    alt_text,
    config_label,
    config_labels,
    figure_to_png,
    int_or_none,
    is_missing,
    left_out_note,
    new_figure,
    no_data_figure,
    quality_of,
    rate_unit,
    repeat_name,
    set_title,
    styled,
    time_unit,
)
from .plots_runs import loss_components, repeats, throughput_over_time

__all__ = [
    "ReportFigure", "alt_text", "comparison", "config_label", "explore", "figure_to_png", "loss_components",
    "quality_of", "rate_unit", "repeats",
    "scaling", "throughput_over_time", "time_to_train",
]


# ---------------------------------------------------------------- 3. scaling


def _key(row) -> tuple:
    return (int_or_none(row.get(BATCH)), str(row.get(PRECISION)).lower(), _xla(row.get(XLA)))


def _published(stats: pd.DataFrame, reference: pd.DataFrame | None) -> dict[tuple, list[tuple[int, float]]]:
    """(batch, precision, xla) -> [(gpus, published speedup)], from the stats or the reference frame."""
    out: dict[tuple, list[tuple[int, float]]] = {}
    if reference is not None and not reference.empty:
        ref = reference.to_dict("records")
        base = {_key(r): float(r["published"]) for r in ref
                if int_or_none(r.get(GPUS)) == 1 and not is_missing(r.get("published"))}
        for r in ref:
            gpus = int_or_none(r.get(GPUS))
            speedup = r.get("published_speedup")
            if is_missing(speedup) and not is_missing(r.get("published")) and base.get(_key(r)):
                speedup = float(r["published"]) / base[_key(r)]
            if gpus and not is_missing(speedup):
                out.setdefault(_key(r), []).append((gpus, float(speedup)))
        # A reference that does not say XLA matches either setting.
        for key in [k for k in out if k[2] is None]:
            for xla in (True, False):
                out.setdefault((key[0], key[1], xla), out[key])
    elif "published_speedup" in stats:
        for r in stats.to_dict("records"):
            gpus = int_or_none(r.get(GPUS))
            if gpus and not is_missing(r.get("published_speedup")):
                out.setdefault(_key(r), []).append((gpus, float(r["published_speedup"])))
    return {k: sorted(set(v)) for k, v in out.items()}


@styled
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
        return no_data_figure(title, "no statistics (metrics.aggregate gave no row)")
    data = stats.assign(_gpus=[int_or_none(g) for g in stats[GPUS]])
    cpu = data[data["_gpus"].isin([0])]
    data = data[data["_gpus"].fillna(0).astype(int) > 0]
    usable = data[pd.to_numeric(data["speedup"], errors="coerce").notna()]
    no_base = data[~data.index.isin(usable.index)]
    if usable.empty:
        return no_data_figure(title, "no configuration has a 1-GPU baseline to compute a speedup from")
    published = _published(stats, reference)

    labels, order = config_labels(usable, with_gpus=False)
    usable = usable.assign(_series=labels)
    fig = new_figure(12, 4.6)
    ax_s, ax_e = fig.subplots(1, 2)
    all_gpus = set(usable["_gpus"].astype(int))
    any_published = False
    for i, series in enumerate(order):
        color, marker = PALETTE[i % len(PALETTE)], MARKERS[i % len(MARKERS)]
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
        notes.append(left_out_note("configurations without a 1-GPU baseline", list(config_labels(no_base)[1])))
    set_title(fig, title, notes)
    return fig


# ---------------------------------------------------------------- 4. time to train


@styled
def time_to_train(evaluations: pd.DataFrame, runs: pd.DataFrame | None, target: float | None = None,
                  max_runs: int = 20, metric: Metric | None = None) -> Figure:
    """A quality metric against elapsed time per run, the target as a line, the time to target starred.

    `metric` is the model's (`ModelSpec.quality`; default the runs' models' own, `plot_base.quality_of`).
    Time is in seconds, minutes or hours after the run's first log line, whichever reads best
    (epochs when the evaluations have no timestamps). `target` is in the metric's unit (76.1 % top-1
    for the AI-Rank ResNet-50 target). Runs are named by configuration and repeat; colours follow the
    configuration. At most `max_runs` runs are drawn.
    """
    metric = metric or quality_of(runs)
    key, unit_word = metric.key, metric.unit
    title = f"Time to train: {metric.name}" + (f" (target {target:g} {unit_word})" if target is not None else "")
    ev = one_metric(evaluations, key) if evaluations is not None else None
    if ev is None or ev.empty:
        return no_data_figure(title, f"no evaluation with a {metric.name} in these logs")
    keys = list(dict.fromkeys(zip(ev["source"], ev["run"], strict=True)))
    info: dict[tuple, dict] = {}
    config_of: dict[tuple, str] = {}
    order: list[str] = []
    if runs is not None and not runs.empty:
        labels, order = config_labels(runs)
        for (_, r), label in zip(runs.iterrows(), labels, strict=True):
            info[(r["source"], r["run"])] = r.to_dict()
            config_of[(r["source"], r["run"])] = label
    for k in keys:
        config_of.setdefault(k, f"{k[0]} run {k[1]}")
    order = [c for c in order if c in set(config_of.values())] + sorted(set(config_of.values()) - set(order))
    keys.sort(key=lambda k: (order.index(config_of[k]), int_or_none(info.get(k, {}).get(REPEAT)) or 0, k))
    shown, hidden = keys[:max_runs], keys[max_runs:]

    use_time = ev["elapsed"].notna().all()
    divisor, unit = time_unit(float(ev["elapsed"].max())) if use_time else (1.0, "epoch")
    reached = metrics.time_to_target(ev, target, key) if target is not None else pd.DataFrame()
    hits = {(r["source"], r["run"]): r for r in reached.to_dict("records") if r["reached"]}

    fig = new_figure(9, 5)
    ax = fig.add_subplot()
    groups = ev.sort_values("line").groupby(["source", "run"], sort=False)
    color_of = {c: PALETTE[i % len(PALETTE)] for i, c in enumerate(order)}
    seen: dict[str, int] = {}
    for k in shown:
        g = groups.get_group(k)
        config = config_of[k]
        n = seen.setdefault(config, 0)
        seen[config] += 1
        xs = g["elapsed"].to_numpy(float) / divisor if use_time else g["epoch"].to_numpy(float)
        name = f"{config} · {repeat_name(info.get(k, {}), n)}"
        if target is not None:
            name += f" · {hits[k]['seconds'] / divisor:.2f} {unit}" if k in hits and use_time else (
                "" if k in hits else " · not reached")
        ax.plot(xs, g[key].to_numpy(float), marker=".", color=color_of[config],
                ls=("-", "--", "-.", ":")[n % 4], label=name, gid="run")
        if k in hits:
            hit = hits[k]
            hx = hit["seconds"] / divisor if use_time else float(hit["epoch"])
            ax.plot([hx], [hit[key]], ls="", marker="*", ms=13, color=color_of[config], mec="black",
                    mew=0.6, zorder=5, gid="time-to-target")
    if target is not None:
        ax.axhline(target, color="0.3", ls="--", lw=1, label=f"target {target:g} {unit_word}", gid="target")
    ax.set_xlabel(f"elapsed time ({unit})" if use_time else "epoch")
    ax.set_ylabel(f"{metric.name} ({unit_word})")
    if hits:
        ax.plot([], [], ls="", marker="*", ms=11, color="0.5", mec="black", label="target first reached")
    fig.legend(*ax.get_legend_handles_labels(), loc="outside lower center", ncols=2, fontsize="x-small")
    drawn = f"{len(keys) - len(hidden)} of {len(keys)} runs drawn (max_runs={max_runs})"
    set_title(fig, title, [drawn] if hidden else [])
    return fig


# ---------------------------------------------------------------- 5. comparison with published numbers


_VERDICT_COLOURS = {"reproduced": 2, "ok": 2, "match": 2, "within": 2, "pass": 2,
                    "slow": 3, "below": 3, "fail": 3, "low": 3, "fast": 0, "above": 0, "high": 0}


def _verdict_colour(verdict: str, i: int):
    text = str(verdict).lower()
    for word, idx in _VERDICT_COLOURS.items():
        if word in text:
            return PALETTE[idx]
    return PALETTE[(4 + i) % len(PALETTE)]


@styled
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
        return no_data_figure(title, "nothing to compare")
    data = frame.copy()
    if "ratio" not in data:
        data["ratio"] = pd.to_numeric(data["measured"], errors="coerce") / pd.to_numeric(
            data["published"], errors="coerce")
    data["ratio"] = pd.to_numeric(data["ratio"], errors="coerce").astype(float)
    if "verdict" not in data:
        data["verdict"] = np.select([data["ratio"] < 1 - tolerance, data["ratio"] > 1 + tolerance,
                                     data["ratio"].notna()], ["below", "above", "within"], "no ratio")
    labels, order = config_labels(data)
    data = data.assign(_config=labels)
    data["_pos"] = data["_config"].map({c: i for i, c in enumerate(order)})
    data = data.sort_values("_pos", kind="stable")
    if "table" in data and data["table"].dropna().nunique() > 1:
        data["_config"] = [c if is_missing(t) else f"{c} [{t}]" for c, t in zip(data["_config"], data["table"],
                                                                              strict=True)]

    fig = new_figure(10, 1.8 + 0.4 * len(data))
    ax = fig.add_subplot()
    ax.axvspan(1 - tolerance, 1 + tolerance, color=PALETTE[2], alpha=0.15, lw=0, gid="tolerance",
               label=f"within ±{100 * tolerance:g} %")
    ax.axvline(1.0, color="0.4", lw=1)
    verdicts = list(dict.fromkeys(data["verdict"].astype(str)))
    colours = {v: _verdict_colour(v, i) for i, v in enumerate(verdicts)}
    ypos = np.arange(len(data))
    valid = data["ratio"].notna().to_numpy()
    for y, r in zip(ypos, data.to_dict("records"), strict=True):
        if np.isnan(r["ratio"]):
            verdict = "" if is_missing(r.get("verdict")) or str(r["verdict"]) == "no ratio" else f" ({r['verdict']})"
            ax.text(1.0, y, f"  no ratio{verdict}", va="center", ha="left", fontsize="small", color="0.4")
            continue
        ax.plot([1.0, r["ratio"]], [y, y], color=colours[str(r["verdict"])], lw=1.5, gid="stem")
        pub, meas = r.get("published"), r.get("measured")
        note = f"{r['ratio']:.3f}" + (f"  ({_three_digits(meas)} / {_three_digits(pub)})"
                                      if not is_missing(pub) and not is_missing(meas) else "")
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
            labels, order = config_labels(runs) if not runs.empty else (pd.Series(dtype=object), [])
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
