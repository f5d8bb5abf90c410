"""Set-up checks: `benchbook check STUDY` lists what a study needs and what is missing, with the fix.

`check(study)` returns one `Check` per need: `ok` True (there), False (missing: the study would
fail; `fix` is the command or step that provides it) or None (could not tell, or nothing to do).
Nothing is installed or changed; every probe is a read-only command with a short time limit, run
through the injectable `which` and `run` so that tests can fake docker, ssh, mpirun and nvidia-smi.

What is checked, by runtime and container mode:

- `cpu`: the framework's isolated environment (`benchbook.envs`); it is built by the first run, so
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
  * Studies whose points all use synthetic data need no data.

`data_preparation(study)` gives the data preparation commands of the published reports.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import posixpath
import re
import shlex
import shutil
import subprocess
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from . import commands, envs, workloads
from . import launchers as launchers_registry
from .study import RunSpec, Study, expand, load

Which = Callable[[str], "str | None"]
Runner = Callable[..., "subprocess.CompletedProcess"]

TRAIN_SHARDS, VALIDATION_SHARDS = 1024, 128  # ImageNet TFRecords of build_imagenet_data.py
RECORDIO_FILES = ("train.rec", "train.idx", "val.rec", "val.idx")
IMAGE_FOLDERS = ("train", "val")  # PyTorch ConvNets main.py: <data>/train and <data>/val
CHECKPOINT_DIR = "resnet/resnet-nhwc-2018-02-07"
CHECKPOINT = "model.ckpt-112603"
WEIGHTS_MOUNT = "/model"  # where benchmark_training.py looks for the pretrained weights (--weights_dir)
PUBLISHED_SSH_PORT = 10000
SHOWN = 5  # missing file names shown per check
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


# ---------------------------------------------------------------- probes


@dataclass
class _Probes:
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


def _first_line(*texts: str) -> str:
    return next((line.strip() for t in texts for line in t.splitlines() if line.strip()), "")


# ---------------------------------------------------------------- what the sweep needs


@dataclass(frozen=True)
class _Needs:
    per_node: int  # most GPUs on one node
    widest: str  # the point that needs them, as written (8, 4x8, 1,8)
    nodes: int  # most nodes
    launchers: tuple[str, ...]  # the programs that start several processes: mpiexec, mpirun, horovodrun
    real_data: bool
    dali: bool


def _needs(study: Study, runs: list[RunSpec]) -> _Needs:
    per_node, widest, nodes, launchers, real, dali = 0, "", 1, set(), False, False
    for r in runs:
        cfg = r.config
        if "gpu_counts" in cfg:  # MXNet benchmark.py: every count on this node
            n, g, label = 1, max(cfg["gpu_counts"]), ",".join(map(str, cfg["gpu_counts"]))
        else:
            n, g = cfg.get("nodes", 1), cfg.get("gpus_per_node", 0)
            label = f"{n}x{g}" if n > 1 else str(g)
        if g > per_node:
            per_node, widest = g, label
        nodes = max(nodes, n)
        wrapped = launchers_registry.get(study.launcher.name).wrap(study, cfg, ["PROGRAM"])
        if wrapped[0] != "PROGRAM":
            launchers.add(wrapped[0])
        real |= not cfg["synthetic"]
        dali |= bool(cfg["dali"]) and not cfg["synthetic"]
    return _Needs(per_node, widest, nodes, tuple(sorted(launchers)), real, dali)


# ---------------------------------------------------------------- entry point


def check(study: Study, *, which: Which = shutil.which, run: Runner = subprocess.run, gpus: int | None = None,
          code_dir: str | Path | None = None, runs: list[RunSpec] | None = None,
          env: Mapping[str, str] | None = None, root: str | Path = "/") -> list[Check]:
    """Everything `study` needs, each as a Check, in the order a set-up would provide them.

    `which`/`run`: how commands are found and run (`shutil.which`, `subprocess.run` signatures).
    `gpus`: GPUs of this node, when known (else `nvidia-smi -L`). `code_dir`: a clone of the model
    code to compare with the study's commit. `runs`: the runs to check for (default: the whole
    study, `study.expand`); pass the selected ones when only some will be launched. `env`/`root`:
    the environment variables and file-system root the container detection reads (tests).
    """
    p = _Probes(which, run, os.environ if env is None else env, Path(root))
    runs = expand(study) if runs is None else runs
    needs = _needs(study, runs)
    if study.runtime == "cpu":
        named = study.python or p.env.get(envs.variable(study.framework))
        out = _named_python(p, study, named) if named else [_cpu_environment(study)]
        if study.launcher.name == "slurm":
            return out + _slurm(p, study)
        return out + [_program(p, name) for name in needs.launchers]
    if study.launcher.name == "slurm":
        return [*_slurm(p, study), _code(p, study, code_dir)]
    out: list[Check] = []
    c = study.container
    ready = True  # whether commands can be run where the launcher runs (in the container)
    if c.mode == "inside":
        out.append(_inside(p, study))
    else:
        docker = _docker(p, study)
        out += docker
        engine_ok = all(x.ok for x in docker if x.name in ("docker", "docker engine"))
        if c.mode == "run":
            image = _image(p, study) if engine_ok else _skipped("image", c.image, "docker")
            out.append(image)
            ready = bool(image.ok)
        else:
            container = _container(p, study) if engine_ok else _skipped("container", c.name, "docker")
            out.append(container)
            ready = bool(container.ok)
            if not container.ok and engine_ok:
                out.append(_image(p, study))
    out.append(_gpu_count(p, study, needs, gpus))
    out += _mpi_and_ssh(p, study, needs, runs, ready)
    out.append(_code(p, study, code_dir))
    if needs.real_data:
        out += _data(p, study, needs, container_ready=ready and c.mode == "exec")
    else:
        out.append(Check("data", None, "every run uses synthetic data: no data set needed"))
    return out


def _skipped(name: str, what: str | None, because: str) -> Check:
    return Check(name, None, f"{what}: not checked, {because} is not available (see above)")


# ---------------------------------------------------------------- CPU


def _named_python(p: _Probes, study: Study, python: str) -> list[Check]:
    """The Python a study or BENCHBOOK_PYTHON_<FRAMEWORK> names: it imports the framework (its
    version), and for `cpu.device: cuda` PyTorch sees a GPU (how many, the first one's name)."""
    fw, module = study.framework, envs.IMPORTS[study.framework]
    setting = "the study's `python`" if study.python else envs.variable(fw)
    cuda = study.cpu.device == "cuda"
    code = f"import {module}; print({module}.__version__)"
    if cuda:
        code += "; n = torch.cuda.device_count(); print(n, torch.cuda.get_device_name(0) if n else '')"
    status, out, err = p.call([python, "-c", code], timeout=120)
    name = f"{fw} (named Python)"
    fix = f"name a Python that has {module} in {setting}, or unset it to build the pinned environment"
    if status != 0:
        why = (err.strip().splitlines() or [out.strip() or f"exit status {status}"])[-1]
        return [Check(name, False, f"{python} (from {setting}) cannot import {module}: {why}", fix)]
    lines = out.splitlines()
    checks = [Check(name, True, f"{python} (from {setting}): {module} {lines[0].strip() if lines else '?'}")]
    if cuda:
        count, _, gpu = (lines[1] if len(lines) > 1 else "0").partition(" ")
        ok = count.strip().isdigit() and int(count) > 0
        detail = f"{count} CUDA device(s), the first: {gpu.strip()}" if ok else "PyTorch sees no CUDA device"
        checks.append(Check("CUDA GPU", ok, detail, None if ok else "run on a machine with an NVIDIA GPU and its "
                            "driver, with a CUDA build of PyTorch"))
    return checks


def _cpu_environment(study: Study) -> Check:
    fw = study.framework
    name = f"{fw} environment"
    reqs = workloads.requirements(fw).name
    if envs.ready(fw):
        return Check(name, True, f"{envs.path(fw)} (from {reqs})")
    if importlib.util.find_spec("ensurepip") is None:
        return Check(name, False, f"{envs.path(fw)} does not exist, and this Python cannot create it: no ensurepip "
                     "(virtual environments without pip)",
                     "sudo apt-get install python3-venv   # the venv/ensurepip package of this Python")
    return Check(name, None, f"{envs.path(fw)} not created yet: created automatically by the first run "
                 f"(pinned in {reqs}; needs the package index or a mirror)",
                 f"benchbook run {shlex.quote(str(study.path)) if study.path else 'STUDY'}")


_MPI_FIX = "sudo apt-get install -y openmpi-bin   # Open MPI: mpirun, mpiexec"


def _program(p: _Probes, name: str) -> Check:
    """A launcher program that runs here (CPU runs start their ranks from this machine)."""
    found = p.which(name)
    if found:
        return Check(name, True, found)
    fix = "pip install horovod   # in the framework's environment" if name == "horovodrun" else _MPI_FIX
    return Check(name, False, f"no `{name}` on PATH here; the study's launcher starts its processes with it", fix)


_SLURM_FIX = ("run benchbook on the cluster's login node, or install the Slurm client (sudo apt-get install -y "
              "slurm-client) configured for the cluster; for a one-machine cluster: tools/slurm_cluster.sh up")


def _slurm(p: _Probes, study: Study) -> list[Check]:
    """The scheduler the `slurm` launcher submits to, reached from here."""
    if not p.which("sbatch"):
        return [Check("slurm", False, "no `sbatch` on PATH; launcher slurm submits every run with it", _SLURM_FIX)]
    code, out, err = p.call(["sinfo", "-h", "-o", "%P %a %D %T"], CONTAINER_TIMEOUT)
    if code != 0:
        return [Check("slurm", False, f"`sinfo` failed: {_first_line(err, out) or f'exit {code}'}", _SLURM_FIX)]
    partitions = [line.split()[0].rstrip("*") for line in out.splitlines() if line.strip()]
    wanted = study.launcher.slurm.partition
    checks = [Check("slurm", True, f"controller answers; partitions: {', '.join(dict.fromkeys(partitions))}")]
    if wanted and wanted not in partitions:
        checks.append(Check("slurm partition", False, f"partition {wanted!r} is not among {', '.join(partitions)}",
                            "set launcher.slurm.partition to one that `sinfo` lists"))
    if study.runtime == "ngc":
        code, out, err = p.call(["srun", "--help"], CONTAINER_TIMEOUT)
        if code == 0 and "--container-image" in out:
            checks.append(Check("pyxis", True, "srun --container-image is available"))
        else:
            checks.append(Check("pyxis", False, "srun has no --container-image: the pyxis plugin is not installed",
                                "install enroot and pyxis on the cluster (https://github.com/NVIDIA/pyxis), or ask "
                                "the cluster's administrators"))
    return checks


# ---------------------------------------------------------------- docker, image, container


_TOOLKIT = ("nvidia-container-toolkit", "nvidia-container-runtime-hook", "nvidia-container-cli", "nvidia-ctk")
_TOOLKIT_FIX = ("sudo apt-get install -y nvidia-container-toolkit && sudo nvidia-ctk runtime configure "
                "--runtime=docker && sudo systemctl restart docker   # NVIDIA Container Toolkit (docker --gpus)")


def _docker(p: _Probes, study: Study) -> list[Check]:
    if not p.which("docker"):
        detail = "no `docker` on PATH; the study runs its commands with docker " \
                 f"(container.mode {study.container.mode})"
        fix = "install Docker Engine (https://docs.docker.com/engine/install/) and the NVIDIA Container Toolkit"
        if p.which("srun") and (p.which("enroot") or p.which("enroot-start")):
            detail += "; this is a Slurm machine with enroot"
            fix = (f"under Slurm, set `launcher: slurm` in the study: every run becomes an sbatch job whose srun "
                   f"starts the container with pyxis (--container-image={study.container.image}); or run benchbook "
                   f"inside the container with container.mode: inside, e.g. srun --container-image="
                   f"{study.container.image} --container-mounts={study.data.path or 'DATA'}:{study.data.mount} "
                   f"benchbook run STUDY")
        return [Check("docker", False, detail, fix)]
    code, out, err = p.call(["docker", "info", "--format", "{{json .Runtimes}}"])
    if code != 0:
        reason = _first_line(err, out) or f"exit status {code}"
        fix = "sudo systemctl start docker"
        if "permission denied" in reason.lower():
            fix = "sudo usermod -aG docker $USER   # then log in again (or run benchbook with sudo)"
        return [Check("docker", True, p.which("docker") or "docker"),
                Check("docker engine", False, f"`docker info` failed: {reason}", fix)]
    checks = [Check("docker", True, p.which("docker") or "docker"), Check("docker engine", True, "reachable")]
    try:
        runtimes = json.loads(out.strip() or "{}")
    except json.JSONDecodeError:
        runtimes = {}
    names = sorted(runtimes) if isinstance(runtimes, dict) else []
    if "nvidia" in names:
        checks.append(Check("NVIDIA container runtime", True, f"docker runtimes: {', '.join(names)}"))
    else:
        tool = next((t for t in _TOOLKIT if p.which(t)), None)
        if tool:
            checks.append(Check("NVIDIA container runtime", True,
                                f"NVIDIA Container Toolkit ({tool}) for `docker run --gpus`"))
        else:
            checks.append(Check("NVIDIA container runtime", False,
                                f"docker runtimes: {', '.join(names) or 'none listed'}; no nvidia runtime and no "
                                "NVIDIA Container Toolkit: `docker run --gpus all` will fail", _TOOLKIT_FIX))
    return checks


def _build_fix(study: Study) -> str:
    return "\n".join(commands.setup_steps(study))


def _image(p: _Probes, study: Study) -> Check:
    image = study.container.image
    code, out, err = p.call(["docker", "image", "inspect", "--format", "{{.Id}}", image])
    if code == 0:
        return Check("image", True, f"{image} ({out.strip()[:19] or 'present'})")
    reason = _first_line(err, out) or "not found"
    return Check("image", False, f"{image} is not in the local docker engine ({reason})", _build_fix(study))


def _container_run_line(study: Study) -> str:
    c = study.container
    argv = ["docker", "run", "-d", "-it", "--gpus", "all", "--ipc=host", "--net=host", *c.options, "--name", c.name]
    if study.data.path:
        argv += ["-v", f"{study.data.path}:{study.data.mount}"]
    argv += [a for h, m in c.mounts.items() for a in ("-v", f"{h}:{m}")]
    return shlex.join([*argv, c.image])


def _container(p: _Probes, study: Study) -> Check:
    name = study.container.name
    code, out, err = p.call(["docker", "inspect", "-f", "{{.State.Running}}", name])
    state = out.strip().lower()
    if code == 0 and state == "true":
        return Check("container", True, f"{name} is running")
    if code == 0:
        return Check("container", False, f"container {name} exists but is not running", f"docker start {name}")
    return Check("container", False, f"no container {name} ({_first_line(err, out) or 'docker inspect failed'}); "
                 "container.mode exec runs the commands in it", _container_run_line(study))


def _inside(p: _Probes, study: Study) -> Check:
    signs = [s for s, there in (("/.dockerenv", (p.root / ".dockerenv").exists()),
                                ("/run/.containerenv", (p.root / "run/.containerenv").exists()),
                                ("NVIDIA_BUILD_ID", bool(p.env.get("NVIDIA_BUILD_ID"))),
                                ("container", bool(p.env.get("container")))) if there]
    if signs:
        return Check("inside container", True, f"container.mode inside: {', '.join(signs)}")
    return Check("inside container", False,
                 "container.mode inside, but no sign of a container here (no /.dockerenv, /run/.containerenv, "
                 "NVIDIA_BUILD_ID)",
                 f"start benchbook in the container: docker run -it --gpus all --ipc=host ... {study.container.image}, "
                 f"or under Slurm with enroot/pyxis: srun --container-image={study.container.image} ... "
                 "benchbook run STUDY")


# ---------------------------------------------------------------- GPUs


def _gpu_count(p: _Probes, study: Study, needs: _Needs, gpus: int | None) -> Check:
    need = needs.per_node
    if gpus is None:
        code, out, err = p.call(["nvidia-smi", "-L"])
        if code != 0:
            reason = err.strip() if code is None else (_first_line(err, out) or f"exit status {code}")
            return Check("GPUs per node", False, f"{need} needed (point {needs.widest}); nvidia-smi failed: {reason}",
                         "install the NVIDIA driver (nvidia-smi must list the GPUs), or run on a GPU node")
        gpus, source = len(re.findall(r"^GPU \d+:", out, re.MULTILINE)), "nvidia-smi -L"
    else:
        source = "given"
    detail = f"{gpus} on this node ({source}), {need} needed (largest point: {needs.widest} GPUs)"
    if gpus >= need:
        return Check("GPUs per node", True, detail)
    return Check("GPUs per node", False, detail,
                 f"run on a node with at least {need} GPUs, or remove the points above {gpus} GPUs per node "
                 "from the sweep")


# ---------------------------------------------------------------- MPI and ssh


def _where(study: Study) -> str:
    c = study.container
    return {"inside": "here", "exec": f"in container {c.name}", "run": f"in a container of {c.image}"}[c.mode]


def _in_launcher(study: Study, argv: list[str]) -> list[str]:
    """`argv` run where the launcher (mpirun) runs: here, in the exec container, or in a fresh container."""
    c = study.container
    if c.mode == "inside":
        return argv
    if c.mode == "exec":
        return ["docker", "exec", c.name, *argv]
    return ["docker", "run", "--rm", c.image, *argv]  # as the runs start: the same image, network and keys


def _ssh_fix(study: Study, host: str) -> str:
    port = study.ssh_port or PUBLISHED_SSH_PORT
    inside = f"docker exec -it {study.container.name} bash" if study.container.mode == "exec" else \
        "a shell in the container"
    lines = [f"# on every node, in {inside} (the published multi-node set-up):",
             "apt-get update && apt-get install -y openssh-server",
             f"# /etc/ssh/sshd_config: Port {port}, PermitRootLogin yes, PubkeyAuthentication yes",
             "service ssh restart",
             "test -f /root/.ssh/id_rsa || ssh-keygen -t rsa -N '' -f /root/.ssh/id_rsa",
             "# append every node's /root/.ssh/id_rsa.pub to every node's /root/.ssh/authorized_keys",
             f"ssh -p {port} {host} true   # must succeed without a password prompt"]
    if not study.ssh_port:
        lines.insert(0, f"# set ssh_port: {port} in the study (mpirun passes it to ssh)")
    return "\n".join(lines)


def _mpi_and_ssh(p: _Probes, study: Study, needs: _Needs, runs: list[RunSpec], ready: bool) -> list[Check]:
    out: list[Check] = []
    where = _where(study)
    for launcher in needs.launchers:
        name = launcher
        if not ready:
            out.append(Check(name, None, f"not checked {where}: the container is not available (see above)"))
        elif study.container.mode == "inside":
            found = p.which(launcher)
            out.append(Check(name, True, found) if found else
                       Check(name, False, f"no `{launcher}` on PATH here",
                             "use the NGC image (it ships Open MPI), or install Open MPI: apt-get install -y "
                             "openmpi-bin"))
        else:
            code, o, e = p.call(_in_launcher(study, ["sh", "-c", f"command -v {launcher}"]), CONTAINER_TIMEOUT)
            found = o.strip().splitlines()[-1].strip() if o.strip() else ""  # after the NGC entrypoint's banner
            if code == 0 and found:
                out.append(Check(name, True, f"{found} ({where})"))
            else:
                out.append(Check(name, False, f"no `{launcher}` {where} ({_first_line(e, o) or f'exit {code}'})",
                                 "build the image from the NGC framework image (it ships Open MPI) as the "
                                 "published set-up did:\n" + _build_fix(study)))
    if needs.nodes > 1:
        hosts = study.hosts[:needs.nodes]
        port = study.ssh_port
        for host in hosts:
            name = f"ssh {host}" + (f":{port}" if port else "")
            if not ready:
                out.append(Check(name, None, f"not checked {where}: the container is not available (see above)"))
                continue
            argv = ["ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=5", *(["-p", str(port)] if port else []),
                    host, "true"]
            code, o, e = p.call(_in_launcher(study, argv), CONTAINER_TIMEOUT)
            if code == 0:
                out.append(Check(name, True, f"passwordless ssh to {host}" + (f" port {port}" if port else "")
                                 + f" ({where})"))
            else:
                reason = _first_line(e, o) or f"exit status {code}"
                out.append(Check(name, False, f"ssh {where} to {host}" + (f" port {port}" if port else "")
                                 + f" failed: {reason}; mpirun starts the other nodes' ranks over ssh",
                                 _ssh_fix(study, host)))
    return out


# ---------------------------------------------------------------- code


def _code(p: _Probes, study: Study, code_dir: str | Path | None) -> Check:
    code = study.code
    steps = "\n".join(s for s in commands.setup_steps(study) if not s.startswith("docker build"))
    label = f"{code.repository} at {code.commit[:12]}" + (f", {code.subfolder}" if code.subfolder else "")
    if code_dir is None:
        return Check("code", None, f"{label}: not checked (give --code DIR to compare a clone)", steps)
    folder = Path(code_dir)
    rc, out, err = p.call(["git", "-C", str(folder), "rev-parse", "HEAD"])
    if rc != 0:
        return Check("code", False, f"{folder} is not a git clone ({_first_line(err, out) or 'git failed'})", steps)
    head = out.strip()
    if not head or not head.startswith(code.commit):
        folder_q = shlex.quote(str(folder))
        return Check("code", False, f"{folder} is at {head[:12]}, the study needs {code.commit[:12]}",
                     f"git -C {folder_q} fetch && git -C {folder_q} checkout {code.commit}")
    if code.subfolder and not (folder / code.subfolder).is_dir():
        return Check("code", False, f"{folder} at {head[:12]} has no {code.subfolder}", steps)
    return Check("code", True, f"{folder} at {head[:12]}" + (f"; patches to apply: {', '.join(code.patches)}"
                                                             if code.patches else ""))


# ---------------------------------------------------------------- data


@dataclass(frozen=True)
class _Place:
    """A folder as the container will see it: on this machine (`path`) or inside the exec container."""

    path: str
    in_container: str | None = None  # container name: list it with docker exec
    note: str = ""

    def label(self) -> str:
        return f"{self.path} (in container {self.in_container})" if self.in_container else self.path


def _mounts(study: Study) -> list[tuple[str, str]]:
    """(container path, host path) of every mount, deepest container path first."""
    pairs = [(study.data.mount, study.data.path)] if study.data.path else []
    pairs += [(m, h) for h, m in study.container.mounts.items()]
    return sorted(((posixpath.normpath(m), h) for m, h in pairs), key=lambda x: -len(x[0]))


def _host_path(study: Study, container_path: str) -> str | None:
    """The host path of a container path through the study's mounts, or None when no mount covers it."""
    target = posixpath.normpath(container_path)
    for mount, host in _mounts(study):
        if target == mount or target.startswith(mount.rstrip("/") + "/"):
            rest = posixpath.relpath(target, mount)
            return str(Path(host) / rest) if rest != "." else host
    return None


def _place(study: Study, container_path: str, container_ready: bool) -> _Place | None:
    """Where to look for a container path: as is (mode inside), through the mounts, or inside the exec container."""
    c = study.container
    if c.mode == "inside":
        return _Place(container_path)
    host = _host_path(study, container_path)
    if host is not None:
        return _Place(host)
    if c.mode == "exec" and container_ready:
        return _Place(container_path, in_container=c.name)
    return None


def _list(p: _Probes, place: _Place) -> tuple[set[str] | None, str]:
    """The names in a folder, or None and why not."""
    if place.in_container:
        code, out, err = p.call(["docker", "exec", place.in_container, "ls", "-1A", place.path])
        if code != 0:
            return None, _first_line(err, out) or f"ls exited with {code}"
        return {line.strip() for line in out.splitlines() if line.strip()}, ""
    path = Path(place.path)
    if not path.exists():
        return None, "does not exist"
    if not path.is_dir():
        return None, "is not a folder"
    try:
        return set(os.listdir(path)), ""
    except OSError as exc:
        return None, f"cannot be read ({exc.strerror or exc})"


def _shards(prefix: str, count: int, suffix: str = "") -> list[str]:
    return [f"{prefix}-{i:05d}-of-{count:05d}{suffix}" for i in range(count)]


def _missing_text(missing: list[str]) -> str:
    shown = ", ".join(missing[:SHOWN])
    return shown + (f" (and {len(missing) - SHOWN} more)" if len(missing) > SHOWN else "")


def _count_check(name: str, what: str, expected: list[str], names: set[str], where: str, fix: str) -> Check:
    missing = [n for n in expected if n not in names]
    have = len(expected) - len(missing)
    if not missing:
        return Check(name, True, f"{have} of {len(expected)} {what} in {where}")
    return Check(name, False, f"{have} of {len(expected)} {what} in {where}: missing {_missing_text(missing)}", fix)


def _prep_hint(study: Study) -> str:
    return f"benchbook check {shlex.quote(str(study.path)) if study.path else 'STUDY'} --data-prep"


def _data(p: _Probes, study: Study, needs: _Needs, container_ready: bool) -> list[Check]:
    mount = study.data.mount
    place = _place(study, mount, container_ready)
    data_name = study.spec.data_name
    prep = f"prepare the data set (the published commands: {_prep_hint(study)})"
    if place is None:
        why = "data.path is not set" if not study.data.path else "the container is not running"
        out = [Check(data_name, None, f"{mount}: not checked, {why}", prep)]
    else:
        names, why = _list(p, place)
        if names is None:
            out = [Check(data_name, False, f"data folder {place.label()} {why}", prep)]
        else:
            out = _layout(study, names, place.label(), prep)
    if study.spec.dali_index and needs.dali:
        out.append(_dali_index(p, study, container_ready))
    if study.spec.pretrained_checkpoint:
        out.append(_checkpoint(p, study, container_ready))
    return out


def _layout(study: Study, names: set[str], where: str, prep: str) -> list[Check]:
    layout = study.spec.data_layout
    if layout == "imagenet_tfrecords":
        return [_count_check("ImageNet train TFRecords", "train shards", _shards("train", TRAIN_SHARDS), names, where,
                             prep),
                _count_check("ImageNet validation TFRecords", "validation shards",
                             _shards("validation", VALIDATION_SHARDS), names, where, prep)]
    if layout == "imagenet_recordio":
        return [_count_check("ImageNet RecordIO", "RecordIO files", list(RECORDIO_FILES), names, where, prep)]
    if layout == "imagenet_folders":
        return [_count_check("ImageNet folders", "folders (train/, val/)", list(IMAGE_FOLDERS), names, where, prep)]
    return [_sharded_glob("COCO train TFRecords", "train", names, where, prep),
            _sharded_glob("COCO validation TFRecords", "val", names, where, prep)]


def _sharded_glob(name: str, prefix: str, names: set[str], where: str, fix: str) -> Check:
    """`prefix*.tfrecord` present; when named `prefix-NNNNN-of-MMMMM.tfrecord`, all MMMMM of them."""
    found = sorted(n for n in names if n.startswith(prefix) and n.endswith(".tfrecord"))
    if not found:
        return Check(name, False, f"no {prefix}*.tfrecord in {where}", fix)
    counts = {int(m.group(1)) for n in found if (m := re.fullmatch(rf"{re.escape(prefix)}-\d{{5}}-of-(\d{{5}})"
                                                                    r"\.tfrecord", n))}
    if len(counts) == 1:
        total = counts.pop()
        return _count_check(name, f"{prefix} shards", _shards(prefix, total, ".tfrecord"), names, where, fix)
    return Check(name, True, f"{len(found)} {prefix}*.tfrecord files in {where}")


def _dali_index(p: _Probes, study: Study, container_ready: bool) -> Check:
    name = "DALI index"
    idx = study.data.dali_index
    c = study.container
    script = f"cd {study.code.workdir} && mkdir -p {idx} && bash ./utils/dali_index.sh {study.data.mount} {idx}"
    fix = (f"docker exec -it {c.name} bash -c {shlex.quote(script)}" if c.mode == "exec" else
           script if c.mode == "inside" else f"in the container: {script}")
    if not idx:  # study validation requires it with DALI; kept for safety
        return Check(name, False, "DALI runs need data.dali_index (the index folder)", fix)
    place = _place(study, idx, False)
    note = ""
    if place is None and study.data.path:  # no mount covers it: the documented host guesses
        base = posixpath.basename(posixpath.normpath(idx))
        for guess in (Path(study.data.path) / base, Path(study.data.path).parent / base):
            if guess.is_dir():
                place = _Place(str(guess))
                note = f" (found on the host for {idx}, which no mount covers)"
                break
    if place is None and c.mode == "exec" and container_ready:
        place = _Place(idx, in_container=c.name)
    if place is None:
        looked = ""
        if study.data.path:
            base = posixpath.basename(posixpath.normpath(idx))
            looked = f"; looked on the host at {Path(study.data.path) / base} and {Path(study.data.path).parent / base}"
        return Check(name, False, f"DALI index folder {idx} not found{looked}", fix)
    names, why = _list(p, place)
    if names is None:
        return Check(name, False, f"DALI index folder {place.label()}{note} {why}", fix)
    expected = _shards("train", TRAIN_SHARDS) + _shards("validation", VALIDATION_SHARDS)
    result = _count_check(name, "index files (one per shard)", expected, names, place.label() + note, fix)
    if c.mode == "run" and note and result.ok:
        return Check(name, False, f"{result.detail}; `docker run` mounts only data.path and container.mounts, so "
                     f"the container will not see {idx}",
                     f"add to the study: container.mounts: {{{place.path}: {idx}}}")
    return result


def _checkpoint(p: _Probes, study: Study, container_ready: bool) -> Check:
    name = "ResNet-50 checkpoint"
    target = f"{WEIGHTS_MOUNT}/{CHECKPOINT_DIR}"
    host = next((h for h, m in study.container.mounts.items() if posixpath.normpath(m) == WEIGHTS_MOUNT), None)
    fix = (f"in the code folder (cd {study.code.workdir} in the container): "
           "./download_and_process_pretrained_weights.sh   # writes weights/resnet/...\n"
           + (f"then copy weights/ to {host} (mounted at {WEIGHTS_MOUNT})" if host else
              f"then mount weights/ at {WEIGHTS_MOUNT}: container.mounts: {{/path/to/weights: {WEIGHTS_MOUNT}}}"))
    place = _place(study, target, container_ready)
    if place is None:
        return Check(name, False, f"no folder is mounted at {WEIGHTS_MOUNT} (container.mounts host: {WEIGHTS_MOUNT}); "
                     f"benchmark_training.py reads {target}/{CHECKPOINT}", fix)
    names, why = _list(p, place)
    if names is None:
        return Check(name, False, f"{place.label()} {why}", fix)
    missing = [] if f"{CHECKPOINT}.index" in names else [f"{CHECKPOINT}.index"]
    if not any(n.startswith(f"{CHECKPOINT}.data-") for n in names):
        missing.append(f"{CHECKPOINT}.data-00000-of-00001")
    if missing:
        return Check(name, False, f"{place.label()}: missing {', '.join(missing)}", fix)
    return Check(name, True, f"{CHECKPOINT} in {place.label()}")


# ---------------------------------------------------------------- data preparation


_IMAGENET_RAW = [
    "# ImageNet (ILSVRC2012) from image-net.org, extracted into one folder per class "
    "(DeepLearningExamples' README):",
    "mkdir train && mv ILSVRC2012_img_train.tar train/ && cd train",
    "tar -xvf ILSVRC2012_img_train.tar && rm -f ILSVRC2012_img_train.tar",
    'find . -name "*.tar" | while read NAME ; do mkdir -p "${NAME%.tar}"; tar -xvf "${NAME}" -C "${NAME%.tar}"; '
    'rm -f "${NAME}"; done',
    "cd ..",
    "mkdir val && mv ILSVRC2012_img_val.tar val/ && cd val && tar -xvf ILSVRC2012_img_val.tar",
    "wget -qO- https://raw.githubusercontent.com/soumith/imagenetloader.torch/master/valprep.sh | bash",
    "cd ..",
]


def data_preparation(study: Study) -> list[str]:
    """The data preparation of the published reports for the study's data layout, as shell lines ('#' lines
    explain).

    Paths are the study's: the container paths (data.mount, data.dali_index) and the code's workdir,
    which are the published ones in the shipped studies. CPU studies need none (empty list).
    """
    if study.runtime == "cpu":
        return []
    d, workdir = study.data, study.code.workdir
    host, layout = d.path or "DATA", study.spec.data_layout
    if layout == "imagenet_tfrecords":
        lines = [*_IMAGENET_RAW,
                 "# TFRecords: 1024 train and 128 validation shards (train-00000-of-01024 ..., validation-00000-of-"
                 "00128); the reports do not print this step, the usual converter is tensorflow/models "
                 "research/inception/inception/data/build_imagenet_data.py:",
                 f"python build_imagenet_data.py --train_directory=train --validation_directory=val "
                 f"--output_directory={host} --labels_file=imagenet_lsvrc_2015_synsets.txt "
                 "--imagenet_metadata_file=imagenet_metadata.txt --bounding_box_file=imagenet_2012_bounding_boxes.csv"]
        idx = d.dali_index or "/data/dali_idx"
        enter = f"docker exec -it {study.container.name} /bin/bash" if study.container.mode == "exec" else \
            f"docker run -it --rm -v {host}:{d.mount} {study.container.image} /bin/bash"
        lines += ["# DALI index files, one per shard, inside the container (DLPerf's README):", enter,
                  f"cd {workdir} && mkdir {idx}", f"bash ./utils/dali_index.sh {d.mount} {idx}"]
        return lines
    if layout == "imagenet_folders":  # main.py reads the extracted folders themselves
        return [*_IMAGENET_RAW,
                f"# then move train/ and val/ into {host} (mounted at {d.mount}); nothing else to build"]
    if layout == "imagenet_recordio":
        return [*_IMAGENET_RAW,
                f"# RecordIO (train.rec/.idx, val.rec/.idx), inside the container with the raw ImageNet (train/, val/) "
                f"mounted at /ILSVRC2012 and {host} at {d.mount}:",
                f"docker run -it --rm -v $PWD:/ILSVRC2012 -v {host}:{d.mount} {study.container.image} /bin/bash",
                f"cd {workdir} && ./scripts/prepare_imagenet.sh /ILSVRC2012 {d.mount}"]
    weights = next((h for h, m in study.container.mounts.items() if posixpath.normpath(m) == WEIGHTS_MOUNT),
                   "WEIGHTS")
    return ["# COCO 2017 TFRecords (train-*-of-00256.tfrecord, val-*-of-00032.tfrecord), inside the container "
            f"with {host} mounted at /data:",
            f"docker run -it --rm --gpus all -v {host}:/data {study.container.image} /bin/bash",
            f"cd {workdir}", "cd dataset && bash download_and_preprocess_coco.sh /data",
            f"# the pretrained ResNet-50 backbone ({CHECKPOINT_DIR}/{CHECKPOINT}), mounted at {WEIGHTS_MOUNT}:",
            f"cd {workdir} && ./download_and_process_pretrained_weights.sh   # writes weights/resnet/...",
            f"# then copy weights/ to {weights} on the host (container.mounts: {weights}: {WEIGHTS_MOUNT})"]


# ---------------------------------------------------------------- output and command line


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
                       "Exit status 1 when something is missing.")
    c.add_argument("study", help="study file, e.g. params/MODEL/ngc.yaml")
    c.add_argument("--data-prep", action="store_true", help="also print the published data preparation commands")
    c.add_argument("--json", action="store_true", help="the checks as one JSON object")
    c.add_argument("--code", metavar="DIR", help="a clone of the model code, compared with the study's commit")
    c.add_argument("--gpus", type=int, metavar="N", help="GPUs of this node (default: count them with nvidia-smi -L)")
    c.set_defaults(func=cmd_check)


def cmd_check(args, out: Console, err: Console) -> int:
    spec = load(args.study)
    results = check(spec, gpus=args.gpus, code_dir=args.code)
    bad = failed(results)
    prep = data_preparation(spec) if args.data_prep else None
    if args.json:
        doc = {"study": spec.name, "path": str(spec.path), "ready": not bad,
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
