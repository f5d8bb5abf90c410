"""Publishing with hostile names, corrupt entries and concurrent publishes (issue 21, 5, 8, 9), without
kernel chatter on the terminal (issue 20), and with planted links, other folders, names that are not
UTF-8, wrong entries, unsynced notebook pairs and interrupted writes (issue 26)."""

import json
import os
import re
import resource
import shutil
import signal
import threading
import time
from pathlib import Path

import jupytext
import nbformat
import pytest

from benchbook import cli
from benchbook.errors import ReportNameError
from benchbook.reports import publish
from benchbook.reports.report import Report

FIXTURES = Path(__file__).parent / "fixtures"


def tiny_notebook(tmp_path, code="print('measured')", name="tiny"):
    """A notebook of two cells, `parameters` tagged as papermill wants it."""
    nb = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell("out = None\ninteractive = True")
    params.metadata["tags"] = ["parameters"]
    nb.cells = [params, nbformat.v4.new_code_cell(code)]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path = tmp_path / f"{name}.ipynb"
    nbformat.write(nb, path)
    jupytext.write(nb, path.with_suffix(".py"), fmt="py:percent")  # its text source: publish refuses one without
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
             "summary": {"runs": 6, "complete": 6, "best": {"label": "8 GPUs, AMP, batch 256", "value": 42.48875}}}
    index = publish.write_index(tmp_path, [entry]).read_text()
    assert '<td data-label="runs complete">6 / 6</td>' in index and "42.49" in index and "42.48875" not in index
    assert "2026-11-24 10:03:01" in index and "20261124T100301Z" not in index


def test_the_index_gives_each_best_median_in_its_reports_unit(tmp_path):
    # The Mask R-CNN fixture logs measure samples/s (its reference's unit), the MXNet ones images/s: the
    # index names each report's unit beside its number, and the configuration in words.
    rows = {}
    for name, folder in (("maskrcnn", "ngc_maskrcnn"), ("mxnet", "ngc_mxnet")):
        summary = Report(log_dir=FIXTURES / folder).summary().as_dict()
        rows[name] = {"name": name, "status": "ok", "summary": summary}
    index = publish.write_index(tmp_path, list(rows.values())).read_text()
    cells = {name: index[index.index(f'href="{name}/report.html">{name}<'):].split("</tr>")[0] for name in rows}
    # XLA named where the runs used it (Mask R-CNN's script always does); the median as the report's grid
    # writes it (one number, one way: no thousands separator the grid does not have)
    best = '<td data-label="best configuration">'
    assert f"{best}8 GPUs, AMP, batch 2, XLA</td>" in cells["maskrcnn"] and "46.80 samples/s" in cells["maskrcnn"]
    # one run a configuration: no fastest named (headline.FASTEST_RULE), the highest median said so
    assert f"{best}8 GPUs, AMP, batch 256 (not told from the next: single runs" in cells["mxnet"]
    assert "23779.70 images/s" in cells["mxnet"]
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


# --- issue 26 --------------------------------------------------------------------------------------------

def summary_notebook(tmp_path):
    """A notebook that writes its summary where publish says (`out`, the report's folder its kernel runs in), as
    the notebooks' `finish` does."""
    return tiny_notebook(tmp_path, "import json, pathlib\n(pathlib.Path(out) / 'summary.json')"
                                   ".write_text(json.dumps({'verdict': 'measured'}))")


def test_publish_works_from_any_folder(tmp_path, monkeypatch):
    """papermill runs the notebook in the repository: a relative reports folder reached it unresolved, and
    the summary went to the repository's reports/<name>/ (or nowhere): every report failed or read '-'."""
    work = tmp_path / "elsewhere"
    (work / "logs").mkdir(parents=True)
    monkeypatch.chdir(work)
    target = publish.Target("here", summary_notebook(tmp_path), {}, [str(work / "logs")])  # relative: the repository's
    [entry] = publish.publish([target], "reports", jobs=1, progress=False)
    assert entry["status"] == "ok", entry.get("error")
    assert entry["summary"] == {"verdict": "measured"}
    assert json.loads((work / "reports" / "here" / "summary.json").read_text()) == {"verdict": "measured"}
    assert not (publish.ROOT / "reports" / "here").exists()


