"""What the ResNet-50 training scripts share: command line, DLLogger lines, data, timing, the loop.

The scripts run with the Python of a framework's own virtual environment, where benchbook is not
installed, so this module imports only the standard library and numpy (scikit-learn lazily, for
the digits data; mpi4py lazily, for more than one MPI rank). A script imports it as a sibling
module (`import _common`); benchbook's tests import it as `benchbook.workloads._common`.

The framework scripts supply three functions to `run`:

- `put(x, y)`: numpy batch (images in the script's layout, int labels) -> device tensors;
- `train_step(x, y, lr) -> float`: one SGD step on device tensors, returning the loss as a
  Python float, which synchronises (the step has finished when it returns);
- `predict(x) -> numpy logits`: inference-mode forward pass, synchronised;

and, for data-parallel runs, `sync()`: make the ranks' model state one and check it.

Log lines follow NVIDIA DLLogger's stdout format, the one the NGC TensorFlow and MXNet ResNet-50
scripts print: `DLL <date> <time> - <step> key : value [unit]  key : value ...`, pairs two spaces
apart, one line per iteration, one `Epoch: E` line per evaluation and a `Summary:` line last.

Data-parallel training across MPI ranks (TensorFlow; `mpirun -np N python resnet50_tf.py ...`): a
script asks `launched_size()` (the launcher's environment variables, nothing imported) and
`connect()` (mpi4py, imported only for more than one rank) for its `World`, and passes it to
`run`. Every rank trains on its own shard of each global batch of `batch_size x processes`
images (rank r takes rows r*b..(r+1)*b-1 of it: synthetic images of the global batch's seed, or a
slice of the digits' shared shuffled order); the script averages the gradients across ranks
(one Allreduce per step) so that all ranks apply the same update. Only rank 0 prints DLLogger
lines, and they speak for the whole job: `train.ips` is `processes x batch_size / step time`
(global images/s, as the Horovod-based NGC scripts report), the PARAMETER line carries
`processes : N`, and the logged loss is the mean over ranks. Evaluation is sharded: each rank
scores its contiguous part of the validation split and the counts are summed with Allreduce, so
every rank knows the same accuracy; the time-to-train stop decision is rank 0's, broadcast, so no
rank waits for one that has stopped. Before each evaluation and at the end the script's `sync`
hook makes the ranks' state one (BatchNorm moving statistics averaged) and checks that every rank
holds the same weights.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import math
import os
import sys
import time
import traceback
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TextIO

import numpy as np

MODES = ("training_benchmark", "train_and_evaluate")
PRECISIONS = ("fp32", "bf16")
DATASETS = ("synthetic", "digits")
MODEL = "resnet50_v1.5"
TIMESTAMP = "%Y-%m-%d %H:%M:%S.%f"
# ResNet-50 v1.5: blocks per stage and bottleneck widths (the block's output is 4x the width).
LAYERS = (3, 4, 6, 3)
WIDTHS = (64, 128, 256, 512)
EXPANSION = 4
BN_MOMENTUM = 0.9
BN_EPSILON = 1e-5
VAL_FRACTION = 0.2


# ---------------------------------------------------------------------------------------------
# command line


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


# ---------------------------------------------------------------------------------------------
# DLLogger lines


def format_value(value: Any, digits: int | str | None = None) -> str:
    """A logged value: booleans as True/False; floats with `digits` decimals, or formatted with the
    format spec `digits` when it is a string, else as Python's shortest repr (`90.0`, `0.016`)."""
    if isinstance(value, bool | np.bool_):
        return "True" if value else "False"
    if isinstance(value, float | np.floating):
        if isinstance(digits, str):
            return format(float(value), digits)
        if digits is not None:
            return f"{float(value):.{digits}f}"
        return repr(float(value))
    text = str(value)
    if not text or any(c in text for c in "\r\n") or "  " in text:
        raise ValueError(f"value {text!r} cannot be logged on one line with single spaces")
    return text


def format_pairs(pairs: Iterable[tuple]) -> str:
    """`key : value [unit]` pairs joined by two spaces; a pair is (key, value[, unit[, digits]])."""
    parts = []
    for pair in pairs:
        key, value, unit, digits = (*pair, None, None)[:4]
        if not key or any(c.isspace() for c in key):
            raise ValueError(f"bad key {key!r}")
        part = f"{key} : {format_value(value, digits)}"
        if unit:
            part += f" {unit}"
        parts.append(part)
    return "  ".join(parts)


