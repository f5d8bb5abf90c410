"""The first screen of the MLPerf report (`notebooks/mlperf.py`), as the model reports open: its title (a
published set's, as its index row says it), links (the index, the code view, every result file a score read,
copied beside the page, and the results repositories at the commit read), and a verdict sentence with its size.
"""

from __future__ import annotations

import html
import re
from pathlib import Path, PurePosixPath
from urllib.parse import quote

import pandas as pd

from ..logs.archives import ArchivePath
from ..reports import data_files, display, page_contract
from . import results

TITLE = "MLPerf Training results"
ABOUT = ("The published time-to-train results of MLPerf Training (mlcommons/training_results_v<X.Y>), scored by the "
         "MLPerf rule from their own result_N.txt files: the runs the round requires, the fastest and the slowest "
         "dropped, the mean of the rest, times the folder's committed scaling.json, in minutes. Nothing in the "
         "results folder is written.")
LOGS = "logs"  # the folder beside a published page that holds the copies of its result files
_SOURCE = re.compile(r"(?P<repo>[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)@(?P<commit>[0-9a-f]{7,40}):(?P<folder>[\w./-]+)")


class MLPerfPage(page_contract.NamedSections):
    """The MLPerf report's page (`page_contract`): its sections by name, in the page's order (`SECTIONS`), each only
    showing; `finish` writes the scores, the comparison and the result files' copies into `out`."""

    SECTIONS = ("opening", "scores", "against_published", "round", "best_plot", "best_by_round", "per_accelerator",
                "spread", "curves", "initialisation", "checks")

    def __init__(self, report, out: str | None = None, title: str | None = None, interactive: bool | None = None):
        self.report, self.out, self.title, self.interactive = report, out, title, interactive

    @property
    def heading(self) -> str:
        return self.title or TITLE

    def show(self, name: str):
        """Section `name`'s content (None: nothing to show)."""
        from . import explore
        r = self.report
        folders = r.folders
        shown = {
            "opening": lambda: opening(self),
            "scores": lambda: display.table(r.published(), empty="no result folder", formats={"minutes": 4}),
            "against_published": lambda: display.table(
                r.against_published(), empty="no published score of these results in params/references/mlperf/",
                formats={"published": 4, "minutes": 4, "deviation": lambda d: display.signed(100 * d, 4, "%")}),
            "round": lambda: explore.round_view(folders, self.interactive),
            "best_plot": lambda: explore.best_plot(folders) or display.note("no valid result"),
            "best_by_round": lambda: display.table(explore.best(folders, "round"), empty="no valid result",
                                                   formats={"minutes": 4}),
            "per_accelerator": lambda: display.table(r.per_accelerator(), empty="no result folder",
                                                     formats={"minutes": 4, "accelerator-minutes": 1}),
            "spread": lambda: display.table(r.spread(), empty="no run", formats={"minutes": 4}),
            "curves": lambda: r.curves() or display.note("no run logged an evaluation"),
            "initialisation": lambda: display.table(r.initialisation(), empty="no run logged init_start and init_stop",
                                                    formats={"seconds": 1}),
            "checks": r.checks_section,  # mlperf-logging's own checks (check=True); nothing where they were not run
        }
        if name not in shown:
            from ..errors import UnknownNameError
            raise UnknownNameError("section of the MLPerf page", name, list(self.SECTIONS))
        return shown[name]()

    def tables(self) -> dict:
        return data_files.mlperf_tables(self.report)

    def copies(self) -> list[tuple[PurePosixPath, object]]:
        return [(PurePosixPath(href), path) for _label, files in result_copies(self.report) for href, path in files]

    def summary(self):
        return self.report.summary(self.heading)


def opening(page: MLPerfPage) -> display.Html:
    """The page's heading, its links (a published page only: one with a folder, `out`) and verdict."""
    report, heading = page.report, page.heading
    parts = [f'<h1 id="{html.escape(_anchor(heading))}">{html.escape(heading)}</h1>']
    plain = [heading]
    links = navigation(page) if page.out is not None else None
    if links is not None:
        parts.append(links.markup)
        plain.append(links.plain)
    line = verdict(report)
    said, _, rest = line.partition(": ") if line.startswith(("Consistent: ", "Not consistent: ")) else ("", "", line)
    cls = "bb-reproduced" if said == "Consistent" else "bb-off"
    lead = f'<span class="{cls}">{html.escape(said)}</span>: ' if said else ""
    parts.append(f'<p class="bb-verdict">{lead}{html.escape(rest)}</p>')
    plain.append(line)
    parts.append(f"<p>{html.escape(ABOUT)}</p>")
    plain.append(ABOUT)
    return display.Html("".join(parts), "\n\n".join(plain))


