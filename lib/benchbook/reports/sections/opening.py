"""The first screen: the page's title, its links (a published page), the verdict with its size, the
published grid(s) and one line of set-up."""

from __future__ import annotations

import html
import os
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING
from urllib.parse import quote

from ... import models
from ...errors import LogError
from ...logs import logfiles
from .. import data_files, display, grid, headline, logged_setup, publish_files, references
from .parts import comparison_of, heading, measured_on, measured_what, together, words

if TYPE_CHECKING:
    from ..report import Report
    from . import Page


def content(page: Page) -> display.Html:
    report = page.report
    return together(title(report, page.model, page.title),
                    *filter(None, [navigation(report, page.summary_path)]), verdict(report))


FRAMEWORKS = {"tensorflow": "TensorFlow", "mxnet": "MXNet", "pytorch": "PyTorch"}


def title(report: Report, model: str, given: str | None = None) -> display.Html:
    """The page's heading: `given` (a published set's title, the one its index row shows), else the model,
    what the report measures ("training throughput", "and time to train" only where a run evaluates), and
    which logs or study; a CPU study runs benchbook's own workload, not the NGC code `model` names, and says
    so. `report.page_title` keeps it for the browser's title and the index page."""
    if given:
        report.page_title = given
        return display.Html(heading(given, 1), given)
    what = "training throughput" + (" and time to train" if not report.analysis.evaluations.empty else "")
    if report.study is not None and report.study.runtime == "cpu":
        spec = models.get(report.study.model)
        model = (f"{spec.title} on the CPU (benchbook's own {FRAMEWORKS.get(spec.framework, spec.framework)} "
                 f"workload, workloads/{spec.cpu_script})")
    source = (f"{report.log_dir.name or report.log_dir} (analysis-only)" if report.log_dir is not None
              else f"study {report.study.name}")
    report.page_title = f"{model}: {what}, {source}"
    return display.Html(heading(report.page_title, 1), report.page_title)


def navigation(report: Report, summary_path: str | None) -> display.Html | None:
    """Links from the published page (reports/<name>/report.html, beside `summary_path`): the index, the
    code view, each log (its copy beside the page, `copy_logs`), the script of the rule, the report's tables as
    data (written beside the page, `data_files`). None outside a publish (no summary path)."""
    if summary_path is None:
        return None
    here = Path(summary_path).resolve().parent
    runs = report.analysis.runs
    logs = copy_logs(report, here, list(dict.fromkeys(runs["source"])) if len(runs) else [])
    links = ['<a href="../index.html">all reports</a>', '<a href="code.html">with code</a>']
    if logs:
        each = ", ".join(f'<a href="{html.escape(quote(os.fsencode(href)))}">{html.escape(name)}</a>'
                         for name, href in logs)
        links.append(f"log{'s' * (len(logs) > 1)}: {each}")
    source, url = logged_setup.rule_source(runs, report.rule.name)
    if url:
        links.append(f'rule: <a href="{html.escape(url)}">{html.escape(source.split(" (")[0])}</a>')
    data, data_plain = data_files.link_line(data_files.write_report(report, here))  # the tables as CSV and JSON
    links += [data] if data else []
    plain = " · ".join(("all reports", "with code",
                        *(f"logs: {', '.join(name for name, _ in logs)}",) * bool(logs), *[data_plain] * bool(data)))
    return display.Html(f'<p class="bb-nav">{" · ".join(links)}</p>', plain)


LOGS = "logs"  # the folder of a published report that holds the copies of its logs


#: The one suffix of a copied log: a browser opens it as text, whatever the log's own name says (a log named
#: `x.htm`, `x.svg` or `x.xhtml` copied as such would be a live page in the reports' origin, its script run).
TEXT_SUFFIX = ".txt"


def shown_name(name: str) -> str:
    """A log's name as a page shows it: a name that is not UTF-8 (its bytes surrogate-escaped) with its bad
    bytes replaced, never an error."""
    return os.fsencode(name).decode("utf-8", errors="replace")


def copy_logs(report: Report, here: Path, sources: list[str]) -> list[tuple[str, str]]:
    """Each log of `sources` copied into `here/logs/` under its name in the folder analyzed, ending in
    `TEXT_SUFFIX` (a member of an archive as a plain file, read through the archive reader and its limits): a
    shared or moved reports folder still opens every log in one click, as text. (name as shown, href relative
    to `here`) per log copied; a log that cannot be read (gone, or refused by the archive's limits) is under
    the report's problems already and gets no link."""
    wanted = set(sources)
    files, _problems = logfiles.log_files(report.logs())
    copied = []
    for log in files:
        if str(log) not in wanted:
            continue
        name = PurePosixPath(report.log_name(str(log)))
        if any(part in ("", ".", "..") for part in name.parts) or name.is_absolute():
            continue  # the archive reader refuses such members; never written outside `here/logs`
        copy = name.name if name.suffix.lower() == TEXT_SUFFIX else name.name + TEXT_SUFFIX
        try:
            with log.open("rb") as stream:
                folder = publish_files.real_folder(here, LOGS, *name.parent.parts)
                publish_files.write_stream(folder / copy, stream)
        except (OSError, LogError):  # a planted link in the reports folder (ReportFolderError) fails the page
            continue
        copied.append((shown_name(str(name)), f"{LOGS}/{name.parent / copy}"))
    return copied


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
