"""`slurm`: one `sbatch` job per run; `srun` starts its tasks, in pyxis containers for NGC images.

The job script is the run's command: `benchbook run --dry-run` prints it as a here-document that
can be pasted into a shell on the login node. The job's output goes straight to the run's log.
"""

from __future__ import annotations

import dataclasses
import shlex

from . import register
from .base import RESULTS, SPAWNS_OWN_WORKERS, Launcher


def slurm_time(seconds: float) -> str:
    """A time limit as Slurm writes it: `HH:MM:SS`, or `D-HH:MM:SS` from one day on."""
    total = max(60, int(-(-seconds // 60) * 60))  # whole minutes, at least one
    days, rest = divmod(total, 86400)
    h, rest = divmod(rest, 3600)
    text = f"{h:02d}:{rest // 60:02d}:00"
    return f"{days}-{text}" if days else text


def layout(study, cfg) -> tuple[int, int, int]:
    """(nodes, tasks per node, GPUs per node) of the run's job."""
    if study.runtime == "cpu":
        return 1, cfg.get("processes", 1), 0
    if "gpu_counts" in cfg:  # benchmark.py measures several GPU counts in one process
        return 1, 1, max(cfg["gpu_counts"])
    nodes, per_node = cfg.get("nodes", 1), cfg.get("gpus_per_node", cfg.get("gpus", 1))
    tasks = 1 if study.model in SPAWNS_OWN_WORKERS else per_node
    return nodes, tasks, per_node


@register
class Slurm(Launcher):
    name = "slurm"
    uses_docker = False  # pyxis starts the containers

    def _container(self, study, run_dir) -> list[str]:
        if study.runtime == "cpu":
            return []
        opts, c = study.launcher.slurm, study.container
        mounts = {}
        if study.data.path:
            mounts[study.data.path] = study.data.mount
        mounts[str(run_dir)] = RESULTS
        mounts.update(c.mounts)
        mounts.update(opts.container_mounts)
        out = [f"--container-image={opts.container_image or c.image}",
               "--container-mounts=" + ",".join(f"{h}:{m}" for h, m in mounts.items())]
        if study.code and study.code.workdir:
            out.append(f"--container-workdir={study.code.workdir}")
        return out

    def finish(self, study, cfg, run_dir, cmd):
        opts = study.launcher.slurm
        nodes, tasks, gpus = layout(study, cfg)
        log = run_dir / f"{cfg['run_id']}.log"
        lines = ["#!/bin/bash", f"#SBATCH --job-name={study.name}.{cfg['run_id']}", f"#SBATCH --nodes={nodes}",
                 f"#SBATCH --ntasks-per-node={tasks}"]
        lines += [f"#SBATCH --gpus-per-node={gpus}"] if gpus else []
        lines.append(f"#SBATCH --time={slurm_time(opts.time or study.timeout)}")
        lines += [f"#SBATCH --partition={opts.partition}"] if opts.partition else []
        lines += [f"#SBATCH --account={opts.account}"] if opts.account else []
        lines += [f"#SBATCH --output={log}", "#SBATCH --open-mode=append"]
        lines += [f"#SBATCH {o}" for o in opts.sbatch]
        lines += [f"export {k}={shlex.quote(v)}" for k, v in cmd.env.items()]
        container = self._container(study, run_dir)
        srun = ["srun"] + ([f"--mpi={opts.mpi}"] if opts.mpi else []) + container + opts.srun
        for pre in cmd.pre:  # clean-up once per job, where the run sees the paths (in its container)
            lines.append(shlex.join(["srun", "--nodes=1", "--ntasks=1", *container, *pre]))
        if cmd.cwd and not container:
            lines.append(f"cd {shlex.quote(cmd.cwd)}")
        lines.append(shlex.join([*srun, *cmd.argv]))
        return dataclasses.replace(cmd, argv=["sbatch"], pre=[], cwd=None, launcher=self.name,
                                   script="\n".join(lines) + "\n")
