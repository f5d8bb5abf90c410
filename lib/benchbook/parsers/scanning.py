"""The one scanning loop every format shares: regex rules over a chunk, events in line order.

Each rule is a compiled pattern plus a handler from its match to `(kind, data)` (or None to
ignore the match). Patterns must begin with a literal so that the regex engine skips ahead in C
instead of trying every position; that, not cleverness in Python, is what keeps parsing fast.

The lines that make up most of a log (one per training step) are read by a `BulkRule` instead,
as columns: numpy finds them (by a literal) and reads their fields (`layout.Layout`), line
numbers and rank tags for all of them at once, and they travel as BULK events. No Python object
is made per record. The rules then only read the text between those lines.
"""

from __future__ import annotations

import bisect
import functools
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from operator import itemgetter
from typing import NamedTuple

import numpy as np

from .. import events as ev
from ..assemble import seconds_array as stamps  # noqa: F401  (used by the formats)
from ..events import Event
from ..ranks import has_tags, rank_at, text_index
from . import layout as _layout
from .layout import Int, Layout, Num, Seek, Stamp  # noqa: F401  (used by the formats)

Handler = Callable[[re.Match], "tuple[str, object] | None"]
Rule = tuple[re.Pattern, Handler]


class LineRule(NamedTuple):
    """A rule for the lines that begin with `prefix` then one of `heads`: numpy finds those lines
    all at once, where a regex search stops at every line that shares the prefix (a logger's
    name, say), and `pattern` is matched at their start only. It behaves as the plain rule
    `(pattern, handler)`, whose matches it finds faster.

    `pattern` begins with the literal `prefix` and matches only where one of `heads` (each told
    by its first 8 characters) follows it. Lines begin after their rank tag; where the prefix
    also stands elsewhere in a chunk, the pattern is searched for in all of it. A pattern that
    begins with a newline (and no prefix) is matched at the newline before each line whose very
    start (before any rank tag) is one of `heads`.
    """

    pattern: re.Pattern
    handler: Handler
    heads: tuple[str, ...]
    prefix: str = ""
_INT_FIELDS = ("epoch", "iteration")


@dataclass(frozen=True)
class BulkRule:
    """The per-step lines that make up most of a log, read as columns instead of one event each.

    Two shapes:
    - one record per line: `layout` (see `layout.Layout`) or `pattern` describes a record. With
      a layout, numpy reads its fields from the text and `convert`, if given, turns them into
      STEP fields. With a pattern, its groups, as columns of strings (None where a group did not
      take part), feed `convert`, which returns STEP fields (numpy arrays, or scalars for
      constants). With `line_start`, a record must begin its line, after any rank tag. The other
      rules then only read the text between records: a record's line belongs to the bulk rule.
      `lead` is how many characters of the record stand before the layout's first literal (a
      timestamp of fixed width, say), so that the lines can be found by a literal.
    - one record over several lines (`blocks`, layouts of one line each): a line of the first
      layout opens a new record of its rank, the fields of the other lines go to the last record
      of their rank (as FIELD events do).
    """

    pattern: re.Pattern | None = None
    convert: Callable | None = None
    lead: int = 0
    line_start: bool = False
    layout: Layout | None = None
    blocks: tuple[Layout, ...] = ()

    @property
    def splitter(self) -> re.Pattern:
        """The pattern as one outer group, to the end of its line."""
        return _compiled(f"((?:{self.pattern.pattern})[^\n]*)", self.pattern.flags)


@functools.lru_cache(maxsize=64)
def _compiled(pattern: str, flags: int = 0) -> re.Pattern:
    return re.compile(pattern, flags)