def format_step(step: str | int | tuple[int, int]) -> str:
    """`PARAMETER `, `Summary: `, `Epoch: E  ` (an int) or `Epoch: E Iteration: I  ` (a pair), with the
    separator before the first pair: one space after PARAMETER and Summary:, two after an epoch or step."""
    if isinstance(step, tuple):
        epoch, iteration = step
        return f"Epoch: {int(epoch)} Iteration: {int(iteration)}  "
    if isinstance(step, int | np.integer):
        return f"Epoch: {int(step)}  "
    if step in ("PARAMETER", "Summary:"):
        return step + " "
    raise ValueError(f"unknown step {step!r}")


def format_line(stamp: datetime, step: str | int | tuple[int, int], pairs: Iterable[tuple]) -> str:
    """One DLLogger line, without the newline."""
    return f"DLL {stamp.strftime(TIMESTAMP)} - {format_step(step)}{format_pairs(pairs)}"


class DLLogger:
    """Writes DLLogger lines to a stream (stdout by default), flushing each; `log` returns its timestamp.

    A logger that is not `enabled` (an MPI rank other than 0) writes nothing but still returns the time.
    """

    def __init__(
        self, stream: TextIO | None = None, clock: Callable[[], datetime] = datetime.now, enabled: bool = True
    ):
        self.stream = stream
        self.clock = clock
        self.enabled = enabled

    def log(self, step: str | int | tuple[int, int], pairs: Iterable[tuple]) -> datetime:
        stamp = self.clock()
        if not self.enabled:
            return stamp
        stream = self.stream if self.stream is not None else sys.stdout
        stream.write(format_line(stamp, step, pairs) + "\n")
        stream.flush()
        return stamp


# ---------------------------------------------------------------------------------------------
# timing


@dataclass(frozen=True)
class StepRecord:
    """One training iteration: global iteration, epoch, seconds, images, loss, learning rate."""

    iteration: int
    epoch: int
    seconds: float
    images: int
    loss: float
    lr: float

    @property
    def ips(self) -> float:
        return self.images / self.seconds if self.seconds > 0 else math.inf


@dataclass(frozen=True)
class Summary:
    """Throughput of the measured iterations (global iteration >= warmup_steps)."""

    ips: float  # mean of the per-iteration images/s
    images: int
    seconds: float
    iterations: int  # all iterations, warm-up included
    measured: int

    def pairs(self, warmup_steps: int) -> list[tuple]:
        return [
            ("train.ips", self.ips, "images/s", 2),
            ("train.images", self.images),
            ("train.time", self.seconds, "s", 2),
            ("train.iterations", self.iterations),
            ("train.warmup_steps", warmup_steps),
        ]


def summarize(records: Sequence[StepRecord], warmup_steps: int) -> Summary:
    """Mean per-iteration images/s over iterations >= warmup_steps (NGC TF1's rule), their images and time.

    NaN throughput when no iteration is past the warm-up.
    """
    measured = [r for r in records if r.iteration >= warmup_steps]
    ips = float(np.mean([r.ips for r in measured])) if measured else math.nan
    return Summary(
        ips=ips,
        images=int(sum(r.images for r in measured)),
        seconds=float(sum(r.seconds for r in measured)),
        iterations=len(records),
        measured=len(measured),
    )


def step_pairs(record: StepRecord) -> list[tuple]:
    return [
        ("train.loss", record.loss, None, 4),
        ("train.ips", record.ips, "images/s", 2),
        ("train.lr", record.lr, None, ".6g"),
        ("train.step_time", record.seconds, "s", 6),
    ]


def lr_at(step: int, *, base_lr: float, warmup: int, total: int) -> float:
    """Learning rate of 0-based `step`: linear warm-up over `warmup` steps, then cosine decay to 0 at `total`."""
    if step < warmup:
        return base_lr * (step + 1) / warmup
    span = max(total - warmup, 1)
    progress = min(max(step - warmup, 0) / span, 1.0)
    return 0.5 * base_lr * (1.0 + math.cos(math.pi * progress))


# ---------------------------------------------------------------------------------------------
# data


