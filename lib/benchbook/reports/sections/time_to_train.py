"""Time to train: time to the target and the final value of the model's quality metric (ModelSpec.quality:
top-1...) of runs that evaluate, under the model's heading and paragraph; left out where no run evaluates."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import display, metrics
from .parts import section, together

if TYPE_CHECKING:
    from ..report import Report
    from . import Page


def content(page: Page, heading: str, intro: str):
    return section(heading, intro, reached(page.report), level=3)


def reached(report: Report):
    from .. import plots
    if report.analysis.evaluations.empty:
        return None
    metric = plots.quality_of(report.analysis.runs)
    first = metrics.time_to_target(report.analysis.evaluations, report.target or 0.0, metric.key)
    table = display.table(first, empty="no evaluation reached the target",
                          formats={"seconds": 1, metric.key: 2, metric.final_key: 2})
    return together(table, plots.time_to_train(report.analysis.evaluations, report.analysis.runs,
                                               target=report.target, metric=metric))
