"""Running one command as a child process of this machine, its output teed to the run's log.

The child gets its own session (so a stop reaches all its processes, mpirun's ranks included)
and dies with benchbook (PR_SET_PDEATHSIG), so a killed study leaves no orphan training behind.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ...runfolder import liveness
from ..failures import Ending
from . import lines

if TYPE_CHECKING:
    from .command import Command

STOP_GRACE_S = 10.0  # between SIGINT to a run and SIGKILL
POLL_S = 0.2
PIPE_SIZE = 1 << 20  # the largest pipe an unprivileged process may ask for (fs.pipe-max-size)


def _stop(proc: subprocess.Popen, first: int = signal.SIGINT) -> None:
    """Ask the run's whole process group to stop, then insist."""
    for sig, wait in ((first, STOP_GRACE_S), (signal.SIGTERM, 5.0), (signal.SIGKILL, None)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def _stop_despite_interrupts(proc: subprocess.Popen) -> None:
    """Stop the run after a Ctrl-C; a second or third Ctrl-C while it stops skips to SIGKILL instead
    of leaving the run (and its record) half stopped."""
    first = signal.SIGINT
    while True:
        try:
            _stop(proc, first)
            return
        except KeyboardInterrupt:
            first = signal.SIGKILL


def _die_with_parent() -> None:
    """In the child: get SIGKILL when benchbook dies, so a killed study leaves no orphan training."""
    try:
        import ctypes
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def no_follow(path, flags: int) -> int:
    """An `opener` for `open` that never follows a link: a run's files are written where they are named."""
    return os.open(path, flags | os.O_NOFOLLOW, 0o644)


def execute(cmd: Command, log: Path, timeout: float | None = None, no_progress: float | None = None,
            echo: Callable[[str], None] | None = None, started: Callable[[dict], None] | None = None) -> Ending:
    """Run one command, teeing its output (stdout and stderr, as it comes) to `log`."""
    token = secrets.token_hex(16)  # in the child's environment and its record: how resume knows it as this run's
    env = {**os.environ, "PYTHONUNBUFFERED": "1", **cmd.env, liveness.TOKEN_ENV: token}
    for pre in cmd.pre:
        subprocess.run(pre, cwd=cmd.cwd, env=env, check=False, capture_output=True)
    tail = lines.Tail()
    last_output = [time.monotonic()]
    # unbuffered: a failed write is seen at once, never at close
    with open(log, "ab", buffering=0, opener=no_follow) as sink:
        proc = subprocess.Popen(cmd.argv, cwd=cmd.cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, start_new_session=True,
                                preexec_fn=_die_with_parent if sys.platform == "linux" else None)
        shown = lines.Echo(echo) if echo else None
        if started:
            started({"child_pid": proc.pid, "child": {**liveness.identity(proc.pid), "token": token}})
        write_error: list[OSError] = []

        def pump():
            fd = proc.stdout.fileno()
            with contextlib.suppress(OSError):  # a larger pipe: fewer reads, the run waits less on them
                fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_SIZE)
            buffer = bytearray(PIPE_SIZE)  # one buffer for every read: no allocation per read
            while size := os.readv(fd, [buffer]):
                last_output[0] = time.monotonic()
                if write_error:
                    continue  # the log cannot be written: drain the pipe so the run is not blocked
                try:
                    view = memoryview(buffer)[:size]
                    while view:
                        view = view[sink.write(view):]
                except OSError as exc:  # disk full, quota: the run stops, its record says why
                    write_error.append(exc)
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.killpg(proc.pid, signal.SIGTERM)
                    continue
                tail.feed(buffer, size)
                if shown:
                    shown.offer(buffer, size)

        reader = threading.Thread(target=pump, daemon=True)
        reader.start()
        start = time.monotonic()
        ending = Ending(exit_code=None)
        try:
            while proc.poll() is None:
                t = time.monotonic()
                if write_error:
                    _stop(proc, signal.SIGTERM)
                elif timeout and t - start > timeout:
                    ending.timed_out = True
                    _stop(proc, signal.SIGTERM)
                elif no_progress and t - last_output[0] > no_progress:
                    ending.stalled = True
                    _stop(proc, signal.SIGTERM)
                else:
                    try:
                        proc.wait(timeout=POLL_S)
                    except subprocess.TimeoutExpired:
                        pass
        except KeyboardInterrupt:
            ending.interrupted = True
            _stop_despite_interrupts(proc)
        finally:
            if proc.poll() is None:
                _stop(proc, signal.SIGKILL)
            reader.join(timeout=10)
            if shown:
                shown.close()
        ending.exit_code = proc.returncode
        ending.tail = tail.finish()
        if write_error:
            exc = write_error[0]
            ending.write_error = {"errno": exc.errno, "path": str(log), "message": exc.strerror or str(exc)}
            ending.tail.append(f"benchbook: cannot write {log}: {exc.strerror or exc}; the run was stopped")
    return ending
