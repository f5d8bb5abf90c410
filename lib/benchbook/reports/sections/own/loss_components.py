"""Loss components (Mask R-CNN): per run and component of the loss, its first and last value, then the
components' curves per configuration: whether each part of the model learned, not only the total."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from ... import display
from ..parts import run_label, section, together

if TYPE_CHECKING:
    from ...report import Report
    from .. import Page

COLUMNS = ["run", "component", "records", "first iteration", "first value", "last iteration", "last value"]


def content(page: Page, heading: str, intro: str):
    return section(heading, intro, shown(page.report), level=3)


def loss_components_table(report: Report) -> pd.DataFrame:
    """Per run and component of the loss (`analysis.losses`: source, run, line, iteration, component,
    value), in the order the log prints them: how many records logged it, its first and last value and their
    iterations (a component printed before the run's first record has none and is left out)."""
    losses = report.analysis.losses
    losses = losses[losses["iteration"] >= 0].dropna(subset=["value"])  # -1: printed before any record
    if losses.empty:
        return pd.DataFrame(columns=COLUMNS)
    # groups in the order they first appear: runs as the files hold them, components as the log prints them
    ordered = run_label(report, losses.sort_values(["source", "run", "line"], kind="stable"))
    per_run = (ordered.groupby(["run", "component"], sort=False, observed=True)
               .agg(records=("value", "size"), first_iteration=("iteration", "first"), first_value=("value", "first"),
                    last_iteration=("iteration", "last"), last_value=("value", "last")).reset_index())
    per_run.columns = COLUMNS
    return per_run.reset_index(drop=True)


def shown(report: Report) -> display.Html | None:
    """A row per run, a column per component (first value -> last value, over the iterations the row
    names), then the components' curves; None where the logs print no components (a format that logs the
    total loss alone, shown under Loss)."""
    from ... import plots
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
    out = display.table(wide.reset_index(), empty="no run logged the components of its loss")
    return together(out, plots.loss_components(report.analysis.losses, report.analysis.runs))
