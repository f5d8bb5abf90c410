"""The launcher interface: wrap one process's command into the run's command, then execute it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ...runfolder import RESULTS, liveness
from ..failures import Ending
from . import process
from .command import CONTROL, ENV_NAME, Command, UnsafeCommandError, safe_env, safe_line

if TYPE_CHECKING:
    from ..study import Study

# What a launcher builds on, defined in command.py (which process.py reads too, without importing this module).
__all__ = ["CONTROL", "ENV_NAME", "RESULTS", "Command", "Launcher", "UnsafeCommandError", "exported", "processes",
           "safe_env", "safe_line"]


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
