"""Title, mode, logs, study, reference and its address, the throughput rule: every value whole."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import display, machine

if TYPE_CHECKING:
    from . import Page


def content(page: Page):
    frame = machine.describe(page.report, page.heading).reset_index()
    frame.columns = ["", "value"]
    return display.table(frame, empty="nothing to describe")
