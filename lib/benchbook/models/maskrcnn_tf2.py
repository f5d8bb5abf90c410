"""Mask R-CNN in TensorFlow 2: NVIDIA DeepLearningExamples TensorFlow2/Segmentation/MaskRCNN
(`scripts/benchmark_training.py`, which runs horovodrun itself and always enables XLA) on NGC, the
project's `workloads/maskrcnn_tf.py` (generated images, throughput only) on the CPU."""

from __future__ import annotations

from pathlib import Path

from .spec import Metric, ModelSpec, ReferenceReport, Study, flags, register


def ngc_command(study: Study, cfg: dict, run_dir: Path) -> list[str]:
    """scripts/benchmark_training.py: the script runs horovodrun itself."""
    argv = ["python3", "scripts/benchmark_training.py", "--gpus", str(cfg["gpus"]), "--batch_size",
            str(cfg["batch_size"])]
    return argv + flags(study.options) + (["--amp"] if cfg["precision"] == "amp" else [])


SPEC = register(ModelSpec(
    name="maskrcnn_tf2", framework="tensorflow", title="Mask R-CNN", log_names=("tensorflow2", "maskrcnn"),
    notebook="maskrcnn_tf2", page_title="Mask R-CNN on TensorFlow 2 (NGC DeepLearningExamples)",
    page_sections=("loss", "loss_components", "iteration_rates"),
    unit="samples/s",
    quality=(Metric("box_ap", "box AP", "AP"), Metric("mask_ap", "mask AP", "AP")),
    ngc_command=ngc_command, ngc_script="scripts/benchmark_training.py", dataset="COCO",
    data_layout="coco_tfrecords", data_name="COCO TFRecords", pretrained_checkpoint=True,
    spawns_own_workers=True, ngc_xla="always", ngc_dali=False, ngc_synthetic=False,
    cpu_script="maskrcnn_tf.py", cpu_modes=("training_benchmark",),
    cpu_generated_data="the CPU Mask R-CNN trains on generated images with boxes and masks",
    reference_reports=(ReferenceReport("reference-maskrcnn", "ngc-tf2-maskrcnn", "ngc_tf2_maskrcnn"),),
))
