"""The first screen: the page's title, its links (a published page), the verdict with its size, the
published grid(s) and one line of set-up."""

from __future__ import annotations

import html
import os
from typing import TYPE_CHECKING
from urllib.parse import quote

from .. import data_files, display, grid, headline, logged_setup, page_contract, references
from .parts import comparison_of, heading, measured_on, measured_what, together, words

if TYPE_CHECKING:
    from ..report import Report
    from . import Page


def content(page: Page) -> display.Html:
    return together(display.Html(heading(page.heading, 1), page.heading),
                    *filter(None, [navigation(page)]), verdict(page.report))


def navigation(page: Page) -> display.Html | None:
    """Links from the published page (reports/<name>/report.html): the index, the code view, each log (its copy
    beside the page, `log_copies`), the script of the rule, the report's tables as data (`data_files`), each
    written by the page's `finish`. None where the page has no folder (JupyterLab)."""
    if page.out is None:
        return None
    report = page.report
    logs = [(shown, str(name)) for name, _log, shown in page.log_copies]
    links = ['<a href="../index.html">all reports</a>', '<a href="code.html">with code</a>']
    if logs:
        each = ", ".join(f'<a href="{html.escape(quote(os.fsencode(href)))}">{html.escape(name)}</a>'
                         for name, href in logs)
        links.append(f"log{'s' * (len(logs) > 1)}: {each}")
    source, url = logged_setup.rule_source(report.analysis.runs, report.rule.name)
    if url:
        links.append(f'rule: <a href="{html.escape(url)}">{html.escape(source.split(" (")[0])}</a>')
    data, data_plain = data_files.link_line(page_contract.table_names(page.tables()))  # the tables as CSV and JSON
    links += [data] if data else []
    plain = " · ".join(("all reports", "with code",
                        *(f"logs: {', '.join(name for name, _ in logs)}",) * bool(logs), *[data_plain] * bool(data)))
    return display.Html(f'<p class="bb-nav">{" · ".join(links)}</p>', plain)


def verdict(report: Report) -> display.Html:
    """The verdict with its size, the published grid(s), one line of set-up."""
    comparison = report.reproduction() if report.reference is not None else None
    summary = references.verdict_summary(comparison) if comparison is not None else None
    unit, said = report.unit, words(report)
    runs = report.analysis.runs
    source, url = logged_setup.rule_source(runs, report.rule.name)
    caveat = headline.script_caveat(runs, unit, report.rule.name, source) if comparison is not None else None
    first = headline.sentence(measured_what(report), measured_on(report), report.reference, comparison, summary,
                              report.stats, unit, said, report.rule.name, url, caveat)
    tables = grid.render_all(grid.grids(report.stats, comparison_of(report), report.reference), unit, said)
    parts = [first, tables]
    if comparison_of(report) is not None:
        tol = headline.percent(comparison.attrs.get("tolerance", report.reference.tolerance))
        number = said("measured")
        parts.append(display.note(f"Δ %: {number} / published - 1; green within ±{tol} ({said('reproduced')}), "
                                  f"orange outside it. {number.capitalize()}: the median over repeats, to the "
                                  "published digits. Speedup rows: the ratio of two numbers above (N GPUs over 1, "
                                  "mixed precision over FP32), of the published ones beside the "
                                  f"{number} ones."))
    line = headline.setup_line(logged_setup.settings(runs), report.reference)
    parts += [line] if line is not None else []
    return together(*parts)
