"""1. Set-up. Analysis-only: the set-up as the logs describe it, beside the published one. Launch mode:
this machine (which ran the study), whether it fits the study, and repeats that ran on different stacks."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import display, machine
from ..logged_setup import logs_description
from .parts import section

if TYPE_CHECKING:
    from ..report import Report
    from . import Page


def content(page: Page):
    return section("1. Set-up", intro(page.report), used(page.report))


def used(report: Report) -> display.Html:
    if report.log_dir is not None:
        return display.table(logs_description(report), empty="the logs hold no run")
    env = machine.environment(report).reset_index()
    env.columns = ["", "value"]
    parts = [display.table(env, empty="no capture of this machine"),
             display.table(machine.fits(report), empty="nothing to check"),
             display.table(machine.drift(report), empty="every repeat of a configuration ran on the same stack")]
    return display.Html("".join(p.markup for p in parts), "\n\n".join(p.plain for p in parts))


def intro(report: Report) -> str:
    if report.log_dir is not None:
        return ("What the logs say about the set-up that produced them, beside the published one (never this "
                "machine's).")
    return ("This machine, whether it can run the study, and repeats that ran on different stacks; then what the "
            "study needs.")
