"""The one scanning loop every format shares: regex rules over a chunk, events in line order.

Each rule is a compiled pattern plus a handler from its match to `(kind, data)` (or None to
ignore the match). Patterns must begin with a literal so that the regex engine skips ahead in C
instead of trying every position; that, not cleverness in Python, is what keeps parsing fast.

The lines that make up most of a log (one per training step) are read by a `BulkRule` instead,
as columns: one regex split finds them all (`layout.records`), numpy converts their fields and
finds their line numbers, and they travel as BULK events, not one event a record. The rules then
only read the text between those lines.
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
    - one record over several lines (`blocks`, layouts of one line each): a line of the first
      layout opens a new record of its rank, the fields of the other lines go to the last record
      of their rank (as FIELD events do).
    """

    layout: Layout | None = None
    convert: Callable | None = None
    line_start: bool = False
    blocks: tuple[Layout, ...] = ()


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


def _blocks(chunk: TextIndex, first_line: int, rule: BulkRule, run_starts: np.ndarray) -> tuple[dict | None, list]:
    """Columns of the records of a bulk rule of several lines, and FIELD hits for the values
    whose record is not among them (it is in an earlier chunk, or a run may start in between:
    `run_starts` are the positions of the chunk's RUN_START hits, the only events that can)."""
    found = []
    for kind, lay in enumerate(rule.blocks):
        at, fields = _layout.records(lay, chunk.text)
        found.append((at, np.full(len(at), kind), fields))
    starts = np.concatenate([f[0] for f in found])
    if len(starts) == 0:
        return None, []
    kinds = np.concatenate([f[1] for f in found])
    order = np.argsort(starts, kind="stable")
    starts, kinds = starts[order], kinds[order]
    line, ranks, _ = chunk.lines(starts)
    rec = np.flatnonzero(kinds == 0)  # matches that open a record, in order
    # The record of each match: the last record of its rank at or before it.
    target = np.full(len(starts), -1, dtype=np.int64)
    for r in np.unique(ranks).tolist():
        own = np.flatnonzero(ranks == r)
        own_rec = np.flatnonzero(ranks[rec] == r)  # indices into rec
        before = np.searchsorted(rec[own_rec], own, side="right") - 1
        target[own] = np.where(before >= 0, own_rec[np.maximum(before, 0)], -1)
    # A value goes to its record only where no run may start in between.
    segment = np.searchsorted(run_starts, starts, side="right")
    fields = dict(found[0][2])
    leftover: list[tuple[int, str, object]] = []
    where = np.empty(len(starts), dtype=np.int64)
    where[order] = np.arange(len(starts))  # position in file order of each match, by layout
    offset = len(found[0][0])
    ends = line[rec].copy()  # the last line of each record's block: where its run reaches at least
    for kind in range(1, len(found)):
        size = len(found[kind][0])
        idx = where[offset : offset + size]  # this layout's matches, in file order
        offset += size
        to = target[idx]
        same = (to >= 0) & (segment[idx] == segment[rec[np.maximum(to, 0)]])
        np.maximum.at(ends, to[same], line[idx[same]])
        for name, values in found[kind][2].items():
            integer = values.dtype.kind == "i"
            column = fields.get(name)
            if column is None:
                column = fields[name] = np.full(len(rec), -1 if integer else np.nan, dtype=values.dtype)
            column[to[same]] = values[same]
            for i in np.flatnonzero(~same).tolist():
                leftover.append((int(starts[idx[i]]), ev.FIELD, {name: values[i].item()}))
    if len(rec) == 0:
        return None, leftover
    cols = _columns(starts[rec], first_line + line[rec], ranks[rec], fields)
    cols["end_line"] = first_line + ends
    return cols, leftover


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
    elif bulk.blocks:
        hits = _hits(text, rules)
        run_starts = np.array([h[0] for h in hits if h[1] == ev.RUN_START], dtype=np.int64)
        cols, leftover = _blocks(index, first_line, bulk, run_starts)
        if leftover:
            hits = sorted(hits + leftover, key=itemgetter(0))
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


def named_values(pattern: re.Pattern, text: str, first_line: int) -> dict | None:
    """Columns of every `name: value` a pattern of one outer group and two inner ones (name,
    number) finds in a chunk: line, value, and `component`, codes into `names` (a log
    repeats a few names millions of times: one string each would cost more than the numbers).
    None where there is none."""
    starts, _, (names, values) = _layout.split(pattern, text)
    if not len(starts):
        return None
    labels, codes = np.unique(np.array(names), return_inverse=True)
    return {"line": first_line + TextIndex(text).line_of(starts), "value": _layout.floats(values),
            "component": codes.astype(np.int32), "names": labels.tolist()}


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
