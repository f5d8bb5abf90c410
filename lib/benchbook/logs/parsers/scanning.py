"""The one scanning loop every format shares: regex rules over a chunk, events in line order.

Each rule is a compiled pattern plus a handler from its match to `(kind, data)` (or None to
ignore the match). Patterns must begin with a literal so that the regex engine skips ahead in C
instead of trying every position; that, not cleverness in Python, is what keeps parsing fast.

The lines that make up most of a log (one per training step) are read by a `BulkRule` instead,
as columns: one regex split finds them all (`layout.records`), numpy converts their fields and
finds their line numbers, and they travel as BULK events, not one event a record. The rules then
only read the text between those lines; the records a rule's handler returns one at a time (STEP)
join the same columns, in text order, so that every record reaches `assemble` as part of a BULK.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from operator import itemgetter

import numpy as np

from .. import events as ev
from ..assemble import seconds_array
from ..events import Event
from ..ranks import TextIndex
from . import layout as _layout
from .layout import Int, Layout, Num, Seek, Stamp  # noqa: F401  (used by the formats)

Handler = Callable[[re.Match], "tuple[str, object] | None"]
Rule = tuple[re.Pattern, Handler]


_INT_FIELDS = ("epoch", "iteration")


@dataclass(frozen=True)
class BulkRule:
    """The per-step lines that make up most of a log, read as columns instead of one event each.

    Two shapes:
    - one record per line: a `layout` (see `layout.Layout`) describes it; its fields come as
      numpy columns (`layout.records`) and `convert`, if given, turns them into STEP fields. With
      `line_start`, a record must begin its line, after any rank tag. The other rules then only
      read the text between records: a record's line belongs to the bulk rule.
    - one record over several `name: number` lines (`values`: a pattern of one outer group and
      two inner ones, the name and the number, read by one split): the line named `opens` opens a
      new record of its rank, and each value named in `fields` (logged name, record field) goes
      to the last record of its rank (as FIELD events do); the other values are the chunk's
      LOSSES (loss components).
    """

    layout: Layout | None = None
    convert: Callable | None = None
    line_start: bool = False
    values: re.Pattern | None = None
    opens: str = ""
    fields: tuple[tuple[str, str], ...] = ()


def _records(chunk: TextIndex, first_line: int, rule: BulkRule) -> tuple[dict | None, list[tuple[int, int]]]:
    """Columns of the records of a bulk rule of one record per line (or None), and the spans of
    text left to the other rules."""
    text = chunk.text
    whole = [(0, len(text))]
    begin, fields = _layout.records(rule.layout, text)
    if len(begin) == 0:
        return None, whole
    if rule.convert is not None:
        fields = rule.convert(fields)
    line, ranks, content = chunk.lines(begin)
    keep = (begin == content) if rule.line_start else (begin >= content)
    if not keep.all():
        idx = np.flatnonzero(keep)
        if len(idx) == 0:
            return None, whole
        begin, line, ranks = begin[idx], line[idx], ranks[idx]
        fields = {k: v[idx] if np.ndim(v) else v for k, v in fields.items()}
    cols = _columns(begin, first_line + line, ranks, fields)
    # The text between records, for the other rules: from the end of one record's line to the
    # start of the next record's line (its newline included, for rules that begin with one).
    newlines = chunk.newlines
    # A layout reads within its line (its literals hold no newline): a record's line is where it stops.
    ends = np.where(line < len(newlines), newlines[np.minimum(line, len(newlines) - 1)], len(text))
    lo = np.concatenate(([0], ends))
    hi = np.concatenate((chunk.starts(line), [len(text)]))
    open_ = np.flatnonzero(hi - lo > 1)
    return cols, list(zip(lo[open_].tolist(), hi[open_].tolist(), strict=True))


def _columns(pos: np.ndarray, lines: np.ndarray, ranks: np.ndarray, fields: dict) -> dict:
    n = len(pos)
    cols = {"pos": pos, "line": lines, "rank": ranks, "end_line": lines}
    for name in ev.ITER_FIELDS:
        value = fields.get(name)
        if value is None:
            value = np.full(n, -1 if name in _INT_FIELDS else np.nan)
        elif np.ndim(value) == 0:
            value = np.full(n, value, dtype=np.int64 if name in _INT_FIELDS else float)
        cols[name] = value
    return cols


def _blocks(chunk: TextIndex, first_line: int, rule: BulkRule, run_starts: np.ndarray) -> tuple:
    """(columns of the records of a bulk rule of `name: number` lines, FIELD hits for the values
    whose record is not among them, LOSSES columns). A value whose record is in an earlier chunk,
    or past a RUN_START hit (`run_starts`: the only events that can begin a run in between), is a
    FIELD hit."""
    pos, _, (logged, numbers) = _layout.split(rule.values, chunk.text)
    if not len(pos):
        return None, [], None
    names = list(dict.fromkeys(logged))  # a few names, repeated: each value gets its name's code
    code = np.fromiter(map({name: i for i, name in enumerate(names)}.__getitem__, logged), np.int64, len(logged))
    value, line = _layout.floats(numbers), chunk.line_of(pos)
    losses = _other_values(names, code, value, first_line + line, dict(rule.fields))
    taken = np.flatnonzero(np.isin(code, [names.index(name) for name, _ in rule.fields if name in names]))
    pos, code, value, line = pos[taken], code[taken], value[taken], line[taken]
    ranks, _ = chunk.tags(line)  # of the values records take alone: a tag is matched a line
    rec = np.flatnonzero(code == names.index(rule.opens)) if rule.opens in names else np.zeros(0, np.int64)
    target = _last_record(ranks, rec)
    segment = np.searchsorted(run_starts, pos, side="right")
    found = np.flatnonzero(target >= 0)
    same = np.zeros(len(pos), dtype=bool)  # whether a value's record is in this chunk and in its run
    same[found] = segment[found] == segment[rec[target[found]]]
    fields, leftover, ends = {}, [], line[rec].copy()  # ends: the last line of each record's block
    for name, field in rule.fields:
        at = np.flatnonzero(code == names.index(name)) if name in names else np.zeros(0, np.int64)
        ok, to = at[same[at]], target[at[same[at]]]
        integer = field in _INT_FIELDS
        column = fields[field] = np.full(len(rec), -1 if integer else np.nan, dtype=np.int64 if integer else float)
        column[to] = value[ok]
        np.maximum.at(ends, to, line[ok])
        leftover += [(int(pos[i]), ev.FIELD, {field: value[i].item()}) for i in at[~same[at]].tolist()]
    if len(rec) == 0:
        return None, leftover, losses
    cols = _columns(pos[rec], first_line + line[rec], ranks[rec], fields)
    cols["end_line"] = first_line + ends
    return cols, leftover, losses


def _last_record(ranks: np.ndarray, rec: np.ndarray) -> np.ndarray:
    """For each value (its rank in `ranks`), the index into `rec` (the values that open records)
    of the last record of its rank at or before it; -1 where there is none."""
    target = np.full(len(ranks), -1, dtype=np.int64)
    for r in np.unique(ranks).tolist():
        own = np.flatnonzero(ranks == r)
        own_rec = np.flatnonzero(ranks[rec] == r)
        before = np.searchsorted(rec[own_rec], own, side="right") - 1
        target[own] = np.where(before >= 0, own_rec[np.maximum(before, 0)], -1)
    return target


def _other_values(names: list[str], code: np.ndarray, value: np.ndarray, line: np.ndarray, fields: dict) -> dict | None:
    """The LOSSES columns of the values no record field takes: line, value, component (codes
    into `names`, those names alone)."""
    kept = [name for name in names if name not in fields]
    recode = np.array([kept.index(name) if name in kept else -1 for name in names], dtype=np.int32)[code]
    other = np.flatnonzero(recode >= 0)
    if not len(other):
        return None
    return {"line": line[other], "value": value[other], "component": recode[other], "names": kept}


_FAILURES = re.compile(
    r"(?:Traceback \(most recent call last\)|ResourceExhaustedError|OOM when allocating|"
    r"CUDA out of memory|CUDA_ERROR_OUT_OF_MEMORY|out of memory|Segmentation fault|"
    r"mpirun noticed that process rank \d+[^\n]*|Job finished with status: `FAIL[^\n]*|Killed\n)"
)


def _failure(m: re.Match) -> tuple[str, str]:
    text = m.group(0)
    if "emory" in text or "OOM" in text or "ResourceExhausted" in text:
        return ev.FAIL, "out of memory"
    if text.startswith("Traceback"):
        return ev.FAIL, "crash: Python traceback"
    if text.startswith("Segmentation"):
        return ev.FAIL, "crash: segmentation fault"
    if text.startswith("Killed"):
        return ev.FAIL, "killed"
    return ev.FAIL, "crash: " + text.strip()


FAILURE_RULE: Rule = (_FAILURES, _failure)


def failures(text: str, first_line: int) -> list[tuple[int, str]]:
    """(line, cause) of every failure sign in a chunk. Run only over runs that did not finish:
    scanning every log for them would cost more than parsing it."""
    return [(e[0], e[3]) for e in scan(text, first_line, [FAILURE_RULE])]


def _hits(text: str, rules: Iterable[Rule],
          spans: list[tuple[int, int]] | None = None) -> list[tuple[int, str, object]]:
    """(position, kind, data) of every rule's matches within the spans (all of the text if None)."""
    spans = spans if spans is not None else [(0, len(text))]
    hits: list[tuple[int, str, object]] = []
    for rule in rules:
        pattern, handler = rule[0], rule[1]
        skip = 1 if pattern.pattern.startswith("\\n") else 0  # a leading newline belongs to the line before
        for lo, hi in spans:
            for m in pattern.finditer(text, lo, hi):
                out = handler(m)
                if out is not None:
                    hits.append((m.start() + skip, out[0], out[1]))
    hits.sort(key=itemgetter(0))
    return hits


