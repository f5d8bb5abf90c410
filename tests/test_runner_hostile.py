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
from pathlib import Path

import pytest

from benchbook.runfolder import liveness, records
from benchbook.studies import failures, runner
from benchbook.studies.commands import Command
from benchbook.studies.launchers import process
from test_runner import alive, drive, make, wait_for_running


def dead_process() -> dict:
    """The identity of a process that has ended (its PID may be anyone's by now)."""
    p = subprocess.Popen(["true"])
    ident = liveness.identity(p.pid)
    p.wait()
    return ident


TOKEN = "5eed" * 8  # a run's token, as the runner puts it in the child's environment and record


def stranger(token: str | None = None) -> subprocess.Popen:
    """Someone else's job: `setsid sleep`, its own process group (with a run's token: the run's own child)."""
    env = {**os.environ, "BENCHBOOK_RUN_TOKEN": token} if token else None
    return subprocess.Popen(["sleep", "60"], start_new_session=True, env=env)


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
    orphan = stranger(TOKEN)  # stands for the run's training, its launcher killed
    try:
        s, out, run_dir = left_running(tmp_path, {"hostname": socket.gethostname(), "pid": 1,
                                                  "identity": dead_process()},
                                       {**liveness.identity(orphan.pid), "token": TOKEN}, orphan.pid)
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
    log = Path("/dev/full")  # every write: ENOSPC (a log is never opened through a link: this device itself)
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


@pytest.mark.parametrize("job_name, uid, said", [
    ("s.cpu_r1", os.getuid(), "slurm job 77 cancelled"),
    ("someone-else", os.getuid(), "slurm job 77 is now 'someone-else', not this run's 's.cpu_r1': left alone"),
    ("s.cpu_r1", os.getuid() + 1, f"slurm job 77 belongs to 'other({os.getuid() + 1})', not to this user "
                                  f"(uid {os.getuid()}): left alone"),
], ids=["its-own", "another-name", "another-user"])
def test_slurm_abandon_cancels_only_the_runs_own_job(monkeypatch, job_name, uid, said):
    """The job's name is the run's, and the job is the user's: root's scancel would cancel anyone's."""
    from benchbook.studies.launchers import slurm

    line = f"JobId=77 JobName={job_name} UserId=other({uid}) JobState=RUNNING ExitCode=0:0 NodeList=n1"
    monkeypatch.setattr(slurm, "_call", lambda argv, **kw: subprocess.CompletedProcess(argv, 0, line, ""))
    cancelled = []
    monkeypatch.setattr(slurm.Slurm, "_cancel", lambda self, job, reader: cancelled.append(job))
    assert slurm.Slurm().abandon({"slurm_job_id": "77", "study": "s", "run_id": "cpu_r1"}) == said
    assert cancelled == (["77"] if said.endswith("cancelled") else [])


def test_the_run_s_child_carries_the_token_its_record_holds(tmp_path):
    seen = {}
    end = process.execute(Command([sys.executable, "-c", "import os; print(os.environ['BENCHBOOK_RUN_TOKEN'])"]),
                          tmp_path / "x.log", started=seen.update)
    assert end.exit_code == 0 and len(seen["child"]["token"]) == 32 and end.tail == [seen["child"]["token"]]
    again = {}
    process.execute(Command(["true"]), tmp_path / "y.log", started=again.update)
    assert again["child"]["token"] != seen["child"]["token"]  # one for each run


@pytest.mark.parametrize("forge", ["no-token", "another-token", "writable-record", "writable-folder"])
def test_a_crafted_record_never_gets_a_process_killed(tmp_path, fake, forge):
    """A record that names a live process of the user exactly (host, boot, PID, start time, session: all
    readable from /proc by anyone) kills nothing unless the process carries the record's token, and only
    when no other user could have written the record."""
    victim = stranger(TOKEN)
    try:
        child = {**liveness.identity(victim.pid), "token": TOKEN}
        if forge == "no-token":
            del child["token"]
        elif forge == "another-token":
            child["token"] = "f" * 32
        s, out, run_dir = left_running(tmp_path, {"hostname": socket.gethostname(), "pid": 1,
                                                  "identity": dead_process()}, child, victim.pid)
        if forge == "writable-record":
            (run_dir / records.RECORD).chmod(0o666)
        elif forge == "writable-folder":
            run_dir.chmod(0o777)
        said = []
        results = runner.run_study(s, out, resume=True, progress=False, say=said.append)
        time.sleep(0.3)
        assert victim.poll() is None and alive(victim.pid)
        old = records.read(run_dir / "attempts" / "1" / records.RECORD)
        expected = {"no-token": "recorded without its run token", "another-token": "does not carry this run's token",
                    "writable-record": "run.json is writable by other users",
                    "writable-folder": f"{run_dir} is writable by other users"}[forge]
        assert expected in old["failure"]["detail"], old["failure"]["detail"]
        assert results[run_dir.name]["status"] == "complete"
    finally:
        victim.kill()
        victim.wait()


def test_a_run_folder_of_another_user_is_left_alone(tmp_path, fake, monkeypatch, capsys):
    s, out, run_dir = left_running(tmp_path, {"hostname": socket.gethostname(), "pid": 1,
                                              "identity": dead_process()}, dead_process(), None)
    before = sorted(p.name for p in run_dir.iterdir())
    monkeypatch.setattr(os, "geteuid", lambda: os.getuid() + 1)  # the files are someone else's
    capsys.readouterr()
    results = runner.run_study(s, out, resume=True, progress=False, say=lambda line: None)
    assert sorted(p.name for p in run_dir.iterdir()) == before and results[run_dir.name]["status"] == "running"
    assert capsys.readouterr().out == f"{run_dir.name}: {run_dir} belongs to another user (uid {os.getuid()}): " \
                                      "left alone\n"


def test_a_ctrl_c_while_an_ended_run_is_recorded_stops_the_study_after_its_record(tmp_path, fake, monkeypatch):
    """A second or third Ctrl-C that lands while a finished run is analysed (here: sent from inside the
    analysis) waits until the record says how the run ended, then stops the study; before, it left the
    record saying `running`, as if benchbook had died."""
    analyze = runner.analyze

    def interrupted_analysis(paths):
        os.kill(os.getpid(), signal.SIGINT)  # what the terminal sends on Ctrl-C
        time.sleep(0.1)  # the handler runs here, between two bytecodes of this analysis
        return analyze(paths)

    monkeypatch.setattr(runner, "analyze", interrupted_analysis)
    s = make(tmp_path)
    with pytest.raises(KeyboardInterrupt):
        runner.run_study(s, tmp_path / "runs", progress=False)
    found = records.find(tmp_path / "runs" / s.name)
    assert [r["status"] for r in found.values()] == ["complete"]  # the first run, analysed; no other began
    assert next(iter(found.values()))["analysis"][0]["recomputed_throughput"] == pytest.approx(103.5)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # the study's handler is gone
