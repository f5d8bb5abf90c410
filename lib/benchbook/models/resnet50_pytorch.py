"""ResNet-50 v1.5 in PyTorch: NVIDIA DeepLearningExamples PyTorch/Classification/ConvNets (`launch.py`,
`multiproc.py` on several GPUs and nodes) on NGC, the project's `workloads/resnet50_pytorch.py` on the
CPU or on one GPU."""

from __future__ import annotations

import shlex
from pathlib import Path

from ..logs.parsers.scanning import IMAGE_CLASSIFICATION
from ..runfolder import RESULTS
from .spec import ModelSpec, Study, flags, register

# launch.py's --precision and the platform whose configs.yml entry it reads (TF32 runs on A100s only,
# FP32 on V100s only, as the README's benchmark commands say); `--platform` in options wins.
_PRECISION = {"fp32": ("FP32", "DGX1V"), "tf32": ("TF32", "DGXA100"), "amp": ("AMP", "DGXA100")}
# The node's place among the job's nodes: mpirun's rank (one per node), else Slurm's node number.
_NODE_RANK = "${OMPI_COMM_WORLD_RANK:-${SLURM_NODEID:-0}}"


def ngc_command(study: Study, cfg: dict, run_dir: Path) -> list[str]:
    """README "Training performance benchmark": launch.py on 1 GPU, multiproc.py --nproc_per_node N on
    several, one multiproc.py per node (--nnodes, --node_rank) across nodes."""
    options = dict(study.options)
    precision, platform = _PRECISION[cfg["precision"]]
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


SPEC = register(ModelSpec(
    name="resnet50_pytorch", framework="pytorch", title="ResNet-50", log_names=("pytorch", "resnet50"),
    notebook="resnet50_pytorch", page_title="ResNet-50 v1.5 on PyTorch (NGC DeepLearningExamples)",
    page_sections=("time_to_train", "iteration_rates"),
    unit="images/s",
    ngc_command=ngc_command, ngc_script="launch.py", dataset="ImageNet",
    data_layout="imagenet_folders", data_name="ImageNet folders",
    spawns_own_workers=True, ngc_xla="never",
    cpu_script="resnet50_pytorch.py", framework_workload=True, cuda_workload=True,
    quality=IMAGE_CLASSIFICATION,  # as its logs' formats read them
    log_arches=("resnet50",),  # main.py --arch: what its logs name it
))
