"""ResNet-50 v1.5 in TensorFlow 1: NVIDIA DeepLearningExamples TensorFlow/Classification/ConvNets
(`main.py`) on NGC, the project's `workloads/resnet50_tf.py` on the CPU (also on several MPI ranks)."""

from __future__ import annotations

from pathlib import Path

from ..logs.parsers.scanning import IMAGE_CLASSIFICATION
from ..runfolder import RESULTS
from .spec import ModelSpec, ReferenceReport, Study, flags, register


def ngc_command(study: Study, cfg: dict, run_dir: Path) -> list[str]:
    """main.py's flags as its README prints them."""
    b, data = cfg["batch_size"], None if cfg["synthetic"] else study.data.mount
    amp = ["--use_tf_amp", "--use_static_loss_scaling", "--loss_scale=128"] if cfg["precision"] == "amp" else []
    if study.mode == "training_benchmark":
        argv = ["python3", "main.py", "--mode=training_benchmark"] + (["--use_xla"] if cfg["xla"] else [])
        argv += ["--warmup_steps", str(study.warmup_steps), "--num_iter", str(study.iterations), "--iter_unit", "batch",
                 "--batch_size", str(b)]
    else:
        argv = ["python3", "main.py", "--arch=resnet50", "--mode=train_and_evaluate", "--iter_unit=epoch",
                f"--num_iter={study.iterations}", f"--batch_size={b}", f"--warmup_steps={study.warmup_steps}"]
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


SPEC = register(ModelSpec(
    name="resnet50_tf", framework="tensorflow", title="ResNet-50", log_names=("tensorflow", "resnet50"),
    notebook="resnet50_tf", page_title="ResNet-50 v1.5 on TensorFlow 1 (NGC DeepLearningExamples)",
    page_sections=("time_to_train",),
    unit="images/s",
    ngc_command=ngc_command, ngc_script="main.py", dataset="ImageNet",
    data_layout="imagenet_tfrecords", data_name="ImageNet TFRecords", dali_index=True,
    cpu_script="resnet50_tf.py", framework_workload=True, cpu_processes=True, cpu_xla=True, cpu_mllog=True,
    quality=IMAGE_CLASSIFICATION,  # as its logs' formats read them
    log_arches=("resnet50",),  # main.py --arch: what its logs name it
    reference_reports=(ReferenceReport("reference-tf1", "ngc-tf1-resnet50", "ngc_tf1_resnet50"),),
))
