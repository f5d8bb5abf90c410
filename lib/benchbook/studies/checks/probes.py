"""What every check is made of: the `Check` record, and `Probes`, which run the read-only commands.

The probes run through the injectable `which` and `run` (the `shutil.which` and `subprocess.run`
signatures) so that tests can fake docker, ssh, mpirun and nvidia-smi; each has a short time limit,
and keeps at most OUTPUT_LIMIT bytes of what a command prints (`bounded_run`, the default `run`).
`Probes.probe` says whether the probes that run something the study names may run: a command in
its container (`docker run`, `docker exec`), ssh to its hosts, the Python it names. `benchbook check`
leaves them out unless `--probe`; `benchbook run`, which runs all of it anyway, checks in full.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import subprocess
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

from ...environment.capture.probe import CUT, OUTPUT_LIMIT, communicate_bounded, cut_marker

Which = Callable[[str], "str | None"]
Runner = Callable[..., "subprocess.CompletedProcess"]

TIMEOUT = 30.0  # seconds per probe; an in-container probe starting a container gets more
CONTAINER_TIMEOUT = 120.0


@dataclass(frozen=True)
class Check:
    """One need of the study: `ok` True (there), False (missing) or None (could not tell / not needed)."""

    name: str
    ok: bool | None
    detail: str
    fix: str | None = None

    def to_json(self) -> dict:
        return asdict(self)


def failed(checks: Iterable[Check]) -> list[Check]:
    """The checks that say something is missing (ok is False): what blocks a launch."""
    return [c for c in checks if c.ok is False]


def bounded_run(argv: list[str], *, timeout: float, capture_output: bool = True, text: bool = True,
                check: bool = False) -> subprocess.CompletedProcess:
    """`subprocess.run(argv, capture_output=True, timeout=...)` holding at most OUTPUT_LIMIT bytes of each
    stream (then `cut_marker`); the command and what it started end at the time limit."""
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        out, err = communicate_bounded(proc, timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, 9)
        except OSError:
            pass
        proc.wait()
        raise
    if text:
        return subprocess.CompletedProcess(argv, proc.returncode, out.decode("utf-8", "replace"),
                                           err.decode("utf-8", "replace"))
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


@dataclass
class Probes:
    which: Which
    run: Runner
    env: Mapping[str, str]
    root: Path
    probe: bool = True  # run what the study names (in its container, over ssh, its Python)

    def call(self, argv: list[str], timeout: float = TIMEOUT) -> tuple[int | None, str, str]:
        """(exit status, stdout, stderr); status None when the command cannot be run (the reason in stderr)."""
        try:
            p = self.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
        except FileNotFoundError:
            return None, "", f"{argv[0]}: command not found"
        except subprocess.TimeoutExpired:
            return None, "", f"`{shlex.join(argv[:3])} ...` did not answer within {timeout:g} s"
        except OSError as exc:
            return None, "", f"{argv[0]}: {exc.strerror or exc}"
        return p.returncode, _text(p.stdout), _text(p.stderr)


def _text(value) -> str:
    """What a command printed as text, at most OUTPUT_LIMIT bytes of it whatever runner gave it (one that
    `bounded_run` cut already is kept as it is, its marker with it)."""
    if value is None:
        return ""
    data = value if isinstance(value, bytes) else str(value).encode("utf-8", "replace")
    if len(data) > OUTPUT_LIMIT and not CUT.search(data[-200:].decode("ascii", "replace")):
        head = data[:OUTPUT_LIMIT]
        head = head[:head.rfind(b"\n") + 1] or head
        data = head + cut_marker(len(head), len(data), hashlib.sha256(data).hexdigest()).encode()
    return data.decode("utf-8", "replace")


def first_line(*texts: str) -> str:
    return next((line.strip() for t in texts for line in t.splitlines() if line.strip()), "")
