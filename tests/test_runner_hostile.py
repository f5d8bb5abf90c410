"""Runs on a shared machine (issue 21, 1, 5, 6, 9): resume never kills a stranger's process, dead runs
show as abandoned, unreadable records show as problems, a full disk and repeated signals leave
consistent records."""

import errno
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from benchbook.studies import failures, liveness, records, runner
from benchbook.studies.commands import Command
from benchbook.studies.launchers import process
from test_runner import alive, drive, make, wait_for_running


def dead_process() -> dict:
    """The identity of a process that has ended (its PID may be anyone's by now)."""
    p = subprocess.Popen(["true"])
    ident = liveness.identity(p.pid)
    p.wait()
    return ident


def stranger() -> subprocess.Popen:
    """Someone else's job: `setsid sleep`, its own process group."""
    return subprocess.Popen(["sleep", "60"], start_new_session=True)


def left_running(tmp_path, launcher: dict, child: dict | None, child_pid: int | None):
    """A study folder whose second run was left `running` by a launcher that died."""
    s = make(tmp_path, **{"repeats: 2": "repeats: 1", "batch_size: [8, 16]": "batch_size: 8"})
    out = tmp_path / "runs"
    runner.run_study(s, out, progress=False)
    folder = out / s.name
    (run_id,) = records.find(folder)
    path = folder / run_id / records.RECORD
    rec = records.read(path)
    rec.update(status="running", failure=None, child_pid=child_pid, launcher=launcher,
               **({"child": child} if child else {}))
    records.write(path, rec)
    return s, out, folder / run_id


def test_resume_never_kills_a_process_that_reused_the_pid(tmp_path, fake):
    other = stranger()
    try:
        ident = dict(liveness.identity(other.pid), start_ticks=liveness.start_ticks(other.pid) - 1)
        s, out, run_dir = left_running(tmp_path, {"hostname": socket.gethostname(), "pid": 1,
                                                  "identity": dead_process()}, ident, other.pid)
        said = []
        results = runner.run_study(s, out, resume=True, progress=False, say=said.append)
        time.sleep(0.3)
        assert other.poll() is None and alive(other.pid)  # the stranger still runs
        assert results[run_dir.name]["status"] == "complete"
        old = records.read(run_dir / "attempts" / "1" / records.RECORD)
        assert old["status"] == "abandoned" and "now names another process, left alone" in old["failure"]["detail"]
    finally:
        other.kill()
        other.wait()


def test_resume_leaves_a_run_of_another_host_alone(tmp_path, fake):
    launcher = {"hostname": "node-b", "pid": 4242,
                "identity": {"host": "node-b", "boot_id": "x", "pid": 4242, "start_ticks": 7}}
    child = {"host": "node-b", "boot_id": "x", "pid": os.getpid(), "start_ticks": 9}
    s, out, run_dir = left_running(tmp_path, launcher, child, os.getpid())
    said = []
    results = runner.run_study(s, out, resume=True, progress=False, say=said.append)
    assert results[run_dir.name]["status"] == "running"
    assert records.read(run_dir / records.RECORD)["launcher"]["hostname"] == "node-b"  # untouched
    assert not (run_dir / "attempts").exists()
    frame = records.table(run_dir.parent)
    assert frame.loc[0, "status"] == "running" and "launched on node-b (pid 4242)" in frame.loc[0, "problem"]


def test_resume_stops_what_is_left_of_its_own_run(tmp_path, fake):
    orphan = stranger()  # stands for the run's training, its launcher killed
    try:
        s, out, run_dir = left_running(tmp_path, {"hostname": socket.gethostname(), "pid": 1,
                                                  "identity": dead_process()},
                                       liveness.identity(orphan.pid), orphan.pid)
        results = runner.run_study(s, out, resume=True, progress=False, say=lambda m: None)
        assert orphan.wait(timeout=10) == -signal.SIGKILL
        assert results[run_dir.name]["status"] == "complete"
        old = records.read(run_dir / "attempts" / "1" / records.RECORD)
        assert old["status"] == "abandoned" and f"process group {orphan.pid} stopped" in old["failure"]["detail"]
    finally:
        if orphan.poll() is None:
            orphan.kill()


def test_status_tells_a_dead_run_from_a_live_one(tmp_path, fake):
    s, out, run_dir = left_running(tmp_path, {"hostname": socket.gethostname(), "pid": 1,
                                              "identity": dead_process()}, dead_process(), None)
    frame = records.table(run_dir.parent)
    assert list(frame["status"]) == ["abandoned"] and "--resume runs it again" in frame.loc[0, "problem"]
    rec = records.read(run_dir / records.RECORD)
    rec["launcher"]["identity"] = liveness.identity(os.getpid())  # this very process: alive
    records.write(run_dir / records.RECORD, rec)
    assert list(records.table(run_dir.parent)["status"]) == ["running"]


