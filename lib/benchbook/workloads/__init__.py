"""Real CPU training workloads: ResNet-50 v1.5 in TensorFlow, in MXNet and in PyTorch (PyTorch
also on one GPU, `--device cuda`).

With no GPU, benchbook still trains for real, on the CPU. Each framework has a standalone script
that the launcher runs with the Python of that framework's own virtual environment, built from the
pinned `requirements/<framework>.txt`. benchbook is not installed there, so the scripts import only
the framework, numpy, scikit-learn and their sibling `_common.py`, which gathers the shared parts
(`_common_cli`, `_common_dllogger`, `_common_timing`, `_common_data`, `_common_mpi`, `_common_loop`,
`_common_mllog`, `_common_resnet`: command line, DLLogger lines, timing, data, MPI ranks, the training loop,
MLLOG records, ResNet-50's shape).

Both scripts take the same command line (`--mode training_benchmark|train_and_evaluate`,
`--batch_size`, `--image_size`, `--num_iter`, `--warmup_steps`, `--precision fp32|bf16`, `--xla`,
`--data synthetic|digits`, `--target_accuracy`, `--max_epochs`, `--eval_every`, `--threads`,
`--seed`, `--display_every`, `--save_weights`; see `python <script> --help`) and print DLLogger
lines on stdout:
a PARAMETER line, one `Epoch: E Iteration: I` line per step, an `Epoch: E` line per evaluation and
a `Summary:` line last, only on success. A setting the framework cannot honour (`--xla` with MXNet,
bf16 where MXNet has no bf16 kernels) ends the run with exit status 2 before it starts. The TensorFlow
script's `--mllog FILE` (train_and_evaluate) also writes MLPerf's MLLOG records to FILE through
mlperf-logging (`_common_mllog`), for `benchbook mlperf score`.

The TensorFlow ResNet-50 also trains data-parallel on several MPI ranks (`mpirun -np N`, the
`mpirun` and `slurm` launchers with `processes: N`): gradients are averaged with mpi4py, rank 0
alone logs, and its lines speak for the job (`processes : N`, global batch N x `--batch_size`).

The BERT script pre-trains a small BERT (masked-language modelling on the standard library's docstrings,
`_bert_corpus`) in the PyTorch environment with flags of its own (NVIDIA's `run_pretraining.py` names) and logs
what that script logs, in its DLLogger form, plus the MLM accuracy on held-out text.

This package imports nothing of benchbook: a model's spec names its script (`models.workload_script`).
"""

from __future__ import annotations

from pathlib import Path

FRAMEWORKS = ("tensorflow", "mxnet", "pytorch")
HERE = Path(__file__).resolve().parent


def check(framework: str) -> str:
    """`framework`, if it is one of FRAMEWORKS; else ValueError naming them."""
    if framework not in FRAMEWORKS:
        raise ValueError(f"unknown framework {framework!r}; expected one of {', '.join(FRAMEWORKS)}")
    return framework


def requirements(framework: str) -> Path:
    """The pinned requirements file for `framework`'s virtual environment."""
    return HERE / "requirements" / f"{check(framework)}.txt"


__all__ = ["FRAMEWORKS", "HERE", "check", "requirements"]
