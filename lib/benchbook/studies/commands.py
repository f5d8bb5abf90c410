"""The exact command of every run: the model's script and flags, MPI, then the container around it.

Each model's spec (`benchbook.models`) holds the builder that turns a run's configuration into the
NGC script's argv, written as the published reports wrote them; CPU runs share one command line.
`command` hands that to the study's launcher (`launchers/`: nothing or `mpiexec` on one node,
`mpirun`/`horovodrun` across hosts, an `sbatch` job), then wraps it in `docker run` / `docker exec`
unless benchbook already runs inside the container or the scheduler starts the containers. CPU runs
call the project's workload with the Python of the framework's isolated environment. Nothing here
starts a process: `benchbook run --dry-run` prints these commands, and golden tests pin them.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from .. import models, workloads
from ..environment import envs
from ..models import flags
from ..runfolder import MLLOG, RESULTS
from . import launchers
from .launchers.command import Command
from .study import Study, clone_folder

__all__ = ["RESULTS", "Command", "command", "setup_steps", "flags", "builder"]

Builder = models.CommandBuilder


def builder(study: Study) -> Builder:
    """The function that writes the script's argv: the model's NGC command (models/), or the project's
    CPU workload's command line (the model's own where it has one)."""
    spec = models.get(study.model)
    return spec.ngc_command if study.runtime == "ngc" else spec.cpu_command or _cpu


def _cpu(study: Study, cfg: dict, run_dir: Path) -> list[str]:
    c, spec = study.cpu, study.spec
    argv = ["--mode", study.mode, "--batch_size", str(cfg["batch_size"]),
            "--image_size", str(c.image_size), "--num_iter", str(study.iterations), "--warmup_steps",
            str(study.warmup_steps), "--precision", cfg["precision"],
            "--data", "synthetic" if cfg["synthetic"] or spec.cpu_generated_data else "digits",
            "--threads", str(c.threads), "--seed", str(cfg["repeat"])]
    if study.mode == "train_and_evaluate":
        # As on NGC, `iterations` counts epochs in train_and_evaluate: the most the run may train.
        argv += ["--target_accuracy", str(study.target_accuracy), "--max_epochs", str(study.iterations)]
        # MLPerf's MLLOG records, in the run folder, for `benchbook mlperf score` of the study's runs
        argv += ["--mllog", str(Path(run_dir) / MLLOG)] if spec.cpu_mllog else []
    argv += ["--device", "cuda"] if c.device == "cuda" else []
    return argv + (["--xla"] if cfg["xla"] else []) + flags(study.options)


def workdir(study: Study) -> str | None:
    return study.code.workdir if study.code else None


def command(study: Study, cfg: dict, run_dir: Path, python: str | None = None) -> Command:
    """The full command of one run, ready for its launcher (argv, env, cwd, pre-run clean-up)."""
    script = builder(study)(study, cfg, run_dir)
    launcher = launchers.get(study.launcher.name)
    if study.runtime == "cpu":  # relative to the run folder: the only place a CPU run may clean (study_limits)
        pre = [["rm", "-rf", "--", str(Path(run_dir) / p)] for p in study.clean]
    else:
        pre = [["rm", "-rf", "--", p] for p in study.clean]
    if study.runtime == "cpu":
        py = python or str(envs.python(study.framework, study.python))
        argv = launcher.wrap(study, cfg, [py, str(models.workload_script(study.framework, study.model)), *script])
        env = {"OMP_NUM_THREADS": str(study.cpu.threads)} if study.cpu.threads else {}
        cmd = Command(argv, {**env, **study.env}, None, pre, launcher.name)
        return launcher.finish(study, cfg, run_dir, cmd)
    inner = launcher.wrap(study, cfg, script)
    c = study.container
    if c.mode == "inside" or not launcher.uses_docker:
        return launcher.finish(study, cfg, run_dir, Command(inner, dict(study.env), workdir(study), pre, launcher.name))
    line = " && ".join([*(shlex.join(p) for p in pre), shlex.join(inner)])
    payload = ["bash", "-c", line] if pre else inner
    env_flags = [a for k, v in study.env.items() for a in ("-e", f"{k}={v}")]
    if c.mode == "exec":
        cmd = Command(["docker", "exec", "-w", workdir(study), *env_flags, "--", c.name, *payload],
                      launcher=launcher.name)
        return launcher.finish(study, cfg, run_dir, cmd)
    mounts = [f"{run_dir}:{RESULTS}"]
    if study.data.path:
        mounts.insert(0, f"{study.data.path}:{study.data.mount}")
    mounts += [f"{h}:{m}" for h, m in c.mounts.items()]
    argv = ["docker", "run", "--rm", "--gpus", "all", "--ipc=host", *c.options]
    # `--`: the image is never read as an option, whatever it is (the study's loader also refuses one with `-`)
    argv += [a for m in mounts for a in ("-v", m)] + ["-w", workdir(study), *env_flags, "--", c.image, *payload]
    return launcher.finish(study, cfg, run_dir, Command(argv, launcher=launcher.name))


def setup_steps(study: Study) -> list[str]:
    """The published set-up of an NGC study as shell lines: clone, checkout, patches, image build."""
    if study.runtime != "ngc":
        chosen = envs.named(study.framework, study.python)
        if chosen:
            return [f"the runs use {chosen[0]} (named by {chosen[1]}), which must import {study.framework}"]
        return [f"benchbook creates the {study.framework} CPU environment on first use "
                f"(pinned in {workloads.requirements(study.framework).name})"]
    # each value quoted: these lines are pasted into a shell
    q = shlex.quote
    # (`--` before each git command's operands; the study refuses a repository, a folder, a patch starting
    # with '-': `cd` and `docker build` take no `--` everywhere)
    code, folder = study.code, q(clone_folder(study.code.repository))
    steps = [f"git clone -- {q(code.repository)} {folder}", f"cd {folder} && git checkout {q(code.commit)} --"]
    base = Path(study.path).parent if study.path else Path(".")
    steps += [f"git -C {folder} apply --unidiff-zero -- {shlex.quote(os.path.relpath((base / p).resolve()))}"
              for p in code.patches]
    if study.launcher.name == "slurm":  # pyxis pulls the image on the nodes; enroot can fetch it ahead
        image = study.launcher.slurm.container_image or study.container.image
        steps.append(f"enroot import {q('docker://' + image)}   # optional: pyxis imports it on first use")
    elif study.container.mode != "inside":
        sub = q(f"{clone_folder(study.code.repository)}/{code.subfolder}") \
            if code.subfolder else folder
        image = q(study.container.image)
        steps.append(f"docker build -t {image} {sub}   # or: docker pull {image}")
    return steps
