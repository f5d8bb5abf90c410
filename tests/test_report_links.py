"""The shipped published sets, published into a fresh reports folder outside the repository: every link of
every page leads somewhere (each log one click away, as a plain file beside its report), and no page or data
file names the folders of the machine that published it (the repository, the reports folder, the home)."""

from __future__ import annotations

import html
import os
import re
import tarfile
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from benchbook.reports import publish

ROOT = Path(__file__).parent.parent
SETS = sorted((ROOT / "params" / "published").glob("*.yaml"))
DATA = (".html", ".json", ".csv", ".ipynb")
BREAK = re.compile(r"<wbr\s*/?>")  # where a table lets a path wrap: not part of the text


def _text(path: Path) -> str:
    """A page or data file as a reader reads it: entities decoded, line-break hints out."""
    return html.unescape(BREAK.sub("", path.read_text(encoding="utf-8", errors="replace")).replace("\\/", "/"))


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> Path:
    """All shipped sets published once, from a current folder outside the repository."""
    folder = tmp_path_factory.mktemp("elsewhere") / "reports"
    before = Path.cwd()
    os.chdir(folder.parent)
    try:
        entries = publish.publish([publish.for_published(p) for p in SETS], folder, jobs=2, progress=False)
    finally:
        os.chdir(before)
    assert [e["status"] for e in entries] == ["ok"] * len(SETS), [e.get("error") for e in entries]
    return folder


class _Links(HTMLParser):
    """The href and src of every element of a page, and its ids (the anchors a link within it may name)."""

    def __init__(self):
        super().__init__()
        self.links: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name in ("href", "src") and value is not None:
                self.links.append(value)
            elif name in ("id", "name") and value:
                self.ids.add(value)


def _parsed(page: Path) -> _Links:
    parser = _Links()
    parser.feed(page.read_text(encoding="utf-8"))
    return parser


def _broken(page: Path, link: str, reports: Path) -> str | None:
    """Why `link` of `page` leads nowhere, or None."""
    parts = urlsplit(link)
    if parts.scheme in ("http", "https"):
        return None if parts.netloc and " " not in link else "a malformed web address"
    if parts.scheme == "data":
        return None
    if parts.scheme or link.startswith("/"):
        return "not relative to the page"
    if not parts.path:  # an anchor within the page
        return None if unquote(parts.fragment) in _parsed(page).ids else "no such anchor"
    target = (page.parent / unquote(parts.path)).resolve()
    if not target.is_relative_to(reports.resolve()):
        return "outside the reports folder"
    if not target.is_file():
        return "no such file"
    if parts.fragment and target.suffix == ".html" and unquote(parts.fragment) not in _parsed(target).ids:
        return "no such anchor in the page it names"
    return None


def test_every_link_of_every_page_leads_somewhere(reports):
    pages = sorted(reports.rglob("*.html"))
    assert len(pages) == 1 + 2 * len(SETS)  # the index, then each set's report and code pages
    broken = [f"{page.relative_to(reports)}: {link} ({why})" for page in pages for link in _parsed(page).links
              if (why := _broken(page, link, reports))]
    assert not broken, "\n".join(broken[:20])


def test_each_report_links_its_tables_as_data_from_its_page_and_the_index(reports):
    """runs, configurations, iterations, evaluations (where the logs evaluate), measures and the comparison (an
    MLPerf set: scores and comparison) as CSV and JSON beside each page, linked from it and from the index (issue
    40, item 5; issue 46); every link opens (the test above)."""
    index = _parsed(reports / "index.html").links
    for folder in sorted(p.parent for p in reports.glob("*/report.html")):
        evaluated = ["evaluations"] * (folder / "evaluations.csv").is_file()  # (sets whose logs evaluate)
        wanted = ["scores", "comparison"] if folder.name.startswith("mlperf") else [
            "runs", "configurations", "iterations", *evaluated, "measures", "comparison"]
        files = [f"{name}.{fmt}" for name in wanted for fmt in ("csv", "json")]
        assert [link for link in _parsed(folder / "report.html").links if link.endswith((".csv", ".json"))] == files
        assert [link for link in index if link.startswith(f"{folder.name}/") and link.endswith((".csv", ".json"))] \
            == [f"{folder.name}/{f}" for f in files]


def test_the_runs_data_names_each_run_of_the_page(reports):
    """Each row of a report's runs.csv is a run its page's runs table shows, by the same name."""
    import pandas as pd

    for runs in sorted(reports.glob("*/runs.csv")):
        page = _text(runs.parent / "report.html")
        names = pd.read_csv(runs, keep_default_na=False)["run"]
        assert len(names) and all(f">{name}<" in page for name in names), runs.parent.name


def test_each_log_opens_from_its_report_as_the_archive_holds_it(reports):
    """Every member the TF1 set's runs read is linked from its report, a plain file with the member's bytes."""
    report = reports / "ngc-tf1-resnet50" / "report.html"
    links = [link for link in _parsed(report).links if link.startswith("logs/")]
    with tarfile.open(ROOT / "examples" / "published" / "ngc-tf1-resnet50" / "logs.tar.xz") as archive:
        members = {m.name: archive.extractfile(m).read() for m in archive.getmembers() if m.name.endswith(".txt")}
    assert sorted(unquote(link).removeprefix("logs/") for link in links) == sorted(members)
    for link in links:
        assert (report.parent / unquote(link)).read_bytes() == members[unquote(link).removeprefix("logs/")]


def test_the_runs_table_names_each_runs_log_file(reports):
    page = _text(reports / "ngc-tf1-resnet50" / "report.html")
    assert "ngc-tf1-resnet50/tf_gpu1_amp_bs128.txt:0" in page
    assert "logs.tar.xz!" not in page


def test_no_page_or_data_file_names_the_machines_folders(reports):
    folders = {str(ROOT.resolve()), str(ROOT.absolute()), str(reports.resolve()), str(reports)}
    home = os.path.expanduser("~")
    if home not in ("", "/"):
        folders.add(home)
    files = [f for f in reports.rglob("*") if f.suffix in DATA]
    assert any(f.suffix == ".ipynb" for f in files) and any(f.name == "entry.json" for f in files)
    assert any(f.name == "runs.csv" for f in files) and any(f.name == "comparison.json" for f in files)
    found = []
    for f in files:
        readable = _text(f)
        found += [f"{f.relative_to(reports)}: {folder}" for folder in sorted(folders) if folder in readable]
    assert not found, "\n".join(found)


def test_every_page_lays_out_at_a_phones_width(reports):
    """A viewport on every page (issue 39, item 11): a phone shows it at its own width, not a shrunk desktop."""
    pages = sorted(reports.rglob("*.html"))
    missing = [str(p.relative_to(reports)) for p in pages
               if '<meta name="viewport" content="width=device-width, initial-scale=1">' not in p.read_text()]
    assert not missing, missing
