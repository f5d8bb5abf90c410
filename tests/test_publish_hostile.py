"""Publishing with hostile names, corrupt entries and concurrent publishes (issue 21, 5, 8, 9) and
without kernel chatter on the terminal (issue 20)."""

import json
import os
import re
import threading
import time
from pathlib import Path

import nbformat
import pytest

from benchbook import cli
from benchbook.errors import ReportNameError
from benchbook.reports import publish
from benchbook.reports.report import Report

FIXTURES = Path(__file__).parent / "fixtures"


def tiny_notebook(tmp_path, code="print('measured')"):
    """A notebook of two cells, `parameters` tagged as papermill wants it."""
    nb = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell("summary_path = ''\ninteractive = True")
    params.metadata["tags"] = ["parameters"]
    nb.cells = [params, nbformat.v4.new_code_cell(code)]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path = tmp_path / "tiny.ipynb"
    nbformat.write(nb, path)
    return path


@pytest.mark.parametrize("name", ["../../x", "/tmp/x", "a/b", "..", "-x", "[x]"])
def test_a_report_name_stays_a_folder_of_the_reports(tmp_path, capsys, name):
    logs = tmp_path / "logs"
    logs.mkdir()
    reports = tmp_path / "a" / "reports"
    code = cli.main(["publish", "--logs", str(logs), "--model", "resnet50_tf", f"--name={name}",
                     "--reports", str(reports), "--quiet"])
    assert code == 2 and "a report is a folder of --reports" in re.sub(r"\s+", " ", capsys.readouterr().err)
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["a", "logs", "reports"]
    with pytest.raises(ReportNameError):
        publish.check_name(name)


def test_corrupt_entries_are_shown_and_force_publishes_over_them(tmp_path, capfd):
    reports = tmp_path / "reports"
    for name in ("other", "tiny"):
        (reports / name).mkdir(parents=True)
        (reports / name / "entry.json").write_text('{"name": "x", "sta')  # cut short
    target = publish.Target("tiny", tiny_notebook(tmp_path), {})
    [entry] = publish.publish([target], reports, jobs=1, force=True, progress=False)
    assert entry["status"] == "ok", entry
    assert json.loads((reports / "tiny" / "entry.json").read_text())["status"] == "ok"
    index = (reports / "index.html").read_text()
    assert "other/report.html" in index and "unreadable" in index and "other/entry.json: not valid JSON" in index
    # the kernel's warnings stay off the terminal, kept beside the executed notebook
    err = capfd.readouterr().err
    assert "IPKernelApp" not in err and "without encryption" not in err, err
    assert (reports / "tiny" / entry["executed"]).with_suffix(".kernel.log").is_file()


def test_each_execution_has_its_own_file(tmp_path):
    target = publish.Target("tiny", tiny_notebook(tmp_path), {})
    reports = tmp_path / "reports"
    first = publish.run_job(publish.write_job(target, reports, "20261124T120000Z"))
    second = publish.run_job(publish.write_job(target, reports, "20261124T120000Z"))  # the same second
    assert first["status"] == second["status"] == "ok"
    assert first["executed"] != second["executed"]
    assert len(list((reports / "tiny" / "executed").glob("*.ipynb"))) == 2


def test_one_publish_of_a_report_at_a_time(tmp_path):
    """A second publish of a report whose notebook is being executed by another publish says so and
    touches nothing; the first one ends as if alone."""
    reports, started, release = tmp_path / "reports", tmp_path / "started", tmp_path / "release"
    waits = (f"import pathlib, time\npathlib.Path({str(started)!r}).touch()\nend = time.time() + 120\n"
             f"while not pathlib.Path({str(release)!r}).exists() and time.time() < end:\n    time.sleep(0.05)")
    target = publish.Target("tiny", tiny_notebook(tmp_path, waits), {})
    first: list[dict] = []
    thread = threading.Thread(target=lambda: first.extend(publish.publish([target], reports, jobs=1,
                                                                          progress=False)))
    thread.start()
    try:
        end = time.monotonic() + 120
        while not started.exists():
            assert time.monotonic() < end and thread.is_alive(), first
            time.sleep(0.05)
        [entry] = publish.publish([target], reports, jobs=1, force=True, progress=False)
        assert entry["status"] == "busy" and f"being published by pid {os.getpid()}" in entry["error"]
        # the entry is the first publish's own mark (an interrupted publish is executed again by the next)
        assert json.loads((reports / "tiny" / "entry.json").read_text())["status"] == "publishing"
    finally:
        release.touch()
        thread.join(timeout=120)
    assert [e["status"] for e in first] == ["ok"]
    assert len(list((reports / "tiny" / "executed").glob("*.ipynb"))) == 1  # the busy publish executed nothing


def test_a_log_removed_while_the_notebook_runs_fails_the_report(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "a.log").write_text("x\n")
    (logs / "b.log").write_text("y\n")
    nb = tiny_notebook(tmp_path, f"import pathlib\npathlib.Path({str(logs / 'b.log')!r}).unlink()")
    [entry] = publish.publish([publish.Target("t", nb, {}, [str(logs)])], tmp_path / "reports", jobs=1,
                              progress=False)
    assert entry["status"] == "failed"
    assert entry["error"] == f"the inputs changed while the notebook ran (removed: {logs / 'b.log'}); publish again"


def test_the_index_shows_counts_as_integers_and_times_as_utc(tmp_path):
    entry = {"name": "r", "status": "ok", "published_at": "20261124T100301Z", "notebook": "n.ipynb",
             "summary": {"runs": 6, "complete": 6, "best": {"label": "8 GPUs, AMP, batch 256", "median": 42.48875}}}
    index = publish.write_index(tmp_path, [entry]).read_text()
    assert "<td>6 / 6</td>" in index and "42.49" in index and "42.48875" not in index
    assert "2026-11-24 10:03:01" in index and "20261124T100301Z" not in index


def test_the_index_gives_each_best_median_in_its_reports_unit(tmp_path):
    # The Mask R-CNN fixture logs measure samples/s (its reference's unit), the MXNet ones images/s: the
    # index names each report's unit beside its number, and the configuration in words.
    rows = {}
    for name, folder in (("maskrcnn", "ngc_maskrcnn"), ("mxnet", "ngc_mxnet")):
        summary = Report(log_dir=FIXTURES / folder).headline()
        rows[name] = {"name": name, "status": "ok", "summary": summary}
    index = publish.write_index(tmp_path, list(rows.values())).read_text()
    cells = {name: index[index.index(f'href="{name}/report.html">{name}<'):].split("</tr>")[0] for name in rows}
    assert "<td>8 GPUs, AMP, batch 2</td>" in cells["maskrcnn"] and "46.80 samples/s" in cells["maskrcnn"]
    assert "<td>8 GPUs, AMP, batch 256</td>" in cells["mxnet"] and "23,779.70 images/s" in cells["mxnet"]
    assert "<th>median</th>" in index and "median images/s" not in index


def test_a_reference_outside_its_folder_is_refused_before_any_notebook_runs(tmp_path, capsys):
    logs = tmp_path / "logs"
    logs.mkdir()
    code = cli.main(["publish", "--logs", str(logs), "--model", "resnet50_tf", "--reference", "../../etc/passwd",
                     "--reports", str(tmp_path / "reports")])
    assert code == 2 and not (tmp_path / "reports").exists()
    assert "passwd" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["index.html", "Index.HTML", "r.lock"])
def test_names_kept_for_the_index_page_are_refused(name):
    with pytest.raises(ReportNameError, match="kept for the index page"):
        publish.check_name(name)
