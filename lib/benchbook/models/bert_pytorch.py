"""BERT-base pre-training in PyTorch: NVIDIA DeepLearningExamples PyTorch/LanguageModeling/BERT on NGC
(`scripts/run_pretraining.sh`, LAMB, phase 1 at sequence length 128, as PaddlePaddle/Perf ran it on NGC 21.11:
`bash scripts/run_pretraining.sh 67584 6e-3 fp32 1 0.2843 20 200 false true true 528`), and the project's
`workloads/bert_pytorch.py` (a small BERT pre-trained on the standard library's docstrings) on the CPU.

Both log in run_pretraining.py's DLLogger form, read by the `ngc_bert_pytorch` log format: the final
`training_sequences_per_second` in sequences/s, the loss per step, and (the CPU workload's addition) the MLM
accuracy on held-out text.
"""

from __future__ import annotations

import math
import shlex
from pathlib import Path

from ..errors import BenchbookError
from ..logs.parsers.ngc_bert_pytorch import MLM_ACCURACY, PHASE, SEQ_LEN  # declared once, with the log format
from ..runfolder import RESULTS
from .spec import ModelSpec, Study, flags, register

# scripts/run_pretraining.sh's <precision>: fp16 turns on AMP (--fp16 --amp); fp32 runs TF32 on an A100 unless
# NVIDIA_TF32_OVERRIDE=0, which the fp32 of a study sets so that fp32 means FP32.
_PRECISION = {"fp32": "fp32", "tf32": "tf32", "amp": "fp16"}
# Phase 1 of NVIDIA's recipe (README "Pre-training", LAMB): one optimizer step takes 65536 sequences, gathered by
# gradient accumulation; PaddlePaddle/Perf ran 67584 (a multiple of its batch 96). The study's options override.
_DEFAULTS = {"global_batch_size": 65536, "learning_rate": "6e-3", "warmup_proportion": "0.2843",
             "save_checkpoint_steps": 200}
# The node's place among the job's nodes (run.sub: one task per node), and the first node's address.
_NODE_RANK = "${SLURM_NODEID:-0}"
_MASTER = '"$SLURM_LAUNCH_NODE_IPADDR"'


class BertStudyError(BenchbookError, ValueError):
    """A BERT study whose options the NGC scripts cannot take; the message names the option."""


def recipe(study: Study, cfg: dict, defaults: dict, script: str = "scripts/run_pretraining.sh") -> tuple[dict, int]:
    """The recipe's settings (the study's options over the script's `defaults`, each a positive number), and
    the gradient accumulation that makes the global batch from the run's GPUs and per-GPU batch."""
    options = dict(study.options)
    unknown = sorted(set(options) - set(defaults))
    if unknown:
        raise BertStudyError(f"options {', '.join(unknown)}: {script} takes positional arguments; "
                             f"a BERT study's options are {', '.join(defaults)}")
    settings = {**defaults, **options}
    for key, value in settings.items():
        try:
            number = float(value) if not isinstance(value, bool) else -1.0
        except ValueError:
            number = -1.0
        whole = key in ("global_batch_size", "save_checkpoint_steps", "warmup_steps")
        if not (number > 0 and math.isfinite(number)) or whole and not number.is_integer():
            raise BertStudyError(f"options.{key}: {value!r} is not a positive {'whole ' if whole else ''}number")
    per_step = int(cfg["batch_size"]) * int(cfg["gpus"])
    global_batch = int(settings["global_batch_size"])
    if global_batch % per_step:
        raise BertStudyError(f"options.global_batch_size {global_batch} is not a multiple of batch_size x gpus "
                             f"({cfg['batch_size']} x {cfg['gpus']}): no whole gradient accumulation")
    return settings, global_batch // per_step


def _tf32(cfg: dict, argv: list[str]) -> list[str]:
    return ["env", "NVIDIA_TF32_OVERRIDE=0", *argv] if cfg["precision"] == "fp32" else argv


