"""Launchers: what starts a run's processes, registered by name; a study picks one (`launcher:`).

A launcher does two things. `wrap` turns the command of one process (the model's script, or the
CPU workload) into the command that starts all of the run's processes: nothing (`local`, one
process), `mpiexec`/`mpirun` with hosts and slots, `horovodrun`, or an `sbatch` job whose `srun`
starts the tasks in pyxis containers (`slurm`). `execute` runs that command and reports how it
ended: a child process on this machine for the first three, a job followed through the scheduler
for Slurm. Adding a launcher is a new module here that registers a `Launcher` subclass.
"""

from __future__ import annotations

from .base import Launcher
from .registry import REGISTRY, get, register

__all__ = ["REGISTRY", "Launcher", "get", "register"]

from . import horovodrun, local, mpirun, slurm  # noqa: E402,F401  (registration)
