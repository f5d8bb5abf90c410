"""A model report's page as sections: one module per section, one way to show one, one page order.

Each section is a module of this package (a model's own sections, which read records only some logs hold,
are in `own/`) with one function, `content(page, **prose)`: what the section shows (its heading, paragraph
and body, as `display.Html`, a table, a figure, or a tuple of them shown in turn), or None when it has nothing
to show, which leaves it out of the page, heading and all. A section only shows: it writes no file and sets
nothing another section reads; what the page is (its heading, whose runs) is decided once, by the `Page`.

The page's order is `Page.order()`: `BEFORE`, then the sections the model's `ModelSpec.page_sections` declares
(time to train, its own records), then `AFTER`. A model notebook is its parameters, its own prose (passed by
section name to `show_all`) and `page.finish()`, which writes the page's files (`page_contract.finish`).
"""

from __future__ import annotations

import functools
import importlib
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from ... import models
from ...errors import BenchbookError, UnknownNameError
from .. import page_contract
from ..summary import Summary

if TYPE_CHECKING:
    from ..report import Report

#: The sections every model's page has before and after its own, in the page's order (each a module here).
BEFORE = ("opening", "reproduction_plot", "about", "description", "setup", "setup_needed", "runs", "scaling",
          "scaling_plot", "throughput_over_time", "repeats")
AFTER = ("reproduction", "differences", "failures", "explore")
SECTIONS = (*BEFORE, "time_to_train", *AFTER)
#: A model's own sections (modules of `own/`): records that only its logs hold (MXNet's epoch rates,
#: Mask R-CNN's loss components...); a model's spec declares those its logs print, after `repeats`.
OWN = ("epoch_rates", "iteration_rates", "loss", "loss_components", "quality_by_step")
FRAMEWORKS = {"tensorflow": "TensorFlow", "mxnet": "MXNet", "pytorch": "PyTorch"}  # a CPU workload's, in words


@dataclass
class Page:
    """One report's page: the report, the model (its name, whose spec says the page's words and own sections),
    where `finish` writes the page's files (`out`: None in JupyterLab, "." under `benchbook publish`, which runs
    the kernel in the report's folder), whether the explorer widget is live, and the title that replaces the
    heading made of the model and logs (a published set's, as its index row says it)."""

    report: Report
    model: str = ""
    out: str | None = None
    interactive: bool | None = None
    title: str | None = None

    @functools.cached_property
    def spec(self):
        """The model's spec, where `model` names a registered model (a notebook's); None for a bare heading."""
        return models.get(self.model) if self.model in models.names() else None

    @functools.cached_property
    def heading(self) -> str:
        """The page's title, decided once (the browser's and the index's title say the same): `title` (a published
        set's, the one its index row shows), else the model, what the report measures ("training throughput", "and
        time to train" only where a run evaluates), and which logs or study; a CPU study runs benchbook's own
        workload, not the NGC code the model's page names, and says so."""
        if self.title:
            return self.title
        report = self.report
        model = self.spec.page_title if self.spec is not None else self.model
        what = "training throughput" + (" and time to train" if not report.analysis.evaluations.empty else "")
        if report.study is not None and report.study.runtime == "cpu":
            spec = models.get(report.study.model)
            model = (f"{spec.title} on the CPU (benchbook's own {FRAMEWORKS.get(spec.framework, spec.framework)} "
                     f"workload, workloads/{spec.cpu_script})")
        source = (f"{report.log_dir.name or report.log_dir} (analysis-only)" if report.log_dir is not None
                  else f"study {report.study.name}")
        return f"{model}: {what}, {source}"

    def order(self) -> tuple[str, ...]:
        """The page's sections in order: the common ones around the model's own (`ModelSpec.page_sections`)."""
        own = self.spec.page_sections if self.spec is not None else ()
        return (*BEFORE, *own, *AFTER)

    def show(self, name: str, **prose):
        """Section `name`'s content, or None (nothing shown) when it has nothing to show."""
        return module(name).content(self, **prose)

    def sections(self, **prose) -> list:
        """The content of every section with something to show, in the page's order; `prose` by section name
        (`about={"rule": ...}`), each given to its section; a name not on the page is refused."""
        order = self.order()
        unknown = sorted(set(prose) - set(order))
        if unknown:
            raise UnknownNameError("section of this page", unknown[0], list(order))
        shown = []
        for name in order:
            content = self.show(name, **prose.get(name, {}))
            if content is not None:
                shown += list(content) if isinstance(content, tuple) else [content]
        return shown

    def show_all(self, **prose) -> None:
        """Every section of the page, shown in order in one notebook cell (IPython's display)."""
        from IPython.display import display
        for content in self.sections(**prose):
            display(content)

    # --- the page contract (page_contract) ------------------------------------------------------------
    @functools.cached_property
    def _tables(self) -> dict:
        from .. import data_files
        return data_files.report_tables(self.report)

    def tables(self) -> dict:
        """The report's tables as data, made once: the links of `opening` and `finish` read the same."""
        return self._tables

    @functools.cached_property
    def log_copies(self) -> list[tuple[PurePosixPath, object, str]]:
        """The logs the page links beside it (`log_copies.of`), listed once: what `opening` links, `finish` copies."""
        from .. import log_copies
        return log_copies.of(self.report)

    def copies(self) -> list[tuple[PurePosixPath, object]]:
        return [(name, log) for name, log, _shown in self.log_copies]

    def summary(self) -> Summary:
        return self.report.summary(self.heading)

    def finish(self) -> Summary:
        """Write the page's files into `out` (nothing where it is None) and return its summary."""
        return page_contract.finish(self, self.out)


def module(name: str):
    """The module of section `name` (of `SECTIONS` or `OWN`)."""
    if name in SECTIONS:
        return importlib.import_module(f"{__name__}.{name}")
    if name in OWN:
        return importlib.import_module(f"{__name__}.own.{name}")
    raise UnknownNameError("report section", name, [*SECTIONS, *OWN])


def show(report: Report, name: str, **prose):
    """Section `name` of `report` outside a published page (no files, no live explorer)."""
    return Page(report).show(name, **prose)


def model_page(namespace: dict, model: str) -> Page:
    """A model notebook's page from its parameters cell (`globals()`): the parameters checked by type, the
    report made, its study launched first where `launch` asks (runs never execute inside the kernel)."""
    from ...studies import follow
    from ..notebook_params import check, given
    from ..report import Report

    p = check(**given(namespace))
    if model not in models.names():
        raise BenchbookError(f"model {model!r}: not a registered model ({', '.join(models.names())})")
    report = Report(p.study, p.log_dir, p.runs_dir, reference=p.reference, rule=p.throughput_rule())
    if p.launch and report.mode == "launch":  # the study is run (resumed) first; the report reads its folder
        follow.launch(report.study, p.runs_dir, quiet=True)
    return Page(report, model, p.out, p.interactive, p.title)
