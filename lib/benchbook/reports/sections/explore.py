"""In a live JupyterLab: the explorer's heading, then the widget; nothing otherwise (never under papermill)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .parts import heading

if TYPE_CHECKING:
    from . import Page


def content(page: Page):
    if not page.interactive:
        return None
    from IPython.display import HTML
    from IPython.display import display as show

    from .. import plots
    show(HTML(heading("Explore", 3) + "<p>Pick configurations and the metric, and re-plot.</p>"))
    return plots.explore(page.report.analysis)
