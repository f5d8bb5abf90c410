"""The parts of a report page that depend on its mode, model and reference: the title, the links, the
paragraphs, and each section's heading shown only with a section that has something to show.

A notebook's markdown cell is shown whatever the logs hold; a heading over an empty section, DLPerf's rule
under a log of another publication, or launch-mode text in an analysis-only report, are what a reader
should never meet. So the notebooks hand the model's own prose to these functions, which choose what
applies (`about`), and each later section is one `section(heading, intro, body)` call, shown only when its
body is not None.
"""

from __future__ import annotations

import html
import os
from pathlib import Path
from typing import TYPE_CHECKING

from . import display, headline, logged_setup

if TYPE_CHECKING:
    from .report import Report


def _heading(text: str, level: int) -> str:
    anchor = "".join(c if c.isalnum() else "-" for c in text.lower()).strip("-")
    return f'<h{level} id="{html.escape(anchor)}">{html.escape(text)}</h{level}>'


def title(report: Report, model: str) -> display.Html:
    """The page's heading: the model, what the report measures ("training throughput", "and time to
    train" only where a run evaluates), and which logs or study; `report.page_title` keeps it for the
    browser's title and the index page."""
    what = "training throughput" + (" and time to train" if not report.analysis.evaluations.empty else "")
    source = (f"{report.log_dir.name or report.log_dir} (analysis-only)" if report.log_dir is not None
              else f"study {report.study.name}")
    report.page_title = f"{model}: {what}, {source}"
    return display.Html(_heading(report.page_title, 1), report.page_title)


def navigation(report: Report, summary_path: str | None) -> display.Html | None:
    """Links from the published page (reports/<name>/report.html, beside `summary_path`): the index, the
    code view, each log (relative), the script of the rule. None outside a publish (no summary path)."""
    if summary_path is None:
        return None
    here = Path(summary_path).resolve().parent
    runs = report.analysis.runs
    logs = list(dict.fromkeys(runs["source"])) if len(runs) else []
    links = ['<a href="../index.html">all reports</a>', '<a href="code.html">with code</a>']
    if logs:
        each = ", ".join(f'<a href="{html.escape(os.path.relpath(Path(log).resolve(), here))}">'
                         f"{html.escape(Path(log).name)}</a>" for log in logs)
        links.append(f"log{'s' * (len(logs) > 1)}: {each}")
    source, url = logged_setup.rule_source(runs, report.rule.name)
    if url:
        links.append(f'rule: <a href="{html.escape(url)}">{html.escape(source.split(" (")[0])}</a>')
    plain = " · ".join(("all reports", "with code", *(f"logs: {', '.join(Path(x).name for x in logs)}",) * bool(logs)))
    return display.Html(f'<p class="bb-nav">{" · ".join(links)}</p>', plain)


def _on_cpu(report: Report) -> bool:
    if report.study is not None:
        return report.study.runtime == "cpu"
    gpus = report.analysis.runs["gpus"] if len(report.analysis.runs) else []
    return any(g == 0 for g in gpus if not display.missing(g))


def about(report: Report, rule: str, dlperf: str | None = None, cpu: str | None = None) -> display.Html:
    """What the published number is and how benchbook recomputes it: the model's `rule` paragraph, DLPerf's
    only where its rule or reference is used, the CPU workload's only where the runs are on the CPU; then
    what the sections below hold, for this mode."""
    parts = [rule]
    uses_dlperf = report.rule.name == "dlperf" or (report.reference is not None and
                                                  str(report.reference.name).startswith("dlperf"))
    if dlperf and uses_dlperf:
        parts.append(dlperf)
    if cpu and _on_cpu(report):
        parts.append(cpu)
    sections = ["1. the set-up " + ("the logs describe" if report.log_dir is not None else "that produced the numbers"),
                "2. analysis"]
    sections += ["3. reproduction"] if report.reference is not None else []
    sections.append(f"{len(sections) + 1}. " + ("failures and problems" if report.log_dir is not None
                                               else "launch, failures and problems"))
    parts.append(f"Details follow: {', '.join(sections)}. Every number comes from a log line or a run record; the "
                 f"per-run table names the file and run of each. Recomputed by {headline.rule_name(report.rule.name)}.")
    return display.Html("".join(f"<p>{html.escape(p)}</p>" for p in parts), "\n\n".join(parts))


def section(heading: str, intro: str | None, body, level: int = 2):
    """A section with its heading and paragraph, or None (nothing shown) when its body is None (a model's
    section whose records the logs do not hold)."""
    if body is None:
        return None
    inner = body if isinstance(body, display.Html) else display.Html(body._repr_html_(), repr(body))
    markup = _heading(heading, level) + (f"<p>{html.escape(intro)}</p>" if intro else "") + inner.markup
    return display.Html(markup, "\n".join(filter(None, [heading, intro, inner.plain])))


def explore(report: Report, interactive: bool | None):
    """In a live JupyterLab: the explorer's heading, then the widget; nothing otherwise (never under papermill)."""
    if not interactive:
        return None
    from IPython.display import HTML
    from IPython.display import display as show

    from . import plots
    show(HTML(_heading("Explore", 3) + "<p>Pick configurations and the metric, and re-plot.</p>"))
    return plots.explore(report.analysis)
