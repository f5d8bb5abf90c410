"""Folding a file's events into runs, whatever the format.

A file may hold several runs one after the other (a 1-GPU run, then an 8-GPU run), and under
mpirun every rank announces the same run. A `run_start` event therefore opens a new run only when
the current one has finished, or has made progress and hears again from a rank that already
started it; otherwise it is another rank joining the current run.
"""

from __future__ import annotations

import math
from array import array
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Iterable

from . import events as ev

# Records are kept in typed columns, not dicts: a 400 MB log holds millions of them.
RECORD_COLUMNS = {"line": "q", "rank": "q", "epoch": "q", "iteration": "q", "timestamp": "d",
                  "throughput": "d", "loss": "d", "lr": "d", "steps": "d"}
MISSING_INT = -1
_DAYS: dict[str, float] = {}


def seconds(stamp) -> float:
    """A logged timestamp as seconds since the epoch (naive times read as UTC); NaN if unreadable.

    Accepts numbers and `YYYY-MM-DD HH:MM:SS[.ffffff|,fff]`; the date part is cached because a run
    logs thousands of stamps of the same day.
    """
    if stamp is None:
        return math.nan
    if not isinstance(stamp, str):
        return float(stamp)
    day = _DAYS.get(stamp[:10])
    try:
        if day is None:
            day = _DAYS[stamp[:10]] = datetime.strptime(stamp[:10], "%Y-%m-%d").replace(
                tzinfo=timezone.utc).timestamp()
        return day + int(stamp[11:13]) * 3600 + int(stamp[14:16]) * 60 + float(stamp[17:].replace(",", "."))
    except ValueError:
        return math.nan


class Records:
    """Per-iteration records of one run, as typed columns; missing ints are -1, floats NaN."""

    def __init__(self) -> None:
        self.columns = {name: array(code) for name, code in RECORD_COLUMNS.items()}
        self._last: dict = {}

    def __len__(self) -> int:
        return len(self.columns["line"])

    def append(self, line: int, rank, data: dict) -> None:
        cols = self.columns
        cols["line"].append(line)
        cols["rank"].append(MISSING_INT if rank is None else rank)
        for name in ("epoch", "iteration"):
            value = data.get(name)
            cols[name].append(MISSING_INT if value is None else value)
        cols["timestamp"].append(seconds(data.get("timestamp")))
        for name in ("throughput", "loss", "lr", "steps"):
            value = data.get(name)
            cols[name].append(math.nan if value is None else value)
        self._last[rank] = len(cols["line"]) - 1

    def update_last(self, rank, data: dict) -> None:
        """Add fields to the last record of `rank` (formats that log one record over several lines)."""
        idx = self._last.get(rank)
        if idx is None:
            return
        for name, value in data.items():
            if name in self.columns and value is not None:
                self.columns[name][idx] = seconds(value) if name == "timestamp" else value


@dataclass
class RunDraft:
    """What the events of one run said, before any number is derived from it."""

    index: int
    first_line: int
    last_line: int
    meta: dict = field(default_factory=dict)
    records: Records = field(default_factory=Records)
    reported: dict = field(default_factory=dict)
    evals: list[dict] = field(default_factory=list)
    start_ranks: set = field(default_factory=set)
    ranks: set = field(default_factory=set)
    ended: str | None = None
    failures: list[tuple[int, str]] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)

    @property
    def progressed(self) -> bool:
        return bool(len(self.records) or self.reported or self.evals or self.ended)

    def merge_meta(self, data: dict, source: str) -> None:
        """Add metadata where the run has none yet; note where a source disagrees."""
        for key, value in data.items():
            if value is None:
                continue
            old = self.meta.get(key)
            if old is None:
                self.meta[key] = value
            elif old != value and key not in ("params", "start_time", "command"):
                self.conflicts.append(f"{key}: {old!r} from the log, {value!r} from {source}")


def fold(events: Iterable[ev.Event]) -> tuple[list[RunDraft], list[tuple[dict, dict]]]:
    """Runs found in a file's events, in file order, and the rows of its summary tables."""
    runs: list[RunDraft] = []
    tables: list[tuple[dict, dict]] = []
    run: RunDraft | None = None

    def current(line: int) -> RunDraft:
        nonlocal run
        if run is None:
            run = RunDraft(index=len(runs), first_line=line, last_line=line)
            runs.append(run)
        return run

    for line, rank, kind, data in events:
        if kind == ev.RUN_START:
            if run is not None and (
                run.ended or (run.progressed and (rank is None or rank in run.start_ranks or rank in run.ranks))
            ):
                run = None
            r = current(line)
            r.start_ranks.add(rank)
            r.merge_meta(data, "the log")
        elif kind == ev.TABLE:
            tables.extend(data)
            continue
        elif kind == ev.TRAILER:
            if run is None:
                continue
            r = run
            r.merge_meta(data, "the launch command")
        else:
            r = current(line)
            if kind == ev.STEP:
                r.records.append(line, rank, data)
                r.ranks.add(rank)
            elif kind == ev.FIELD:
                r.records.update_last(rank, data)
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
        r.last_line = max(r.last_line, line)
    return runs, tables
