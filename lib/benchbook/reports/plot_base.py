"""What every figure of the reports shares: the style, the figure class that shows as a PNG with alt
text, the unit word, "no data" figures, and the names and order of configurations. Used through
`benchbook.reports.plots`."""

from __future__ import annotations

import base64
import dataclasses
import functools
import html
import io
import textwrap
from collections.abc import Callable, Sequence

import matplotlib as mpl
import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from ..core import config
from ..core.catalog import default as catalog
from .configs import BATCH, GPUS, PRECISION, PROCESSES, REPEAT, XLA, Configuration, own_varying, precision_order

METRICS = {
    "recomputed_throughput": "recomputed throughput",
    "reported_throughput": "reported throughput",
    "elapsed_throughput": "wall-clock throughput",
}
RATE_UNIT = "samples/s"  # where the runs' models do not agree on a unit (each model names its own)
# seaborn's "whitegrid" style in its "notebook" context at font scale 0.85, written out: importing seaborn
# (scipy.stats with it) costs a report's kernel 1.3 s for these few settings and a palette.
_STYLE = {
    "axes.facecolor": "white", "axes.edgecolor": ".8", "axes.linewidth": 1.25, "axes.grid": True,
    "axes.axisbelow": True, "axes.labelcolor": ".15", "grid.color": ".8", "grid.linestyle": "-", "grid.linewidth": 1,
    "text.color": ".15", "xtick.color": ".15", "ytick.color": ".15", "xtick.direction": "out",
    "ytick.direction": "out", "xtick.bottom": False, "ytick.left": False, "xtick.top": False, "ytick.right": False,
    "xtick.major.width": 1.25, "ytick.major.width": 1.25, "xtick.minor.width": 1, "ytick.minor.width": 1,
    "xtick.major.size": 6, "ytick.major.size": 6, "xtick.minor.size": 4, "ytick.minor.size": 4,
    "font.family": ["sans-serif"],
    "font.sans-serif": ["Arial", "DejaVu Sans", "Liberation Sans", "Bitstream Vera Sans", "sans-serif"],
    "font.size": 10.2, "axes.labelsize": 10.2, "xtick.labelsize": 9.35, "ytick.labelsize": 9.35,
    "legend.fontsize": 9.35, "legend.title_fontsize": 10.2,
    "lines.linewidth": 1.5, "lines.markersize": 6, "lines.solid_capstyle": "round",
    "patch.linewidth": 1, "patch.edgecolor": "w", "patch.force_edgecolor": True,
    "figure.dpi": 100,
    "savefig.dpi": 100,
    "figure.facecolor": "white",
    "axes.formatter.useoffset": False,
    "axes.titlesize": 10,
    "figure.titlesize": 12,
    "legend.frameon": False,
}
# seaborn's "colorblind" palette (ten colours), as matplotlib colour names
PALETTE = ["#0173b2", "#de8f05", "#029e73", "#d55e00", "#cc78bc", "#ca9161", "#fbafe4", "#949494", "#ece133",
           "#56b4e9"]
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "<", ">", "h"]
WARMUP_SHADE = "0.90"
WARMUP_LINE = "0.60"


class ReportFigure(Figure):
    """A Figure that IPython displays as a PNG even where no inline backend was set up."""

    def _repr_png_(self) -> bytes:
        """Drawn once while nothing changes (IPython asks for the PNG and the HTML of every figure it shows)."""
        if getattr(self, "_png", None) is None or self.stale:
            self._png = figure_to_png(self)
            self.stale = False  # savefig put its colours back, which marks the figure changed: nothing is
        return self._png

    def _repr_html_(self) -> str:
        """The PNG with alt text (its title and axis labels), which a bare image/png output cannot carry."""
        png = base64.b64encode(self._repr_png_()).decode("ascii")
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
    """The throughput unit word of a report: its models' own (`ModelSpec.unit`: Mask R-CNN's logs and
    published tables say samples) where every run's model has the same, otherwise RATE_UNIT; one word
    for a report's tables and axes. A frame whose `model` column holds other labels (a comparison's sources)
    carries its unit in `frame.attrs["unit"]`."""
    if frame is not None and frame.attrs.get("unit"):
        return frame.attrs["unit"]
    if frame is not None and not frame.empty and "model" in frame:
        from ..models import of_logs
        units = {spec.unit if (spec := of_logs(model, framework)) else RATE_UNIT for model, framework in _models(frame)}
        if len(units) == 1:
            return units.pop()
    return RATE_UNIT


def _models(frame: pd.DataFrame) -> set[tuple[str, str | None]]:
    """The frame's distinct (model, framework) pairs (framework None where the frame has no such column or
    the row no framework)."""
    pairs = frame[["model", "framework"]] if "framework" in frame else frame[["model"]].assign(framework=None)
    return {(str(m), f if isinstance(f, str) else None) for m, f in pairs.drop_duplicates().itertuples(index=False)}


def quality_of(frame: pd.DataFrame | None):
    """The quality metric a report's evaluations are read in: its models' headline one (the first of
    `ModelSpec.quality`: ResNet-50's top-1) where every run's model has the same (`Catalog.headline_metric`),
    else `NO_QUALITY`, a metric no evaluation column holds (runs of models that measure quality differently,
    or none)."""
    found = catalog().headline_metric(_models(frame)) if frame is not None and "model" in frame else None
    return found or NO_QUALITY


