"""BERT-base pre-training in TensorFlow 1: NVIDIA DeepLearningExamples TensorFlow/LanguageModeling/BERT on NGC
(`scripts/run_pretraining_lamb.sh`, LAMB, phase 1 at sequence length 128, Horovod under the mpiexec the script
starts on the node's GPUs), as PaddlePaddle/Perf ran it on NGC 20.06-tf1: `bash scripts/run_pretraining_lamb.sh
96 64 8 7.5e-4 5e-4 fp16 true 8 2000 200 50 200 88 512 base`. Its logs are read by the `ngc_bert_tf1` format
(sequences/s, the loss per step, the MLM accuracy of an evaluation). No CPU workload: the CPU BERT is PyTorch's.
"""

from __future__ import annotations

from pathlib import Path

from ..logs.parsers.ngc_bert_pytorch import MLM_ACCURACY, PHASE, SEQ_LEN  # declared once, with the log formats
from .bert_pytorch import BertStudyError, recipe
from .spec import ModelSpec, Study, register

SCRIPT = "scripts/run_pretraining_lamb.sh"
# run_pretraining_lamb.sh's <precision>: fp16 turns on TF-AMP; fp32 runs TF32 on an A100 unless
# NVIDIA_TF32_OVERRIDE=0, which the fp32 of a study sets so that fp32 means FP32.
_PRECISION = {"fp32": "fp32", "tf32": "fp32", "amp": "fp16"}
# Phase 1 of NVIDIA's LAMB recipe (the script's defaults but the model, base, and the global batch of 65536
# sequences an optimizer step, gathered by gradient accumulation; PaddlePaddle/Perf ran 67584, a multiple of its
# batch 96). Phase 2's arguments are the script's own defaults: a benchmark of `iterations` steps ends in phase 1.
_DEFAULTS = {"global_batch_size": 65536, "learning_rate": "7.5e-4", "warmup_steps": 2000,
             "save_checkpoint_steps": 200}
_PHASE2 = {"batch_size": "64", "eval_batch_size": "8", "learning_rate": "5e-4", "warmup_steps": "200",
           "accumulation": "512"}


def ngc_command(study: Study, cfg: dict, run_dir: Path) -> list[str]:
    """README "Pre-training": `bash scripts/run_pretraining_lamb.sh <train_batch_size_phase1>
    <train_batch_size_phase2> <eval_batch_size> <learning_rate_phase1> <learning_rate_phase2> <precision> <use_xla>
    <num_gpus> <warmup_steps_phase1> <warmup_steps_phase2> <train_steps> <save_checkpoint_steps>
    <num_accumulation_phase1> <num_accumulation_steps_phase2> <bert_model>` on one node (the script starts
    mpiexec with a process a GPU; train_batch_size is per GPU and per micro-batch)."""
    if cfg["nodes"] != 1:
        raise BertStudyError(f"gpus: {cfg['gpus']} over {cfg['nodes']} nodes: {SCRIPT} runs on one node (its own "
                             "mpiexec); a TF BERT study runs 1 to 8 GPUs of one node")
    settings, accumulation = recipe(study, cfg, _DEFAULTS, SCRIPT)
    argv = ["bash", SCRIPT, str(cfg["batch_size"]), _PHASE2["batch_size"], _PHASE2["eval_batch_size"],
            str(settings["learning_rate"]), _PHASE2["learning_rate"], _PRECISION[cfg["precision"]],
            "true" if cfg["xla"] else "false", str(cfg["gpus"]), str(settings["warmup_steps"]),
            _PHASE2["warmup_steps"], str(study.iterations), str(settings["save_checkpoint_steps"]),
            str(accumulation), _PHASE2["accumulation"], "base"]
    return ["env", "NVIDIA_TF32_OVERRIDE=0", *argv] if cfg["precision"] == "fp32" else argv


SPEC = register(ModelSpec(
    name="bert_tf", framework="tensorflow", title="BERT-base pre-training on TensorFlow 1 (NGC DeepLearningExamples)",
    log_names=("tensorflow", "bert"), notebook="bert_tf",
    page_title="BERT-base pre-training on TensorFlow 1 (NGC DeepLearningExamples)",
    page_sections=("iteration_rates", "loss", "quality_by_step"),
    unit="sequences/s",
    ngc_command=ngc_command, ngc_script=SCRIPT, dataset="Wikipedia",
    data_layout="bert_tfrecords", data_name="BERT phase 1 TFRecords", spawns_own_workers=True,
    ngc_xla="optional", ngc_dali=False, ngc_synthetic=False,
    quality=(MLM_ACCURACY,), axes=(SEQ_LEN, PHASE),
))
