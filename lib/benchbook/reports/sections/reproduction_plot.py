"""Measured against published as a plot, only where some configuration is off (a screen of dots on the
1.000 line says nothing the verdict does not)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .parts import comparison_of

if TYPE_CHECKING:
    from . import Page


def content(page: Page):
    from .. import plots
    comparison = comparison_of(page.report)
    if comparison is None or (comparison["verdict"].isin(["reproduced", "not measured"])).all():
        return None
    return plots.comparison(comparison)
