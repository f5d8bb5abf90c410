"""Folding a file's events into runs, whatever the format: a file may hold several runs, each announced
on every rank under mpirun, or pasted one after the other with only terminal text between them; and what a run's
draft says that a user should read (its warnings: metadata no frame can hold or that conflicts, rates that are no
rates, ranks that disagree, lines left out), each short whatever the log holds (a number of 309 digits is said by
its first digits)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from . import textio
from .parsers import scanning

if TYPE_CHECKING:
    from ..core.catalog import Catalog

RECORD_COLUMNS = ("line", "rank", "epoch", "iteration", "timestamp", "throughput", "loss", "lr", "steps")
_INT_COLUMNS = ("line", "rank", "epoch", "iteration")
MISSING_INT = -1
MAX_RANK_KEY = 1 << 20  # above textio.MAX_RANK: the ranks of a run's records, as one sort key with the run
RESTART_GAP_SECONDS = 60.0  # the clock jump that, with the step counter going back, means another run


class Records:
    """The records of a file's runs, in file order, as typed numpy columns (RECORD_COLUMNS; -1 for
    a missing int, NaN for a missing float): a 400 MB log holds millions. Each BULK event's records
    are copied in and the columns grow in place (`ndarray.resize`): keeping the blocks and joining
    them at the end took the 400 MB TF1 log from 0.88 GB to 1.13 GB (bench/bench_analyze.py)."""

    def __init__(self) -> None:
        self._cols = {name: np.empty(0, np.int64 if name in _INT_COLUMNS else np.float64) for name in RECORD_COLUMNS}
        self._size = 0  # records in the columns (their capacity may be larger)
        self._last: dict[int, int] = {}  # rank -> where its last record is

    def __len__(self) -> int:
        return self._size

    def __getitem__(self, name: str) -> np.ndarray:
        """A column's records (a view, valid until the next `extend`)."""
        return self._cols[name][: self._size]

    def extend(self, bulk: scanning.Bulk) -> None:
        """Add the records of a BULK event, and note where each of its ranks' last record is."""
        n, start = bulk.stop - bulk.start, self._size
        for name in scanning.LOGGED_FIELDS:  # a logged field's column from the first record that has it
            if name in bulk.cols and name not in self._cols:
                self._cols[name] = np.full(len(self._cols["line"]), np.nan)
        if start + n > len(self._cols["line"]):  # by half at least: few copies
            for column in self._cols.values():
                column.resize(max(start + n, len(column) * 3 // 2), refcheck=False)
        for name, column in self._cols.items():
            column[start : start + n] = bulk.cols[name][bulk.start : bulk.stop] if name in bulk.cols else np.nan
        self._size += n
        added = self["rank"][start:]
        if (added == added[0]).all():  # one rank (a pasted run's record: numpy's unique costs more than it)
            self._last[int(added[0])] = self._size - 1
            return
        ranks, from_end = np.unique(added[::-1], return_index=True)  # each rank's first from the end
        self._last.update(zip(ranks.tolist(), (self._size - 1 - from_end).tolist(), strict=True))

    def last_of(self, rank: int, since: int) -> int | None:
        """Where the last record of `rank` (-1: none logged) from record `since` on is."""
        last = self._last.get(rank, -1)
        return last if last >= since else None

    def update_last(self, rank, data: dict, since: int = 0) -> None:
        """Add fields to the last record of `rank` from record `since` on (a record over several lines)."""
        last = self.last_of(MISSING_INT if rank is None else rank, since)
        for name, value in data.items():
            if last is not None and name in scanning.LOGGED_FIELDS and name not in self._cols:  # (Bridge's line)
                self._cols[name] = np.full(len(self._cols["line"]), np.nan)
            if last is not None and value is not None and name in self._cols:
                self._cols[name][last] = scanning.seconds(value) if name == "timestamp" else value

    def release(self) -> dict[str, np.ndarray]:
        """All records as typed columns, the capacity left over given back, handed over: this
        object keeps none."""
        cols = self._cols
        for column in cols.values():
            column.resize(self._size, refcheck=False)
        self.__init__()
        return cols


@dataclass(slots=True)
class RunDraft:
    """What the events of one run said, before any number is derived from it. Its records are the
    `count` records of `store`, which the runs of a file share, after those of the runs before it."""

    index: int
    first_line: int
    last_line: int
    store: Records
    count: int = 0
    meta: dict = field(default_factory=dict)
    reported: dict = field(default_factory=dict)
    evals: list[dict] = field(default_factory=list)
    keyed: list[tuple[int, object]] = field(default_factory=list)  # (line, data) of its KEYED events, in order
    start_ranks: set = field(default_factory=set)  # the ranks whose start line announced it
    ranks: set = field(default_factory=set)  # the ranks that logged its records or a RANK line
    ended: str | None = None
    failures: list[tuple[int, str]] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    restarted: str | None = None  # why records opened this run without a start line of its own
    noted: dict[str, list[int]] = field(default_factory=dict)  # NOTE events: what -> its lines
    notes: list[str] = field(default_factory=list)  # what its records hold that is left out or suspect (`_notes`)
    phase: int = 0  # where in the store the records of its current phase (a PHASE event's) begin

    def joined_by(self, rank) -> bool:
        """Whether a start line of `rank` is another rank announcing this run, not the next run."""
        progressed = self.count or self.reported or self.evals
        return not self.ended and not (progressed and (rank is None or rank in self.start_ranks | self.ranks))

    def merge_meta(self, data: dict, source: str) -> None:
        """Add metadata where the run has none yet; note where a source disagrees."""
        for key, value in data.items():
            old = self.meta.get(key)
            if old is None and value is not None:
                self.meta[key] = value
            elif value is not None and key not in ("params", "start_time", "command") and old != value:
                self.conflicts.append(f"{key}: {old!r} from the log, {value!r} from {source}")


def _restarts(store: Records, since: int, block: dict) -> list[tuple[int, str]]:
    """(position, why) in one rank's block where other runs begin: its step counter went back (from
    its last record since `since`; a new epoch may count from 0 again) and its clock jumped by
    minutes. Blocks of interleaved ranks are not searched: mpirun runs start on every rank."""
    last = store.last_of(int(block["rank"][0]), since)
    before = [] if last is None else [last]  # the rank's record before the block, then the block
    if len(before) + len(block["line"]) < 2:  # no two records to compare: a run of one record so far
        return []
    epoch, it, stamps = (np.concatenate((store[name][before], block[name]))
                         for name in ("epoch", "iteration", "timestamp"))
    gap = np.diff(stamps)
    back = (epoch[1:] < epoch[:-1]) | ((epoch[1:] == epoch[:-1]) & (it[1:] < it[:-1]))
    restart = back & (it[1:] >= 0) & (gap > RESTART_GAP_SECONDS)
    return [(k + 1 - len(before), f"the step counter went back from {it[k]} to {it[k + 1]} and the clock jumped "
             f"{gap[k]:.0f} s") for k in np.flatnonzero(restart).tolist()]


def _add_records(runs: list[RunDraft], bulk: scanning.Bulk) -> None:
    """A BULK event's records, to the current run up to where another run begins among them."""
    run, block = runs[-1], bulk.columns()
    rank = block["rank"]
    ranks = {None if x == MISSING_INT else x for x in ([int(rank[0])] if (rank == rank[0]).all() else
                                                      np.unique(rank).tolist())}
    cuts = _restarts(run.store, max(len(run.store) - run.count, run.phase), block) if len(ranks) == 1 else []
    a = 0
    for b, why in [*cuts, (len(block["line"]), None)]:
        if b > a:
            run.store.extend(scanning.Bulk(bulk.cols, bulk.start + a, bulk.start + b))
            run.count += b - a
            run.ranks |= ranks
            run.last_line = max(run.last_line, int(block["end_line"][a:b].max()))  # records may span lines
        if why is not None:
            line = int(block["line"][b])
            why = f"a new run begins at line {line} without a start line: {why}"
            runs.append(RunDraft(len(runs), line, line, run.store, restarted=why))
            run = runs[-1]
        a = b


def fold(events: Iterable[scanning.Event], rates_per_step: bool = True
         ) -> tuple[list[RunDraft], list[tuple[dict, dict]], list[dict]]:
    """Runs found in a file's events, in file order, the rows of its summary tables and the
    LOSSES columns of its chunks (given to runs by line in `analysis`); `rates_per_step`: the format's
    (`LogFormat.rates_per_step`)."""
    runs, tables, losses, store = [], [], [], Records()
    for line, rank, kind, data in events:
        if kind == scanning.TABLE:
            tables.extend(data)
            continue
        if kind == scanning.LOSSES:
            losses.append(data)
            continue
        if not runs and kind == scanning.TRAILER:  # a trailer (the launch command) follows its run
            continue
        if not runs or (kind == scanning.RUN_START and not runs[-1].joined_by(rank)):
            runs.append(RunDraft(len(runs), line, line, store))
        if kind == scanning.BULK:
            _add_records(runs, data)
            continue
        run = runs[-1]  # what any other event says of its run
        run.last_line = max(run.last_line, line)
        if kind == scanning.RUN_START:
            run.start_ranks.add(rank)
        elif kind == scanning.RANK:
            run.ranks.add(rank)
        elif kind == scanning.PHASE:  # its step counters may start again: no restart is sought across this
            run.phase = len(run.store)
        if kind in (scanning.RUN_START, scanning.META, scanning.TRAILER):
            run.merge_meta(data, "the launch command" if kind == scanning.TRAILER else "the log")
        elif kind == scanning.FIELD:
            run.store.update_last(rank, data, len(run.store) - run.count)
        elif kind == scanning.SUMMARY:
            run.reported.update((key, value) for key, value in data.items() if key not in run.reported)
        elif kind == scanning.EVAL:
            run.evals.append(dict(data, line=line, rank=rank))
        elif kind == scanning.END:
            run.ended = run.ended or data
        elif kind == scanning.FAIL:
            run.failures.append((line, data))
        elif kind == scanning.KEYED:
            run.keyed.append((line, data))
        elif kind == scanning.REFUSE:
            raise scanning.Refused(line, data)
        elif kind == scanning.NOTE:
            run.noted.setdefault(data, []).append(line)
    for run in runs:
        run.notes += [f"{what}: {len(lines)} (line {_shown(lines)})" for what, lines in run.noted.items()]
    if runs:
        _notes(runs, store, rates_per_step)
    return runs, tables, losses


def _shown(lines) -> str:
    """The first lines of a list, as a warning names them."""
    return ", ".join(map(str, list(lines[:5]))) + (", ..." if len(lines) > 5 else "")


def _notes(runs: list[RunDraft], store: Records, rates_per_step: bool) -> None:
    """Say in each run's notes what its records hold that would pass without a word: a throughput
    logged as NaN or no number (the record read without one) where the format logs one a step,
    timestamps that are no date while others are (2021-02-30), and a rank's clock going back from one
    record to its next. Computed
    over the file's records at once: a file may hold 10**5 runs."""
    counts = np.array([run.count for run in runs], dtype=np.int64)
    run_of = np.repeat(np.arange(len(runs), dtype=np.int32), counts)
    line, rank, stamp = store["line"], store["rank"], store["timestamp"]
    checked = [(store["throughput"], "records that log no throughput among records that do (NaN or no number), "
                                     "read without one")] if rates_per_step else []
    checked.append((stamp, "records whose timestamp is no date among records whose is, read without one"))
    for values, what in checked:
        missing = np.flatnonzero(np.isnan(values))  # (in run order: a run's are found by bisection)
        missing_run = run_of[missing]
        per_run = np.bincount(missing_run, minlength=len(runs))
        for r in np.flatnonzero((per_run > 0) & (per_run < counts)).tolist():
            lo, hi = np.searchsorted(missing_run, [r, r + 1])
            runs[r].notes.append(f"{what}: {hi - lo} (line {_shown(line[missing[lo:hi]].tolist())})")
    run = run_of
    if np.isnan(stamp).any() or (len(rank) and (rank != rank[0]).any()):
        # the records with a time, each rank's in each run in file order (a copy of the columns; a log of one
        # rank whose records all have a time, most logs, is read as it is: a 400 MB log holds 5 million records)
        order = np.flatnonzero(~np.isnan(stamp))
        order = order[np.argsort(run_of[order] * np.int64(MAX_RANK_KEY + 2) + rank[order] + 1, kind="stable")]
        run, rank, stamp, line = run_of[order], rank[order], stamp[order], line[order]
    back = np.flatnonzero((run[1:] == run[:-1]) & (rank[1:] == rank[:-1]) & (np.diff(stamp) < 0)) + 1
    back_run = run[back]
    for r in np.unique(back_run).tolist():
        lo, hi = np.searchsorted(back_run, [r, r + 1])
        own = back[lo:hi]
        runs[r].notes.append(f"records whose time is before that of their rank's record before, by up to "
                             f"{float(np.max(stamp[own - 1] - stamp[own])):g} s: {len(own)} (line "
                             f"{_shown(line[own].tolist())}): the clock went back, times and rates around them "
                             "are suspect")


# ---------------------------------------------------------------- what a run's draft says: its warnings

UNKNOWN = {key: f"{key} unknown: neither the log, the file name nor a run record gives it"
           for key in ("gpus", "batch_size", "precision")}  # one string each, however many runs

INT64_MAX = 2**63 - 1  # the runs frame's integer axes are nullable int64 columns


def said(value) -> str:
    """A value in a warning: a number of hundreds of digits by its first digits and its length."""
    text = repr(value)
    return f"{text[:8]}... ({len(text)} characters)" if isinstance(value, int) and len(text) > 24 else text


def out_of_range(meta: dict, catalog: Catalog) -> list[str]:
    """Integer axes a log states past what a frame's int64 holds (a GPU count of 10^20): left unknown, said,
    so that one log's number cannot end the analysis of every other."""
    said = []
    for key in catalog.of_kind(int):
        value = meta.get(key)
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
            said.append(f"{key} {value!r} is no count: left unknown")
            meta[key] = None
        elif not -INT64_MAX <= value <= INT64_MAX:
            digits = str(abs(int(value)))
            said.append(f"{key} {'-' if value < 0 else ''}{digits[:6]}... ({len(digits)} digits) is past any "
                        "count a run can have: left unknown")
            meta[key] = None
    return said


def rate_warnings(got, reported, wall, method: str, tolerance: float, records: bool) -> list[str]:
    """What the recomputed, reported and wall-clock throughputs say against one another."""
    out = []
    if records and got is None:
        out.append("no record left after the warm-up to recompute the throughput from")
    if got and reported and abs(got - reported) / reported > tolerance:
        out.append(f"recomputed throughput {rate(got)} differs from the reported {rate(reported)} "
                   f"by {apart(got, reported)}")
    if got and wall and method != "elapsed" and abs(wall - got) / got > 0.10:
        out.append(f"wall-clock throughput {rate(wall)} is {apart(wall, got)} "
                   f"from the {method} of logged rates: time passes between logged steps")
    return out


def rate(value: float) -> str:
    """A rate with two decimals, or its three first digits where it has more than 12 (1e308 from a forged log)."""
    return f"{value:.2f}" if abs(value) < 1e12 else f"{value:.3g}"


def apart(value: float, base: float) -> str:
    """How far `value` is from `base`: +1.5%, or a ratio where the percentage would be huge or infinite."""
    ratio = value / base if math.isfinite(value / base) else math.inf
    if abs(ratio - 1) < 100:
        return f"{100 * (ratio - 1):+.1f}%"
    return f"{ratio:.3g} times as much" if math.isfinite(ratio) else "more than 10^308 times as much"


def metadata_warnings(draft: RunDraft, meta: dict) -> list[str]:
    """Conflicting metadata, values the folding left out or found suspect, and what none of the log, the file
    name and a run record gives (MLLOG logs none of them)."""
    out = [f"conflicting {c}" for c in draft.conflicts]
    out += draft.notes  # (assemble: values left out or suspect, with their lines)
    return out + [UNKNOWN[key] for key in (() if draft.keyed else UNKNOWN) if meta.get(key) is None]


def refused_rates(rate: np.ndarray, line: np.ndarray, run: np.ndarray, runs: int) -> dict[int, list[str]]:
    """Records whose logged rate is negative or infinite get none (NaN: neither warm-up nor
    measured); the warning of each run that had some, with their lines."""
    bad = np.flatnonzero(np.isinf(rate) | (rate < 0))
    if not len(bad):
        return {}
    rate[bad] = np.nan
    out = {}
    for r in np.unique(run[bad]).tolist():
        at = bad[run[bad] == r]
        shown = ", ".join(map(str, line[at[:5]].tolist())) + (", ..." if len(at) > 5 else "")
        out[r] = [f"{len(at)} records log a throughput that is negative or infinite: refused (line {shown})"]
    return out


def rank_warnings(rank: np.ndarray, rate: np.ndarray, low: int, tolerance: float) -> list[str]:
    """Every rank prints the same global rate; a rank that saw another rate is worth a look."""
    rated = ~np.isnan(rate)
    present, codes = np.unique(rank[rated], return_inverse=True)  # one code per rank logged, lowest first
    counts = np.bincount(codes)
    means = np.bincount(codes, weights=rate[rated]) / np.maximum(counts, 1)
    if not (len(counts) > 1 and present[0] == low):
        return []
    far = np.abs(means - means[0]) > tolerance * means[0]
    far[0] = False
    off = present[far].tolist()
    if not off:
        return []
    return [f"ranks {', '.join(map(str, off))} logged rates more than "
            f"{tolerance:.0%} away from rank {low}'s, whose records the rule uses"]


def read_warnings(stats: textio.ReadStats) -> list[str]:
    out = []
    if stats.invalid_utf8:
        out.append("bytes that are not UTF-8 were replaced")
    if stats.cut_last_line:
        out.append("the file ends in the middle of a line")
    if stats.nul_bytes:
        more = ", ..." if len(stats.nul_lines) >= textio.NUL_LINES_KEPT else ""
        out.append(f"{stats.nul_bytes} NUL bytes were left out of the text (line "
                   f"{', '.join(map(str, stats.nul_lines))}{more}): the records around them are read without them")
    if stats.long_count:
        out.append(f"{stats.long_count} lines of {textio.LINE_BYTES >> 20} MiB or more were left out unread "
                   f"(line {lines(stats.long_lines, stats.long_count)})")
    if stats.wild_rank_count:
        shown = lines(stats.wild_rank_lines, stats.wild_rank_count)
        out.append(f"{stats.wild_rank_count} lines were left out: their rank tag names a rank above "
                   f"{textio.MAX_RANK}, no rank of a real run (line {shown})")
    if stats.fault:
        out.append(stats.fault)
    return out


def lines(kept: list[int], count: int) -> str:
    return ", ".join(map(str, kept)) + (", ..." if count > len(kept) else "")
