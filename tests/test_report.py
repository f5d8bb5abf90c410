"""The notebooks' Report API on study folders: run tables, drift between repeats, failures."""

import copy
import json
import os
from pathlib import Path

import pytest

from benchbook.errors import BenchbookError
from benchbook.reports import machine, metrics, tables
from benchbook.reports.report import Report
from benchbook.reports.sections import failures
from benchbook.reports.sections import runs as run_section
from benchbook.runfolder import records
from conftest import CPU_STUDY as STUDY
from conftest import cpu_log_text as log_text

FIXTURES = Path(__file__).parent / "fixtures"
ROOT = Path(__file__).parent.parent


@pytest.fixture
def study_folder(tmp_path):
    (tmp_path / "s.yaml").write_text(STUDY)
    capture = json.loads((FIXTURES / "environment" / "dgx1_tf1_20.03.json").read_text())
    for repeat, driver in ((1, None), (2, "450.51.06")):
        run_id = f"cpu_fp32_bs8_syn_r{repeat}"
        d = tmp_path / "runs" / "s" / run_id
        d.mkdir(parents=True)
        (d / f"{run_id}.log").write_text(log_text(10.0 * repeat))
        env = copy.deepcopy(capture)
        if driver:
            env["gpus"]["driver"] = driver
            for dev in env["gpus"].get("devices", []):
                dev["driver"] = driver
        records.write(d / "run.json", {"run_id": run_id, "status": "complete", "log": f"{run_id}.log",
                                       "config": {"gpus": 0, "batch_size": 8, "precision": "fp32", "xla": False,
                                                  "repeat": repeat, "run_id": run_id},
                                       "environment": env, "ended_at": "x"})
    return tmp_path


def test_report_of_a_study_folder(study_folder):
    r = Report(study_folder / "s.yaml", runs_dir=study_folder / "runs")
    assert r.mode == "launch" and r.source == study_folder / "runs" / "s"
    runs = run_section.table(r)
    assert len(runs) == 2 and sorted(runs["recomputed images/s"]) == [10.0, 20.0]
    assert tables.published_layout(r.stats).shape[0] == 1 and machine.failures(r).empty
    assert r.summary().best.value == 15.0


def test_repeats_on_different_drivers_are_flagged(study_folder):
    drift = machine.drift(Report(study_folder / "s.yaml", runs_dir=study_folder / "runs"))
    assert "gpus.driver" in set(drift["field"])
    assert drift[drift["field"] == "gpus.driver"]["values"].iloc[0].endswith("450.51.06")


def test_earlier_attempts_are_not_results(study_folder):
    old = study_folder / "runs" / "s" / "cpu_fp32_bs8_syn_r1" / "attempts" / "1"
    old.mkdir(parents=True)
    (old / "cpu_fp32_bs8_syn_r1.log").write_text(log_text(99.0))
    assert len(run_section.table(Report(study_folder / "s.yaml", runs_dir=study_folder / "runs"))) == 2


def test_a_report_needs_a_source(tmp_path):
    with pytest.raises(BenchbookError, match="needs a study file"):
        Report()
    with pytest.raises(BenchbookError, match="no such folder"):
        Report(log_dir=tmp_path / "nope").analysis  # noqa: B018


def test_the_description_says_where_the_published_numbers_come_from(study_folder):
    r = Report(study_folder / "s.yaml", runs_dir=study_folder / "runs", reference="ngc_mxnet_resnet50")
    published = machine.describe(r).loc["published in", "value"]
    assert published.startswith("NGC MXNet ResNet50 v1.5") and published.endswith(
        "/ResNet50V1.5/OtherReports/MxNet/README.md)")
    plain = Report(study_folder / "s.yaml", runs_dir=study_folder / "runs")
    assert machine.describe(plain).loc["published in", "value"] == "-"


def test_a_run_whose_record_cannot_be_read_is_a_problem_and_its_log_still_counts(study_folder):
    d = study_folder / "runs" / "s" / "cpu_fp32_bs8_syn_r2"
    (d / "run.json").write_text('{"run_id": "cpu_fp32_bs8_syn_r2", "stat')  # truncated by a full disk
    r = Report(study_folder / "s.yaml", runs_dir=study_folder / "runs")
    assert len(run_section.table(r)) == 2  # the log of the unreadable record is analyzed, not dropped
    problems = failures.problems(r)
    assert list(problems["file"]) == ["cpu_fp32_bs8_syn_r2"] and "run.json" in problems["problem"].iloc[0]
    assert r.summary().problems == 1


def test_a_finished_run_whose_log_is_gone_is_a_problem(study_folder):
    (study_folder / "runs" / "s" / "cpu_fp32_bs8_syn_r1" / "cpu_fp32_bs8_syn_r1.log").unlink()
    r = Report(study_folder / "s.yaml", runs_dir=study_folder / "runs")
    assert len(run_section.table(r)) == 1
    assert "log is missing" in failures.problems(r)["problem"].iloc[0] and r.summary().problems == 1


