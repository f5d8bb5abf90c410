"""Folding a file's events into runs, whatever the format.

A file may hold several runs one after the other (a 1-GPU run, then an 8-GPU run), and under
mpirun every rank announces the same run. A `run_start` event therefore opens a new run only when
the current one has finished, or has made progress and hears again from a rank that already
started it; otherwise it is another rank joining the current run. Runs pasted into one file with
only terminal text between them have no start line: one begins where a rank's step counter goes
back and its clock jumps by minutes.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from . import events as ev

# Records are kept as typed numpy columns: a 400 MB log holds millions of them, too many for one
# Python object each.
RECORD_COLUMNS = ("line", "rank", "epoch", "iteration", "timestamp", "throughput", "loss", "lr", "steps")
_INT_COLUMNS = ("line", "rank", "epoch", "iteration")
MISSING_INT = -1
RESTART_GAP_SECONDS = 60.0  # the clock jump that, with the step counter going back, means another run


def seconds(stamp) -> float:
    """A logged timestamp (a number, or `YYYY-MM-DD HH:MM:SS[.ffffff|,fff]`, naive times read as
    UTC) as seconds since the epoch; NaN where missing or unreadable."""
    return float(seconds_array([stamp])[0])


def seconds_array(values) -> np.ndarray:
    """`seconds` over a column: numbers as they are, date-times read together by numpy's
    datetime64[us] (whole microseconds)."""
    try:
        return np.array(values, dtype=float)  # None is NaN
    except (ValueError, TypeError):
        pass
    try:
        us = np.array(["NaT" if v is None else v.replace(",", ".") for v in values], dtype="datetime64[us]")
    except (ValueError, AttributeError):  # a value that is neither a number nor a date (2021-02-30)
        return np.array([seconds(v) for v in values] if len(values) > 1 else [math.nan])
    return np.where(np.isnat(us), np.nan, us.astype(np.int64) / 1e6)


class Records:
    """Per-iteration records of the runs of one file, in file order, as typed numpy columns with
    the RECORD_COLUMNS (-1 for a missing int, NaN for a missing float). Each BULK event's records
    are copied in as they come and the columns grow in place (`ndarray.resize`), so that a log of
    millions of records holds them once, in one array a column: blocks kept a chunk and joined at
    the end took the 400 MB TF1 log from 0.88 GB to 1.13 GB (bench/bench_analyze.py)."""

    def __init__(self) -> None:
        self._cols = {name: np.empty(0, np.int64 if name in _INT_COLUMNS else np.float64) for name in RECORD_COLUMNS}
        self._size = 0  # records in the columns (their capacity may be larger)

    def __len__(self) -> int:
        return self._size

    def __getitem__(self, name: str) -> np.ndarray:
        """A column's records (a view, valid until the next `extend`)."""
        return self._cols[name][: self._size]

    def extend(self, bulk: ev.Bulk) -> None:
        """Add the records of a BULK event, copied into the columns."""
        n, start = bulk.stop - bulk.start, self._size
        if start + n > len(self._cols["line"]):
            capacity = max(start + n, len(self._cols["line"]) * 3 // 2)
            for column in self._cols.values():
                column.resize(capacity, refcheck=False)
        for name, column in self._cols.items():
            column[start : start + n] = bulk.cols[name][bulk.start : bulk.stop]
        self._size += n

    def last_of(self, rank: int, since: int) -> int | None:
        """The index of the last record of `rank` (-1: none logged) from record `since` on."""
        own = np.flatnonzero(self["rank"][since:] == rank)
        return since + int(own[-1]) if len(own) else None

    def update_last(self, rank, data: dict, since: int = 0) -> None:
        """Add fields to the last record of `rank` from record `since` on (formats that log one
        record over several lines)."""
        last = self.last_of(MISSING_INT if rank is None else rank, since)
        for name, value in data.items():
            if last is not None and value is not None and name in RECORD_COLUMNS:
                self._cols[name][last] = seconds(value) if name == "timestamp" else value

    def columns(self) -> dict[str, np.ndarray]:
        """All records as typed columns, the capacity left over given back."""
        for column in self._cols.values():
            column.resize(self._size, refcheck=False)
        return self._cols

    def release(self) -> dict[str, np.ndarray]:
        """The columns, handed over: this object keeps none."""
        cols = self.columns()
        self.__init__()
        return cols


@dataclass
class RunDraft:
    """What the events of one run said, before any number is derived from it. Its records are
    `count` records of `store` from `start` on: the runs of a file share one store."""

    index: int
    first_line: int
    last_line: int
    store: Records
    start: int
    count: int = 0
    meta: dict = field(default_factory=dict)
    reported: dict = field(default_factory=dict)
    evals: list[dict] = field(default_factory=list)
    start_ranks: set = field(default_factory=set)  # the ranks whose start line announced it
    ranks: set = field(default_factory=set)  # the ranks that logged its records
    ended: str | None = None
    failures: list[tuple[int, str]] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    restarted: str | None = None  # why records opened this run without a start line of its own

    def merge_meta(self, data: dict, source: str) -> None:
        """Add metadata where the run has none yet; note where a source disagrees."""
        for key, value in data.items():
            if value is None:
                continue
            old = self.meta.get(key)
            if old is None:
                self.meta[key] = value
            elif key not in ("params", "start_time", "command") and old != value:
                self.conflicts.append(f"{key}: {old!r} from the log, {value!r} from {source}")


def _restarts(store: Records, since: int, block: dict) -> list[tuple[int, str]]:
    """(position, why) in a block of one rank's records where other runs begin: its step counter
    went back (within an epoch or to an earlier one, from the rank's last record in the store from
    `since` on) and its clock jumped by minutes. A new epoch that counts its iterations from 0
    again is no restart; a block of interleaved ranks is one run (mpirun runs announce themselves
    on every rank)."""
    ranks = block["rank"]
    if not len(ranks) or not (ranks == ranks[0]).all():
        return []
    last = store.last_of(int(ranks[0]), since)
    steps = {}  # the rank's record before the block (or, with none, its first again), then the block
    for name in ("epoch", "iteration", "timestamp"):
        before = block[name][:1] if last is None else store[name][last : last + 1]
        steps[name] = np.concatenate((before, block[name]))
    epoch, it, gap = steps["epoch"], steps["iteration"], np.diff(steps["timestamp"])
    back = (epoch[1:] < epoch[:-1]) | ((epoch[1:] == epoch[:-1]) & (it[1:] < it[:-1]))
    restart = back & (it[1:] >= 0) & (gap > RESTART_GAP_SECONDS)
    return [(k, f"the step counter went back from {it[k]} to {it[k + 1]} and the clock jumped {gap[k]:.0f} s")
            for k in np.flatnonzero(restart).tolist()]


class _Fold:
    """Folding a file's events: the runs so far, the current one, and the records they share."""

    def __init__(self) -> None:
        self.runs: list[RunDraft] = []
        self.run: RunDraft | None = None
        self.store = Records()  # the records of every run, in file order

    def new(self, line: int, restarted: str | None = None) -> RunDraft:
        """A new current run from this line."""
        self.run = RunDraft(len(self.runs), line, line, self.store, len(self.store), restarted=restarted)
        self.runs.append(self.run)
        return self.run

    def start(self, line: int, rank) -> RunDraft:
        """A run announces itself: a new run, unless it is another rank joining the current one."""
        run = self.run
        if run is None or run.ended or (
            (run.count or run.reported or run.evals) and (rank is None or rank in run.start_ranks or rank in run.ranks)
        ):
            run = self.new(line)
        run.start_ranks.add(rank)
        return run

    def bulk(self, run: RunDraft, bulk: ev.Bulk) -> None:
        """Many records as columns, to the current run up to where another run begins among them."""
        block = bulk.columns()
        a = 0
        for b, why in [*_restarts(self.store, run.start, block), (len(block["line"]), None)]:
            if b > a:
                self.store.extend(ev.Bulk(bulk.cols, bulk.start + a, bulk.start + b))
                run.count += b - a
                ranks = block["rank"][a:b]
                seen = ranks[:1] if (ranks == ranks[0]).all() else np.unique(ranks)  # one rank, mostly
                run.ranks.update(None if x == MISSING_INT else x for x in seen.tolist())
                run.last_line = max(run.last_line, int(block["end_line"][a:b].max()))  # records may span lines
            if why is not None:
                line = int(block["line"][b])
                run = self.new(line, f"a new run begins at line {line} without a start line: {why}")
            a = b

    def add(self, line: int, rank, kind: str, data) -> None:
        """What an event says of its run: the current one, or a new one where a start line opens it."""
        run = self.start(line, rank) if kind == ev.RUN_START else self.run or self.new(line)
        run.last_line = max(run.last_line, line)
        if kind in (ev.RUN_START, ev.META, ev.TRAILER):
            run.merge_meta(data, "the launch command" if kind == ev.TRAILER else "the log")
        elif kind == ev.FIELD:
            self.store.update_last(rank, data, run.start)
        elif kind == ev.SUMMARY:
            for key, value in data.items():
                run.reported.setdefault(key, value)
        elif kind == ev.EVAL:
            run.evals.append(dict(data, line=line, rank=rank))
        elif kind == ev.END:
            run.ended = run.ended or data
        elif kind == ev.FAIL:
            run.failures.append((line, data))


def fold(events: Iterable[ev.Event]) -> tuple[list[RunDraft], list[tuple[dict, dict]], list[dict]]:
    """Runs found in a file's events, in file order, the rows of its summary tables and the
    LOSSES columns of its chunks (given to runs by line in `losses.py`)."""
    f, tables, losses = _Fold(), [], []
    for line, rank, kind, data in events:
        if kind == ev.TABLE:
            tables.extend(data)
        elif kind == ev.LOSSES:
            losses.append(data)
        elif kind == ev.BULK:
            f.bulk(f.run or f.new(line), data)
        elif kind != ev.TRAILER or f.run is not None:  # a trailer (the launch command) follows its run
            f.add(line, rank, kind, data)
    return f.runs, tables, losses
