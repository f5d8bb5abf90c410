"""The workloads' shared command line: its options, the checks of their values, the defaults that depend on
each other, and the PARAMETER line's pairs, in the documented order."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

MODES = ("training_benchmark", "train_and_evaluate")
PRECISIONS = ("fp32", "bf16")
DATASETS = ("synthetic", "digits")
MODEL = "resnet50_v1.5"


def build_parser(framework: str) -> argparse.ArgumentParser:
    """The command line shared by both scripts (`framework` only changes the description)."""
    p = argparse.ArgumentParser(
        description=f"ResNet-50 v1.5 training on the CPU with {framework}: a throughput benchmark "
        "(training_benchmark) or training on scikit-learn's digits to a target accuracy (train_and_evaluate).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("--mode", choices=MODES, default="training_benchmark")
    p.add_argument("--batch_size", type=int, default=16, help="images per step")
    p.add_argument("--image_size", type=int, default=64, help="square image side (digits are upsampled to it)")
    p.add_argument("--num_iter", type=int, default=30, help="training_benchmark: iterations in all, warm-up included")
    p.add_argument(
        "--warmup_steps", type=int, default=10, help="first global iterations left out of the Summary throughput"
    )
    p.add_argument("--precision", choices=PRECISIONS, default="fp32", help="bf16: mixed precision, fp32 weights")
    p.add_argument("--xla", action="store_true", help="TensorFlow only: compile the train step with XLA")
    p.add_argument(
        "--data",
        choices=DATASETS,
        default=None,
        help="default: synthetic for training_benchmark, digits for train_and_evaluate",
    )
    p.add_argument(
        "--num_classes", type=int, default=None, help="classifier outputs; default 1000 (synthetic), 10 (digits)"
    )
    p.add_argument("--target_accuracy", type=float, default=90.0, help="top-1 in percent that ends training")
    p.add_argument("--max_epochs", type=int, default=30, help="train_and_evaluate: epochs at most")
    p.add_argument("--eval_every", type=int, default=1, help="train_and_evaluate: epochs between evaluations")
    p.add_argument("--threads", type=int, default=0, help="intra- and inter-op threads; 0: framework default")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--display_every", type=int, default=1, help="log every Nth iteration")
    p.add_argument("--lr", type=float, default=None, help="peak learning rate; default 0.256 * batch_size / 256")
    p.add_argument("--lr_warmup_epochs", type=int, default=1, help="train_and_evaluate: linear lr warm-up epochs")
    p.add_argument("--momentum", type=float, default=0.875)
    p.add_argument("--weight_decay", type=float, default=0.0, help="L2 on conv and dense weights (not BN, biases)")
    p.add_argument("--label_smoothing", type=float, default=0.0, help="e.g. 0.1 as in NVIDIA's recipes")
    if framework == "tensorflow":
        p.add_argument(
            "--save_weights",
            default=None,
            metavar="FILE",
            help="write the model's variables and momentum to FILE (.npz) at the end; under MPI rank 0 "
            "writes it, or every rank when FILE contains {rank}",
        )
        p.add_argument(
            "--mllog",
            default=None,
            metavar="FILE",
            help="train_and_evaluate: also write MLPerf's MLLOG records to FILE through mlperf-logging "
            "(rank 0 under MPI)",
        )
    return p


def parse_args(framework: str, argv: Sequence[str] | None = None, processes: int = 1) -> argparse.Namespace:
    """Parsed and checked arguments, defaults that depend on others filled in.

    `processes` (data-parallel ranks) scales the default learning rate with the global batch,
    0.256 x batch_size x processes / 256, the linear rule of NVIDIA's recipes.
    Bad values end the process with argparse's usage message and exit status 2.
    """
    parser = build_parser(framework)
    args = parser.parse_args(argv)
    if args.xla and framework != "tensorflow":
        parser.error(f"--xla is TensorFlow's XLA compiler; {framework} has no XLA, run without --xla")
    if args.data is None:
        args.data = "digits" if args.mode == "train_and_evaluate" else "synthetic"
    if getattr(args, "mllog", None) and args.mode != "train_and_evaluate":
        parser.error("--mllog logs a time-to-train run: use --mode train_and_evaluate, or leave --mllog out")
    if args.mode == "train_and_evaluate" and args.data != "digits":
        parser.error("train_and_evaluate trains on the digits data: use --data digits (or leave --data out)")
    if args.num_classes is None:
        args.num_classes = 10 if args.data == "digits" else 1000
    checks = [
        (args.batch_size >= 1, "--batch_size must be at least 1"),
        (args.image_size >= 8, "--image_size must be at least 8"),
        (args.num_iter >= 1, "--num_iter must be at least 1"),
        (args.warmup_steps >= 0, "--warmup_steps must be at least 0"),
        (
            args.mode != "training_benchmark" or args.warmup_steps < args.num_iter,
            "--warmup_steps must be less than --num_iter (no iteration would be measured)",
        ),
        (args.num_classes >= 2, "--num_classes must be at least 2"),
        (args.data != "digits" or args.num_classes >= 10, "--num_classes must be at least 10 for the digits"),
        (0.0 < args.target_accuracy <= 100.0, "--target_accuracy is a top-1 percentage in (0, 100]"),
        (args.max_epochs >= 1, "--max_epochs must be at least 1"),
        (args.eval_every >= 1, "--eval_every must be at least 1"),
        (args.threads >= 0, "--threads must be at least 0"),
        (args.display_every >= 1, "--display_every must be at least 1"),
        (args.lr is None or args.lr > 0, "--lr must be positive"),
        (args.lr_warmup_epochs >= 0, "--lr_warmup_epochs must be at least 0"),
        (0.0 <= args.momentum < 1.0, "--momentum must be in [0, 1)"),
        (args.weight_decay >= 0.0, "--weight_decay must be at least 0"),
        (0.0 <= args.label_smoothing < 1.0, "--label_smoothing must be in [0, 1)"),
    ]
    for ok, message in checks:
        if not ok:
            parser.error(message)
    if args.lr is None:
        args.lr = 0.256 * args.batch_size * processes / 256
    return args


def reject(message: str) -> None:
    """End the process with `message` on stderr and exit status 2 (a setting this run cannot honour)."""
    print(f"error: {message}", file=sys.stderr, flush=True)
    raise SystemExit(2)


def parameters(
    args: argparse.Namespace, *, workload: str, framework: str, version: str, processes: int = 1
) -> list[tuple]:
    """The PARAMETER line's pairs, in the documented order; `processes` is the number of
    data-parallel ranks (the global batch is batch_size x processes)."""
    return [
        ("workload", workload),
        ("framework", framework),
        ("framework_version", version),
        ("model", MODEL),
        ("mode", args.mode),
        ("device", "cpu"),
        ("gpus", 0),
        ("processes", processes),
        ("batch_size", args.batch_size),
        ("image_size", args.image_size),
        ("num_iter", args.num_iter),
        ("warmup_steps", args.warmup_steps),
        ("precision", args.precision),
        ("xla", bool(args.xla)),
        ("data", args.data),
        ("num_classes", args.num_classes),
        ("threads", args.threads),
        ("seed", args.seed),
        ("target_accuracy", float(args.target_accuracy)),
        ("max_epochs", args.max_epochs),
        ("eval_every", args.eval_every),
        ("display_every", args.display_every),
        ("lr", args.lr),
        ("lr_warmup_epochs", args.lr_warmup_epochs),
        ("momentum", args.momentum),
        ("weight_decay", args.weight_decay),
        ("label_smoothing", args.label_smoothing),
    ]
