"""Issue 49, causes 1 and 9: a published page's copies of its logs. A log named `*.htm`, `*.svg`, `*.xhtml`...
was copied under its own name and linked: opened, its script ran in the reports' origin. A log whose name is not
UTF-8 failed the whole report. Now every copy ends in .txt (a browser opens it as text) and its link says the
log's own name; a name that is not UTF-8 is shown with its bad bytes replaced and linked by its bytes."""

from __future__ import annotations

import os
import shutil

import pytest

from benchbook.reports.report import Report
from benchbook.reports.sections import Page, opening

LOG = "tf_gpu1_amp_bs256.log"


@pytest.mark.parametrize("name", ["evil.htm", "evil.svg", "evil.xhtml", "evil.shtml", "evil.HTML", "evil",
                                  "run.log"])
def test_every_copied_log_opens_as_text(tmp_path, fixtures, name):
    logs = tmp_path / "logs"
    logs.mkdir()
    shutil.copy(fixtures / "ngc_tf1" / LOG, logs / name)
    here = tmp_path / "reports" / "r"
    here.mkdir(parents=True)
    page = Page(Report(log_dir=logs), out=str(here))
    nav = opening.navigation(page)
    page.finish()
    copies = sorted(p.name for p in (here / "logs").iterdir())
    assert copies == [name + ".txt"]  # never a file a browser would run as a page
    assert f'href="logs/{name}.txt">{name}</a>' in nav.markup


def test_a_log_name_that_is_not_utf8_is_shown_and_linked(tmp_path, fixtures):
    logs = tmp_path / "logs"
    logs.mkdir()
    raw = os.fsdecode(b"run-\xff.txt")  # surrogate-escaped, as Python reads such a name
    shutil.copy(fixtures / "ngc_tf1" / LOG, logs / raw)
    here = tmp_path / "reports" / "r"
    here.mkdir(parents=True)
    page = Page(Report(log_dir=logs), out=str(here))
    nav = opening.navigation(page)
    page.finish()
    assert 'href="logs/run-%FF.txt">run-\ufffd.txt</a>' in nav.markup
    nav.markup.encode("utf-8")  # no surrogate left: the page can be written
    assert (here / "logs" / raw).is_file()


def test_a_planted_entry_cannot_steer_the_index(tmp_path):
    """Issue 49, cause 13: in a shared reports folder a planted `entry.json` whose `name` was `javascript:...`, an
    off-site address or `../x` gave index.html links that ran a script or left the folder. An entry's name is its
    folder's now, and every link into a folder is a relative path of that folder whatever it is named."""
    import json
    import re

    from benchbook.reports import index_page
    from benchbook.reports.publish_files import read_entry

    reports = tmp_path / "reports"
    for folder, name, executed in (("x", "javascript:alert(1)", "../../secret.html"),
                                   ("javascript:alert(2)", "javascript:alert(2)", "http://evil.example/"),
                                   ("y", "https://evil.example/", "y.ipynb")):
        (reports / folder).mkdir(parents=True)
        entry = {"name": name, "status": "ok", "summary": {"runs": 1}, "executed": executed,
                 "target": {"about": {"publisher": "p", "title": "t"}}}
        (reports / folder / "entry.json").write_text(json.dumps(entry), encoding="utf-8")
    entries = [read_entry(p) for p in sorted(reports.glob("*/entry.json"))]
    assert sorted(e["name"] for e in entries) == ["javascript:alert(2)", "x", "y"]
    page = index_page.write_index(reports, entries).read_text(encoding="utf-8")
    hrefs = [h for h in re.findall(r'href="([^"]*)"', page) if h != "data:," and h[:1] != "#"]  # (the icon)
    assert hrefs and not [h for h in hrefs if ":" in h.split("/")[0] or h.startswith(("/", "..")) or "//" in h]
    assert "javascript%3Aalert%282%29/report.html" in hrefs and "x/" in hrefs  # x's notebook: the folder only


def test_what_a_notebook_runs_is_what_its_text_source_shows(tmp_path):
    """Issue 49, cause 4: `# !touch X  # a note` in the .py, a comment to its reviewer, is the shell command
    `!touch X` in the notebook jupytext pairs with it, and ran on publish; a notebook without its .py was
    published unchecked. Now both are refused before anything runs, for every IPython escape (!, %, ?)."""
    import jupytext

    from benchbook.reports.publish_files import pair_difference

    for line in ("!touch X", "  %run other.py", "%%bash", "?os", "%env A=1"):
        py = tmp_path / "n.py"
        py.write_text(f"# %%\nx = 1\n\n# %%\n# {line.strip()}  # a note\ny = 2\n", encoding="utf-8")
        jupytext.write(jupytext.read(py), tmp_path / "n.ipynb")
        why = pair_difference(tmp_path / "n.ipynb")
        assert why and "cell 2 runs" in why and "shows as a comment" in why, (line, why)
    py.write_text("# %%\nx = 1  # a plain comment: # !not a command\n", encoding="utf-8")
    jupytext.write(jupytext.read(py), tmp_path / "n.ipynb")
    assert pair_difference(tmp_path / "n.ipynb") is None
    py.unlink()
    assert "has no text source n.py" in pair_difference(tmp_path / "n.ipynb")