class _Chunk:
    """A chunk, its first line number and its index (see ranks.TextIndex), which reading the
    chunk made already."""

    def __init__(self, text: str, first_line: int) -> None:
        self.text, self.first_line = text, first_line
        self.index = text_index(text)
        self.points, self.newlines = self.index.points, self.index.newlines
        self._opening: dict[str, np.ndarray | None] = {}

    def lines(self, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(0-based line in the chunk, rank, content start) of the lines holding text positions."""
        line = self.index.line_of(pos)
        _, rank, content = self.index.lines()
        return line, rank[line], content[line]

    def opening(self, prefix: str) -> np.ndarray | None:
        """Content starts of the lines whose content begins with `prefix`, when the prefix
        stands nowhere else in the chunk (None where it does)."""
        if prefix not in self._opening:
            _, _, content = self.index.lines()
            at = content[_layout.equals(self.points, content, prefix[:8])]
            if len(prefix) > 8:
                at = at[_layout.equals(self.points, at + 8, prefix[8:])]
            self._opening[prefix] = at if len(at) == self.text.count(prefix) else None
        return self._opening[prefix]


def _split(pattern: re.Pattern, text: str) -> tuple[np.ndarray, np.ndarray, list[list]]:
    """(starts, ends, group columns) of every match of an outer-grouped pattern, from one
    `split`: the lengths of the text between matches give their positions."""
    parts = pattern.split(text)
    step = pattern.groups + 1
    n = (len(parts) - 1) // step
    if n == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), []
    gaps = np.fromiter(map(len, parts[0 : len(parts) - 1 : step]), dtype=np.int64, count=n)
    sizes = np.fromiter(map(len, parts[1::step]), dtype=np.int64, count=n)
    ends = np.cumsum(gaps + sizes)
    return ends - sizes, ends, [parts[i::step] for i in range(2, step)]


def _records(chunk: _Chunk, rule: BulkRule) -> tuple[dict | None, list[tuple[int, int]]]:
    """Columns of the records of a bulk rule of one record per line (or None), and the spans of
    text left to the other rules."""
    text = chunk.text
    whole = [(0, len(text))]
    line = None  # the line of each record, where finding them told it
    if rule.layout is not None:
        if rule.line_start:  # the lines whose content has the anchor where the layout puts it
            _, _, content = chunk.index.lines()
            line = np.flatnonzero(_layout.equals(chunk.points, content + rule.lead, rule.layout.anchor))
            begin = content[line]
        else:
            begin = _layout.find(text, rule.layout.anchor, chunk.points) - rule.lead
        if len(begin) == 0:
            return None, whole
        keep, fields, stop = _layout.read(rule.layout, text, chunk.points, chunk.newlines, begin, found=True)
        if rule.convert is not None:
            fields = rule.convert(fields)
    else:
        starts, stop, groups = _split(rule.splitter, text)
        if len(starts) == 0:
            return None, whole
        begin, keep = starts - rule.lead, starts >= rule.lead
        fields = rule.convert(groups)
    if line is None:
        line, ranks, content = chunk.lines(begin)
        keep &= (begin == content) if rule.line_start else (begin >= content)
    else:
        ranks = chunk.index.lines()[1][line]
    if not keep.all():
        idx = np.flatnonzero(keep)
        if len(idx) == 0:
            return None, whole
        begin, stop, line, ranks = begin[idx], stop[idx], line[idx], ranks[idx]
        fields = {k: v[idx] if np.ndim(v) else v for k, v in fields.items()}
    cols = _columns(begin, chunk.first_line + line, ranks, fields)
    # The text between records, for the other rules: from the end of one record's line to the
    # start of the next record's line (its newline included, for rules that begin with one).
    newlines = chunk.newlines
    # A layout reads within its line (its literals hold no newline): a record's line is where it stops.
    after = line if rule.layout is not None else np.searchsorted(newlines, stop)
    ends = np.where(after < len(newlines), newlines[np.minimum(after, len(newlines) - 1)], len(text))
    lo = np.concatenate(([0], ends))
    hi = np.concatenate((chunk.index.lines()[0][line], [len(text)]))
    open_ = np.flatnonzero(hi - lo > 1)
    return cols, list(zip(lo[open_].tolist(), hi[open_].tolist(), strict=True))


def _columns(pos: np.ndarray, lines: np.ndarray, ranks: np.ndarray, fields: dict) -> dict:
    n = len(pos)
    cols = {"pos": pos, "line": lines, "rank": ranks}
    for name in ev.ITER_FIELDS:
        value = fields.get(name)
        if value is None:
            value = np.full(n, -1 if name in _INT_FIELDS else np.nan)
        elif np.ndim(value) == 0:
            value = np.full(n, value, dtype=np.int64 if name in _INT_FIELDS else float)
        cols[name] = value
    return cols


def _blocks(chunk: _Chunk, rule: BulkRule, run_starts: np.ndarray) -> tuple[dict | None, list]:
    """Columns of the records of a bulk rule of several lines, and FIELD hits for the values
    whose record is not among them (it is in an earlier chunk, or a run may start in between:
    `run_starts` are the positions of the chunk's RUN_START hits, the only events that can)."""
    text = chunk.text
    # The lines are found by what all the layouts' first literals share (one search of the
    # chunk), each layout then reads the ones where its own literal goes on.
    common = os.path.commonprefix([lay.anchor for lay in rule.blocks])
    candidates = chunk.opening(common)  # at line starts (the usual case): told apart by what follows
    if candidates is not None:
        rest = [lay.anchor[len(common):] for lay in rule.blocks]
        chosen = _layout.begins(chunk.points, candidates + len(common), rest)
    else:
        candidates = _layout.find(text, common, chunk.points)
        after = chunk.points[np.minimum(candidates + len(common), len(chunk.points) - 1)]
        chosen = [after == ord(lay.anchor[len(common)]) if len(lay.anchor) > len(common) else slice(None)
                  for lay in rule.blocks]
    found = []
    for kind, lay in enumerate(rule.blocks):
        at = candidates[chosen[kind]]
        ok, fields, _ = _layout.read(lay, text, chunk.points, chunk.newlines, at)
        keep = np.flatnonzero(ok)
        found.append((at[keep], np.full(len(keep), kind), {k: v[keep] for k, v in fields.items()}))
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
    cols = _columns(starts[rec], chunk.first_line + line[rec], ranks[rec], fields)
    cols["end_line"] = chunk.first_line + ends
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


def _hits(chunk: _Chunk | str, rules: Iterable[Rule | LineRule],
          spans: list[tuple[int, int]] | None = None) -> list[tuple[int, str, object]]:
    """(position, kind, data) of every rule's matches within the spans (all of the text if None)."""
    text = chunk if isinstance(chunk, str) else chunk.text
    spans = spans if spans is not None else [(0, len(text))]
    hits: list[tuple[int, str, object]] = []
    for rule in rules:
        pattern, handler = rule[0], rule[1]
        skip = 1 if pattern.pattern.startswith("\\n") else 0  # a leading newline belongs to the line before
        found = _line_matches(chunk, rule) if isinstance(rule, LineRule) and not isinstance(chunk, str) else None
        if found is not None and (len(spans) != 1 or spans[0] != (0, len(text))):
            found = _within(found, spans)
        if found is None:
            found = _literal_matches(text, pattern, spans)
        if found is None:
            found = (m for lo, hi in spans for m in pattern.finditer(text, lo, hi))
        for m in found:
            out = handler(m)
            if out is not None:
                hits.append((m.start() + skip, out[0], out[1]))
    hits.sort(key=itemgetter(0))
    return hits


def _line_matches(chunk: _Chunk, rule: LineRule) -> list[re.Match] | None:
    """The matches of a LineRule, from the lines that begin as it says (None: search them)."""
    if rule.prefix:
        at = chunk.opening(rule.prefix)
        if at is None:
            return None
    else:  # a newline, then the line's very start
        at = chunk.index.lines()[0][1:] - 1
    keep = np.zeros(len(at), dtype=bool)
    for fits in _layout.begins(chunk.points, at + len(rule.prefix) + (0 if rule.prefix else 1), rule.heads):
        keep |= fits
    match = rule.pattern.match
    return [m for p in at[keep].tolist() if (m := match(chunk.text, p))]


try:  # the regex parser (private): what a pattern's matches all begin with
    from re import _parser as _sre_parse
except ImportError:  # pragma: no cover (a Python without it: every pattern is searched for)
    _sre_parse = None


@functools.lru_cache(maxsize=256)
def _leading_literal(pattern: re.Pattern) -> str:
    """The literal text every match of `pattern` begins with ("" where none is, or where flags
    change what a literal matches)."""
    if _sre_parse is None or pattern.flags & re.IGNORECASE:
        return ""
    out: list[str] = []

    def walk(items) -> bool:  # whether the literal may go on after these items
        for op, arg in items:
            if op is _sre_parse.LITERAL:
                out.append(chr(arg))
            elif op is _sre_parse.SUBPATTERN and not arg[1] & re.IGNORECASE:  # a group: its own items
                if not walk(arg[3]):
                    return False
            else:
                return False
        return True

    walk(_sre_parse.parse(pattern.pattern, pattern.flags))
    return "".join(out)


_LITERAL_MIN = 16  # characters of a leading literal for which str.find beats the regex engine


def _literal_matches(text: str, pattern: re.Pattern, spans: list[tuple[int, int]]) -> list[re.Match] | None:
    """The matches `pattern.finditer` finds within the spans, from the places where its leading
    literal stands: for a long literal, str.find skips through the text where the regex engine
    tries every place where its first character stands (`:INFO: Start with arguments` begins
    with the `:` of every time of day). None where the literal is short, or common (past one
    place in 4 KiB, the spans are searched instead)."""
    literal = _leading_literal(pattern)
    if len(literal) < _LITERAL_MIN:
        return None
    limit = max(64, len(text) >> 12)
    found: list[re.Match] = []
    lo = [a for a, _ in spans]
    at, seen = text.find(literal), 0
    while at >= 0:
        seen += 1
        if seen > limit:
            return None
        i = bisect.bisect_right(lo, at) - 1
        if i < 0 or at >= spans[i][1]:  # not within a span: on to the next one
            if i + 1 >= len(spans):
                break
            at = text.find(literal, spans[i + 1][0])
            continue
        m = pattern.match(text, at, spans[i][1])  # as finditer within the span tries it there
        if m:
            found.append(m)
        at = text.find(literal, m.end() if m and m.end() > at else at + 1)
    return found


def _within(matches: list[re.Match], spans: list[tuple[int, int]]) -> list[re.Match]:
    """The matches that lie within one of the spans."""
    lo = [a for a, _ in spans]
    out = []
    for m in matches:
        i = bisect.bisect_right(lo, m.start()) - 1
        if i >= 0 and m.end() <= spans[i][1]:
            out.append(m)
    return out


def scan(text: str, first_line: int, rules: Iterable[Rule], bulk: BulkRule | None = None) -> list[Event]:
    """Apply every rule to the chunk and return the events sorted by position.

    Records of the bulk rule come as BULK events, one per stretch between other events.
    """
    if bulk is None:
        return _plain(text, first_line, _hits(text, rules))
    chunk = _Chunk(text, first_line)
    if bulk.blocks:
        hits = _hits(chunk, rules)
        run_starts = np.array([h[0] for h in hits if h[1] == ev.RUN_START], dtype=np.int64)
        cols, leftover = _blocks(chunk, bulk, run_starts)
        if leftover:
            hits = sorted(hits + leftover, key=itemgetter(0))
    else:
        cols, spans = _records(chunk, bulk)
        hits = _hits(chunk, rules, spans)
    if cols is None:
        return _plain(text, first_line, hits)
    hit_pos = np.array([h[0] for h in hits], dtype=np.int64)
    line, ranks, _ = chunk.lines(hit_pos)
    lines = (chunk.first_line + line).tolist()
    ranks = [None if r < 0 else r for r in ranks.tolist()]
    cuts = np.searchsorted(cols.pop("pos"), hit_pos).tolist()
    events: list[Event] = []
    done = 0
    for i, (_, kind, data) in enumerate(hits):
        if cuts[i] > done:
            events.append(_bulk_event(cols, done, cuts[i]))
            done = cuts[i]
        events.append((lines[i], ranks[i], kind, data))
    if done < len(cols["line"]):
        events.append(_bulk_event(cols, done, len(cols["line"])))
    return events


def _plain(text: str, first_line: int, hits: list[tuple[int, str, object]]) -> list[Event]:
    """Events of rule hits alone: few, so line numbers and ranks are found one by one."""
    tagged = has_tags(text)
    events: list[Event] = []
    line, last = first_line, 0
    for pos, kind, data in hits:
        line += text.count("\n", last, pos)
        last = pos
        events.append((line, rank_at(text, pos) if tagged else None, kind, data))
    return events


def _bulk_event(cols: dict, start: int, stop: int) -> Event:
    part = cols if start == 0 and stop == len(cols["line"]) else {k: v[start:stop] for k, v in cols.items()}
    return (int(part["line"][0]), None, ev.BULK, part)


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
