"""Throughput over time: every logged iteration of every run, warm-up records shaded, the recomputed value
as a line; one line that says why where no run logged per-iteration records."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import display
from .parts import heading, together

if TYPE_CHECKING:
    from . import Page


INTRO = "Every logged iteration of every run; warm-up records shaded, the recomputed value as a line."


def content(page: Page):
    """The section's heading and paragraph, then the figure (or the line that says why there is none)."""
    from .. import plots
    analysis = page.report.analysis
    intro = display.Html(heading("Throughput over time", 3) + f"<p>{INTRO}</p>", f"Throughput over time\n{INTRO}")
    if analysis.iterations.empty:
        return together(intro, display.note("no run logged per-iteration records: no throughput over time"))
    return intro, plots.throughput_over_time(analysis.iterations, analysis.runs)
