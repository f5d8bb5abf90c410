"""The events a parser emits: one per log line that means something, in file order.

Parsers turn text into events and know nothing of runs; `assemble` folds events into runs and
knows nothing of formats. An event is a plain tuple `(line, rank, kind, data)` because a log of
hundreds of megabytes yields millions of them.
"""

from __future__ import annotations

from typing import Any, NamedTuple


class Event(NamedTuple):
    """One meaningful log line: its 1-based line number, mpirun rank (or None), kind and payload."""

    line: int
    rank: int | None
    kind: str
    data: Any


# Kinds, and what `data` holds for each.
RUN_START = "run_start"  # dict of metadata; opens a new run unless the current one has no progress yet
META = "meta"  # dict of metadata for the current run (first value wins)
# A handler's record, a tuple in ITER_FIELDS order (-1 / NaN where not logged); scanning makes each
# a row of the chunk's record columns, so that fold sees records as BULK events alone.
STEP = "step"
FIELD = "field"  # dict of iteration fields added to the last record of the same rank
SUMMARY = "summary"  # dict of values the script reported for the whole run, e.g. {"throughput": 979.1}
EVAL = "eval"  # dict with top1, top5 (fractions or percent as logged), epoch, eval_throughput, timestamp
END = "end"  # the run finished normally; data: a short description
FAIL = "fail"  # the run failed; data: the cause (out of memory, traceback, ...)
PHASE = "phase"  # the run goes on in another phase (an evaluation after training), its step counters anew; None
RANK = "rank"  # a line that shows its rank takes part in the run (every rank logs it, not only rank 0); data: None
TRAILER = "trailer"  # dict of metadata printed after the run (e.g. the launch command) for the last run
BULK = "bulk"  # a Bulk: records start:stop of a chunk's numpy columns
TABLE = "table"  # (key dict, values dict): a row of a summary table matched to runs by key at the end
LOSSES = "losses"  # dict of numpy columns line, value, component (codes into names): a chunk's loss components

ITER_FIELDS = ("epoch", "iteration", "timestamp", "throughput", "loss", "lr", "steps")


class Bulk(NamedTuple):
    """Records `start` to `stop` of a chunk's record columns (line, rank, end_line, then
    ITER_FIELDS). The columns are the chunk's, shared by its BULK events: the store keeps them
    once a chunk, not once an event."""

    cols: dict
    start: int
    stop: int

    def columns(self) -> dict:
        """The records' columns (views)."""
        return {name: column[self.start : self.stop] for name, column in self.cols.items()}


NAN = float("nan")


def step(epoch=None, iteration=None, timestamp=None, throughput=None, loss=None, lr=None, steps=None) -> tuple:
    """The payload of a STEP event, by field name: -1 for a missing epoch or iteration, NaN for
    other missing numbers; the timestamp is a number or a `YYYY-MM-DD HH:MM:SS[.f|,f]` string."""
    def num(v):
        return NAN if v is None else v

    return (-1 if epoch is None else epoch, -1 if iteration is None else iteration, timestamp, num(throughput),
            num(loss), num(lr), num(steps))
