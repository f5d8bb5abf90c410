"""Loss (Mask R-CNN): per run, the loss of the first and last iteration records that logged one (an epoch's
own line is left out), and how many did: whether training went on and the loss fell."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from ... import display
from .. import parts
from ..parts import section

if TYPE_CHECKING:
    from ...report import Report
    from .. import Page


def content(page: Page, heading: str, intro: str):
    return section(heading, intro, shown(page.report), level=3)


def loss_table(report: Report) -> pd.DataFrame:
    columns = ["run", "records", "first iteration", "first loss", "last iteration", "last loss"]
    per_run = parts.per_run(report, "loss", "line", records=("loss", "size"), first_iteration=("iteration", "first"),
                            first_loss=("loss", "first"), last_iteration=("iteration", "last"),
                            last_loss=("loss", "last"))
    per_run.columns = columns
    return per_run


def shown(report: Report) -> display.Html | None:
    """The table of `loss_table`; None where no run logged a loss (no section)."""
    table = loss_table(report)
    if table.empty:
        return None
    return display.table(table, empty="no run logged a loss",
                         formats={"first loss": 4, "last loss": 4, "first iteration": 0, "last iteration": 0})
