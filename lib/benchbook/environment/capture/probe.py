"""How every probe looks at the machine: `Probe` (variables, file-system root, command runner), the
`Absent` a probe raises for what is not there, and `section`, which turns that into `available: false`.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

COMMAND_TIMEOUT = 10.0  # seconds; nvidia-smi on a busy 16-GPU node answers in about one
#: Bytes kept of a command's standard output, and of its standard error: `nvidia-smi -q` of a 16-GPU
#: node prints about 200 kB, `ldconfig -p` of a large image a few hundred; what is past it is read
#: (the command runs to its end) and dropped, and the text ends, after its last whole line, with the
#: marker `cut_marker` writes: the size and SHA-256 of the whole output (a local patch's hash covers
#: all of it, `model_code`).
OUTPUT_LIMIT = 4 * 2**20
CUT = re.compile(r"\n\[benchbook: output cut after (?P<kept>\d+) of (?P<size>\d+) bytes \(sha256 of all of it: "
                 r"(?P<sha256>[0-9a-f]{64})\); the rest was read and dropped\]\n\Z")


def cut_marker(kept: int, size: int, sha256: str) -> str:
    """The line that ends an output cut after `kept` bytes: the whole output's size and hash (CUT reads it)."""
    return (f"\n[benchbook: output cut after {kept} of {size} bytes (sha256 of all of it: {sha256}); the rest was "
            "read and dropped]\n")


def _keep_head(stream, limit: int, into: list) -> None:
    """Read `stream` to its end, keeping its first `limit` bytes (then, if there was more, the marker)."""
    head, size, digest = bytearray(), 0, hashlib.sha256()
    try:
        while True:
            block = stream.read1(1 << 16)
            if not block:
                break
            size += len(block)
            digest.update(block)
            head += block[:max(limit - len(head), 0)]
    except (OSError, ValueError):  # the pipe closed under us (the command was killed)
        pass
    if size > len(head):
        if b"\n" in head:  # whole lines, then the marker on a line of its own
            del head[head.rfind(b"\n") + 1:]
        head += cut_marker(len(head), size, digest.hexdigest()).encode()
    into[:] = [bytes(head)]


def communicate_bounded(proc: subprocess.Popen, timeout: float, limit: int = OUTPUT_LIMIT) -> tuple[bytes, bytes]:
    """`proc.communicate(timeout)` that holds at most `limit` bytes of each stream (then `cut_marker`):
    a command that prints hundreds of megabytes costs the time to read them, not their memory nor
    the time to parse them. TimeoutExpired as communicate raises it (the caller ends the command)."""
    results: list[list] = [[b""], [b""]]
    readers = [threading.Thread(target=_keep_head, args=(stream, limit, into), daemon=True)
               for stream, into in ((proc.stdout, results[0]), (proc.stderr, results[1])) if stream is not None]
    deadline = time.monotonic() + timeout
    for r in readers:
        r.start()
    proc.wait(timeout=timeout)
    for r in readers:  # as communicate: until the pipes close (a child of the command may hold them)
        r.join(timeout=max(deadline - time.monotonic(), 0))
        if r.is_alive():
            raise subprocess.TimeoutExpired(proc.args, timeout)
    return results[0][0], results[1][0]


class Absent(Exception):
    """Raised by a probe when what it looks for is not there; the section records the reason."""


class TimedOut(Absent):
    """Raised when a command did not answer in time (the probe may retry with less to do)."""


class Probe:
    """Where the probes look: environment variables, a file-system root and a command runner.

    `runner(args, timeout)` returns `(exit code, stdout, stderr)` or None when the command does not
    exist; the default one looks the command up on the `PATH` of `env` (so that a fake `nvidia-smi`
    first on the PATH replaces the real one). `root` prefixes every file read, for a fake `/proc`.
    `nvml` False skips NVML even where nvidia-ml-py is installed.
    """

    def __init__(self, env: dict[str, str] | None = None, root: str | Path = "/",
                 runner: Callable[[list[str], float], tuple[int, str, str] | None] | None = None,
                 timeout: float = COMMAND_TIMEOUT, nvml: bool = True):
        self.env = dict(os.environ if env is None else env)
        self.root = Path(root)
        self.runner = runner or self._subprocess
        self.timeout = timeout
        self.nvml = nvml

    def path(self, name: str) -> Path:
        """`name` (an absolute path on the machine) under the probe's root."""
        return self.root / name.lstrip("/")

    def read(self, name: str) -> str | None:
        """The text of a file, or None when it cannot be read."""
        try:
            return self.path(name).read_text(encoding="utf-8", errors="replace")
        except (OSError, ValueError):
            return None

    def which(self, command: str) -> str | None:
        # ldconfig lives in /sbin, which is not on an ordinary user's PATH on Debian.
        search = self.env.get("PATH", os.defpath) + os.pathsep + "/usr/local/sbin:/usr/sbin:/sbin"
        return shutil.which(command, path=search)

    def _subprocess(self, args: list[str], timeout: float) -> tuple[int, str, str] | None:
        exe = args[0] if os.sep in args[0] else self.which(args[0])
        if exe is None or not os.path.exists(exe):
            return None
        # A session of its own, so that a timeout ends the command's children too (a shell wrapper's
        # child would otherwise hold the pipes open and the wait would last as long as it does).
        proc = subprocess.Popen([exe, *args[1:]], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=self.env, start_new_session=hasattr(os, "killpg"))
        try:
            out, err = communicate_bounded(proc, timeout)
        except subprocess.TimeoutExpired:
            if hasattr(os, "killpg"):
                try:
                    os.killpg(proc.pid, 9)
                except OSError:
                    pass
            proc.kill()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
            raise
        return proc.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")

    def run(self, args: list[str], timeout: float | None = None) -> str:
        """The standard output of a command that succeeded; Absent (with why) otherwise."""
        limit = self.timeout if timeout is None else timeout
        try:
            result = self.runner(list(args), limit)
        except subprocess.TimeoutExpired:
            raise TimedOut(f"`{args[0]}` did not answer within {limit:g} s") from None
        except OSError as exc:
            raise Absent(f"`{args[0]}` could not be run: {exc.strerror or exc}") from None
        if result is None:
            raise Absent(f"`{args[0]}` not found on PATH")
        code, out, err = result
        if code != 0:
            first = next((line.strip() for line in (err + "\n" + out).splitlines() if line.strip()), "")
            raise Absent(f"`{' '.join(args[:2])}` exited with {code}" + (f": {first}" if first else ""))
        return out


def section(probe_fn: Callable[..., dict[str, Any]], *args: Any) -> dict[str, Any]:
    """Run one probe: its fields with `available: True`, or `available: False` and the reason.

    Any exception is caught here on purpose: a capture that fails because one probe met an odd
    machine would lose every other section of the record.
    """
    try:
        return {"available": True, **probe_fn(*args)}
    except Absent as exc:
        return {"available": False, "reason": str(exc)}
    except Exception as exc:  # noqa: BLE001 - see the docstring
        return {"available": False, "reason": f"probe failed: {type(exc).__name__}: {exc}"}


def number(text: str | None) -> int | float | None:
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    return int(value) if value.is_integer() else value
