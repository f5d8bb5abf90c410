"""Running studies for real (with a fake CPU workload): records, failures, interrupts and resume."""

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchbook.logs import analysis
from benchbook.runfolder import records
from benchbook.studies import runner, study
from benchbook.studies.commands import Command
from benchbook.studies.study import StudyError

FIXTURES = Path(__file__).parent / "fixtures" / "runner"

STUDY = """\
schema_version: 1
model: resnet50_tf
runtime: cpu
sweep:
  batch_size: [8, 16]
  data: synthetic
repeats: 2
iterations: 6
warmup_steps: 2
timeout: {timeout}
options: {options}
"""


def make(tmp_path, options="{}", timeout="60", **subs):
    text = STUDY.format(options=options, timeout=timeout)
    for old, new in subs.items():
        text = text.replace(old, new)
    p = tmp_path / "fake.yaml"
    p.write_text(text)
    return study.load(p)


def test_a_study_runs_every_configuration_and_repeat(tmp_path, fake):
    s = make(tmp_path)
    results = runner.run_study(s, tmp_path / "runs", progress=False)
    assert len(results) == 4 and all(r["status"] == "complete" for r in results.values())
    folder = tmp_path / "runs" / s.name
    rec = records.read(folder / "cpu_fp32_bs8_syn_r1" / "run.json")
    assert rec["command"][:2] == [sys.executable, str(fake)]
    assert rec["config"]["batch_size"] == 8 and rec["config"]["repeat"] == 1
    assert rec["exit_code"] == 0 and rec["failure"] is None and rec["ended_at"] and rec["duration_s"] > 0
    assert rec["analysis"][0]["recomputed_throughput"] == pytest.approx(103.5)  # mean of 102..105
    assert rec["analysis"][0]["reported_throughput"] == pytest.approx(103.5)
    assert "--seed" in rec["command"] and rec["command_line"].startswith(sys.executable)
    meta = json.loads((folder / "study.json").read_text())
    assert meta["study_text"] == s.path.read_text() and len(meta["runs"]) == 4
    # The study folder analyzes on its own: every run complete, metadata from log and record.
    result = analysis.analyze([folder])
    assert len(result.runs) == 4 and set(result.runs["status"]) == {"complete"}
    assert (result.runs["recomputed_throughput"] > 0).all()
    assert sorted(result.runs["repeat"]) == [1, 1, 2, 2]
    assert result.runs["warnings"].map(len).sum() == 0


@pytest.mark.parametrize("options, cause, detail", [
    ("{behave: crash}", "crash", "exit code 3: RuntimeError: boom"),
    ("{behave: oom}", "out_of_memory", "OOM when allocating"),
    ("{behave: exit0_no_summary}", "missing_output", "incomplete"),
])
def test_failures_are_classified_and_the_study_goes_on(tmp_path, fake, options, cause, detail):
    s = make(tmp_path, options)
    results = runner.run_study(s, tmp_path / "runs", progress=False)
    assert len(results) == 4  # every run was attempted
    for rec in results.values():
        assert rec["status"] == "failed" and rec["failure"]["cause"] == cause
        assert detail in rec["failure"]["detail"]
        assert rec["failure"]["last_lines"]  # the end of the log is kept in the record
        assert (tmp_path / "runs" / s.name / rec["run_id"] / f"{rec['run_id']}.log").stat().st_size > 0


def test_timeout_and_no_progress_stop_the_run(tmp_path, fake):
    s = make(tmp_path, "{behave: hang}", timeout="2", **{"batch_size: [8, 16]": "batch_size: 8", "repeats: 2": ""})
    t = time.monotonic()
    (rec,) = runner.run_study(s, tmp_path / "runs", progress=False).values()
    assert rec["failure"]["cause"] == "timeout" and time.monotonic() - t < 30
    s2 = make(tmp_path, "{behave: silent}", **{"batch_size: [8, 16]": "batch_size: 8", "repeats: 2": "",
                                               "timeout: 60": "timeout: 60\nno_progress: 2"})
    (rec2,) = runner.run_study(s2, tmp_path / "runs2", progress=False).values()
    assert rec2["failure"]["cause"] == "no_progress"


