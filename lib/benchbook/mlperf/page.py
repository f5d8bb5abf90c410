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

from ..errors import BenchbookError
from ..logs.archives import ArchivePath
from ..reports import data_files, display, publish_files
from . import results

TITLE = "MLPerf Training results"
ABOUT = ("The published time-to-train results of MLPerf Training (mlcommons/training_results_v<X.Y>), scored by the "
         "MLPerf rule from their own result_N.txt files: the runs the round requires, the fastest and the slowest "
         "dropped, the mean of the rest, times the folder's committed scaling.json, in minutes. Nothing in the "
         "results folder is written.")
LOGS = "logs"  # the folder beside a published page that holds the copies of its result files
_SOURCE = re.compile(r"(?P<repo>[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)@(?P<commit>[0-9a-f]{7,40}):(?P<folder>[\w./-]+)")


def opening(report, summary_path: str | None, title: str | None = None, about: str = "") -> display.Html:
    """The page's heading, its links (a published page only: `summary_path` says where it is) and verdict."""
    heading = title or TITLE
    parts = [f'<h1 id="{html.escape(_anchor(heading))}">{html.escape(heading)}</h1>']
    plain = [heading]
    links = navigation(report, Path(summary_path).resolve().parent) if summary_path else None
    if links is not None:
        parts.append(links.markup)
        plain.append(links.plain)
    line = verdict(report)
    said, _, rest = line.partition(": ") if line.startswith(("Consistent: ", "Not consistent: ")) else ("", "", line)
    cls = "bb-reproduced" if said == "Consistent" else "bb-off"
    lead = f'<span class="{cls}">{html.escape(said)}</span>: ' if said else ""
    parts.append(f'<p class="bb-verdict">{lead}{html.escape(rest)}</p>')
    plain.append(line)
    if about:
        parts.append(f"<p>{html.escape(about)}</p>")
        plain.append(about)
    return display.Html("".join(parts), "\n\n".join(plain))


def _anchor(text: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in text.lower()).strip("-")


def verdict(report) -> str:
    """Whether the published scores follow from the result files, by how much, of what."""
    data = report.save_summary(None)
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


def navigation(report, here: Path) -> display.Html:
    """The index, the code view, each result file (its copy in `here/logs/`) and each results repository."""
    links = ['<a href="../index.html">all reports</a>', '<a href="code.html">with code</a>']
    plain = ["all reports", "with code"]
    copied = copy_result_files(report, here)
    if copied:
        each = "; ".join(f"{html.escape(label)}: " + " ".join(
            f'<a href="{html.escape(quote(href))}">{html.escape(PurePosixPath(href).stem)}</a>' for href in hrefs)
            for label, hrefs in copied)
        links.append(f"result files: {each}")
        plain.append(f"result files: {sum(len(h) for _, h in copied)}")
    data, data_plain = data_files.link_line(data_files.write_mlperf(report, here))  # the tables as CSV and JSON
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


def copy_result_files(report, here: Path) -> list[tuple[str, list[str]]]:
    """Each result file of each folder scored, copied into `here/logs/<its path in the archive or folder>`
    (read through the archive reader and its limits): (the result's label, hrefs relative to `here`)."""
    out = []
    for f in report.folders:
        place = report.place(f)
        hrefs = []
        try:
            files = results.result_files(place)
        except OSError:
            continue  # the score says why
        for path in files:
            name = member_name(path)
            if name is None:
                continue
            try:
                with path.open("rb") as stream:
                    folder = publish_files.real_folder(here, LOGS, *name.parent.parts)
                    publish_files.write_stream(folder / name.name, stream)
            except (OSError, BenchbookError):
                continue  # unreadable: the score names it
            hrefs.append(f"{LOGS}/{name}")
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