def to_layout(images: np.ndarray, layout: str) -> np.ndarray:
    """NHWC images as `layout` (NHWC or NCHW), contiguous float32."""
    if layout == "NHWC":
        return np.ascontiguousarray(images, dtype=np.float32)
    if layout == "NCHW":
        return np.ascontiguousarray(images.transpose(0, 3, 1, 2), dtype=np.float32)
    raise ValueError(f"unknown layout {layout!r}")


def synthetic(batch_size: int, image_size: int, num_classes: int, seed: int, layout: str = "NHWC"):
    """One batch of standard-normal images and uniform labels (the same for every framework)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch_size, image_size, image_size, 3), dtype=np.float32)
    y = rng.integers(0, num_classes, size=batch_size).astype(np.int32)
    return to_layout(x, layout), y


def _bilinear(n_in: int, n_out: int) -> np.ndarray:
    """(n_out, n_in) bilinear interpolation matrix, half-pixel centres, edges clamped."""
    centres = (np.arange(n_out) + 0.5) * n_in / n_out - 0.5
    centres = np.clip(centres, 0, n_in - 1)
    lo = np.floor(centres).astype(int)
    hi = np.minimum(lo + 1, n_in - 1)
    frac = centres - lo
    m = np.zeros((n_out, n_in))
    np.add.at(m, (np.arange(n_out), lo), 1 - frac)
    np.add.at(m, (np.arange(n_out), hi), frac)
    return m


def upsample(images: np.ndarray, size: int) -> np.ndarray:
    """(N, h, w) images resized bilinearly to (N, size, size) float32."""
    n, h, w = images.shape
    rows, cols = _bilinear(h, size), _bilinear(w, size)
    return np.einsum("ih,nhw,jw->nij", rows, images.astype(np.float64), cols).astype(np.float32)


@dataclass
class Digits:
    """scikit-learn's digits, split 80/20 per class by seed, images NHWC/NCHW normalised, labels int32."""

    x_train: np.ndarray
    y_train: np.ndarray
    x_val: np.ndarray
    y_val: np.ndarray


def split_indices(labels: np.ndarray, seed: int, val_fraction: float = VAL_FRACTION):
    """(train, val) index arrays: per class, a seeded permutation's first round(fraction * n) go to val."""
    rng = np.random.RandomState(seed)  # legacy generator: the same stream in every numpy version
    train, val = [], []
    for c in np.unique(labels):
        idx = np.flatnonzero(labels == c)
        idx = idx[rng.permutation(len(idx))]
        k = int(round(val_fraction * len(idx)))
        val.append(idx[:k])
        train.append(idx[k:])
    return np.sort(np.concatenate(train)), np.sort(np.concatenate(val))


def load_digits(image_size: int, seed: int, layout: str = "NHWC") -> Digits:
    """The 1797 8x8 digits (shipped with scikit-learn), upsampled to image_size, 3 channels.

    Pixels 0..16 are scaled to [0, 1], upsampled, then standardised with the mean and standard
    deviation of the upsampled training split (one scalar each, the same for the three channels).
    """
    from sklearn.datasets import load_digits as sk_load_digits  # lazily: benchbook itself lacks sklearn

    bunch = sk_load_digits()
    images = upsample(np.asarray(bunch.images, dtype=np.float32) / 16.0, image_size)
    labels = np.asarray(bunch.target, dtype=np.int32)
    train, val = split_indices(labels, seed)
    mean, std = float(images[train].mean(dtype=np.float64)), float(images[train].std(dtype=np.float64))

    def prep(idx):
        x = ((images[idx] - mean) / std).astype(np.float32)
        return to_layout(np.repeat(x[..., None], 3, axis=-1), layout)

    return Digits(prep(train), labels[train], prep(val), labels[val])


def epoch_order(n: int, batch_size: int, rng: np.random.RandomState) -> list[np.ndarray]:
    """Index batches of one shuffled epoch; the last incomplete batch is dropped (fixed shapes)."""
    order = rng.permutation(n)
    return [order[i : i + batch_size] for i in range(0, n - batch_size + 1, batch_size)]


def eval_batches(n: int, batch_size: int) -> list[tuple[np.ndarray, int]]:
    """(indices, valid) covering 0..n-1 in order; the last batch is padded with index 0 to full size."""
    out = []
    for start in range(0, n, batch_size):
        idx = np.arange(start, min(start + batch_size, n))
        valid = len(idx)
        if valid < batch_size:
            idx = np.concatenate([idx, np.zeros(batch_size - valid, dtype=idx.dtype)])
        out.append((idx, valid))
    return out