def test_existing_study_folder_needs_resume(tmp_path, fake):
    s = make(tmp_path)
    runner.run_study(s, tmp_path / "runs", progress=False)
    with pytest.raises(StudyError, match="already holds 4 runs .4 complete.*--resume"):
        runner.run_study(s, tmp_path / "runs", progress=False)


def test_resume_redoes_only_what_is_not_complete(tmp_path, fake):
    s = make(tmp_path)
    out = tmp_path / "runs"
    runner.run_study(s, out, progress=False)
    folder = out / s.name
    keep = folder / "cpu_fp32_bs8_syn_r1" / "run.json"
    before = keep.read_bytes()
    failed = folder / "cpu_fp32_bs16_syn_r2"
    rec = records.read(failed / "run.json")
    records.write(failed / "run.json", dict(rec, status="failed"))
    import shutil
    shutil.rmtree(folder / "cpu_fp32_bs8_syn_r2")
    results = runner.run_study(s, out, resume=True, progress=False)
    assert all(r["status"] == "complete" for r in results.values()) and len(results) == 4
    assert keep.read_bytes() == before  # complete runs are never touched
    assert (failed / "attempts" / "1" / "run.json").is_file()  # the earlier attempt is kept
    assert records.read(failed / "attempts" / "1" / "run.json")["status"] == "failed"


