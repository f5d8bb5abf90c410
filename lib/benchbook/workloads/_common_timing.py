"""What the loop measures and logs per step, the Summary's throughput (NGC TF1's rule: mean of the
per-iteration images/s past the warm-up), and the learning-rate schedule."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


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