def test_links_planted_in_the_reports_folder_are_refused_and_followed_by_no_write(tmp_path):
    reports, elsewhere = tmp_path / "reports", tmp_path / "elsewhere"
    (elsewhere / "executed").mkdir(parents=True)
    reports.mkdir()
    (reports / "linked").symlink_to(elsewhere)
    (reports / "inner").mkdir()
    (reports / "inner" / "executed").symlink_to(elsewhere / "executed")
    (reports / "ok").mkdir()
    (reports / "ok" / "entry.json").symlink_to(elsewhere / "victim.json")  # a file link is replaced, not followed
    (elsewhere / "victim.json").write_text("untouched")
    (reports / "locked").mkdir()
    (reports / "locked" / ".publish.lock").symlink_to(elsewhere / "victim.json")  # opened, it would be truncated
    (elsewhere / "entry.json").write_text('{"name": "linked", "status": "ok", "summary": {"verdict": "FROM-THE-LINK"}}')
    nb = tiny_notebook(tmp_path)
    entries = publish.publish([publish.Target(n, nb, {}) for n in ("linked", "inner", "ok", "locked")], reports,
                              jobs=1, progress=False)
    status = {e["name"]: e for e in entries}
    assert status["ok"]["status"] == "ok"
    assert status["linked"]["status"] == "failed" and "linked is a symbolic link" in status["linked"]["error"]
    assert status["inner"]["status"] == "failed" and "executed is a symbolic link" in status["inner"]["error"]
    assert status["locked"]["status"] == "failed" and ".publish.lock is a symbolic link" in status["locked"]["error"]
    assert sorted(p.name for p in elsewhere.rglob("*")) == ["entry.json", "executed", "victim.json"]
    assert (elsewhere / "victim.json").read_text() == "untouched"
    assert not (reports / "ok" / "entry.json").is_symlink()
    index = (reports / "index.html").read_text()
    assert "a symbolic link, not followed" in index and "FROM-THE-LINK" not in index  # never read through the link


def test_a_file_name_that_is_not_utf8_stops_no_publish(tmp_path, capsys):
    logs = tmp_path / "logs"
    logs.mkdir()
    bad = logs / os.fsdecode(b"bad\xff\x1b[31m.log")
    bad.write_text("not a log\n")
    (logs / "good.log").write_text("a log\n")
    removes = tiny_notebook(tmp_path, f"import os\nos.unlink({os.fsencode(logs / 'good.log')!r})", "removes")
    entries = publish.publish([publish.Target("a", tiny_notebook(tmp_path), {}, [str(logs)]),
                               publish.Target("b", removes, {}, [str(logs)])], tmp_path / "reports", jobs=1,
                              progress=False)
    assert [e["status"] for e in entries] == ["ok", "failed"]
    removes_bad = tiny_notebook(tmp_path, f"import os\nos.unlink({os.fsencode(bad)!r})", "removes_bad")
    [entry] = publish.publish([publish.Target("b", removes_bad, {}, [str(logs)])], tmp_path / "reports", jobs=1,
                              progress=False)
    assert entry["status"] == "failed" and entry["error"].startswith("the inputs changed") and not bad.exists()
    index = (tmp_path / "reports" / "index.html").read_text()
    assert "bad\\xff\\x1b[31m.log" in index and "\x1b" not in index
    assert publish.shown(os.fsdecode(b"bad\xff\x1b[31m.log")) == "bad\\xff\\x1b[31m.log"
    assert publish.shown("a\u202eb\tc\n") == "a\\u202eb\tc\n"  # a bidi control too; tabs and newlines stay


def test_one_reports_unexpected_error_never_stops_the_others(tmp_path):
    nb = tiny_notebook(tmp_path)
    gone = publish.Target("gone", tmp_path / "no_such.ipynb", {})  # its digest cannot be taken
    entries = publish.publish([gone, publish.Target("fine", nb, {})], tmp_path / "reports", jobs=1, progress=False)
    assert [e["status"] for e in entries] == ["failed", "ok"]
    assert "no_such.ipynb" in entries[0]["error"]


def test_unreadable_inputs_are_listed_and_the_publish_goes_on(tmp_path, monkeypatch):
    """A link into a `chmod 000` folder among the logs (simulated: the tests run as root): `is_file()`
    raised PermissionError and stopped every report of the command."""
    logs, locked = tmp_path / "logs", tmp_path / "locked"
    logs.mkdir()
    locked.mkdir()
    (logs / "a.log").write_text("x\n")
    (logs / "link.log").symlink_to(locked / "x.log")
    real = Path.stat

    def stat(self, *args, **kwargs):
        if locked in Path(os.path.realpath(self)).parents:
            raise PermissionError(13, "Permission denied", str(self))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Path, "stat", stat)
    target = publish.Target("t", tiny_notebook(tmp_path), {}, [str(logs)])
    listing = publish.input_files(target)
    assert listing[str(logs / "link.log")] == (-1, -1) and listing[str(logs / "a.log")][0] == 2
    [entry] = publish.publish([target], tmp_path / "reports", jobs=1, progress=False)
    assert entry["status"] == "ok", entry.get("error")


