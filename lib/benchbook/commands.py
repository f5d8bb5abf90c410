"""The exact command of every run: the model's script and flags, MPI, then the container around it.

Each (model, runtime) pair registers a builder that turns a run's configuration into the script's
argv, written as the published reports wrote them. `command` hands that to the study's launcher
(`launchers/`: nothing or `mpiexec` on one node, `mpirun`/`horovodrun` across hosts, an `sbatch`
job), then wraps it in `docker run` / `docker exec` unless benchbook already runs inside the
container or the scheduler starts the containers. CPU runs call the project's workload with the
Python of the framework's isolated environment. Nothing here starts a process: `benchbook run
--dry-run` prints these commands, and golden tests pin them.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable
from pathlib import Path

from . import envs, launchers, workloads
from .errors import UnknownNameError
from .launchers.base import RESULTS, SPAWNS_OWN_WORKERS, Command
from .study import Study

__all__ = ["RESULTS", "SPAWNS_OWN_WORKERS", "Command", "command", "setup_steps", "flags", "BUILDERS"]

Builder = Callable[[Study, dict, Path], list[str]]
BUILDERS: dict[tuple[str, str], Builder] = {}


def builder(model: str, runtime: str):
    def register(fn: Builder) -> Builder:
        BUILDERS[(model, runtime)] = fn
        return fn
    return register


def flags(options: dict) -> list[str]:
    """Study `options` as flags, in file order: `key: v` -> `--key=v`, `key: true` -> `--key`,
    `key: false`/null -> nothing; a key written with its dashes (`-e`, `--num-examples`) is passed
    as `-e 3`, the way scripts with short options are documented."""
    out: list[str] = []
    for key, value in options.items():
        if value is None or value is False:
            continue
        if key.startswith("-"):
            out += [key] if value is True else [key, str(value)]
        else:
            out += [f"--{key}"] if value is True else [f"--{key}={value}"]
    return out


def _data_dir(study: Study, cfg: dict) -> str | None:
    return None if cfg["synthetic"] else study.data.mount


@builder("resnet50_tf", "ngc")
def _resnet50_tf(study: Study, cfg: dict, run_dir: Path) -> list[str]:
    # DeepLearningExamples TensorFlow/Classification/ConvNets main.py; flags as its README prints them.
    b, data = cfg["batch_size"], _data_dir(study, cfg)
    amp = ["--use_tf_amp", "--use_static_loss_scaling", "--loss_scale=128"] if cfg["precision"] == "amp" else []
    if study.mode == "training_benchmark":
        argv = ["python3", "main.py", "--mode=training_benchmark"] + (["--use_xla"] if cfg["xla"] else [])
        argv += ["--warmup_steps", str(study.warmup), "--num_iter", str(study.iterations), "--iter_unit", "batch",
                 "--batch_size", str(b)]
    else:
        argv = ["python3", "main.py", "--arch=resnet50", "--mode=train_and_evaluate", "--iter_unit=epoch",
                f"--num_iter={study.iterations}", f"--batch_size={b}", f"--warmup_steps={study.warmup}"]
        argv += ["--use_xla"] if cfg["xla"] else []
    argv += flags(study.options)
    if data:
        argv.append(f"--data_dir={data}")
        if study.data.dali_index:
            argv.append(f"--data_idx_dir={study.data.dali_index}")
        if cfg["dali"]:
            argv.append("--use_dali")
    argv.append(f"--results_dir={RESULTS}")
    return argv + amp


@builder("resnet50_mxnet", "ngc")
def _resnet50_mxnet(study: Study, cfg: dict, run_dir: Path) -> list[str]:
    # DeepLearningExamples MxNet/Classification/RN50v1.5 benchmark.py: one invocation, several GPU counts.
    dtype = {"fp32": "float32", "amp": "float16", "tf32": "float32"}[cfg["precision"]]
    argv = ["python3", "benchmark.py", "-n", ",".join(map(str, cfg["gpu_counts"])), "-b", str(cfg["batch_size"]),
            "--dtype", dtype, "-i", str(study.iterations)]
    argv += flags(study.options)
    if cfg["synthetic"]:  # real data goes through benchmark.py's default backend, DALI on the GPU
        argv += ["--data-backend", "synthetic"]
    return argv + ["--mode", "train"]


@builder("maskrcnn_tf2", "ngc")
def _maskrcnn(study: Study, cfg: dict, run_dir: Path) -> list[str]:
    # DeepLearningExamples TensorFlow2/Segmentation/MaskRCNN: the script runs horovodrun itself.
    argv = ["python3", "scripts/benchmark_training.py", "--gpus", str(cfg["gpus"]), "--batch_size",
            str(cfg["batch_size"])]
    return argv + flags(study.options) + (["--amp"] if cfg["precision"] == "amp" else [])


# launch.py's --precision and the platform whose configs.yml entry it reads (TF32 runs on A100s only,
# FP32 on V100s only, as the README's benchmark commands say); `--platform` in options wins.
_PYTORCH_PRECISION = {"fp32": ("FP32", "DGX1V"), "tf32": ("TF32", "DGXA100"), "amp": ("AMP", "DGXA100")}
# The node's place among the job's nodes: mpirun's rank (one per node), else Slurm's node number.
_NODE_RANK = "${OMPI_COMM_WORLD_RANK:-${SLURM_NODEID:-0}}"


@builder("resnet50_pytorch", "ngc")
def _resnet50_pytorch(study: Study, cfg: dict, run_dir: Path) -> list[str]:
    # DeepLearningExamples PyTorch/Classification/ConvNets, README "Training performance benchmark":
    # launch.py on 1 GPU, multiproc.py --nproc_per_node N on several, one multiproc.py per node
    # (--nnodes, --node_rank) across nodes.
    options = dict(study.options)
    precision, platform = _PYTORCH_PRECISION[cfg["precision"]]
    platform = str(options.pop("--platform", options.pop("platform", platform)))
    train = ["./launch.py", "--model", "resnet50", "--precision", precision, "--mode", "benchmark_training",
             "--platform", platform, study.data.mount, "--raport-file", "benchmark.json", "--epochs", "1",
             "--prof", str(study.iterations), "--batch-size", str(cfg["batch_size"]), "--workspace", RESULTS]
    if cfg["synthetic"]:
        train += ["--data-backend", "synthetic"]
    elif cfg["dali"]:
        train += ["--data-backend", "dali-gpu"]
    train += flags(options)
    if cfg["nodes"] > 1:  # the node rank and Slurm's first node are read by the shell of each node
        master = shlex.quote(study.hosts[0]) if study.hosts else '"$SLURM_LAUNCH_NODE_IPADDR"'
        line = (f"python ./multiproc.py --nnodes {cfg['nodes']} --node_rank \"{_NODE_RANK}\" --master_addr {master} "
                f"--nproc_per_node {cfg['gpus_per_node']} {shlex.join(train)}")
        return ["bash", "-c", line]
    if cfg["gpus"] > 1:
        return ["python", "./multiproc.py", "--nproc_per_node", str(cfg["gpus"]), *train]
    return ["python", *train]


def _cpu(study: Study, cfg: dict, run_dir: Path) -> list[str]:
    c = study.cpu
    argv = ["--mode", study.mode, "--batch_size", str(cfg["batch_size"]),
            "--image_size", str(c.image_size), "--num_iter", str(study.iterations), "--warmup_steps",
            str(study.warmup), "--precision", cfg["precision"],
            "--data", "synthetic" if cfg["synthetic"] or study.model == "maskrcnn_tf2" else "digits",
            "--threads", str(c.threads), "--seed", str(cfg["repeat"])]
    if study.mode == "train_and_evaluate":
        # As on NGC, `iterations` counts epochs in train_and_evaluate: the most the run may train.
        argv += ["--target_accuracy", str(study.target_accuracy), "--max_epochs", str(study.iterations)]
    argv += ["--device", "cuda"] if c.device == "cuda" else []
    return argv + (["--xla"] if cfg["xla"] else []) + flags(study.options)


for _model in ("resnet50_tf", "resnet50_mxnet", "maskrcnn_tf2", "resnet50_pytorch"):
    BUILDERS[(_model, "cpu")] = _cpu


def workdir(study: Study) -> str | None:
    return study.code.workdir if study.code else None


def command(study: Study, cfg: dict, run_dir: Path, python: str | None = None) -> Command:
    """The full command of one run, ready for its launcher (argv, env, cwd, pre-run clean-up)."""
    try:
        build = BUILDERS[(study.model, study.runtime)]
    except KeyError:
        raise UnknownNameError("model/runtime pair", f"{study.model}/{study.runtime}",
                               [f"{m}/{r}" for m, r in BUILDERS]) from None
    script = build(study, cfg, run_dir)
    launcher = launchers.get(study.launcher.name)
    if study.runtime == "cpu":  # relative to the run folder: the only place a CPU run may clean (study_limits)
        pre = [["rm", "-rf", "--", str(Path(run_dir) / p)] for p in study.clean]
    else:
        pre = [["rm", "-rf", "--", p] for p in study.clean]
    if study.runtime == "cpu":
        py = python or str(envs.python(study.framework, study.python))
        argv = launcher.wrap(study, cfg, [py, str(workloads.script(study.framework, study.model)), *script])
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
        cmd = Command(["docker", "exec", "-w", workdir(study), *env_flags, c.name, *payload], launcher=launcher.name)
        return launcher.finish(study, cfg, run_dir, cmd)
    mounts = [f"{run_dir}:{RESULTS}"]
    if study.data.path:
        mounts.insert(0, f"{study.data.path}:{study.data.mount}")
    mounts += [f"{h}:{m}" for h, m in c.mounts.items()]
    argv = ["docker", "run", "--rm", "--gpus", "all", "--ipc=host", *c.options]
    argv += [a for m in mounts for a in ("-v", m)] + ["-w", workdir(study), *env_flags, c.image, *payload]
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
    code, folder = study.code, q(study.code.repository.rstrip("/").rsplit("/", 1)[-1].removesuffix(".git"))
    steps = [f"git clone {q(code.repository)} {folder}", f"cd {folder} && git checkout {q(code.commit)}"]
    base = Path(study.path).parent if study.path else Path(".")
    steps += [f"git -C {folder} apply --unidiff-zero {shlex.quote(os.path.relpath((base / p).resolve()))}"
              for p in code.patches]
    if study.launcher.name == "slurm":  # pyxis pulls the image on the nodes; enroot can fetch it ahead
        image = study.launcher.slurm.container_image or study.container.image
        steps.append(f"enroot import {q('docker://' + image)}   # optional: pyxis imports it on first use")
    elif study.container.mode != "inside":
        sub = q(f"{study.code.repository.rstrip('/').rsplit('/', 1)[-1].removesuffix('.git')}/{code.subfolder}") \
            if code.subfolder else folder
        image = q(study.container.image)
        steps.append(f"docker build -t {image} {sub}   # or: docker pull {image}")
    return steps
