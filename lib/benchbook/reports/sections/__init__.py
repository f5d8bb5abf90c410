"""A report page as sections: one module per section, one way to show one.

Each section is a module of this package (a model's own sections, which read records only some logs hold,
are in `own/`) with one function, `content(page, **prose)`: what the section shows (its heading, paragraph
and body, as `display.Html`, a table or a figure), or None when it has nothing to show, which leaves it out
of the page, heading and all. A notebook makes one `Page` and shows one section per cell,
`page.show("scaling")`; the prose that is the model's own (the rule's paragraph, a model section's heading
and paragraph) is passed as keywords. The modules are listed once, in the order of a page, in `SECTIONS`.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...errors import UnknownNameError

if TYPE_CHECKING:
    from ..report import Report

#: The sections every model's page has, in the page's order (each a module of this package).
SECTIONS = ("opening", "reproduction_plot", "about", "description", "setup", "setup_needed", "runs", "scaling",
            "scaling_plot", "throughput_over_time", "repeats", "time_to_train", "reproduction", "differences",
            "failures", "explore")
#: A model's own sections (modules of `own/`): records that only its logs hold (MXNet's epoch rates,
#: Mask R-CNN's loss components...); a model's notebook shows those its logs print, after `repeats`.
OWN = ("epoch_rates", "iteration_rates", "loss", "loss_components", "quality_by_step")


@dataclass
class Page:
    """One report's page: the report, the model's name for the heading, where a published page's summary
    goes (None in JupyterLab: no page to link from), whether the explorer widget is live, and the title that
    replaces the heading made of the model and logs (a published set's, as its index row says it)."""

    report: Report
    model: str = ""
    summary_path: str | None = None
    interactive: bool | None = None
    title: str | None = None

    def show(self, name: str, **prose):
        """Section `name`'s content, or None (nothing shown) when it has nothing to show."""
        return module(name).content(self, **prose)


def module(name: str):
    """The module of section `name` (of `SECTIONS` or `OWN`)."""
    if name in SECTIONS:
        return importlib.import_module(f"{__name__}.{name}")
    if name in OWN:
        return importlib.import_module(f"{__name__}.own.{name}")
    raise UnknownNameError("report section", name, [*SECTIONS, *OWN])


def show(report: Report, name: str, **prose):
    """Section `name` of `report` outside a published page (no summary path, no live explorer)."""
    return Page(report).show(name, **prose)