#: The quality of runs that share no quality metric: their figures say that no evaluation holds one.
NO_QUALITY = config.Metric("quality", "quality metric", "")


def figure_to_png(fig: Figure, dpi: float | None = None) -> bytes:
    """The figure rendered as PNG bytes with Agg (works headless, for any Figure)."""
    buf = io.BytesIO()
    FigureCanvasAgg(fig)  # a canvas of its own: the figure need not belong to pyplot or a GUI
    fig.savefig(buf, format="png", dpi=dpi or fig.dpi, facecolor="white")
    return buf.getvalue()


def styled(fn: Callable[..., Figure]) -> Callable[..., Figure]:
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


def new_figure(width: float, height: float) -> ReportFigure:
    fig = ReportFigure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def no_data_figure(title: str, reason: str) -> ReportFigure:
    fig = new_figure(6, 2.2)
    ax = fig.add_subplot()
    ax.set_axis_off()
    ax.text(0.5, 0.6, "no data", ha="center", va="center", fontsize=16, color="0.35", transform=ax.transAxes)
    ax.text(0.5, 0.3, reason, ha="center", va="center", fontsize=10, color="0.45", transform=ax.transAxes, wrap=True)
    fig.suptitle(title)
    return fig


# ---------------------------------------------------------------- configurations and their names


is_missing = config.missing  # the one conversion of a configuration's values (core.config)
int_or_none = config.as_int


def _xla(value) -> bool | None:
    if is_missing(value):
        return None
    if isinstance(value, str):
        return value.strip().lower() in ("true", "1", "yes", "on", catalog().axis(XLA).words[True].lower())
    return bool(value)


def config_label(row, prefix: Sequence[str] = (), with_gpus: bool = True, with_xla: bool = True,
                 own: Sequence[str] = ()) -> str:
    """'8 GPUs · amp · bs224 · xla' for a row with gpus, precision, batch_size, xla ('CPU' when gpus == 0):
    `Configuration.label` of the row.

    `prefix` names columns (framework, model) whose values start the label; `with_xla` False leaves XLA
    out (where every configuration has the same, MXNet's "no xla" says nothing); `own` the model's own axes
    said after it ("phase 2"), those that vary (`configs.own_varying`).
    """
    get = row.get if hasattr(row, "get") else (lambda k, d=None: getattr(row, k, d))
    said = " ".join(str(get(k)) for k in prefix if not is_missing(get(k)))
    configuration = dataclasses.replace(Configuration.of(row, own), **{XLA: _xla(get(XLA))})  # (as a label reads it)
    return configuration.label(said, with_gpus, with_xla)


def _prefix(frame: pd.DataFrame) -> list[str]:
    return [k for k in ("framework", "model") if k in frame and frame[k].astype(str).nunique() > 1]


def _sort_key(row, prefix: Sequence[str], with_gpus: bool = True, own: Sequence[str] = ()) -> tuple:
    precision = str(row.get(PRECISION)).lower()
    batch, gpus, xla = int_or_none(row.get(BATCH)), int_or_none(row.get(GPUS)), _xla(row.get(XLA))
    key = tuple(str(row.get(k)) for k in prefix)
    key += (precision_order(precision), precision, batch if batch is not None else 1 << 30,
            {True: 0, False: 1, None: 2}[xla])
    key += tuple((int_or_none(row.get(k)) is None, int_or_none(row.get(k)) or 0, str(row.get(k))) for k in own)
    ranks = int_or_none(row.get(PROCESSES)) or 1
    return key + ((gpus if gpus is not None else 1 << 30, ranks) if with_gpus else ())


def config_labels(frame: pd.DataFrame, with_gpus: bool = True) -> tuple[pd.Series, list[str]]:
    """The label of each row and the labels in report order (by model, precision, batch, XLA, GPUs)."""
    prefix = _prefix(frame)
    records = frame.to_dict("records")
    with_xla = XLA not in frame or frame[XLA].astype(str).nunique() > 1
    own = own_varying(frame)
    labels = pd.Series([config_label(r, prefix, with_gpus, with_xla, own) for r in records], index=frame.index,
                       dtype=object)
    keys: dict[str, tuple] = {}
    for label, r in zip(labels, records, strict=True):
        keys.setdefault(label, _sort_key(r, prefix, with_gpus, own))
    return labels, sorted(keys, key=lambda lab: (keys[lab], lab))


def set_title(fig: Figure, title: str, notes: Sequence[str] = ()) -> None:
    """The figure's title, with what was left out in smaller type, wrapped to the figure's width."""
    width = max(40, int(fig.get_figwidth() * 9))
    text = title
    if notes:
        text += "\n" + textwrap.fill("; ".join(notes), width)
    fig.suptitle(text)


def left_out_note(kind: str, names: Sequence[str], shown: int = 2) -> str:
    listed = ", ".join(names[:shown]) + (", …" if len(names) > shown else "")
    return f"{len(names)} {kind} left out ({listed})"


def time_unit(seconds: float) -> tuple[float, str]:
    if not np.isfinite(seconds) or seconds < 180:
        return 1.0, "s"
    if seconds < 3 * 3600:
        return 60.0, "min"
    return 3600.0, "h"


def repeat_name(row, fallback: int) -> str:
    rep = int_or_none(row.get(REPEAT))
    return f"#{rep}" if rep is not None else f"#{fallback + 1}"


