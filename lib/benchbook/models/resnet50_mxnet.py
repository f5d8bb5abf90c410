"""ResNet-50 v1.5 in MXNet: NVIDIA DeepLearningExamples MxNet/Classification/RN50v1.5 (`benchmark.py`,
one invocation for several GPU counts) on NGC, the project's `workloads/resnet50_mxnet.py` on the CPU."""

from __future__ import annotations

from pathlib import Path

from ..logs.parsers.scanning import IMAGE_CLASSIFICATION
from .spec import ModelSpec, ReferenceReport, Study, flags, register


def ngc_command(study: Study, cfg: dict, run_dir: Path) -> list[str]:
    """benchmark.py: one invocation, several GPU counts (`-n 1,8`)."""
    dtype = {"fp32": "float32", "amp": "float16", "tf32": "float32"}[cfg["precision"]]
    argv = ["python3", "benchmark.py", "-n", ",".join(map(str, cfg["gpu_counts"])), "-b", str(cfg["batch_size"]),
            "--dtype", dtype, "-i", str(study.iterations)]
    argv += flags(study.options)
    if cfg["synthetic"]:  # real data goes through benchmark.py's default backend, DALI on the GPU
        argv += ["--data-backend", "synthetic"]
    return argv + ["--mode", "train"]


SPEC = register(ModelSpec(
    name="resnet50_mxnet", framework="mxnet", title="ResNet-50", log_names=("mxnet", "resnet50"),
    notebook="resnet50_mxnet", page_title="ResNet-50 v1.5 on MXNet (NGC DeepLearningExamples)",
    page_sections=("time_to_train", "epoch_rates"),
    unit="images/s",
    ngc_command=ngc_command, ngc_script="benchmark.py", dataset="ImageNet",
    data_layout="imagenet_recordio", data_name="ImageNet RecordIO",
    spawns_own_workers=True, ngc_gpu_counts_in_one_run=True, ngc_xla="never",
    cpu_script="resnet50_mxnet.py", framework_workload=True,
    quality=IMAGE_CLASSIFICATION,  # as its logs' formats read them
    log_arches=("resnetv15-50",),  # --arch resnetv15 --num-layers 50: what its logs name it
    reference_reports=(ReferenceReport("reference-mxnet", "ngc-mxnet-resnet50", "ngc_mxnet_resnet50"),),
))
