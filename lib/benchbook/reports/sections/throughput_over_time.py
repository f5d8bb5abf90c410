"""Throughput over time: every logged iteration of every run, warm-up records shaded, the recomputed value
as a line; one line that says why where no run logged per-iteration records."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import display

if TYPE_CHECKING:
    from . import Page


def content(page: Page):
    from .. import plots
    analysis = page.report.analysis
    if analysis.iterations.empty:
        return display.note("no run logged per-iteration records: no throughput over time")
    return plots.throughput_over_time(analysis.iterations, analysis.runs)
