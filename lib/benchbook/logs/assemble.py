"""Folding a file's events into runs, whatever the format.

A file may hold several runs one after the other (a 1-GPU run, then an 8-GPU run), and under
mpirun every rank announces the same run. A `run_start` event therefore opens a new run only when
the current one has finished, or has made progress and hears again from a rank that already
started it; otherwise it is another rank joining the current run.
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


def seconds(stamp) -> float:
    """A logged timestamp as seconds since the epoch (naive times read as UTC); NaN if unreadable.

    Accepts numbers and `YYYY-MM-DD HH:MM:SS[.ffffff|,fff]`.
    """
    if stamp is None:
        return math.nan
    if not isinstance(stamp, str):
        return float(stamp)
    try:
        return float(_datetimes([stamp.replace(",", ".")])[0])
    except ValueError:
        return math.nan


def seconds_array(values) -> np.ndarray:
    """`seconds` over a column: numbers as they are, date-time strings read by numpy's
    datetime64[us] (whole microseconds), NaN where missing or not a date (2021-02-30)."""
    try:
        return np.array(values, dtype=float)
    except (ValueError, TypeError):
        pass
    try:
        return _datetimes([v.replace(",", ".") if v else "NaT" for v in values])
    except (ValueError, TypeError, AttributeError):
        return np.array([seconds(v) for v in values], dtype=float)


def _datetimes(stamps: list[str]) -> np.ndarray:
    """Seconds of ISO date-times (`.` fraction) as datetime64[us] reads them, NaN for NaT."""
    us = np.array(stamps, dtype="datetime64[us]")
    out = us.astype(np.int64) / 1e6
    out[np.isnat(us)] = np.nan
    return out


def _dtype(name: str) -> type:
    return np.int64 if name in _INT_COLUMNS else np.float64


class Records:
    """Per-iteration records of the runs of one file, in file order, as typed numpy columns with
    the RECORD_COLUMNS (-1 for a missing int, NaN for a missing float). Each BULK event's records
    are copied in as they come and the columns grow in place (`ndarray.resize`), so that a log of
    millions of records holds them once, in one array a column: blocks kept a chunk and joined at
    the end took the 400 MB TF1 log from 0.88 GB to 1.13 GB (bench/bench_analyze.py)."""

    def __init__(self) -> None:
        self._cols = {name: np.empty(0, dtype=_dtype(name)) for name in RECORD_COLUMNS}
        self._size = 0  # records in the columns (their capacity may be larger)

    def __len__(self) -> int:
        return self._size

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

    def update_last(self, rank, data: dict, since: int = 0) -> None:
        """Add fields to the last record of `rank` from record `since` on (formats that log one
        record over several lines)."""
        ranks = self._cols["rank"][since : self._size]
        own = np.flatnonzero(ranks == (MISSING_INT if rank is None else rank))
        if not len(own):
            return
        for name, value in data.items():
            if value is not None and name in RECORD_COLUMNS:
                self._cols[name][since + own[-1]] = seconds(value) if name == "timestamp" else value

    def release(self) -> dict[str, np.ndarray]:
        """The columns, handed over: this object keeps none."""
        cols = self.columns()
        self._cols, self._size = {name: np.empty(0, dtype=_dtype(name)) for name in RECORD_COLUMNS}, 0
        return cols

    def columns(self) -> dict[str, np.ndarray]:
        """All records as typed columns, trimmed to their size."""
        for column in self._cols.values():
            if len(column) != self._size:
                column.resize(self._size, refcheck=False)  # the capacity left over goes back
        return self._cols


@dataclass
class RunDraft:
    """What the events of one run said, before any number is derived from it."""

    index: int
    first_line: int
    last_line: int
    meta: dict = field(default_factory=dict)
    store: Records = field(default_factory=Records)  # the records of its file, which its runs share
    start: int = 0  # where its records begin in the store (the runs of a file follow one another)
    count: int = 0  # how many records it has
    reported: dict = field(default_factory=dict)
    evals: list[dict] = field(default_factory=list)
    start_ranks: set = field(default_factory=set)
    ranks: set = field(default_factory=set)
    ended: str | None = None
    failures: list[tuple[int, str]] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    restarted: str | None = None  # why records opened this run without a start line of its own
    last_step: dict = field(default_factory=dict)  # rank -> its last record's (epoch, iteration, timestamp)

    @property
    def progressed(self) -> bool:
        return bool(self.count or self.reported or self.evals or self.ended)

    def merge_meta(self, data: dict, source: str) -> None:
        """Add metadata where the run has none yet; note where a source disagrees."""
        if not self.meta:  # the run's first metadata: nothing to disagree with
            self.meta = {key: value for key, value in data.items() if value is not None}
            return
        for key, value in data.items():
            if value is None:
                continue
            old = self.meta.get(key)
            if old is None:
                self.meta[key] = value
            elif key not in ("params", "start_time", "command") and old != value:
                self.conflicts.append(f"{key}: {old!r} from the log, {value!r} from {source}")


RESTART_GAP_SECONDS = 60.0  # the clock jump that, with the step counter going back, means another run


def _went_back(last: tuple | None, epoch: int, iteration: int, stamp) -> str | None:
    """Why a record of a rank begins another run (its step counter went back, within an epoch or
    to an earlier one, and its clock jumped by minutes: runs pasted into one file with only
    terminal text between them), or None. `last` is the rank's previous (epoch, iteration,
    timestamp); a new epoch that counts its iterations from 0 again is no restart."""
    if last is None or iteration < 0 or (epoch, iteration) >= (last[0], last[1]):
        return None
    gap = seconds(stamp) - seconds(last[2])
    if not gap > RESTART_GAP_SECONDS:
        return None
    return f"the step counter went back from {last[1]} to {iteration} and the clock jumped {gap:.0f} s"


def _restarts(run: RunDraft, data: dict) -> list[tuple[int, str]]:
    """(position, why) in a block of records where other runs begin (see _went_back); a block of
    interleaved ranks is one run (mpirun runs announce themselves on every rank)."""
    ranks, epoch, it, stamps = data["rank"], data["epoch"], data["iteration"], data["timestamp"]
    if not len(it) or not (ranks == ranks[0]).all():
        return []
    rank = None if ranks[0] == MISSING_INT else int(ranks[0])
    out = []
    why = _went_back(run.last_step.get(rank), int(epoch[0]), int(it[0]), float(stamps[0]))
    if why:
        out.append((0, why))
    back = (epoch[1:] < epoch[:-1]) | ((epoch[1:] == epoch[:-1]) & (it[1:] < it[:-1]))
    for k in (np.flatnonzero(back) + 1).tolist():  # where the counter goes back: few
        why = _went_back((int(epoch[k - 1]), int(it[k - 1]), float(stamps[k - 1])), int(epoch[k]), int(it[k]),
                         float(stamps[k]))
        if why:
            out.append((k, why))
    run.last_step[rank] = (int(epoch[-1]), int(it[-1]), float(stamps[-1]))
    return out


def _add_block(run: RunDraft, bulk: ev.Bulk) -> None:
    run.store.extend(bulk)
    run.count += bulk.stop - bulk.start
    ranks = bulk.cols["rank"][bulk.start : bulk.stop]
    seen = ranks[:1] if (ranks == ranks[0]).all() else np.unique(ranks)  # one rank, mostly
    run.ranks.update(None if x == MISSING_INT else x for x in seen.tolist())
    ends = bulk.cols["end_line"][bulk.start : bulk.stop]  # a record may span several lines
    run.last_line = max(run.last_line, int(ends.max()))


class _Fold:
    """Folding a file's events: the runs so far, the current one, and the records they share."""

    def __init__(self) -> None:
        self.runs: list[RunDraft] = []
        self.tables: list[tuple[dict, dict]] = []
        self.losses: list[dict] = []  # the LOSSES columns of each chunk
        self.run: RunDraft | None = None
        self.store = Records()  # the records of every run, in file order

    def current(self, line: int) -> RunDraft:
        """The current run, or a new one from this line."""
        if self.run is None:
            self.run = RunDraft(index=len(self.runs), first_line=line, last_line=line, store=self.store,
                                start=len(self.store))
            self.runs.append(self.run)
        return self.run

    def restart(self, line: int, why: str) -> RunDraft:
        """A new run from this line, which no start line announced."""
        self.run = None
        r = self.current(line)
        r.restarted = f"a new run begins at line {line} without a start line: {why}"
        return r

    def bulk(self, line: int, bulk: ev.Bulk) -> None:
        """Many records as columns, cut where other runs begin among them."""
        data = bulk.columns()
        r = self.current(line)
        cuts = _restarts(r, data)
        edges = [0, *(k for k, _ in cuts), len(data["line"])]
        for i, (a, b) in enumerate(zip(edges, edges[1:], strict=False)):
            if i:  # another run from record a on
                r = self.restart(int(data["line"][a]), cuts[i - 1][1])
                r.last_step[None if data["rank"][a] == MISSING_INT else int(data["rank"][a])] = (
                    int(data["epoch"][b - 1]), int(data["iteration"][b - 1]), float(data["timestamp"][b - 1]))
            if b > a:
                _add_block(r, ev.Bulk(bulk.cols, bulk.start + a, bulk.start + b))

    def start(self, line: int, rank, data: dict) -> RunDraft:
        """A run announces itself: a new run, unless it is another rank joining the current one."""
        run = self.run
        if run is not None and (
            run.ended or (run.progressed and (rank is None or rank in run.start_ranks or rank in run.ranks))
        ):
            self.run = None
        r = self.current(line)
        r.start_ranks.add(rank)
        r.merge_meta(data, "the log")
        return r

    def other(self, line: int, rank, kind: str, data) -> RunDraft:
        """What the current run's other events say."""
        r = self.current(line)
        if kind == ev.FIELD:
            self.store.update_last(rank, data, r.start)
        elif kind == ev.META:
            r.merge_meta(data, "the log")
        elif kind == ev.SUMMARY:
            for key, value in data.items():
                r.reported.setdefault(key, value)
        elif kind == ev.EVAL:
            r.evals.append(dict(data, line=line, rank=rank))
        elif kind == ev.END:
            r.ended = r.ended or data
        elif kind == ev.FAIL:
            r.failures.append((line, data))
        return r


def fold(events: Iterable[ev.Event]) -> tuple[list[RunDraft], list[tuple[dict, dict]], list[dict]]:
    """Runs found in a file's events, in file order, the rows of its summary tables and the
    LOSSES columns of its chunks (given to runs by line in `losses.py`)."""
    f = _Fold()
    for line, rank, kind, data in events:
        if kind == ev.BULK:
            f.bulk(line, data)
        elif kind == ev.TABLE:
            f.tables.extend(data)
        elif kind == ev.LOSSES:
            f.losses.append(data)
        elif kind == ev.TRAILER:  # the launch command, after the run it describes
            if f.run is not None:
                f.run.merge_meta(data, "the launch command")
                f.run.last_line = max(f.run.last_line, line)
        else:
            r = f.start(line, rank, data) if kind == ev.RUN_START else f.other(line, rank, kind, data)
            r.last_line = max(r.last_line, line)
    return f.runs, f.tables, f.losses