def topk_loss(logits: np.ndarray, labels: np.ndarray, k: int = 5) -> tuple[int, int, float]:
    """(top-1 hits, top-k hits, summed cross-entropy) of float logits against int labels."""
    logits = np.asarray(logits, dtype=np.float64)
    labels = np.asarray(labels).astype(int)
    k = min(k, logits.shape[1])
    shifted = logits - logits.max(axis=1, keepdims=True)
    logp = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    rows = np.arange(len(labels))
    loss = float(-logp[rows, labels].sum())
    target = logits[rows, labels][:, None]
    # Classes scored at or above the label's score, the label left out: a tie counts against the
    # label, so that a network that outputs the same logit for every class scores 0, not 100%.
    rank = (logits >= target).sum(axis=1) - 1
    return int((rank < 1).sum()), int((rank < k).sum()), loss


# ---------------------------------------------------------------------------------------------
# processes: one, or data-parallel MPI ranks

# How MPI launchers tell each rank the size of the job: Open MPI (mpirun, mpiexec), MPICH's Hydra,
# Intel MPI and Slurm's PMI-2 (PMI_SIZE), MVAPICH2.
SIZE_VARS = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MV2_COMM_WORLD_SIZE")
# Set on a rank by launchers that may not say the size (PMIx: `srun --mpi=pmix`, PRRTE).
RANK_VARS = ("PMIX_RANK", "PMI_RANK")


def launched_size(environ: dict | None = None) -> int | None:
    """How many ranks the MPI launcher started, from the environment alone (nothing is imported):
    1 outside MPI, N under `mpirun -np N`, None for a rank whose launcher does not say (ask MPI)."""
    env = os.environ if environ is None else environ
    for var in SIZE_VARS:
        value = env.get(var, "").strip()
        if value:
            if not value.isdigit() or int(value) < 1:
                raise ValueError(f"{var}={value!r} is not a number of MPI ranks")
            return int(value)
    if any(env.get(var) for var in RANK_VARS):
        tasks = env.get("SLURM_STEP_NUM_TASKS", "").strip()
        return int(tasks) if tasks.isdigit() and int(tasks) >= 1 else None
    return 1