def scan(text: str, first_line: int, rules: Iterable[Rule], bulk: BulkRule | None = None) -> list[Event]:
    """Apply every rule to the chunk and return the events sorted by position.

    Records of the bulk rule come as BULK events, one per stretch between other events.
    """
    index = TextIndex(text)
    cols = None
    if bulk is None:
        hits = _hits(text, rules)
    elif bulk.values is not None:
        hits = _hits(text, rules)
        run_starts = np.array([h[0] for h in hits if h[1] == ev.RUN_START], dtype=np.int64)
        cols, leftover, losses = _blocks(index, first_line, bulk, run_starts)
        if leftover:
            hits = sorted(hits + leftover, key=itemgetter(0))
        if losses is not None:  # the chunk's, for the whole file: last
            hits.append((len(text), ev.LOSSES, losses))
    else:
        cols, spans = _records(index, first_line, bulk)
        hits = _hits(text, rules, spans)
    steps = [h for h in hits if h[1] == ev.STEP]
    if steps:  # records of rules that read one at a time join the bulk rule's, in text order
        hits = [h for h in hits if h[1] != ev.STEP]
        cols = _merge(cols, _step_columns(index, first_line, steps))
    hit_pos = np.array([h[0] for h in hits], dtype=np.int64)
    line, ranks, _ = index.lines(hit_pos)
    lines = (first_line + line).tolist()
    ranks = [None if r < 0 else r for r in ranks.tolist()]
    records = 0 if cols is None else len(cols["line"])
    cuts = np.searchsorted(cols.pop("pos"), hit_pos).tolist() if records else [0] * len(hits)
    events: list[Event] = []
    done = 0
    for i, (_, kind, data) in enumerate(hits):
        if cuts[i] > done:
            events.append(_bulk_event(cols, done, cuts[i]))
            done = cuts[i]
        events.append((lines[i], ranks[i], kind, data))
    if done < records:
        events.append(_bulk_event(cols, done, records))
    return events


