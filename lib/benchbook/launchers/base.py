"""The launcher interface: wrap one process's command into the run's command, then execute it."""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from .. import liveness
from ..errors import BenchbookError
from ..failures import Ending
from . import process

if TYPE_CHECKING:
    from ..study import Study

RESULTS = "/results"  # the run folder, as the container sees it
#: What reaches a shell or a job script: variable names, and no control character (a newline starts a command).
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
CONTROL = re.compile(r"[\x00-\x1f\x7f]")


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


class Launcher:
    """Starts the processes of one run. Subclasses set `name` and override what they change."""

    name: str = ""
    #: whether `commands` puts the run in a `docker run`/`docker exec` container around the launcher
    #: (a scheduler that starts its own containers, like Slurm with pyxis, says False)
    uses_docker: bool = True

    def wrap(self, study: Study, cfg: dict, argv: list[str]) -> list[str]:
        """The command that starts every process of the run, around one process's `argv`."""
        return argv

    def finish(self, study: Study, cfg: dict, run_dir: Path, cmd: Command) -> Command:
        """The last step of building the command (a scheduler turns it into a job)."""
        return cmd

    def execute(self, cmd: Command, log: Path, timeout: float | None = None, no_progress: float | None = None,
                echo: Callable[[str], None] | None = None,
                started: Callable[[dict], None] | None = None) -> Ending:
        """Run the command to its end, its output appended to `log` as it comes."""
        return process.execute(cmd, log, timeout, no_progress, echo, started)

    def abandon(self, record: dict) -> str:
        """Stop what is left of a run recorded as running by a launcher that was killed, if it is still
        that run's (host, boot, PID and start time: liveness); what was done, in words."""
        if record.get("child"):
            return liveness.stop_group(record["child"])
        if record.get("child_pid"):
            return (f"process {record['child_pid']} was recorded without its host and start time: left alone "
                    "(stop it yourself if it is still yours)")
        return "no process was started"


def processes(cfg: dict, study: Study) -> int:
    """How many processes the run starts: one per GPU (unless the script starts its own: the model's
    `spawns_own_workers`, e.g. MXNet's benchmark.py or PyTorch's multiproc.py, one per node), or the
    CPU run's `processes`."""
    if study.runtime == "cpu":
        return cfg.get("processes", 1)
    if study.spec.spawns_own_workers:  # one per node, which starts the node's workers
        return cfg.get("nodes", 1)
    return cfg.get("gpus", 1)


def exported(study: Study) -> list[str]:
    """Variables every rank gets: the launcher's list, then the study's env, without repeats."""
    return list(dict.fromkeys([*study.launcher.export, *study.env]))