def fingerprint(arrays: Iterable[np.ndarray]) -> str:
    """SHA-256 of the arrays' dtypes, shapes and bytes, in order: equal only for bit-identical weights."""
    h = hashlib.sha256()
    for a in arrays:
        a = np.ascontiguousarray(a)
        h.update(f"{a.dtype.str}{a.shape}".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def diverged(fingerprints: Sequence[str]) -> str | None:
    """None when every rank's fingerprint equals rank 0's, else a message naming the ranks that differ."""
    bad = [rank for rank, f in enumerate(fingerprints) if f != fingerprints[0]]
    if not bad:
        return None
    return (
        f"the model differs between MPI ranks: rank(s) {', '.join(map(str, bad))} hold other weights than "
        f"rank 0 (sha256 {fingerprints[0][:12]} vs {', '.join(fingerprints[r][:12] for r in bad)})"
    )


ALIGN = 64  # bytes: what TensorFlow's CPU kernels (Eigen) expect of a buffer they use without a copy


def aligned_empty(shape, dtype) -> np.ndarray:
    """An uninitialised C-contiguous array whose data starts on an ALIGN-byte boundary (numpy's
    large arrays start 16 bytes past a page, which TensorFlow refuses to share)."""
    dtype = np.dtype(dtype)
    count = int(np.prod(shape))
    raw = np.empty(count * dtype.itemsize + ALIGN, dtype=np.uint8)
    start = -raw.ctypes.data % ALIGN
    return raw[start : start + count * dtype.itemsize].view(dtype).reshape(shape)


class World:
    """One process: rank 0 of 1, whose collective operations return their input."""

    rank = 0
    size = 1

    def allreduce_sum(self, array: np.ndarray) -> np.ndarray:
        """The element-wise sum of every rank's `array` (same shape and dtype on all), on every rank."""
        return array

    def bcast(self, obj: Any) -> Any:
        """Rank 0's `obj` (a small Python object), on every rank."""
        return obj

    def bcast_array(self, array: np.ndarray) -> np.ndarray:
        """Rank 0's `array` (same shape and dtype on all), on every rank."""
        return array

    def allgather(self, obj: Any) -> list:
        """Every rank's `obj`, in rank order, on every rank."""
        return [obj]

    def check_same(self, arrays: Iterable[np.ndarray]) -> None:
        """Raise RuntimeError on every rank unless all ranks hold bit-identical `arrays`."""
        message = diverged(self.allgather(fingerprint(arrays)))
        if message:
            raise RuntimeError(message)

    @contextlib.contextmanager
    def guard(self):
        """Around a rank's work: one process needs nothing."""
        yield


class MpiWorld(World):
    """The ranks of MPI_COMM_WORLD, through mpi4py's buffer (upper-case) calls for arrays."""

    def __init__(self, mpi, comm):
        self.mpi = mpi
        self.comm = comm
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()

    def allreduce_sum(self, array: np.ndarray) -> np.ndarray:
        send = np.ascontiguousarray(array)
        out = aligned_empty(send.shape, send.dtype)
        self.comm.Allreduce(send, out, op=self.mpi.SUM)
        return out

    def bcast(self, obj: Any) -> Any:
        return self.comm.bcast(obj, root=0)

    def bcast_array(self, array: np.ndarray) -> np.ndarray:
        buf = np.array(array, copy=True, order="C")
        self.comm.Bcast(buf, root=0)
        return buf

    def allgather(self, obj: Any) -> list:
        return self.comm.allgather(obj)

    @contextlib.contextmanager
    def guard(self):
        """An exception on one rank aborts the whole job (MPI_Abort) instead of leaving the other
        ranks waiting in a collective call for ever; SystemExit (argument errors) passes through."""
        try:
            yield
        except Exception:
            traceback.print_exc()
            print(f"error: MPI rank {self.rank} of {self.size} failed; aborting all ranks", file=sys.stderr, flush=True)
            sys.stdout.flush()
            self.comm.Abort(1)


def connect(size: int | None = None) -> World:
    """This process's `World`: one process when `size` is 1 (mpi4py is not imported), else the MPI
    job, whose size must be `size` when given (None: the launcher did not say)."""
    if size == 1:
        return World()
    try:
        from mpi4py import MPI  # lazily: only multi-rank runs need MPI
    except ImportError as e:
        raise RuntimeError(
            f"this process is one of {size or 'several'} MPI ranks but mpi4py cannot be imported ({e}); "
            "install the pinned requirements and an MPI library (Debian: openmpi-bin)"
        ) from e
    comm = MPI.COMM_WORLD
    if size is not None and comm.Get_size() != size:
        raise RuntimeError(f"the launcher started {size} ranks but MPI_COMM_WORLD has {comm.Get_size()}")
    return MpiWorld(MPI, comm) if comm.Get_size() > 1 else World()


def shard(indices: np.ndarray, world: World) -> np.ndarray:
    """This rank's part of a global batch of `batch_size x world.size` indices: rows
    rank*b .. (rank+1)*b-1, so that the ranks' parts, in rank order, are the global batch."""
    per = len(indices) // world.size
    return indices[world.rank * per : (world.rank + 1) * per]


def synthetic_shard(
    batch_size: int, image_size: int, num_classes: int, seed: int, world: World, layout: str = "NHWC"
):
    """This rank's `batch_size` rows of the global synthetic batch (`batch_size x world.size` images of
    `seed`): different data on every rank, and with one process exactly `synthetic(batch_size, ...)`."""
    x, y = synthetic(batch_size * world.size, image_size, num_classes, seed, layout)
    rows = shard(np.arange(len(y)), world)
    return np.ascontiguousarray(x[rows]), np.ascontiguousarray(y[rows])


# ---------------------------------------------------------------------------------------------
# the loop


@dataclass
class Hooks:
    put: Callable[[np.ndarray, np.ndarray], Any]
    train_step: Callable[[Any, Any, float], float]
    predict: Callable[[Any], np.ndarray]
    layout: str = "NHWC"
    # Data-parallel runs: make the ranks' model state one and check it (before each evaluation and
    # before the Summary); None with one process.
    sync: Callable[[], None] | None = None


@dataclass
class Result:
    records: list[StepRecord] = field(default_factory=list)
    evaluations: list[dict] = field(default_factory=list)
    summary: Summary | None = None
    target_reached: bool = False
    time_to_target: float | None = None


def _train_once(args, logger: DLLogger, hooks: Hooks, x, y, epoch: int, iteration: int, lr: float, images: int):
    """One timed step; x, y are numpy (moved to the device inside the timing) or device tensors already.
    `images` is the step's global batch (all ranks), so the logged images/s is the job's."""
    start = time.perf_counter()
    if isinstance(x, np.ndarray):
        x, y = hooks.put(x, y)
    loss = float(hooks.train_step(x, y, lr))
    seconds = time.perf_counter() - start
    if not math.isfinite(loss):
        raise FloatingPointError(f"training loss is {loss} at iteration {iteration}")
    record = StepRecord(iteration=iteration, epoch=epoch, seconds=seconds, images=images, loss=loss, lr=lr)
    if iteration % args.display_every == 0:
        logger.log((epoch, iteration), step_pairs(record))
    return record


def evaluate(args, hooks: Hooks, data: Digits, world: World | None = None) -> dict:
    """Top-1/top-5 (percent), mean loss and images/s on the validation split.

    With several ranks each scores a contiguous part of the split and the counts are summed across
    ranks, so every rank returns the same numbers; images/s is the whole split over this rank's time,
    which ends after the sum (when the slowest rank is done).
    """
    world = world or World()
    mine = np.array_split(np.arange(len(data.y_val)), world.size)[world.rank]
    sums = np.zeros(3, dtype=np.float64)  # top-1 hits, top-5 hits, summed loss
    start = time.perf_counter()
    for idx, valid in eval_batches(len(mine), args.batch_size):
        rows = mine[idx]
        x, y = hooks.put(data.x_val[rows], data.y_val[rows])
        logits = np.asarray(hooks.predict(x))[:valid]
        sums += topk_loss(logits, data.y_val[rows][:valid])
    hit1, hit5, loss = world.allreduce_sum(sums)
    seconds = time.perf_counter() - start
    n = len(data.y_val)
    return {"top1": 100.0 * hit1 / n, "top5": 100.0 * hit5 / n, "loss": loss / n, "ips": n / seconds}


def run(args, logger: DLLogger, hooks: Hooks, start: datetime, world: World | None = None) -> Result:
    """Train as `args.mode` says, logging each step, each evaluation and the Summary; `start` is the
    PARAMETER line's timestamp (time to target counts from it). `world`: the data-parallel ranks
    (one process when None); each rank calls `run` with its own hooks and logger."""
    world = world or World()
    result = Result()
    if args.mode == "training_benchmark":
        _benchmark(args, logger, hooks, result, world)
    else:
        _train_and_evaluate(args, logger, hooks, result, start, world)
    if hooks.sync:
        hooks.sync()
    result.summary = summarize(result.records, args.warmup_steps)
    pairs = result.summary.pairs(args.warmup_steps)
    if args.mode == "train_and_evaluate":
        last = result.evaluations[-1] if result.evaluations else {}
        epochs = max((r.epoch for r in result.records), default=-1) + 1
        pairs += [("val.top1", last.get("top1", math.nan), None, 2), ("train.epochs", epochs)]
        pairs += [("target_reached", result.target_reached)]
        if result.time_to_target is not None:
            pairs += [("time_to_target", result.time_to_target, "s", 1)]
    logger.log("Summary:", pairs)
    return result


def _global_batch(args, data: Digits, world: World) -> int:
    """The images of one step on all ranks, checked against the digits' training split."""
    batch = args.batch_size * world.size
    if len(data.y_train) < batch:
        what = f"--batch_size {args.batch_size}" + (f" x {world.size} ranks" if world.size > 1 else "")
        raise ValueError(f"{what} is larger than the {len(data.y_train)} training images")
    return batch


def _benchmark(args, logger: DLLogger, hooks: Hooks, result: Result, world: World) -> None:
    total = args.num_iter
    schedule = dict(base_lr=args.lr, warmup=args.warmup_steps, total=total)
    images = args.batch_size * world.size
    if args.data == "synthetic":
        # Generated once and put on the device before the timed loop, like NGC's synthetic mode.
        batch = synthetic_shard(args.batch_size, args.image_size, args.num_classes, args.seed, world, hooks.layout)
        x, y = hooks.put(*batch)
        for it in range(total):
            lr = lr_at(it, **schedule)
            result.records.append(_train_once(args, logger, hooks, x, y, 0, it, lr, images))
        return
    data = load_digits(args.image_size, args.seed, hooks.layout)
    batch = _global_batch(args, data, world)
    rng = np.random.RandomState(args.seed)  # the same order on every rank; each takes its shard
    it, epoch = 0, 0
    while it < total:
        for idx in epoch_order(len(data.y_train), batch, rng):
            if it >= total:
                break
            lr = lr_at(it, **schedule)
            idx = shard(idx, world)
            rec = _train_once(args, logger, hooks, data.x_train[idx], data.y_train[idx], epoch, it, lr, images)
            result.records.append(rec)
            it += 1
        epoch += 1


def _train_and_evaluate(args, logger: DLLogger, hooks: Hooks, result: Result, start: datetime, world: World) -> None:
    data = load_digits(args.image_size, args.seed, hooks.layout)
    batch = _global_batch(args, data, world)
    steps = len(data.y_train) // batch
    schedule = dict(base_lr=args.lr, warmup=args.lr_warmup_epochs * steps, total=args.max_epochs * steps)
    rng = np.random.RandomState(args.seed)  # the same order on every rank; each takes its shard
    it = 0
    for epoch in range(args.max_epochs):
        for idx in epoch_order(len(data.y_train), batch, rng):
            lr = lr_at(it, **schedule)
            idx = shard(idx, world)
            rec = _train_once(args, logger, hooks, data.x_train[idx], data.y_train[idx], epoch, it, lr, batch)
            result.records.append(rec)
            it += 1
        if (epoch + 1) % args.eval_every and epoch + 1 != args.max_epochs:
            continue
        if hooks.sync:
            hooks.sync()
        ev = evaluate(args, hooks, data, world)
        ev["epoch"] = epoch
        result.evaluations.append(ev)
        stamp = logger.log(
            epoch,
            [
                ("val.top1", ev["top1"], None, 2),
                ("val.top5", ev["top5"], None, 2),
                ("val.ips", ev["ips"], "images/s", 1),
                ("val.loss", ev["loss"], None, 4),
            ],
        )
        # Rank 0 decides and every rank follows: a rank that stopped alone would leave the others
        # waiting in their next Allreduce.
        if world.bcast(bool(ev["top1"] >= args.target_accuracy)):
            result.target_reached = True
            result.time_to_target = (stamp - start).total_seconds()
            return


def keras_resnet50_stages(keras, inputs) -> list:
    """ResNet-50 v1.5 in Keras layers (stride 2 on the 3x3 conv of each bottleneck): the outputs of
    the four stages, C2..C5 at strides 4..32, for the classifier and for the Mask R-CNN backbone.
    `keras` is passed in so that this module imports nothing but numpy."""
    layers = keras.layers
    he = keras.initializers.VarianceScaling(scale=2.0, mode="fan_in", distribution="truncated_normal")

    def conv(x, filters, kernel, stride=1):
        # Symmetric padding as in the reference implementations ('same' would pad more on the right).
        if stride > 1 and kernel > 1:
            x = layers.ZeroPadding2D(kernel // 2)(x)
            padding = "valid"
        else:
            padding = "same"
        return layers.Conv2D(filters, kernel, strides=stride, padding=padding, use_bias=False, kernel_initializer=he)(x)

    def bn(x, zero_gamma=False):
        return layers.BatchNormalization(
            momentum=BN_MOMENTUM, epsilon=BN_EPSILON, gamma_initializer="zeros" if zero_gamma else "ones"
        )(x)

    def bottleneck(x, width, stride, project):
        shortcut = x
        y = layers.ReLU()(bn(conv(x, width, 1)))
        y = layers.ReLU()(bn(conv(y, width, 3, stride)))
        y = bn(conv(y, width * EXPANSION, 1), zero_gamma=True)
        if project:
            shortcut = bn(conv(x, width * EXPANSION, 1, stride))
        return layers.ReLU()(layers.Add()([y, shortcut]))

    x = layers.ReLU()(bn(conv(inputs, 64, 7, 2)))
    x = layers.ZeroPadding2D(1)(x)
    x = layers.MaxPooling2D(3, strides=2)(x)
    stages = []
    for stage, (blocks, width) in enumerate(zip(LAYERS, WIDTHS, strict=True)):
        for block in range(blocks):
            x = bottleneck(x, width, 2 if stage > 0 and block == 0 else 1, project=block == 0)
        stages.append(x)
    return stages
