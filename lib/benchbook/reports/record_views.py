"""What one model's log records show beyond the throughput the rule recomputes: the sections a model's
notebook adds to the shared ones.

MXNet's `benchmark.py` publishes the harmonic mean of per-epoch rates, so its notebook shows each epoch's
rate; PyTorch's logger averages every iteration, the first ones included, so its notebook shows how the
first iterations pull that mean down; Mask R-CNN logs a loss per interval and its components (RPN, Fast
R-CNN, mask, L2), so its notebook shows them. Each
`*_table` function reads `report.analysis` (the tidy frames) and returns a frame; the function of the same
name without `_table` is what the notebook cell shows: the frame as a table, or one line saying why there
is none.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from . import display

if TYPE_CHECKING:
    from .report import Report


def _labelled(report: Report, records: pd.DataFrame) -> pd.DataFrame:
    """`records` (rows with source and run) with a `run` label: file:run (GPUs or CPU, precision, batch)."""
    runs = report.analysis.runs[["source", "run", "gpus", "precision", "batch_size"]]
    joined = records.merge(runs, on=["source", "run"], how="left")
    gpus = pd.to_numeric(joined["gpus"], errors="coerce")
    where = gpus.map(lambda g: "CPU" if g == 0 else "? GPUs" if pd.isna(g) else f"{int(g)} GPU" + "s" * (g != 1))
    label = (joined["source"].map(lambda s: Path(s).name) + ":" + joined["run"].astype(str) + " (" + where + ", "
             + joined["precision"].astype(str) + ", bs " + joined["batch_size"].astype(str) + ")")
    return joined.assign(run=label)


def epoch_rates_table(report: Report) -> pd.DataFrame:
    """One row per epoch summary line (a record with an epoch and no iteration): its rate, and whether the
    rule used it; MXNet's benchmark.py publishes the harmonic mean of the rates it used."""
    its = report.analysis.iterations
    epochs = its[(its["iteration"] < 0) & (its["epoch"] >= 0)]
    if epochs.empty:
        return pd.DataFrame(columns=["run", "epoch", report.unit, "used by the rule"])
    view = _labelled(report, epochs)
    used = view["measured"].map({True: "yes", False: "no (warm-up)"})
    return view.assign(**{"used by the rule": used})[["run", "epoch", "throughput", "used by the rule"]].rename(
        columns={"throughput": report.unit}).reset_index(drop=True)


def epoch_rates(report: Report) -> display.Html:
    return display.table(epoch_rates_table(report), empty="no run logged a per-epoch rate",
                         formats={report.unit: 2, "epoch": 0})


def iteration_rates_table(report: Report) -> pd.DataFrame:
    """Per run: how many iterations logged a rate, the first one's rate, the median and the mean of all
    of them, and the value the rule recomputed: where the first iterations pull an all-iteration mean down."""
    columns = ["run", "iterations logged", "first iteration", "median", "mean of all", "by the rule"]
    its = report.analysis.iterations
    steps = its[its["iteration"] >= 0].dropna(subset=["throughput"])
    if steps.empty:
        return pd.DataFrame(columns=columns)
    per_run = (_labelled(report, steps).sort_values(["source", "run", "iteration"]).groupby("run", sort=False)
               .agg(n=("throughput", "size"), first=("throughput", "first"), median=("throughput", "median"),
                    mean=("throughput", "mean")).reset_index())
    runs = report.analysis.runs
    rule = _labelled(report, runs[["source", "run"]].assign(value=runs["recomputed_throughput"]))
    per_run = per_run.merge(rule[["run", "value"]], on="run", how="left")
    per_run.columns = columns
    return per_run


def iteration_rates(report: Report) -> display.Html:
    return display.table(iteration_rates_table(report), empty="no run logged per-iteration rates",
                         formats=dict.fromkeys(["first iteration", "median", "mean of all", "by the rule"], 2))


def loss_table(report: Report) -> pd.DataFrame:
    """Per run: the loss of the first and last iteration records that logged one (an epoch's own line is
    left out), and how many did: whether training went on and the loss fell."""
    columns = ["run", "records", "first iteration", "first loss", "last iteration", "last loss"]
    its = report.analysis.iterations
    logged = its[its["iteration"] >= 0].dropna(subset=["loss"])
    if logged.empty:
        return pd.DataFrame(columns=columns)
    per_run = (_labelled(report, logged).sort_values(["source", "run", "line"]).groupby("run", sort=False)
               .agg(records=("loss", "size"), first_iteration=("iteration", "first"), first_loss=("loss", "first"),
                    last_iteration=("iteration", "last"), last_loss=("loss", "last")).reset_index())
    per_run.columns = columns
    return per_run


def loss(report: Report) -> display.Html:
    return display.table(loss_table(report), empty="no run logged a loss",
                         formats={"first loss": 4, "last loss": 4, "first iteration": 0, "last iteration": 0})


LOSS_COMPONENT_COLUMNS = ["run", "component", "records", "first iteration", "first value", "last iteration",
                          "last value"]


def loss_components_table(report: Report) -> pd.DataFrame:
    """Per run and component of the loss (`analysis.losses`: source, run, line, iteration, component,
    value), in the order the log prints them: how many records logged it, its first and last value and their
    iterations (a component printed before the run's first record has none and is left out). Whether each
    part of the model learned, not only the total."""
    losses = report.analysis.losses
    losses = losses[losses["iteration"] >= 0].dropna(subset=["value"])  # -1: printed before any record
    if losses.empty:
        return pd.DataFrame(columns=LOSS_COMPONENT_COLUMNS)
    # groups in the order they first appear: runs as the files hold them, components as the log prints them
    ordered = _labelled(report, losses.sort_values(["source", "run", "line"], kind="stable"))
    per_run = (ordered.groupby(["run", "component"], sort=False, observed=True)
               .agg(records=("value", "size"), first_iteration=("iteration", "first"), first_value=("value", "first"),
                    last_iteration=("iteration", "last"), last_value=("value", "last")).reset_index())
    per_run.columns = LOSS_COMPONENT_COLUMNS
    return per_run.reset_index(drop=True)


def loss_components(report: Report) -> display.Html:
    """A row per run, a column per component (first value -> last value, over the iterations the row
    names), then the components' curves per configuration; one line where the logs print no components
    (a format that logs the total loss alone, shown under Loss)."""
    from . import plots
    from .views import together
    table = loss_components_table(report)
    if table.empty:
        return display.note("no run logged the components of its loss (only a total loss, or none)")
    components = list(dict.fromkeys(table["component"]))
    cells = table.assign(change=[f"{display.fixed(a, 4)} → {display.fixed(b, 4)}"
                                 for a, b in zip(table["first value"], table["last value"], strict=True)])
    wide = cells.pivot(index="run", columns="component", values="change").reindex(
        index=list(dict.fromkeys(table["run"])), columns=components)
    spans = cells.groupby("run", sort=False).agg(first=("first iteration", "min"), last=("last iteration", "max"))
    wide.insert(0, "iterations", [f"{int(a)}–{int(b)}" for a, b in spans.loc[wide.index].itertuples(index=False)])
    shown = display.table(wide.reset_index(), empty="no run logged the components of its loss")
    return together(shown, plots.loss_components(report.analysis.losses, report.analysis.runs))
