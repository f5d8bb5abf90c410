"""What every check is made of: the `Check` record, and `Probes`, which run the read-only commands.

The probes run through the injectable `which` and `run` (the `shutil.which` and `subprocess.run`
signatures) so that tests can fake docker, ssh, mpirun and nvidia-smi; each has a short time limit.
"""

from __future__ import annotations

import shlex
import subprocess
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

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


@dataclass
class Probes:
    which: Which
    run: Runner
    env: Mapping[str, str]
    root: Path

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
    if value is None:
        return ""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def first_line(*texts: str) -> str:
    return next((line.strip() for t in texts for line in t.splitlines() if line.strip()), "")