WRONG_ENTRIES = {
    "number": ('{"name": 3}', "field name"),
    "median": ('{"name": "x", "summary": {"best": {"value": [1]}}}', "field summary.best.value"),
    "summary": ('{"name": "x", "summary": "a text"}', "field summary"),
    "error": ('{"name": "x", "error": {"a": 1}}', "field error"),
    "deep": ("[" * 100000 + "]" * 100000, "nested too deeply"),
    "deeper": ('{"name": "x", "target": ' + "[" * 100000 + "]" * 100000 + "}", "nested too deeply"),
}


def test_wrong_entries_of_other_reports_are_shown_and_block_nothing(tmp_path):
    reports = tmp_path / "reports"
    for name, (text, _) in WRONG_ENTRIES.items():
        (reports / name).mkdir(parents=True)
        (reports / name / "entry.json").write_text(text)
    [entry] = publish.publish([publish.Target("tiny", tiny_notebook(tmp_path), {})], reports, jobs=1, progress=False)
    assert entry["status"] == "ok", entry
    index = (reports / "index.html").read_text()
    for name, (_, field) in WRONG_ENTRIES.items():
        row = index[index.index(f'href="{name}/report.html">{name}<'):].split("</tr>")[1]
        assert "unreadable" in index and f"{name}/entry.json" in row and field in row, (name, row)


def test_a_notebook_that_differs_from_its_text_source_is_refused(tmp_path):
    """A cell only in the .ipynb would run unseen by a reviewer who reads the .py."""
    for suffix in (".py", ".ipynb"):
        shutil.copy(publish.NOTEBOOKS / f"compare{suffix}", tmp_path / f"compare{suffix}")
    nb = nbformat.read(tmp_path / "compare.ipynb", as_version=4)
    nb.cells.insert(3, nbformat.v4.new_code_cell("import os; os.system('echo unseen')"))
    nbformat.write(nb, tmp_path / "compare.ipynb")
    target = publish.Target("c", tmp_path / "compare.ipynb", {"sources": ["a", "b"]})
    [entry] = publish.publish([target], tmp_path / "reports", jobs=1, progress=False)
    assert entry["status"] == "failed" and "compare.ipynb differs from its text source compare.py at cell 4" \
        in entry["error"] and "unseen" in entry["error"] and "jupytext --sync" in entry["error"]
    assert not (tmp_path / "reports" / "c" / "executed").exists()  # nothing ran
    assert publish.pair_difference(publish.NOTEBOOKS / "compare.ipynb") is None


def test_an_interrupted_publish_is_repaired_by_the_next(tmp_path, monkeypatch):
    """Killed while its pages were being written: the next publish executes the report again instead of
    keeping a truncated page under an entry that says the inputs did not change."""
    reports, nb = tmp_path / "reports", tiny_notebook(tmp_path)
    target = publish.Target("r", nb, {})
    [first] = publish.publish([target], reports, jobs=1, progress=False)
    full = (reports / "r" / "report.html").read_text()

    def killed(todo, reports, *args):
        (reports / "r" / "report.html").write_text(full[:100])  # what a kill during the write leaves
        raise KeyboardInterrupt
        yield

    monkeypatch.setitem(publish.EXECUTORS, "local", killed)
    with pytest.raises(KeyboardInterrupt):
        publish.publish([target], reports, jobs=1, force=True, progress=False)
    monkeypatch.undo()
    assert json.loads((reports / "r" / "entry.json").read_text())["status"] == "publishing"
    [again] = publish.publish([target], reports, jobs=1, progress=False)
    assert again["status"] == "ok" and not again.get("skipped") and again["executed"] != first["executed"]
    assert (reports / "r" / "report.html").read_text().endswith("</html>\n")


def test_the_index_is_written_whole_or_not_at_all(tmp_path):
    """A disk that fills while index.html is written (simulated by a file size limit) leaves the old page."""
    entry = {"name": "r", "status": "ok", "summary": {}}
    old = publish.write_index(tmp_path, [entry] * 50).read_text()
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (len(old) // 2, hard))
    try:
        with pytest.raises(OSError):
            publish.write_index(tmp_path, [dict(entry, name=f"r{i}") for i in range(100)])
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, handler)
    assert (tmp_path / "index.html").read_text() == old
    assert [p.name for p in tmp_path.iterdir()] == ["index.html"]  # no temporary file left


