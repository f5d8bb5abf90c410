"""Per-iteration rates (PyTorch; Mask R-CNN's logged rates and running mean): per run, how many iterations
logged a rate, the first one's rate, the median and the mean of all of them, and the value the rule
recomputed: where the first iterations pull an all-iteration mean down."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from ... import display
from .. import parts
from ..parts import section

if TYPE_CHECKING:
    from ...report import Report
    from .. import Page


FIRST = "rate of the first iteration"  # a rate, as the other columns: not an iteration number


def content(page: Page, heading: str, intro: str):
    return section(heading, intro, shown(page.report), level=3)


def iteration_rates_table(report: Report) -> pd.DataFrame:
    columns = ["run", "iterations logged", FIRST, "median", "mean of all", "by the rule"]
    per_run = parts.per_run(report, "throughput", "iteration", n=("throughput", "size"),
                            first=("throughput", "first"), median=("throughput", "median"),
                            mean=("throughput", "mean"))
    if per_run.empty:
        return pd.DataFrame(columns=columns)
    runs = report.analysis.runs
    rule = parts.run_label(report, runs[["source", "run"]].assign(value=runs["recomputed_throughput"]))
    per_run = per_run.merge(rule[["run", "value"]], on="run", how="left")
    per_run.columns = columns
    return per_run


def shown(report: Report) -> display.Html | None:
    """The table of `iteration_rates_table`; None where no run logged a rate per iteration (no section)."""
    table = iteration_rates_table(report)
    if table.empty:
        return None
    return display.table(table, empty="no run logged per-iteration rates",
                         formats=dict.fromkeys([FIRST, "median", "mean of all", "by the rule"], 2))
