"""What one model's log records show beyond the throughput the rule recomputes: the sections a model's
notebook adds to the shared ones.

MXNet's `benchmark.py` publishes the harmonic mean of per-epoch rates, so its notebook shows each epoch's
rate (`analysis.epochs`) where the rule is per epoch; PyTorch's logger averages every iteration, the first
ones included, so its notebook shows how the first iterations pull that mean down; Mask R-CNN logs a loss
per interval and its components (RPN, Fast R-CNN, mask, L2), so its notebook shows them. Each `*_table`
function reads `report.analysis` (the tidy frames) and returns a frame; the function of the same name
without `_table` is what the notebook cell shows: the frame as a table, or None where the logs hold no
such records, which leaves the section out (`page.section`), heading and all.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from ..core import config
from . import configs, display

if TYPE_CHECKING:
    from .report import Report


def _labelled(report: Report, records: pd.DataFrame) -> pd.DataFrame:
    """`records` (rows with source and run) with a `run` label: file:run (GPUs or CPU, precision, batch)."""
    runs = report.analysis.runs[["source", "run", *config.run_keys()]]
    joined = records.merge(runs, on=["source", "run"], how="left")
    label = [configs.run_label(Path(row["source"]).name, row["run"], row) for row in joined.to_dict("records")]
    return joined.assign(run=label)


def epoch_rate_columns(unit: str) -> list[str]:
    """The epoch rates table's columns, its rate in the report's unit (ModelSpec.unit)."""
    return ["run", "epoch", "first line", "last line", unit, "used by the rule"]


def epoch_rates_table(report: Report) -> pd.DataFrame:
    """One row per epoch of each run whose rule is per epoch (`analysis.epochs`, MXNet's benchmark.py): the
    run, the epoch, the lines of the records the rule reads for it, its rate and whether the rule's value
    uses it. Empty for the other formats."""
    epochs, columns = report.analysis.epochs, epoch_rate_columns(report.unit)
    if epochs.empty:
        return pd.DataFrame(columns=columns)
    view = _labelled(report, epochs).rename(columns={"line_start": "first line", "line_end": "last line",
                                                     "rate": report.unit, "used": "used by the rule"})
    return view[columns].reset_index(drop=True)


def epoch_means_table(report: Report) -> pd.DataFrame:
    """Per run of `epoch_rates_table`: the epochs the rule used, the harmonic mean of their rates and the
    recomputed value of the runs table (the same number)."""
    columns = ["run", "epochs used", "harmonic mean of the used", f"recomputed {report.unit}"]
    epochs = report.analysis.epochs
    if epochs.empty:
        return pd.DataFrame(columns=columns)
    used = epochs[epochs["used"]]
    means = used.groupby(["source", "run"], sort=False)["rate"].agg(
        epochs=lambda r: ", ".join(map(str, used.loc[r.index, "epoch"])), mean=lambda r: len(r) / (1 / r).sum())
    runs = report.analysis.runs[["source", "run", "recomputed_throughput"]]
    joined = _labelled(report, means.reset_index().merge(runs, on=["source", "run"], how="left"))
    out = joined[["run", "epochs", "mean", "recomputed_throughput"]]
    out.columns = columns
    return out.reset_index(drop=True)


def epoch_rates_why(report: Report) -> str:
    """Why the section is there: the published number is made of these epochs' rates (the rule's source)."""
    from .logged_setup import rule_source

    runs = report.analysis.runs
    per_epoch = runs.merge(report.analysis.epochs[["source", "run"]].drop_duplicates(), on=["source", "run"])
    source, _url = rule_source(per_epoch, report.rule.name)
    return ("The published number is benchmark.py's harmonic mean of the epoch rates after the first (-w 1: "
            "the first is warm-up unless it is the only one), each rate as fit.py gives it (logged at the "
            "epoch's end from 20.12; in 19.07, images over time of the measured iterations up to the epoch's "
            f"end), so the recomputed value is the harmonic mean of the rates used [{source}].")


def epoch_rates(report: Report) -> display.Html | None:
    """A row per run: its lines, each epoch's rate (the unused marked warm-up), the harmonic mean of the
    used ones and the recomputed value beside it; None where no run's rule is per epoch (no section)."""
    table = epoch_rates_table(report)
    if table.empty:
        return None
    cells = table.assign(rate=[display.fixed(r, 2) + ("" if used else " (warm-up)")
                               for r, used in zip(table[report.unit], table["used by the rule"], strict=True)])
    wide = cells.pivot(index="run", columns="epoch", values="rate").reindex(index=list(dict.fromkeys(table["run"])))
    wide.columns = [f"epoch {e}" for e in wide.columns]
    spans = cells.groupby("run", sort=False).agg(first=("first line", "min"), last=("last line", "max"))
    wide.insert(0, "lines", [f"{a}–{b}" for a, b in spans.loc[wide.index].itertuples(index=False)])
    means = epoch_means_table(report).set_index("run").drop(columns="epochs used")
    shown = wide.fillna(display.DASH).join(means).reset_index()
    return display.table(shown, empty="no run's rule is per epoch",
                         formats={"harmonic mean of the used": 2, f"recomputed {report.unit}": 2})


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


def iteration_rates(report: Report) -> display.Html | None:
    """The table of `iteration_rates_table`; None where no run logged a rate per iteration (no section)."""
    table = iteration_rates_table(report)
    if table.empty:
        return None
    return display.table(table, empty="no run logged per-iteration rates",
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


def loss(report: Report) -> display.Html | None:
    """The table of `loss_table`; None where no run logged a loss (no section)."""
    table = loss_table(report)
    if table.empty:
        return None
    return display.table(table, empty="no run logged a loss",
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


def loss_components(report: Report) -> display.Html | None:
    """A row per run, a column per component (first value -> last value, over the iterations the row
    names), then the components' curves per configuration; None where the logs print no components (a
    format that logs the total loss alone, shown under Loss)."""
    from . import plots
    from .views import together
    table = loss_components_table(report)
    if table.empty:
        return None
    components = list(dict.fromkeys(table["component"]))
    cells = table.assign(change=[f"{display.fixed(a, 4)} → {display.fixed(b, 4)}"
                                 for a, b in zip(table["first value"], table["last value"], strict=True)])
    wide = cells.pivot(index="run", columns="component", values="change").reindex(
        index=list(dict.fromkeys(table["run"])), columns=components)
    spans = cells.groupby("run", sort=False).agg(first=("first iteration", "min"), last=("last iteration", "max"))
    wide.insert(0, "iterations", [f"{int(a)}–{int(b)}" for a, b in spans.loc[wide.index].itertuples(index=False)])
    shown = display.table(wide.reset_index(), empty="no run logged the components of its loss")
    return together(shown, plots.loss_components(report.analysis.losses, report.analysis.runs))
