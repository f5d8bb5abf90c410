"""liveness.stop_group when a run's child (its process group's leader) has ended: the group's members are
stopped only when they are the run's own, in the session the run's child opened (issue 18)."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchbook.runfolder import liveness

# The leader starts one member of its group, prints the member's PID and ends: what mpirun leaves when it
# dies before its ranks, and what a shell job leaves when its first process ends before the others.
LEADER = ("import subprocess, sys\n"
          "member = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
          "print(member.pid, flush=True)\n")


TOKEN = "0123456789abcdef"  # what the runner puts in a run's environment and record


def _group_left_by_its_leader(**popen) -> tuple[dict, int]:
    """(the leader's identity, taken while it ran, with the run's token; the PID of the member it left behind)."""
    leader = subprocess.Popen([sys.executable, "-c", LEADER], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "BENCHBOOK_RUN_TOKEN": TOKEN}, **popen)
    ident = {**liveness.identity(leader.pid), "token": TOKEN}
    member = int(leader.stdout.readline())
    leader.wait()
    leader.stdout.close()
    assert liveness.state(ident) == "gone" and liveness.group_members(leader.pid, ident["start_ticks"]) == [member]
    return ident, member


def _runs(pid: int) -> bool:
    """Whether `pid` is a live process; a zombie (killed, not yet reaped by init) does not run."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "\nState:\tZ" not in status


def _ended(pid: int, timeout: float = 10) -> bool:
    """Whether `pid` ends within `timeout` seconds."""
    end = time.monotonic() + timeout
    while _runs(pid) and time.monotonic() < end:
        time.sleep(0.05)
    return not _runs(pid)


@pytest.fixture
def members():
    """PIDs of the members the tests leave behind; each one still there at the end is killed."""
    left: list[int] = []
    yield left
    for pid in left:
        if _runs(pid):
            os.kill(pid, signal.SIGKILL)


def test_identity_records_the_session():
    me = liveness.identity(os.getpid())
    assert me["session"] == os.getsid(0) and me["pid"] == os.getpid()
    child = subprocess.Popen(["sleep", "30"], start_new_session=True)  # how launchers start a run's child
    try:
        assert liveness.identity(child.pid)["session"] == child.pid
    finally:
        child.kill()
        child.wait()


def test_the_runs_own_group_is_stopped_after_its_leader_ended(members):
    """A run's child is started in its own session (setsid): what it leaves in its group is the run's."""
    ident, member = _group_left_by_its_leader(start_new_session=True)
    members.append(member)
    assert ident["session"] == ident["pid"]
    assert liveness.stop_group(ident) == f"process group {ident['pid']} stopped"
    assert _ended(member)


def test_a_group_of_another_session_is_left_alone(members):
    """The same group number in another session is not the run's: a shell job (its own group inside the
    shell's session) given the number after the run's group was gone. Without the session check its member
    was SIGKILLed: it is in group PID and started after the recorded leader."""
    ident, member = _group_left_by_its_leader(process_group=0)  # setpgid(0, 0): a job of this session
    members.append(member)
    recorded = dict(ident, session=ident["pid"])  # what the run's child, a session leader, recorded
    said = liveness.stop_group(recorded)
    time.sleep(0.2)
    assert _runs(member), said  # the stranger's process still runs
    assert said == f"process {ident['pid']} has ended; process group {ident['pid']} is now another session's, " \
                   "left alone"
    assert ident["session"] == os.getsid(0) != ident["pid"]


def test_a_record_from_before_sessions_counts_its_leader_as_the_session(members):
    """Records written before the session was recorded: every run's child was a session leader, so the
    session is its PID; a group of another session is still left alone."""
    ident, member = _group_left_by_its_leader(process_group=0)
    members.append(member)
    older = {k: v for k, v in ident.items() if k != "session"}
    assert "left alone" in liveness.stop_group(older)
    assert _runs(member)
    ident, member = _group_left_by_its_leader(start_new_session=True)
    members.append(member)
    assert liveness.stop_group({k: v for k, v in ident.items() if k != "session"}).endswith("stopped")
    assert _ended(member)


def test_a_group_without_the_runs_token_is_left_alone(members):
    """Host, boot, PID, start time and session can all be read from /proc by anyone: a record naming them
    names any process. Only the token in the process's own environment proves it is the run's."""
    ident, member = _group_left_by_its_leader(start_new_session=True)
    members.append(member)
    said = liveness.stop_group(dict(ident, token="forged"))
    time.sleep(0.2)
    assert _runs(member) and said == f"process group {ident['pid']} does not carry this run's token in its " \
                                     "environment: not this run's, left alone"
    assert "without its run token" in liveness.stop_group({k: v for k, v in ident.items() if k != "token"})
    assert _runs(member)
    live = subprocess.Popen(["sleep", "30"], start_new_session=True)  # alive, the identity exact, no token
    try:
        said = liveness.stop_group({**liveness.identity(live.pid), "token": TOKEN})
        assert "does not carry this run's token" in said and live.poll() is None
    finally:
        live.kill()
        live.wait()