def test_scaling_and_reproduction_are_unrounded_the_views_round(tmp_path, monkeypatch):
    # The MXNet fixture's 1-GPU AMP bs64 median is 605.0686... (test_views shows it as 605.069 against a
    # 3-decimal published number): the frames keep every digit, so that a table and the headline, which
    # both round the same number once, cannot read 23779.71 and 23779.70.
    text = (ROOT / "params" / "references" / "ngc_mxnet_resnet50.yaml").read_text()
    (tmp_path / "one.yaml").write_text(text[:text.index("rows:")] + "rows:\n  - {gpus: 1, batch_size: 64, "
                                                                   "precision: amp, throughput: 605.1}\n")
    monkeypatch.setenv("BENCHBOOK_REFERENCES", str(tmp_path))
    r = Report(log_dir=FIXTURES / "ngc_mxnet", reference="one")
    stats = r.stats.set_index(["gpus", "batch_size", "precision"])["median"]
    assert round(stats[(1, 64, "amp")], 3) != stats[(1, 64, "amp")]
    measured = r.reproduction().dropna(subset=["measured"])
    assert len(measured) and all(m == stats[(g, b, p)] for m, g, b, p in
                                 zip(measured["measured"], measured["gpus"], measured["batch_size"],
                                     measured["precision"], strict=True))


def test_the_setup_of_a_cpu_study_names_the_python_it_uses(tmp_path, monkeypatch):
    import os
    import sys

    monkeypatch.setenv("BENCHBOOK_ENVS", str(tmp_path / "envs"))  # no environment built there
    monkeypatch.delenv("BENCHBOOK_PYTHON_TENSORFLOW", raising=False)
    (tmp_path / "built.yaml").write_text(STUDY)
    row = machine.setup(Report(tmp_path / "built.yaml", runs_dir=tmp_path / "runs")).iloc[0]
    assert (row["need"], bool(row["ready"]), row["how"]) == ("tensorflow CPU environment", False,
                                                      "created by the first run (pinned requirements)")
    (tmp_path / "named.yaml").write_text(STUDY.replace("name: s\n", f"name: n\npython: {sys.executable}\n"))
    row = machine.setup(Report(tmp_path / "named.yaml", runs_dir=tmp_path / "runs")).iloc[0]
    assert (row["need"], bool(row["ready"])) == ("tensorflow Python", True)
    root = str(Path(__file__).resolve().parents[1])
    shown = os.path.relpath(sys.executable, root) if sys.executable.startswith(root + "/") else sys.executable
    assert row["how"] == f"{shown}, named by the study's `python` (used as it is, nothing installed)"
    assert not row["how"].startswith(root)  # a shared report names no folder of this machine
    missing = tmp_path / "no-python"
    monkeypatch.setenv("BENCHBOOK_PYTHON_TENSORFLOW", str(missing))
    row = machine.setup(Report(tmp_path / "built.yaml", runs_dir=tmp_path / "runs")).iloc[0]
    assert not row["ready"] and row["how"] == (f"{missing}, named by BENCHBOOK_PYTHON_TENSORFLOW (used as it "
                                               f"is, nothing installed): not an executable file")
    assert not os.path.exists(tmp_path / "envs")  # nothing was built to say so


def test_the_environment_of_a_cpu_study_is_captured_with_the_python_it_names(tmp_path, monkeypatch):
    import sys

    from benchbook.environment import capture

    asked = []
    monkeypatch.setattr(capture, "capture", lambda python=None: asked.append(python) or {"hostname": "h"})
    monkeypatch.setenv("BENCHBOOK_ENVS", str(tmp_path / "envs"))
    monkeypatch.delenv("BENCHBOOK_PYTHON_TENSORFLOW", raising=False)
    (tmp_path / "named.yaml").write_text(STUDY.replace("name: s\n", f"name: n\npython: {sys.executable}\n"))
    (tmp_path / "built.yaml").write_text(STUDY)
    assert machine.capture(Report(tmp_path / "named.yaml", runs_dir=tmp_path / "runs")) == {"hostname": "h"}
    machine.capture(Report(tmp_path / "built.yaml", runs_dir=tmp_path / "runs"))  # noqa: B018 -- no environment built yet
    assert asked == [sys.executable, None]


def _unexaminable(monkeypatch, folder: Path):
    """What a link into a `chmod 000` folder does for a user who is not root (the tests run as root):
    `stat` of any path under `folder` raises PermissionError."""
    real = Path.stat

    def stat(self, *args, **kwargs):
        target = Path(os.path.realpath(self))  # where a link leads
        if target == folder or folder in target.parents:
            raise PermissionError(13, "Permission denied", str(self))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Path, "stat", stat)