def _ignore_sigint():
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def drive(tmp_path, *args, sigint_ignored=False):
    """`benchbook run` in its own process group; `sigint_ignored` starts it as `cmd &` in a script does."""
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).parents[1] / "lib"))
    return subprocess.Popen([sys.executable, str(FIXTURES / "drive.py"), "run", *args, "--out",
                             str(tmp_path / "runs"), "--quiet"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=_ignore_sigint if sigint_ignored else None)


def wait_for_running(folder: Path, timeout=30.0) -> dict:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        for rec in records.find(folder).values():
            if rec["status"] == "running" and rec.get("child_pid"):
                return rec
        time.sleep(0.1)
    raise AssertionError("no run started")


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    state = subprocess.run(["ps", "-o", "stat=", "-p", str(pid)], capture_output=True, text=True).stdout.strip()
    return bool(state) and not state.startswith("Z")  # a zombie is dead, just not reaped yet


@pytest.mark.parametrize("sig, sigint_ignored",
                         [(signal.SIGINT, False), (signal.SIGKILL, False), (signal.SIGINT, True)],
                         ids=["SIGINT", "SIGKILL", "SIGINT-background"])
def test_killed_study_resumes_without_redoing_or_losing_runs(tmp_path, sig, sigint_ignored):
    s = make(tmp_path, "{behave: slow}", **{"repeats: 2": "repeats: 1", "iterations: 6": "iterations: 3",
                                             "warmup_steps: 2": "warmup_steps: 1"})
    folder = tmp_path / "runs" / s.name
    first = drive(tmp_path, str(s.path), sigint_ignored=sigint_ignored)
    try:
        # Let the first run finish, then kill the study during the second.
        end = time.monotonic() + 60
        while sum(r["status"] == "complete" for r in records.find(folder).values()) < 1:
            assert time.monotonic() < end and first.poll() is None, first.communicate()
            time.sleep(0.1)
        running = wait_for_running(folder)
        os.killpg(first.pid, sig) if sig == signal.SIGKILL else first.send_signal(sig)
        first.wait(timeout=30)
    finally:
        if first.poll() is None:
            first.kill()
    if sig == signal.SIGINT:
        assert first.returncode == 130
        rec = records.find(folder)[running["run_id"]]
        assert rec["status"] == "interrupted" and rec["failure"]["cause"] == "interrupted"
    else:
        assert records.find(folder)[running["run_id"]]["status"] == "running"
    time.sleep(0.5)
    assert not alive(running["child_pid"])  # no orphan training left behind
    done_before = {k: (folder / k / "run.json").read_bytes() for k, r in records.find(folder).items()
                   if r["status"] == "complete"}
    second = drive(tmp_path, str(s.path), "--resume")
    out, err = second.communicate(timeout=120)
    assert second.returncode == 0, err
    final = records.find(folder)
    assert len(final) == 2 and all(r["status"] == "complete" for r in final.values())
    for k, data in done_before.items():
        assert (folder / k / "run.json").read_bytes() == data
    assert (folder / running["run_id"] / "attempts" / "1").is_dir()


def test_execute_tees_output_and_keeps_the_tail(tmp_path):
    seen = []
    log = tmp_path / "x.log"
    end = runner.execute(Command([sys.executable, "-c", "import sys\nfor i in range(100): print(i)\n"
                                  "sys.stderr.write('bad\\n'); sys.exit(2)"]), log, echo=seen.append)
    assert end.exit_code == 2 and end.tail[-1] == "bad" and len(end.tail) == 50
    assert seen[:3] == ["0", "1", "2"] and log.read_text().splitlines()[-1] == "bad"


def test_records_are_written_atomically(tmp_path):
    p = tmp_path / "run.json"
    records.write(p, {"status": "running", "config": {"a": float("nan")}})
    assert records.read(p)["config"]["a"] is None
    assert list(tmp_path.iterdir()) == [p]
    p.write_text("{not json")
    with pytest.raises(records.RecordError, match="run.json: not a readable run record"):
        records.read(p)


def test_one_launcher_per_study_folder(tmp_path, fake):
    """While one `benchbook run` runs the study, a second launcher (here a resume in this process) is
    refused with who runs it, and touches nothing; when the first one ends the folder is free."""
    s = make(tmp_path, "{behave: hang}", **{"repeats: 2": "repeats: 1", "batch_size: [8, 16]": "batch_size: 8"})
    out = tmp_path / "runs"
    assert runner.busy(s, out) is None
    first = drive(tmp_path, str(s.path))
    try:
        running = wait_for_running(out / s.name)
        assert runner.busy(s, out) == f"pid {first.pid} on {socket.gethostname()}"
        with pytest.raises(runner.StudyBusy, match=f"is being run by pid {first.pid} on "):
            runner.run_study(s, out, resume=True, progress=False)
        assert records.find(out / s.name)[running["run_id"]] == running  # the running run untouched
        first.send_signal(signal.SIGINT)
        first.wait(timeout=30)
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    assert first.returncode == 130 and runner.busy(s, out) is None


def test_progress_in_a_log_is_a_plain_line_per_run_with_the_time_left(tmp_path, fake, capsys):
    """`make report > log` (stderr not a terminal): no bar redrawn with carriage returns, but a line per run
    saying which of how many and, once one has ended, about how long the rest will take."""
    s = make(tmp_path)
    runner.run_study(s, tmp_path / "runs", progress=True)
    out = capsys.readouterr()
    assert "\r" not in out.out + out.err
    said = [line for line in out.out.splitlines() if line.startswith(f"{s.name}: run ")]
    planned = [r[0] for r in runner.plan(s, tmp_path / "runs")]
    assert [line.split(" ...")[0] for line in said] == [f"{s.name}: run {i}/4 {r}" for i, r in enumerate(planned, 1)]
    assert "left" not in said[0] and all(re.search(r" ~\d+ s left$", line) for line in said[1:])


def test_time_left_is_the_mean_run_so_far_times_the_runs_to_go():
    assert runner.left(30.0, 2, 3) == " ~45 s left"
    assert runner.left(0.0, 0, 4) == ""


@pytest.mark.parametrize(("device", "imported"), [("cpu", False), ("cuda", True)])
def test_a_cpu_study_lists_its_frameworks_without_importing_them(tmp_path, fake, monkeypatch, device, imported):
    """Importing a framework in the capture only reads its CUDA build: a study on the CPU is spared it."""
    from benchbook.environment import capture

    seen = []
    monkeypatch.setattr(capture, "capture", lambda **kwargs: seen.append(kwargs) or {"host": {}})
    s = make(tmp_path)
    s = s.model_copy(update={"cpu": s.cpu.model_copy(update={"device": device})})
    runner.run_study(s, tmp_path / "runs", only=lambda run_id: False, progress=False)
    assert [k["import_frameworks"] for k in seen] == [imported]