def ngc_command(study: Study, cfg: dict, run_dir: Path) -> list[str]:
    """README "Training performance benchmark": `bash scripts/run_pretraining.sh <train_batch_size> <lr>
    <precision> <gpus> <warmup_proportion> <train_steps> <save_checkpoint_steps> <resume_training> <create_logfile>
    <accumulate_gradients> <gradient_accumulation_steps>` on one node (the script starts
    torch.distributed.launch on the node's GPUs; its train_batch_size is per GPU, accumulation included).
    Across nodes, as run.sub: one task per node, each starting torch.distributed.launch for its GPUs with the
    node's rank, run_pretraining.py's flags as the script writes them."""
    settings, accumulation = recipe(study, cfg, _DEFAULTS)
    per_gpu = int(cfg["batch_size"]) * accumulation
    if cfg["nodes"] == 1:
        return _tf32(cfg, ["bash", "scripts/run_pretraining.sh", str(per_gpu), str(settings["learning_rate"]),
                           _PRECISION[cfg["precision"]], str(cfg["gpus"]), str(settings["warmup_proportion"]),
                           str(study.iterations), str(settings["save_checkpoint_steps"]), "false", "true",
                           "true" if accumulation > 1 else "false", str(accumulation)])
    train = ["/workspace/bert/run_pretraining.py", f"--input_dir={study.data.mount}",
             f"--output_dir={RESULTS}/checkpoints", "--config_file=bert_configs/base.json",
             "--vocab_file=vocab/vocab", "--do_train", f"--train_batch_size={per_gpu}", "--max_seq_length=128",
             "--max_predictions_per_seq=20", f"--max_steps={study.iterations}",
             f"--warmup_proportion={settings['warmup_proportion']}",
             f"--num_steps_per_checkpoint={settings['save_checkpoint_steps']}",
             f"--learning_rate={settings['learning_rate']}", f"--gradient_accumulation_steps={accumulation}",
             "--allreduce_post_accumulation", "--allreduce_post_accumulation_fp16",
             f"--json-summary={RESULTS}/dllogger.json", "--disable_progress_bar"]
    train += ["--fp16", "--amp"] if cfg["precision"] == "amp" else []
    master = shlex.quote(study.hosts[0]) if study.hosts else _MASTER
    line = (f"python -m torch.distributed.launch --nproc_per_node={cfg['gpus_per_node']} --nnodes={cfg['nodes']} "
            f"--node_rank=\"{_NODE_RANK}\" --master_addr={master} --master_port=29500 {shlex.join(train)}")
    return _tf32(cfg, ["bash", "-c", line])


def cpu_command(study: Study, cfg: dict, run_dir: Path) -> list[str]:
    """The workload's flags (workloads/bert_pytorch.py): NVIDIA's names where it has them; the study's options
    (`seq-len: 128`, `eval_every: 30`, `phase2: true`...) are passed as flags after them."""
    if cfg["synthetic"]:
        raise BertStudyError("data: synthetic: the CPU BERT trains on the standard library's docstrings; write "
                             "data: real")
    argv = ["--train_batch_size", str(cfg["batch_size"]), "--max_steps", str(study.iterations),
            "--warmup_steps", str(study.warmup_steps), "--precision", cfg["precision"],
            "--threads", str(study.cpu.threads), "--seed", str(cfg["repeat"])]
    return argv + flags(study.options)


SPEC = register(ModelSpec(
    name="bert_pytorch", framework="pytorch", title="BERT-base pre-training on PyTorch (NGC DeepLearningExamples)",
    log_names=("pytorch", "bert"), notebook="bert_pytorch",
    page_title="BERT-base pre-training on PyTorch (NGC DeepLearningExamples)",
    page_sections=("loss", "quality_by_step"),
    unit="sequences/s",
    ngc_command=ngc_command, ngc_script="scripts/run_pretraining.sh", dataset="Wikipedia",
    data_layout="bert_parquet", data_name="BERT phase 1 parquet shards", spawns_own_workers=True,
    ngc_xla="never", ngc_dali=False, ngc_synthetic=False,
    cpu_script="bert_pytorch.py", cpu_command=cpu_command, cpu_modes=("training_benchmark",),
    quality=(MLM_ACCURACY,), axes=(SEQ_LEN, PHASE),
))
