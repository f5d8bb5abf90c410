"""The scaling plot where there is a 1-GPU baseline and another GPU count; left out otherwise."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..configs import gpu_counts

if TYPE_CHECKING:
    from . import Page


def content(page: Page):
    from .. import plots
    gpus = gpu_counts(page.report.analysis.runs)
    if len([g for g in gpus if g > 0]) < 2 or 1 not in gpus:
        return None
    return plots.scaling(page.report.stats)
