"""Epoch rates (MXNet): a row per run, its lines, each epoch's rate (the unused marked warm-up), the
harmonic mean of the used ones and the recomputed value beside it; left out where no run's rule is per
epoch."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from ... import display
from ..parts import run_label, section

if TYPE_CHECKING:
    from ...report import Report
    from .. import Page


def content(page: Page, heading: str):
    """The section under `heading`, its paragraph saying why (the rule's source)."""
    body = shown(page.report)
    return None if body is None else section(heading, why(page.report), body, level=3)


def columns(unit: str) -> list[str]:
    """The epoch rates table's columns, its rate in the report's unit (ModelSpec.unit)."""
    return ["run", "epoch", "first line", "last line", unit, "used by the rule"]


def epoch_rates_table(report: Report) -> pd.DataFrame:
    """One row per epoch of each run whose rule is per epoch (`analysis.epochs`, MXNet's benchmark.py): the
    run, the epoch, the lines of the records the rule reads for it, its rate and whether the rule's value
    uses it. Empty for the other formats."""
    epochs, named = report.analysis.epochs, columns(report.unit)
    if epochs.empty:
        return pd.DataFrame(columns=named)
    view = run_label(report, epochs).rename(columns={"line_start": "first line", "line_end": "last line",
                                                     "rate": report.unit, "used": "used by the rule"})
    return view[named].reset_index(drop=True)


def epoch_means_table(report: Report) -> pd.DataFrame:
    """Per run of `epoch_rates_table`: the epochs the rule used, the harmonic mean of their rates and the
    recomputed value of the runs table (the same number)."""
    named = ["run", "epochs used", "harmonic mean of the used", f"recomputed {report.unit}"]
    epochs = report.analysis.epochs
    if epochs.empty:
        return pd.DataFrame(columns=named)
    used = epochs[epochs["used"]]
    means = used.groupby(["source", "run"], sort=False)["rate"].agg(
        epochs=lambda r: ", ".join(map(str, used.loc[r.index, "epoch"])), mean=lambda r: len(r) / (1 / r).sum())
    runs = report.analysis.runs[["source", "run", "recomputed_throughput"]]
    joined = run_label(report, means.reset_index().merge(runs, on=["source", "run"], how="left"))
    out = joined[["run", "epochs", "mean", "recomputed_throughput"]]
    out.columns = named
    return out.reset_index(drop=True)


def why(report: Report) -> str:
    """Why the section is there: the published number is made of these epochs' rates (the rule's source)."""
    from ...logged_setup import rule_source

    runs = report.analysis.runs
    per_epoch = runs.merge(report.analysis.epochs[["source", "run"]].drop_duplicates(), on=["source", "run"])
    source, _url = rule_source(per_epoch, report.rule.name)
    return ("The published number is benchmark.py's harmonic mean of the epoch rates after the first (-w 1: "
            "the first is warm-up unless it is the only one), each rate as fit.py gives it (logged at the "
            "epoch's end from 20.12; in 19.07, images over time of the measured iterations up to the epoch's "
            f"end), so the recomputed value is the harmonic mean of the rates used [{source}].")


def shown(report: Report) -> display.Html | None:
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
    out = wide.fillna(display.DASH).join(means).reset_index()
    return display.table(out, empty="no run's rule is per epoch",
                         formats={"harmonic mean of the used": 2, f"recomputed {report.unit}": 2})
