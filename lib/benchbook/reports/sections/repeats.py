"""Repeats: the spread between repeats, only when a configuration ran more than once; configurations whose
repeats vary by more than 10% (coefficient of variation) are flagged."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from .. import configs, display
from .parts import section, together

if TYPE_CHECKING:
    from ..report import Report
    from . import Page

VARIABLE_CV = 0.10  # repeats that vary more than this (coefficient of variation) are flagged


def content(page: Page):
    return section("Repeats", "Each repeat as a point, the median marked: the spread between runs of one "
                   "configuration.", spread(page.report), level=3)


def spread(report: Report):
    from .. import plots
    stats = report.stats
    if stats.empty or (pd.to_numeric(stats["runs"], errors="coerce").fillna(0) <= 1).all():
        return None
    variable = stats[pd.to_numeric(stats["cv"], errors="coerce") > VARIABLE_CV]
    fig = plots.repeats(report.analysis.runs)
    if variable.empty:
        return together(fig)
    own = configs.own_varying(stats)
    lines = [f"{configs.Configuration.of(r, own).column_on()}: "
             f"CV {100 * float(r['cv']):.1f}% over {int(r['runs'])} runs" for _, r in variable.iterrows()]
    return together(display.note("repeats vary by more than 10%: " + "; ".join(lines)), fig)
