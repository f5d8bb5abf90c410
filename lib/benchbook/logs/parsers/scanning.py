"""The one scanning loop every format shares: regex rules over a chunk, events in text order.

Every pattern begins with a literal, so that the regex engine skips in C to the next candidate
line: that keeps parsing fast. A `BulkRule` reads the lines that make up most of a log as numpy
columns, from one regex split; the other rules read the text between them.

The events are the formats' whole vocabulary: one per log line that means something, in file
order. Formats turn text into events and know nothing of runs; `assemble` folds events into runs
and knows nothing of formats. An event is a plain tuple `(line, rank, kind, data)` because a log of
hundreds of megabytes yields millions of them."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from operator import itemgetter
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from ...core.config import Metric

if TYPE_CHECKING:  # (listing the formats reads no log)
    from ..textio import Chunk


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
# A keyed record of a log of keys, not steps (MLLOG): its data as the format reads it. Its run keeps them
# in order (`RunDraft.keyed`) and the format's `conclude` folds them; they open no run of their own.
KEYED = "keyed"
REFUSE = "refuse"  # a line that makes the file unreadable in its format; data: why (the file is a problem)
NOTE = "note"  # a line whose values are left out (a step past 18 digits); data: what, said among its run's warnings

# The quality metrics of an EVAL's data that the formats of image classification logs read (the key, how a
# report names it): declared with each such format (LogFormat.quality), so that an analysis keeps their values
# whichever models are loaded; a model names them as its quality (ModelSpec.quality).
TOP1 = Metric("top1", "top-1 accuracy", "%", final=True)
TOP5 = Metric("top5", "top-5 accuracy", "%")
IMAGE_CLASSIFICATION = (TOP1, TOP5)

ITER_FIELDS = ("epoch", "iteration", "timestamp", "throughput", "loss", "lr", "steps")
# Per-record values some formats log beside the rate (the LLM logs' step time, TFLOP/s, tokens/s, MFU): a record
# column only in the files whose records carry one (a STEP's `extra`), NaN in that file's other records; the
# measures of the rule's window over a logged field (`core.measures.Measure.field`) read them.
# Megatron's counters of an interval's skipped and NaN iterations, and 1 where its grad norm was NaN, are logged
# fields too: the rules' `verdict` reads them (dgxc-benchmarking's INVALID_GRAD_NORM).
LOGGED_FIELDS = ("step_time", "tflops_per_gpu", "tokens_per_gpu", "mfu", "skipped_iterations", "nan_iterations",
                 "nan_grad_norm")


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


class Refused(Exception):
    """A line that makes a file unreadable in its format (a REFUSE event): `analysis` makes it a
    LogError naming the file and this line."""

    def __init__(self, line: int, reason: str):
        self.line, self.reason = line, reason
        super().__init__(f"line {line}: {reason}")


def step(epoch=None, iteration=None, timestamp=None, throughput=None, loss=None, lr=None, steps=None,
         extra: dict | None = None) -> tuple:
    """The payload of a STEP event, by field name: -1 for a missing epoch or iteration, NaN for
    other missing numbers; the timestamp is a number or a `YYYY-MM-DD HH:MM:SS[.f|,f]` string. `extra`:
    LOGGED_FIELDS values of the record (an eighth element, only where given)."""
    def num(v):
        return NAN if v is None else v

    out = (-1 if epoch is None else epoch, -1 if iteration is None else iteration, timestamp, num(throughput),
           num(loss), num(lr), num(steps))
    return out + (extra,) if extra else out


def seconds(stamp) -> float:
    """A logged timestamp (a number, or `YYYY-MM-DD HH:MM:SS[.ffffff|,fff]`, naive times read as
    UTC) as seconds since the epoch; NaN where missing or unreadable."""
    return float(seconds_array([stamp])[0])


def seconds_array(values) -> np.ndarray:
    """`seconds` over a column, its date-times read together by numpy (datetime64[us])."""
    try:
        return np.array(values, dtype=float)  # None is NaN
    except (ValueError, TypeError):
        pass
    try:
        us = np.array(["NaT" if v is None else v.replace(",", ".") for v in values], dtype="datetime64[us]")
    except (ValueError, AttributeError):  # a value that is neither a number nor a date (2021-02-30)
        return np.array([seconds(v) for v in values] if len(values) > 1 else [math.nan])
    return np.where(np.isnat(us), np.nan, us.astype(np.int64) / 1e6)


Rule = tuple[re.Pattern, Callable[[re.Match], "tuple[str, object] | None"]]  # a handler: (kind, data) or None

# Pieces of bulk patterns: an int of 18 digits at most (no epoch or iteration has more), a number
# (NaN where float() reads none: `1.2.3`), a `YYYY-MM-DD HH:MM:SS[.,]f` date-time (seconds, UTC).
INT = "0*[0-9]{1,18}(?![0-9])"
NUM = "[0-9.eE+-]+"
DATE_TIME = "[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}"
STAMP = DATE_TIME + "(?:[.,][0-9]+)?"

_INT_FIELDS = ("epoch", "iteration")
_INT_MAX = 2**63 - 1


@dataclass(frozen=True)
class BulkRule:
    """The lines that make up most of a log, read as columns, not an event each. Either a record a
    line (`pattern`: at a line's start, a literal first, a fixed-width stamp before it a lookbehind
    of `lead` characters; named groups typed by `types`, "int" (INT), "float" or "stamp"; `convert`
    makes them record fields) or a record over `name: number` lines (`values`: name and number groups
    in one; `opens` names the value opening a record, `fields` maps names to fields, others: losses)."""

    pattern: str = ""
    types: dict = field(default_factory=dict)
    lead: int = 0
    convert: Callable | None = None
    values: re.Pattern | None = None
    opens: str = ""
    fields: tuple[tuple[str, str], ...] = ()


def _split(pattern: re.Pattern, text: str) -> tuple[np.ndarray, list[list]]:
    """(starts, columns of the inner groups) of the matches of a pattern of one outer group, from
    one `pattern.split`: the lengths of the text between matches give their starts."""
    parts = pattern.split(text)
    step = pattern.groups + 1
    gaps = np.fromiter(map(len, parts[0 : len(parts) - 1 : step]), dtype=np.int64)
    sizes = np.fromiter(map(len, parts[1::step]), dtype=np.int64)
    return np.cumsum(gaps + sizes) - sizes, [parts[i::step] for i in range(2, step)]


def _floats(tokens: list[str | None]) -> np.ndarray:
    """The tokens as float() reads each; NaN where missing (None) or no number."""
    try:
        return np.array(tokens, dtype=float)
    except ValueError:
        return np.array([number(t or "") for t in tokens], dtype=float)


_CONVERT = {"int": lambda tokens: np.array([t or -1 for t in tokens], dtype=np.int64), "float": _floats,
            "stamp": seconds_array}


def _columns(chunk: Chunk, pos: np.ndarray, line: np.ndarray, fields: dict) -> dict:
    """Record columns: pos, line and end_line (the file's), rank, then ITER_FIELDS (-1/NaN where not logged)."""
    cols = {"pos": pos, "line": chunk.first_line + line, "rank": chunk.ranks[line], "end_line": chunk.first_line + line}
    for name in ITER_FIELDS:
        cols[name] = fields[name] if name in fields else np.full(len(pos), -1 if name in _INT_FIELDS else np.nan)
    return cols


def _records(chunk: Chunk, rule: BulkRule) -> tuple[dict, list[tuple[int, int]]]:
    """The columns of the records of a rule of a record a line, and the spans of text between
    them (a record line's newline to the next record) for the other rules."""
    regex = re.compile(f"({rule.pattern})")  # one outer group, for _split (re keeps it compiled)
    begin, groups = _split(regex, chunk.text)
    fields = {name: _CONVERT[kind](groups[regex.groupindex[name] - 2]) for name, kind in rule.types.items()}
    begin -= rule.lead
    line = np.searchsorted(chunk.ends, begin)
    keep = begin == np.concatenate(([0], chunk.ends + 1))[line]  # a record begins its line
    if not keep.all():  # (copied only then: a 400 MB log's columns are large)
        begin, line, fields = begin[keep], line[keep], {k: v[keep] for k, v in fields.items()}
    cols = _columns(chunk, begin, line, rule.convert(fields) if rule.convert else fields)
    lo, hi = np.concatenate(([0], chunk.ends[line])), np.append(begin, len(chunk.text))
    spans = np.flatnonzero(hi - lo > 1)
    return cols, list(zip(lo[spans].tolist(), hi[spans].tolist(), strict=True))


def _blocks(chunk: Chunk, rule: BulkRule, run_starts: np.ndarray) -> tuple:
    """(columns of the records of a rule of `name: number` lines, FIELD hits, LOSSES columns). A
    value goes to the last record its rank opened before it in its run; with none in the chunk, it
    is a FIELD hit (for a record of an earlier chunk)."""
    pos, (logged, numbers) = _split(rule.values, chunk.text)
    taken = [name for name, _ in rule.fields]  # coded first: the others (losses) come after
    names = taken + [name for name in dict.fromkeys(logged) if name not in taken]
    code = np.fromiter(map({name: i for i, name in enumerate(names)}.__getitem__, logged), np.int64, len(pos))
    value, line = _floats(numbers), np.searchsorted(chunk.ends, pos)
    other = code >= len(taken)
    losses = {"line": chunk.first_line + line[other], "value": value[other], "names": names[len(taken):],
              "component": (code[other] - len(taken)).astype(np.int32)} if other.any() else None
    pos, code, value, line = pos[~other], code[~other], value[~other], line[~other]
    key = np.searchsorted(run_starts, pos, side="right") * 2**32 + chunk.ranks[line]  # a value's run and rank
    opener = np.full(len(pos), -1)  # the value that opened each value's record
    for k in np.unique(key).tolist():
        own = np.flatnonzero(key == k)
        opened = own[code[own] == taken.index(rule.opens)]
        before = np.searchsorted(opened, own, side="right") - 1
        opener[own[before >= 0]] = opened[before[before >= 0]]
    rec = np.flatnonzero(code == taken.index(rule.opens))
    record = np.searchsorted(rec, opener)
    fields, leftover, last = {}, [], line[rec].copy()  # last: the last line of each record's block
    for i, (_, name) in enumerate(rule.fields):
        at = np.flatnonzero(code == i)
        ok = at[opener[at] >= 0]
        column = fields[name] = np.full(len(rec), -1 if name in _INT_FIELDS else np.nan)
        column[record[ok]] = value[ok]
        np.maximum.at(last, record[ok], line[ok])
        leftover += [(int(pos[j]), FIELD, {name: value[j].item()}) for j in at[opener[at] < 0].tolist()]
    return {**_columns(chunk, pos[rec], line[rec], fields), "end_line": chunk.first_line + last}, leftover, losses


def _steps(chunk: Chunk, cols: dict, steps: list) -> dict:
    """The record columns and the records of STEP hits (a handler's, in ITER_FIELDS order), in text order."""
    pos = np.array([h[0] for h in steps], dtype=np.int64)
    values = dict(zip(ITER_FIELDS, zip(*(h[2][:7] for h in steps), strict=True), strict=True))
    fields = {name: np.array(column, dtype=np.int64 if name in _INT_FIELDS else float)
              for name, column in values.items() if name != "timestamp"}
    fields["timestamp"] = seconds_array(values["timestamp"])
    more = _columns(chunk, pos, np.searchsorted(chunk.ends, pos), fields)
    extras = [h[2][7] if len(h[2]) > 7 else {} for h in steps]
    for name in (n for n in LOGGED_FIELDS if any(n in e for e in extras) or n in cols):
        more[name] = np.array([e.get(name, NAN) for e in extras], dtype=float)
        cols.setdefault(name, np.full(len(cols["pos"]), NAN))
    order = np.argsort(np.concatenate((cols["pos"], pos)), kind="stable")
    return {name: np.concatenate((cols[name], more[name]))[order] for name in cols}


def _hits(text: str, rules: Iterable[Rule], spans: list[tuple[int, int]]) -> list[tuple[int, str, object]]:
    """(position, kind, data) of the rules' matches within the spans, in text order."""
    hits = []
    for pattern, handler in rules:
        skip = 1 if pattern.pattern.startswith("\\n") else 0  # a leading newline belongs to the line before
        for lo, hi in spans:
            for m in pattern.finditer(text, lo, hi):
                out = handler(m)
                if out is not None:
                    hits.append((m.start() + skip, *out))
    return sorted(hits, key=itemgetter(0))


def _narrow(hit: tuple) -> tuple:
    """A STEP hit whose epoch or step numpy's int64 cannot hold (20 digits) as a NOTE: its record
    left out, and said."""
    if hit[1] != STEP or (-_INT_MAX <= hit[2][0] <= _INT_MAX and -_INT_MAX <= hit[2][1] <= _INT_MAX):
        return hit
    return hit[0], NOTE, "a step or epoch number past 18 digits: the record is left out"


def scan(chunk: Chunk, rules: Iterable[Rule], bulk: BulkRule | None = None) -> list[Event]:
    """The events of every rule in the chunk, in text order: the records as BULK events, one for
    each stretch of records between two other events."""
    text, none = chunk.text, np.zeros(0, dtype=np.int64)
    cols, spans = _columns(chunk, none, none, {}), [(0, len(text))]  # (no records yet)
    if bulk and not bulk.values:
        cols, spans = _records(chunk, bulk)
    hits = _hits(text, rules, spans)
    if bulk and bulk.values:
        cols, leftover, losses = _blocks(chunk, bulk, np.array([h[0] for h in hits if h[1] == RUN_START]))
        hits = sorted(hits + leftover, key=itemgetter(0)) + ([(len(text), LOSSES, losses)] if losses else [])
    hits = [_narrow(h) for h in hits]
    steps = [h for h in hits if h[1] == STEP]
    if steps:  # records read one at a time join the columns
        cols = _steps(chunk, cols, steps)
        hits = [h for h in hits if h[1] != STEP]
    pos = np.array([h[0] for h in hits], dtype=np.int64)
    cuts = np.searchsorted(cols.pop("pos"), pos).tolist()
    line = np.searchsorted(chunk.ends, pos)
    lines, ranks = (chunk.first_line + line).tolist(), chunk.ranks[line].tolist()
    events, done = [], 0
    for i, cut in enumerate([*cuts, len(cols["line"])]):
        if cut > done:  # the records before the next hit (or the end of the chunk)
            events.append((int(cols["line"][done]), None, BULK, Bulk(cols, done, cut)))
            done = cut
        if i < len(hits):
            events.append((lines[i], None if ranks[i] < 0 else ranks[i], *hits[i][1:]))
    return events


_FAILURES = re.compile(r"(?:Traceback \(most recent call last\)|ResourceExhaustedError|OOM when allocating|"
                       r"CUDA out of memory|CUDA_ERROR_OUT_OF_MEMORY|out of memory|Segmentation fault|"
                       r"mpirun noticed that process rank \d+[^\n]*|Job finished with status: `FAIL[^\n]*|Killed\n)")
_CAUSES = {"Traceback": "crash: Python traceback", "Segmentation": "crash: segmentation fault", "Killed": "killed"}


def _failure(m: re.Match) -> tuple[str, str]:
    text = m.group(0)
    if "emory" in text or "OOM" in text or "ResourceExhausted" in text:
        return FAIL, "out of memory"
    return FAIL, _CAUSES.get(text.split()[0], "crash: " + text.strip())  # by its first word


def failures(chunk: Chunk) -> list[tuple[int, str]]:
    """(line, cause) of every failure sign in a chunk. Run only over runs that did not finish:
    scanning every log for them would cost more than parsing it."""
    return [(e[0], e[3]) for e in scan(chunk, [(_FAILURES, _failure)])]


def number(text: str) -> float | None:
    """A logged value as float() reads its first word, a trailing comma or semicolon left out
    (`12.5 images/s`, `0.5,`); None if it is no number."""
    try:
        return float(text.split()[0].rstrip(",;"))
    except (IndexError, ValueError):
        return None
