"""Set-up checks: `benchbook check STUDY` lists what a study needs and what is missing, with the fix.

`check(study)` returns one `Check` per need: `ok` True (there), False (missing: the study would
fail; `fix` is the command or step that provides it) or None (could not tell, or nothing to do).
Nothing is installed or changed; every probe is a read-only command with a short time limit, run
through the injectable `which` and `run` so that tests can fake docker, ssh, mpirun and nvidia-smi.
A study may come from someone else: `benchbook check STUDY` only looks (`docker info`, `docker image
inspect`, `docker inspect`, `nvidia-smi -L`, `sinfo`, `which`, the files); what runs something the
study names (a command in its container with `docker run`/`docker exec`, ssh to its hosts, the Python
it names) is left out, shown as not checked, unless `--probe`. `benchbook run`, which runs the study
anyway, checks in full (`check(probe=True)`, the default).

What is checked, by runtime and container mode:

- `cpu`: the framework's isolated environment (`benchbook.environment.envs`); it is built by the first run, so
  a missing one is not a failure unless Python cannot build virtual environments here.
- `ngc`, mode `run`/`exec`: the docker client, the engine and the NVIDIA runtime (`docker info`
  lists an `nvidia` runtime, or the NVIDIA Container Toolkit that `--gpus` uses is installed), the
  image (`run`) or the running container (`exec`), the GPUs of this node (`nvidia-smi -L`, or
  `gpus=`) against the most GPUs per node in the sweep. Mode `inside`: that benchbook runs in a
  container (NGC images set NVIDIA_BUILD_ID; docker writes /.dockerenv); no docker check.
- The launcher's program for runs of several processes (`mpiexec`, `mpirun`, `horovodrun`);
  multi-node points: passwordless ssh to every host the sweep uses, on `ssh_port` (the published
  runs: sshd on port 10000 in every container). Both are probed where the launcher runs: in the
  container (`docker exec NAME ...`, or a throw-away `docker run --rm IMAGE ...`), or here in mode
  `inside` and on the CPU.
- Launcher `slurm`: `sbatch` here and a controller that answers `sinfo`; on `ngc`, the pyxis
  plugin (`srun --container-image`) instead of docker, which the cluster's nodes run.
- The model code: the commit to check out (`code_dir=` a clone compares its HEAD).
- The data, where the container will see it: a container path (data.mount, data.dali_index,
  /model) is looked up on the host through the mounts (`data.path` -> `data.mount` and
  `container.mounts`); in mode `inside` it is read as is; in mode `exec` a path no mount covers is
  listed inside the running container.
  The layout is the model's `data_layout` (benchbook.models):
  * imagenet_tfrecords: `train-%05d-of-01024` x1024 and `validation-%05d-of-00128` x128; with DALI (a
    point with `dali: true`) the index folder holds one index per shard, named like the shard
    (`utils/dali_index.sh`). The DALI index folder (`data.dali_index`, a container path) is looked
    for, in order: through the mounts; on the host at `<data.path>/<basename>` or
    `<data.path>/../<basename>`; inside the running container (mode `exec`). A folder found only on
    the host but not mounted fails in mode `run`: a fresh container would not see it.
  * imagenet_recordio: `train.rec`, `train.idx`, `val.rec`, `val.idx`.
  * imagenet_folders: the raw ImageNet folders `train/` and `val/` (one folder per class), which
    main.py reads with torchvision's ImageFolder or DALI.
  * coco_tfrecords: COCO `train*.tfrecord` and `val*.tfrecord` (every shard of `-of-NNNNN`), and the
    pretrained ResNet-50 checkpoint `resnet/resnet-nhwc-2018-02-07/model.ckpt-112603.{index,data-*}`
    under the folder mounted at /model (a model whose spec says `pretrained_checkpoint`).
  * bert_parquet: PyTorch BERT's `--input_dir`, a folder of `*.parquet` shards (LDDL, NGC 22.x and later)
    or `*.hdf5` shards (NGC 21.11 and before).
  * bert_tfrecords: TF1 BERT's `data/` with `tfrecord/` (the phase 1 and 2 TFRecords) and `download/`
    (Google's pretrained configuration), as run_pretraining_lamb_phase1.sh reads them.
  * Studies whose points all use synthetic data need no data.

`data_preparation(study)` gives the data preparation commands of the published reports.

This module runs the checks in set-up order and shows them (`render`, `benchbook check`); each kind
of need has its module: `probes` (the `Check` record and the read-only commands), `needs` (what the
sweep asks), `environments` (CPU), `containers` (docker, image, container), `gpus`,
`launcher_tools` (MPI, ssh, Slurm), `model_code`, `data` and `data_preparation`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
from collections.abc import Mapping
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ...environment import envs
from ..study import RunSpec, Study, expand, load
from . import containers, data, environments, launcher_tools, model_code
from .data_preparation import data_preparation
from .gpus import gpu_count
from .needs import sweep_needs
from .probes import CONTAINER_TIMEOUT, TIMEOUT, Check, Probes, Runner, Which, bounded_run, failed

__all__ = ["CONTAINER_TIMEOUT", "TIMEOUT", "Check", "Runner", "Which", "add_check_parser", "bounded_run", "check",
           "cmd_check", "data_preparation", "failed", "render"]


def check(study: Study, *, which: Which = shutil.which, run: Runner = bounded_run, gpus: int | None = None,
          code_dir: str | Path | None = None, runs: list[RunSpec] | None = None,
          env: Mapping[str, str] | None = None, root: str | Path = "/", probe: bool = True) -> list[Check]:
    """Everything `study` needs, each as a Check, in the order a set-up would provide them.

    `which`/`run`: how commands are found and run (`shutil.which`, `subprocess.run` signatures).
    `gpus`: GPUs of this node, when known (else `nvidia-smi -L`). `code_dir`: a clone of the model
    code to compare with the study's commit. `runs`: the runs to check for (default: the whole
    study, `study.expand`); pass the selected ones when only some will be launched. `env`/`root`:
    the environment variables and file-system root the container detection reads (tests). `probe`:
    also run what the study names (in its container, ssh to its hosts, its Python); False only looks.
    """
    p = Probes(which, run, os.environ if env is None else env, Path(root), probe)
    runs = expand(study) if runs is None else runs
    needs = sweep_needs(study, runs)
    if study.runtime == "cpu":
        named = study.python or p.env.get(envs.variable(study.framework))
        out = environments.named_python(p, study, named) if named else [environments.cpu_environment(study)]
        if study.launcher.name == "slurm":
            return out + launcher_tools.slurm(p, study)
        return out + [launcher_tools.program(p, name) for name in needs.launchers]
    if study.launcher.name == "slurm":
        return [*launcher_tools.slurm(p, study), model_code.code_checkout(p, study, code_dir)]
    out: list[Check] = []
    c = study.container
    ready = True  # whether commands can be run where the launcher runs (in the container)
    if c.mode == "inside":
        out.append(containers.inside(p, study))
    else:
        docker = containers.docker(p, study)
        out += docker
        engine_ok = all(x.ok for x in docker if x.name in ("docker", "docker engine"))
        if c.mode == "run":
            image = containers.image(p, study) if engine_ok else _skipped("image", c.image, "docker")
            out.append(image)
            ready = bool(image.ok)
        else:
            container = containers.container(p, study) if engine_ok else _skipped("container", c.name, "docker")
            out.append(container)
            ready = bool(container.ok)
            if not container.ok and engine_ok:
                out.append(containers.image(p, study))
    out.append(gpu_count(p, study, needs, gpus))
    out += launcher_tools.mpi_and_ssh(p, study, needs, runs, ready)
    out.append(model_code.code_checkout(p, study, code_dir))
    if needs.real_data:
        out += data.data_checks(p, study, needs, container_ready=ready and c.mode == "exec")
    else:
        out.append(Check("data", None, "every run uses synthetic data: no data set needed"))
    return out


def _skipped(name: str, what: str | None, because: str) -> Check:
    return Check(name, None, f"{what}: not checked, {because} is not available (see above)")


def _summary(checks: list[Check]) -> str:
    bad = len(failed(checks))
    n = len(checks)
    return f"{bad} of {n} checks missing" if bad else f"{n} check{'' if n == 1 else 's'}, none missing"


_STATUS = {True: "[green]ok[/]", False: "[bold red]MISSING[/]", None: "[yellow]?[/]"}


def render(checks: list[Check], title: str | None = None) -> Table:
    """The checks as a table: status, what, detail, and the fix of what is missing or unknown."""
    t = Table(title=title or _summary(checks), show_lines=True)
    t.add_column("status", no_wrap=True)
    t.add_column("check", style="bold", no_wrap=True)
    t.add_column("detail", overflow="fold")
    t.add_column("fix", overflow="fold")
    for c in checks:
        t.add_row(_STATUS[c.ok], escape(c.name), escape(c.detail), escape(c.fix or "") if c.ok is not True else "")
    return t


def add_check_parser(sub: argparse._SubParsersAction) -> None:
    """Add `check` to the subcommands of `benchbook`."""
    c = sub.add_parser("check", help="check what a study needs (docker, image, GPUs, ssh, code, data) and say how "
                       "to fix what is missing",
                       description="Check a study's set-up: docker and the NVIDIA runtime, the image or container, "
                       "GPUs per node, MPI and passwordless ssh to every host, the code, and the data layout. "
                       "It only looks (docker info, docker image inspect, nvidia-smi -L, which, the files): what "
                       "runs something the study names (its container, ssh to its hosts, its python) is shown as "
                       "not checked unless --probe. Exit status 1 when something is missing.")
    c.add_argument("study", help="study file, e.g. params/MODEL/ngc.yaml")
    c.add_argument("--data-prep", action="store_true", help="also print the published data preparation commands")
    c.add_argument("--json", action="store_true", help="the checks as one JSON object")
    c.add_argument("--code", metavar="DIR", help="a clone of the model code, compared with the study's commit")
    c.add_argument("--gpus", type=int, metavar="N", help="GPUs of this node (default: count them with nvidia-smi -L)")
    c.add_argument("--probe", action="store_true",
                   help="also run what the study names: look for mpirun in its container (docker run/exec), ssh to "
                   "its hosts, import the framework with its python (default: only look, nothing the study names "
                   "is run)")
    c.set_defaults(func=cmd_check)


def cmd_check(args, out: Console, err: Console) -> int:
    spec = load(args.study)
    results = check(spec, gpus=args.gpus, code_dir=args.code, probe=args.probe)
    bad = failed(results)
    prep = data_preparation(spec) if args.data_prep else None
    if args.json:
        doc = {"study": spec.name, "path": str(spec.path), "ready": not bad, "probed": args.probe,
               "checks": [c.to_json() for c in results]}
        if prep is not None:
            doc["data_preparation"] = prep
        print(json.dumps(doc, indent=2))
        return 1 if bad else 0
    out.print(render(results, f"study {spec.name}: {_summary(results)}"))
    if prep is not None:
        if prep:
            out.print(f"[bold]data preparation of the published {escape(spec.model)} reports[/]")
            for line in prep:
                print(line)
        else:
            out.print("no data to prepare: the CPU workloads use synthetic data or the digits shipped in the package")
    if bad:
        err.print(f"benchbook: {len(bad)} missing: {escape(', '.join(c.name for c in bad))}", highlight=False)
    return 1 if bad else 0