def test_two_folders_of_logs_with_the_same_name_never_replace_each_others_report(tmp_path):
    reports, nb = tmp_path / "reports", tiny_notebook(tmp_path)
    for side in ("a", "b"):
        (tmp_path / side / "run1").mkdir(parents=True)
    first = publish.Target("run1", nb, {}, [str(tmp_path / "a" / "run1")], default_name=True)
    second = publish.Target("run1", nb, {}, [str(tmp_path / "b" / "run1")], default_name=True)
    assert publish.publish([first], reports, jobs=1, progress=False)[0]["status"] == "ok"
    [refused] = publish.publish([second], reports, jobs=1, progress=False)
    assert refused["status"] == "refused" and "give --name NAME" in refused["error"]
    assert str(tmp_path / "a" / "run1") in refused["error"]
    assert json.loads((reports / "run1" / "entry.json").read_text())["target"]["inputs"] == first.inputs
    named = publish.Target("run1", nb, {}, [str(tmp_path / "b" / "run1")])  # --name run1: replaces it on purpose
    assert publish.publish([named], reports, jobs=1, progress=False)[0]["status"] == "ok"


def test_compare_sources_with_commas_reach_the_notebook_whole(tmp_path):
    a, b = tmp_path / "tf,1", tmp_path / "mx"
    shutil.copytree(FIXTURES / "ngc_tf1", a)
    shutil.copytree(FIXTURES / "ngc_mxnet", b)
    target = publish.for_comparison([str(a), str(b)], ["t,f", "mx"])
    assert target.parameters == {"sources": [str(a), str(b)], "labels": ["t,f", "mx"]} and target.name == "comparison"
    [entry] = publish.publish([target], tmp_path / "reports", jobs=1, progress=False)
    assert entry["status"] == "ok", entry.get("error")
    assert entry["summary"]["title"] == "comparison: t,f vs mx"
    assert entry["data"] == ["configurations"]  # no configuration measured by both: no ratios (data_files)
    assert {"t,f", "mx"} == {row["label"] for row in json.loads(
        (tmp_path / "reports" / "comparison" / "configurations.json").read_text())["rows"]}


@pytest.mark.parametrize(("option", "value"), [("--slurm-partition", "gpu\n#SBATCH --uid=0"),
                                               ("--slurm-account", "a;b"), ("--slurm-account", "a b")])
def test_slurm_values_that_a_job_script_would_read_are_refused(tmp_path, capsys, option, value):
    logs = tmp_path / "logs"
    logs.mkdir()
    code = cli.main(["publish", "--logs", str(logs), "--model", "resnet50_tf", "--reports", str(tmp_path / "r"),
                     "--executor", "slurm", option, value, "--quiet"])
    err = re.sub(r"\s+", " ", capsys.readouterr().err)
    assert code == 2 and option in err and "written into the job script" in err
    assert not list(tmp_path.rglob("*.sbatch"))


def test_names_printed_by_publish_carry_no_terminal_escapes(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(publish, "for_logs", lambda *a: publish.Target("r", tiny_notebook(tmp_path), {}))
    logs = tmp_path / "logs"
    logs.mkdir()
    code = cli.main(["publish", "--logs", str(logs), "--model", "resnet50_tf", "--reports",
                     str(tmp_path / "rep\x1b]0;owned\x07"), "--quiet"])
    out = capsys.readouterr().out
    assert code == 0 and "\x1b" not in out and "\x07" not in out and "rep\\x1b]0;owned\\x07" in re.sub(r"\s+", "", out)


@pytest.mark.parametrize(("compare", "labels", "message"), [
    (["tf", "mx"], ["one"], "--labels: 1 labels for 2 --compare folders; give one label per folder"),
    (["tf", "mx"], ["a", "b", "c"], "--labels: 3 labels for 2 --compare folders"),
    (["tf", "mx"], ["a", " "], "label 2 is empty"),
    (["tf", "mx"], ["a", "a "], "two folders have the same label"),
    (["tf"], None, "a comparison needs at least two folders"),
    (["tf", "nowhere"], None, "--compare: no such folder: "),
    ([], ["a", "b"], "--labels names the --compare folders"),
])
def test_compare_arguments_the_notebook_would_refuse_are_refused_before_anything_runs(tmp_path, capsys, monkeypatch,
                                                                                      compare, labels, message):
    """Issue 38 (15): a wrong --labels count was found only inside the notebook, after its kernel ran, and left a
    failed report in the index."""
    shutil.copytree(FIXTURES / "ngc_tf1", tmp_path / "tf")
    shutil.copytree(FIXTURES / "ngc_mxnet", tmp_path / "mx")
    monkeypatch.chdir(tmp_path)
    argv = ["publish", "--reports", str(tmp_path / "reports"), "--quiet"] + (["--compare", *compare] if compare else [])
    code = cli.main(argv + (["--labels", *labels] if labels else []))
    assert code == 2 and message in re.sub(r"\s+", " ", capsys.readouterr().err)
    assert not (tmp_path / "reports").exists()  # no kernel, no entry, no index
