"""In a live JupyterLab: the explorer's heading, then the widget; nothing otherwise (never under papermill)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .parts import heading

if TYPE_CHECKING:
    from . import Page


def content(page: Page):
    """The heading and the widget, shown in turn; None outside a live notebook."""
    if not page.interactive:
        return None
    from .. import display, plots
    intro = "Pick configurations and the metric, and re-plot."
    return (display.Html(heading("Explore", 3) + f"<p>{intro}</p>", f"Explore\n{intro}"),
            plots.explore(page.report.analysis))
