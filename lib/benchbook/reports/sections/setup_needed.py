"""Launch mode: what the study needs and its state; nothing in analysis-only mode (nothing to set up)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import display, machine

if TYPE_CHECKING:
    from . import Page


def content(page: Page):
    if page.report.log_dir is not None:
        return None
    return display.table(machine.setup(page.report), empty="the study needs nothing beyond benchbook")