def _anchor(text: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in text.lower()).strip("-")


def verdict(report) -> str:
    """Whether the published scores follow from the result files, by how much, of what."""
    data = report.summary().as_dict()
    folders = report.folders
    benchmarks = ", ".join(f"{b} ({', '.join(sorted({f.round or '?' for f in folders if f.benchmark == b}))})"
                           for b in dict.fromkeys(f.benchmark for f in folders))
    what = (f"{len(folders)} result folder{'s' * (len(folders) != 1)} of {benchmarks}, {data['runs']} runs, "
            f"{sum(f.valid for f in folders)} valid")
    if data.get("published"):
        said = str(data["verdict"])
        return (f"{said.capitalize()}: {data['within']} of {data['published']} published scores follow from their "
                f"result files by the MLPerf rule, within {data['tolerance']} (the 4 decimals published; "
                f"{data['deviation']}). {what}.")
    return f"{what}; no published score to compare with."


def navigation(page: MLPerfPage) -> display.Html:
    """The index, the code view, each result file (its copy in `logs/`, `finish` writes it) and each results
    repository."""
    report = page.report
    links = ['<a href="../index.html">all reports</a>', '<a href="code.html">with code</a>']
    plain = ["all reports", "with code"]
    copied = [(label, [href for href, _path in files]) for label, files in result_copies(report)]
    if copied:
        each = "; ".join(f"{html.escape(label)}: " + " ".join(
            f'<a href="{html.escape(quote(href))}">{html.escape(PurePosixPath(href).stem)}</a>' for href in hrefs)
            for label, hrefs in copied)
        links.append(f"result files: {each}")
        plain.append(f"result files: {sum(len(h) for _, h in copied)}")
    data, data_plain = data_files.link_line(page_contract.table_names(page.tables()))  # the tables as CSV and JSON
    if data:
        links.append(data)
        plain.append(data_plain)
    sources = source_links(report.against_published())
    if sources:
        links.append("sources: " + ", ".join(f'<a href="{html.escape(url)}">{html.escape(name)}</a>'
                                             for name, url in sources))
        plain.append("sources: " + ", ".join(name for name, _ in sources))
    return display.Html(f'<p class="bb-nav">{" · ".join(links)}</p>', " · ".join(plain))


def source_links(compared: pd.DataFrame) -> list[tuple[str, str]]:
    """(repository@commit, its address on GitHub) of each results repository the published scores cite."""
    found = {}
    for source in compared.get("source", []):
        m = _SOURCE.fullmatch(str(source))
        if m:
            found[f"{m['repo']}@{m['commit']}"] = f"https://github.com/{m['repo']}/tree/{m['commit']}"
    return list(found.items())


def result_copies(report) -> list[tuple[str, list[tuple[str, object]]]]:
    """Each result file of each folder scored, with where its copy goes beside the page: `logs/<its path in the
    archive or folder>` (read through the archive reader and its limits, by `finish`): (the result's label,
    [(href, file)])."""
    out = []
    for f in report.folders:
        try:
            files = results.result_files(report.place(f))
        except OSError:
            continue  # the score says why
        hrefs = [(f"{LOGS}/{name}", path) for path in files if (name := member_name(path)) is not None]
        if hrefs:
            out.append((report.label(f), hrefs))
    return out


def member_name(path) -> PurePosixPath | None:
    """Where a result file's copy goes under logs/: its path in the archive, else its last five parts
    (<submitter>/results/<system>/<benchmark>/result_N.txt below the results repository)."""
    name = PurePosixPath(path.inner) if isinstance(path, ArchivePath) else PurePosixPath(*Path(path).parts[-5:])
    if name.is_absolute() or any(part in ("", ".", "..") for part in name.parts):
        return None  # never written outside logs/
    return name
