"""Which recorded processes still run: a process is named by host, PID and start time, never by PID alone.

A run record says `running` from its start to its end. When its launcher is killed, the record
stays `running`; `--resume` and `status` must then tell a run that still goes on from one whose
processes are gone, and must never act on a PID that the system has since given to someone else
(PIDs are reused) or that belongs to another machine of a shared file system. So a record holds,
beside each PID, the host and boot it was started on and the process's start time (`/proc/PID/stat`
field 22, clock ticks since boot): the same PID with another start time is a stranger.

Anyone can read those fields from /proc, so a crafted record could name any process. Before a signal,
the process must prove it is the run's own child: the runner puts a random token in the child's
environment (BENCHBOOK_RUN_TOKEN) and in the record, and `/proc/PID/environ` (readable by the
process's owner alone) must hold it.
"""

from __future__ import annotations

import os
import signal
import socket
from pathlib import Path

PROC = Path("/proc")
TOKEN_ENV = "BENCHBOOK_RUN_TOKEN"


def boot_id() -> str | None:
    try:
        return (PROC / "sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return None


def _stat(pid: int) -> list[str] | None:
    """Fields 3... of /proc/PID/stat (after the command name, which may hold spaces and parentheses)."""
    try:
        text = (PROC / str(pid) / "stat").read_text()
    except (OSError, ValueError):
        return None
    return text.rsplit(")", 1)[1].split()


def start_ticks(pid: int) -> int | None:
    """When the process started (clock ticks since boot), or None when there is no such process."""
    fields = _stat(pid)
    return int(fields[19]) if fields and len(fields) > 19 else None


def session(pid: int) -> int | None:
    """The session the process belongs to (/proc/PID/stat field 6), or None when there is no such process."""
    fields = _stat(pid)
    return int(fields[3]) if fields and len(fields) > 3 else None


def identity(pid: int) -> dict:
    """What names a process for later: host, boot, PID, start time and session."""
    return {"host": socket.gethostname(), "boot_id": boot_id(), "pid": pid, "start_ticks": start_ticks(pid),
            "session": session(pid)}


def state(ident: dict | None) -> str:
    """`alive` (the very process still runs here), `gone` (it ended: its PID is free or another
    process's), `elsewhere` (started on another host: cannot be checked from here) or `unknown`
    (a record without a start time, from an older benchbook)."""
    if not ident or not ident.get("pid"):
        return "unknown"
    if ident.get("host") != socket.gethostname():
        return "elsewhere"
    if ident.get("boot_id") and boot_id() and ident["boot_id"] != boot_id():
        return "gone"  # the machine rebooted since
    if ident.get("start_ticks") is None:
        return "unknown"
    now = start_ticks(int(ident["pid"]))
    if now is None:
        return "gone"
    fields = _stat(int(ident["pid"])) or []
    if now != ident["start_ticks"] or (fields and fields[0] == "Z"):
        return "gone"  # the PID now names another process, or a zombie
    return "alive"


def group_members(pgid: int, since_ticks: int, sid: int | None = None) -> list[int]:
    """PIDs of the live processes of process group `pgid` (in session `sid`, when given) started at
    or after `since_ticks` (the group's leader may have ended while its children run on: mpirun's ranks)."""
    out = []
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        fields = _stat(int(entry.name))
        if fields and len(fields) > 19 and fields[0] != "Z" and int(fields[2]) == pgid \
                and sid in (None, int(fields[3])) \
                and int(fields[19]) >= since_ticks:
            out.append(int(entry.name))
    return out


def carries(pid: int, token: str) -> bool:
    """Whether process `pid` has the run's token in its environment (False when it cannot be read:
    another user's process, or one that has ended)."""
    try:
        environ = (PROC / str(pid) / "environ").read_bytes()
    except OSError:
        return False
    return f"{TOKEN_ENV}={token}".encode() in environ.split(b"\0")


def stop_group(ident: dict) -> str:
    """SIGKILL the process group a run's child led, only if it is that run's: the same host and
    boot, the leader (or, when it has ended, members of its group and of its recorded session
    started after it) still there, and carrying the run's token. What was done, in words."""
    where = state(ident)
    pid = int(ident["pid"]) if ident and ident.get("pid") else None
    if where == "elsewhere":
        return f"process {pid} runs on {ident.get('host')}, not on this host ({socket.gethostname()}): left alone"
    if where == "unknown":
        return f"process {pid} was recorded without its start time: left alone (stop it yourself if it is yours)"
    if where == "gone":
        if ident.get("boot_id") and ident["boot_id"] != boot_id():
            return f"process {pid} has ended (the machine restarted)"
        now = start_ticks(pid)
        if now is not None and now != ident["start_ticks"]:
            return f"process {pid} has ended; its PID now names another process, left alone"
        # the leader ended (or is a zombie): while members of its group live, the kernel keeps the
        # PID for the group. The group's members are the run's own processes (mpirun's ranks) only
        # in the session the run's child opened (launchers start it with setsid, so a record from
        # before sessions were recorded has session = PID): a shell job or a daemon of another
        # session may have been given the group's number after the run's group was gone.
        sid = ident.get("session") or pid
        members = group_members(pid, ident["start_ticks"], sid)
        if not members:
            strangers = group_members(pid, ident["start_ticks"])
            return f"process {pid} has ended" + (f"; process group {pid} is now another session's, left alone"
                                                 if strangers else "")
    else:
        members = [pid]
    if not ident.get("token"):
        return f"process {pid} was recorded without its run token (an older benchbook): left alone (stop it " \
               "yourself if it is yours)"
    if not any(carries(member, ident["token"]) for member in members):
        return f"process group {pid} does not carry this run's token in its environment: not this run's, left alone"
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError) as exc:
        return f"process group {pid} could not be stopped ({exc.strerror})"
    return f"process group {pid} stopped"
