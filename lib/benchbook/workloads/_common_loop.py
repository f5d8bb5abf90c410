"""The training loop every framework script runs through its `Hooks`: a throughput benchmark or training
to a target accuracy with evaluations, timed, logged and summarised (see `_common` for the hooks)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

try:
    from ._common_data import Digits, epoch_order, eval_batches, load_digits, topk_loss
    from ._common_dllogger import DLLogger
    from ._common_mllog import MLPerfLog
    from ._common_mpi import World, shard, synthetic_shard
    from ._common_timing import StepRecord, Summary, lr_at, step_pairs, summarize
except ImportError:  # run as a script's sibling file (`import _common`), not as a package
    from _common_data import Digits, epoch_order, eval_batches, load_digits, topk_loss
    from _common_dllogger import DLLogger
    from _common_mllog import MLPerfLog
    from _common_mpi import World, shard, synthetic_shard
    from _common_timing import StepRecord, Summary, lr_at, step_pairs, summarize


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


def run(args, logger: DLLogger, hooks: Hooks, start: datetime, world: World | None = None,
        mlperf: MLPerfLog | None = None) -> Result:
    """Train as `args.mode` says, logging each step, each evaluation and the Summary; `start` is the
    PARAMETER line's timestamp (time to target counts from it). `world`: the data-parallel ranks
    (one process when None); each rank calls `run` with its own hooks and logger. `mlperf`: where
    train_and_evaluate also writes its MLLOG records (after `MLPerfLog.init`), none when None."""
    world = world or World()
    mlperf = mlperf or MLPerfLog(None)
    result = Result()
    if args.mode == "training_benchmark":
        _benchmark(args, logger, hooks, result, world)
    else:
        try:
            _train_and_evaluate(args, logger, hooks, result, start, world, mlperf)
        finally:  # at once: success at the evaluation that reached the target, else aborted
            mlperf.run_stop(result.target_reached)
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


def _train_and_evaluate(args, logger: DLLogger, hooks: Hooks, result: Result, start: datetime, world: World,
                        mlperf: MLPerfLog) -> None:
    mlperf.run_start()
    data = load_digits(args.image_size, args.seed, hooks.layout)
    mlperf.samples(len(data.y_train), len(data.y_val))
    batch = _global_batch(args, data, world)
    steps = len(data.y_train) // batch
    schedule = dict(base_lr=args.lr, warmup=args.lr_warmup_epochs * steps, total=args.max_epochs * steps)
    rng = np.random.RandomState(args.seed)  # the same order on every rank; each takes its shard
    it = 0
    for epoch in range(args.max_epochs):
        mlperf.epoch(True, epoch)
        for idx in epoch_order(len(data.y_train), batch, rng):
            lr = lr_at(it, **schedule)
            idx = shard(idx, world)
            rec = _train_once(args, logger, hooks, data.x_train[idx], data.y_train[idx], epoch, it, lr, batch)
            result.records.append(rec)
            it += 1
        mlperf.epoch(False, epoch)
        if (epoch + 1) % args.eval_every and epoch + 1 != args.max_epochs:
            continue
        mlperf.evaluation(True, epoch)
        if hooks.sync:
            hooks.sync()
        ev = evaluate(args, hooks, data, world)
        ev["epoch"] = epoch
        mlperf.evaluation(False, epoch)
        mlperf.accuracy(epoch, ev["top1"])
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
