"""What differs from the published set-up (after the reproduction table); left out without a reference."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import display, machine

if TYPE_CHECKING:
    from . import Page


def content(page: Page):
    if page.report.reference is None:
        return None
    return display.table(machine.reference_differences(page.report),
                         empty="nothing differs from the published set-up as far as the records say")