def _step_columns(index: TextIndex, first_line: int, steps: list) -> dict:
    """Columns of the records of STEP hits (position, kind, payload in ITER_FIELDS order)."""
    pos = np.array([h[0] for h in steps], dtype=np.int64)
    values = dict(zip(ev.ITER_FIELDS, zip(*(h[2] for h in steps), strict=True), strict=True))
    fields = {name: np.array(column, dtype=np.int64 if name in _INT_FIELDS else float)
              for name, column in values.items() if name != "timestamp"}
    fields["timestamp"] = seconds_array(values["timestamp"])
    line, ranks, _ = index.lines(pos)
    return _columns(pos, first_line + line, ranks, fields)


def _merge(cols: dict | None, more: dict) -> dict:
    """Two sets of record columns as one, in text order."""
    if cols is None:
        return more
    joined = {name: np.concatenate((cols[name], more[name])) for name in cols}
    order = np.argsort(joined["pos"], kind="stable")
    return {name: column[order] for name, column in joined.items()}


def _bulk_event(cols: dict, start: int, stop: int) -> Event:
    return (int(cols["line"][start]), None, ev.BULK, ev.Bulk(cols, start, stop))


def number(text: str) -> float | None:
    """A float from a logged value, tolerating a trailing unit or bracket; None if not a number."""
    try:
        return float(text)
    except ValueError:
        head = text.split()[0].rstrip(",;") if text.strip() else ""
        try:
            return float(head)
        except ValueError:
            return None