def test_a_log_that_cannot_be_examined_is_a_problem_and_the_report_goes_on(study_folder, monkeypatch):
    """A failed run's log that is a link into a folder without permission: `exists()` raised PermissionError,
    which aborted the whole report; now it is a problem row and the other run is analyzed."""
    locked = study_folder / "locked"
    locked.mkdir()
    (locked / "elsewhere.log").write_text(log_text(30.0))
    run = study_folder / "runs" / "s" / "cpu_fp32_bs8_syn_r2"
    rec = records.read_json(run / "run.json")
    records.write(run / "run.json", dict(rec, status="failed"))  # its log is read from the logs alone
    (run / "cpu_fp32_bs8_syn_r2.log").unlink()
    (run / "cpu_fp32_bs8_syn_r2.log").symlink_to(locked / "elsewhere.log")
    _unexaminable(monkeypatch, locked)
    r = Report(study_folder / "s.yaml", runs_dir=study_folder / "runs")
    assert sorted(run_section.table(r)["recomputed images/s"]) == [10.0]
    problems = failures.problems(r)
    row = problems[problems["file"] == str(run / "cpu_fp32_bs8_syn_r2.log")]
    assert len(row) == 1 and "cannot be examined (Permission denied)" in row["problem"].iloc[0]
    assert r.summary().problems >= 1 and r.summary().runs == 1


def test_the_machine_is_captured_once_per_study_where_a_run_record_holds_it(study_folder, monkeypatch):
    """A run captured on this machine already holds its environment: the report uses it instead of a new
    capture (seconds of every launch-mode report); records of another machine do not count."""
    import socket

    from benchbook.environment import capture

    def no_capture(**_):
        raise AssertionError("captured again")

    path = study_folder / "runs" / "s" / "cpu_fp32_bs8_syn_r2" / "run.json"
    rec = records.read_json(path)
    rec["environment"]["hostname"] = socket.gethostname()
    records.write(path, rec)
    monkeypatch.setattr(capture, "capture", no_capture)
    r = Report(study_folder / "s.yaml", runs_dir=study_folder / "runs")
    assert machine.capture(r)["hostname"] == socket.gethostname() and len(machine.environment(r))
    elsewhere = study_folder / "elsewhere"
    (elsewhere / "s").mkdir(parents=True)
    other = Report(study_folder / "s.yaml", runs_dir=elsewhere)
    assert "captured again" in machine.capture(other).get("capture_error", "")  # no record here: captured anew


def test_a_report_is_data_the_analysis_statistics_and_reference_comparison():
    """Issue 35: at most 15 public members beside the documented frames a user builds on (issue 46: runs,
    iterations, measures), and no subprocess: launching a study is studies.follow's, and what a page says of the
    machine, the set-up and the failures is reports.machine's."""
    import ast
    import inspect

    from benchbook.reports import report

    public = [name for name, _ in inspect.getmembers(Report) if not name.startswith("_")]
    assert {"runs", "iterations", "evaluations", "measures"} <= set(public)
    public = [name for name in public if name not in ("runs", "iterations", "evaluations", "measures")]
    assert len(public) <= 15, public
    tree = ast.parse(inspect.getsource(report))
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom) for a in n.names}
    imported |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert not {"subprocess", "time", "socket", "shutil"} & imported, imported


def test_the_runs_table_names_each_run_by_its_log_inside_the_archive_or_folder(tmp_path):
    """A run read from `logs.tar.xz!set/tf_gpu1_amp_bs256.log` is `set/tf_gpu1_amp_bs256.log:0`, not the
    archive and its folder (`logs.tar.xz!set:0`, which names no file); in a folder, the path below it."""
    import tarfile

    log = FIXTURES / "ngc_tf1" / "tf_gpu1_amp_bs256.log"
    with tarfile.open(tmp_path / "logs.tar.xz", "w:xz") as archive:
        archive.add(log, arcname="set/tf_gpu1_amp_bs256.log")
    named = run_section.table(Report(log_dir=tmp_path / "logs.tar.xz"))
    assert list(named.iloc[:, 0]) == ["set/tf_gpu1_amp_bs256.log:0"]
    (tmp_path / "folder" / "set").mkdir(parents=True)
    (tmp_path / "folder" / "set" / log.name).write_bytes(log.read_bytes())
    assert list(run_section.table(Report(log_dir=tmp_path / "folder")).iloc[:, 0]) == ["set/tf_gpu1_amp_bs256.log:0"]


def test_a_log_cut_before_its_summary_keeps_its_number_where_the_logs_are_someone_elses(tmp_path):
    """A publisher's log that stops before its end-of-run summary gave a published number by its logged
    records (NGC TF1 BERT's V100 FP32 1-GPU log): an analysis-only report counts it, as `summarize` does,
    and says how many such runs each configuration holds; our own runs count only when complete."""
    cut = "\n".join(line for line in log_text(10.0).splitlines() if "Summary" not in line) + "\n"
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "cut.log").write_text(cut)
    r = Report(log_dir=tmp_path / "logs")
    assert list(r.analysis.runs["status"]) == ["incomplete"]
    assert list(r.stats["runs"]) == [1] and list(r.stats["incomplete"]) == [1]
    assert r.stats["median"].iloc[0] == pytest.approx(r.analysis.runs["recomputed_throughput"].iloc[0])
    assert metrics.aggregate(r.analysis.runs).empty  # a study's own runs: complete ones only
