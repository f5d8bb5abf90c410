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
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING
from urllib.parse import quote

from ..errors import LogError
from ..logs import logfiles
from . import display, headline, logged_setup, publish_files

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
    code view, each log (its copy beside the page, `copy_logs`), the script of the rule. None outside a
    publish (no summary path)."""
    if summary_path is None:
        return None
    here = Path(summary_path).resolve().parent
    runs = report.analysis.runs
    logs = copy_logs(report, here, list(dict.fromkeys(runs["source"])) if len(runs) else [])
    links = ['<a href="../index.html">all reports</a>', '<a href="code.html">with code</a>']
    if logs:
        each = ", ".join(f'<a href="{html.escape(quote(href))}">{html.escape(name)}</a>' for name, href in logs)
        links.append(f"log{'s' * (len(logs) > 1)}: {each}")
    source, url = logged_setup.rule_source(runs, report.rule.name)
    if url:
        links.append(f'rule: <a href="{html.escape(url)}">{html.escape(source.split(" (")[0])}</a>')
    plain = " · ".join(("all reports", "with code",
                        *(f"logs: {', '.join(name for name, _ in logs)}",) * bool(logs)))
    return display.Html(f'<p class="bb-nav">{" · ".join(links)}</p>', plain)


LOGS = "logs"  # the folder of a published report that holds the copies of its logs


def copy_logs(report: Report, here: Path, sources: list[str]) -> list[tuple[str, str]]:
    """Each log of `sources` copied into `here/logs/` under its name in the folder analyzed (a member of an
    archive as a plain file, read through the archive reader and its limits): a shared or moved reports
    folder still opens every log in one click. (name, href relative to `here`) per log copied; a log that
    cannot be read (gone, or refused by the archive's limits) is under the report's problems already and
    gets no link."""
    wanted = set(sources)
    files, _problems = logfiles.log_files(report.logs())
    copied = []
    for log in files:
        if str(log) not in wanted:
            continue
        name = PurePosixPath(report.log_name(str(log)))
        if any(part in ("", ".", "..") for part in name.parts) or name.is_absolute():
            continue  # the archive reader refuses such members; never written outside `here/logs`
        try:
            with log.open("rb") as stream:
                folder = publish_files.real_folder(here, LOGS, *name.parent.parts)
                publish_files.write_stream(folder / name.name, stream)
        except (OSError, LogError):  # a planted link in the reports folder (ReportFolderError) fails the page
            continue
        copied.append((str(name), f"{LOGS}/{name}"))
    return copied


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