def test_unreadable_records_and_missing_logs_are_problems_not_dropped(tmp_path, fake):
    s = make(tmp_path, **{"repeats: 2": "repeats: 1"})
    runner.run_study(s, tmp_path / "runs", progress=False)
    folder = tmp_path / "runs" / s.name
    (folder / "cpu_fp32_bs8_syn_r1" / records.RECORD).write_text('{"status": "comp')  # truncated
    (folder / "cpu_fp32_bs16_syn_r1" / "cpu_fp32_bs16_syn_r1.log").unlink()
    frame = records.table(folder).set_index("run_id")
    assert len(frame) == 2
    assert frame.loc["cpu_fp32_bs8_syn_r1", "status"] == "unreadable"
    assert "run.json: not a readable run record" in frame.loc["cpu_fp32_bs8_syn_r1", "problem"]
    assert "cpu_fp32_bs16_syn_r1.log: the run's log is missing" in frame.loc["cpu_fp32_bs16_syn_r1", "problem"]
    assert len(records.problems(folder)) == 2


def test_a_full_disk_stops_the_run_and_says_so(tmp_path):
    log = tmp_path / "x.log"
    log.symlink_to("/dev/full")  # every write: ENOSPC
    t0 = time.monotonic()
    end = process.execute(Command([sys.executable, "-c", "import time\nwhile True: print('x' * 1000, flush=True)"]),
                          log, no_progress=120)
    assert time.monotonic() - t0 < 20  # not the no_progress limit
    assert end.write_error["errno"] == errno.ENOSPC and end.write_error["path"] == str(log)
    status, failure = failures.classify(end, [])
    assert status == "failed" and failure["cause"] == "disk_full" and str(log) in failure["detail"]


def test_a_record_that_cannot_be_written_at_the_end_says_disk_full(tmp_path, fake, monkeypatch):
    s = make(tmp_path, **{"repeats: 2": "repeats: 1", "batch_size: [8, 16]": "batch_size: 8"})
    real = records.write

    def full_at_the_end(path, record):
        if record.get("status") not in (None, "running") and path.name == records.RECORD:
            raise records.StorageError(errno.ENOSPC, f"cannot write {path}: No space left on device", str(path))
        return real(path, record)

    monkeypatch.setattr(records, "write", full_at_the_end)
    with pytest.raises(records.StorageError, match="No space left on device"):
        runner.run_study(s, tmp_path / "runs", progress=False)
    rec = records.read(tmp_path / "runs" / s.name / "cpu_fp32_bs8_syn_r1" / records.RECORD)
    assert rec["status"] == "failed" and rec["failure"]["cause"] == "disk_full"
    assert "No space left on device" in rec["failure"]["detail"]


def test_records_are_as_readable_as_the_logs(tmp_path, monkeypatch):
    monkeypatch.setattr(records, "_UMASK", 0o022)  # the umask the process started with
    records.write(tmp_path / "run.json", {"status": "running", "config": {}})
    assert (tmp_path / "run.json").stat().st_mode & 0o777 == 0o644


@pytest.mark.parametrize("signals", [[signal.SIGHUP], [signal.SIGINT] * 3], ids=["SIGHUP", "three-Ctrl-C"])
def test_hangup_and_repeated_ctrl_c_record_interrupted(tmp_path, signals):
    s = make(tmp_path, "{behave: stubborn}", **{"repeats: 2": "repeats: 1", "iterations: 6": "iterations: 60"})
    folder = tmp_path / "runs" / s.name
    proc = drive(tmp_path, str(s.path))
    try:
        running = wait_for_running(folder)
        time.sleep(0.5)
        t0 = time.monotonic()
        for sig in signals:
            proc.send_signal(sig)
            time.sleep(0.3)
        proc.wait(timeout=40)  # SIGINT, 10 s, SIGTERM, 5 s, SIGKILL for a single signal
    finally:
        if proc.poll() is None:
            proc.kill()
    if len(signals) > 1:
        assert time.monotonic() - t0 < 9  # the second Ctrl-C skips the 10 s grace of the first
    rec = records.read(folder / running["run_id"] / records.RECORD)
    assert rec["status"] == "interrupted" and rec["failure"]["cause"] == "interrupted"
    time.sleep(0.5)
    assert not alive(running["child_pid"])


@pytest.mark.parametrize("job_name, cancels", [("s.cpu_r1", True), ("someone-else", False)])
def test_slurm_abandon_cancels_only_the_runs_own_job(monkeypatch, job_name, cancels):
    from benchbook.studies.launchers import slurm

    line = f"JobId=77 JobName={job_name} JobState=RUNNING ExitCode=0:0 NodeList=n1"
    monkeypatch.setattr(slurm, "_call", lambda argv, **kw: subprocess.CompletedProcess(argv, 0, line, ""))
    cancelled = []
    monkeypatch.setattr(slurm.Slurm, "_cancel", lambda self, job, reader: cancelled.append(job))
    said = slurm.Slurm().abandon({"slurm_job_id": "77", "study": "s", "run_id": "cpu_r1"})
    assert cancelled == (["77"] if cancels else [])
    assert said == ("slurm job 77 cancelled" if cancels else
                    "slurm job 77 is now 'someone-else', not this run's 's.cpu_r1': left alone")
