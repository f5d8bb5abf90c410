"""A run's command as launchers build and execute it (`Command`), and the checks on what reaches a shell.

Its own module so that `process.py`, which executes commands, and `base.py`, whose launchers build
them, both read it without importing each other.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field

from ...core.values import CONTROL, ENV_NAME  # noqa: F401 -- read here and by the launchers
from ...errors import BenchbookError


class UnsafeCommandError(BenchbookError, ValueError):
    """Raised when a value would change the meaning of a command line or a job script: an
    environment variable name that is not a name, or a newline (or another control character)."""


def safe_env(env: dict[str, str]) -> dict[str, str]:
    """The variables, checked: names match [A-Za-z_][A-Za-z0-9_]*, values hold no control character."""
    for k, v in env.items():
        if not ENV_NAME.fullmatch(k):
            raise UnsafeCommandError(f"environment variable name {k!r} is not a name "
                                     "(letters, digits and _, not starting with a digit)")
        safe_line(v, f"environment variable {k}")
    return env


def safe_line(value: str, what: str) -> str:
    """A value for one line of a command or a job script; UnsafeCommandError names it otherwise."""
    if m := CONTROL.search(str(value)):
        raise UnsafeCommandError(f"{what}: {value!r} holds the control character {m.group()!r}")
    return value


@dataclass(frozen=True)
class Command:
    """A run's command: argv, extra environment, working directory, the clean-up that precedes it,
    the launcher that executes it, and the job script when a scheduler runs it."""

    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    pre: list[list[str]] = field(default_factory=list)
    launcher: str = "local"
    script: str | None = None

    def shell(self) -> str:
        """The command as shell text, to print and to paste (a job script as a here-document)."""
        if self.script is not None:
            return f"{shlex.join(self.argv)} <<'SBATCH'\n{self.script}SBATCH"
        env = " ".join(f"{k}={shlex.quote(v)}" for k, v in safe_env(self.env).items())
        cd = f"cd {shlex.quote(self.cwd)} && " if self.cwd else ""
        pre = "".join(shlex.join(p) + " && " for p in self.pre)
        return f"{cd}{pre}{env + ' ' if env else ''}{shlex.join(self.argv)}"
