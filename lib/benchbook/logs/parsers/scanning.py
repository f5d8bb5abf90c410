"""The one scanning loop every format shares: regex rules over a chunk, events in line order.

Every pattern begins with a literal, so that the regex engine skips ahead in C instead of trying
every position: that, not cleverness in Python, keeps parsing fast. The lines that make up most of
a log (one per training step) are a `BulkRule`'s, read as numpy columns from one regex split; the
other rules read the text between them, and every record reaches `assemble` in a BULK event.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cached_property
from operator import itemgetter

import numpy as np

from .. import events as ev
from ..assemble import seconds_array
from ..events import Event
from ..ranks import TextIndex

Handler = Callable[[re.Match], "tuple[str, object] | None"]
Rule = tuple[re.Pattern, Handler]

# Pieces of the formats' bulk patterns: digits, a logged number (read as float() reads it, NaN
# where it is none: `1.2.3`), a `YYYY-MM-DD HH:MM:SS[.,]f` date-time (seconds since the epoch, UTC).
INT = "[0-9]+"
NUM = "[0-9.eE+-]+"
DATE_TIME = "[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}"
STAMP = DATE_TIME + "(?:[.,][0-9]+)?"

_INT_FIELDS = ("epoch", "iteration")
_INT_LIMIT = 10**18  # an int of more digits is not a record's (an iteration, an epoch)


@dataclass(frozen=True)
class BulkRule:
    """The per-step lines that make up most of a log, read as columns instead of one event each.

    Two shapes:
    - one record per line: `pattern`, a regular expression that begins with a literal (so that the
      regex engine skips in C from one candidate line to the next) and stays within its line, a
      named group a field; `types` names each group's type ("int", "float" or "stamp"). A
      timestamp of fixed width before the literal is caught by a lookbehind, and `lead` is its
      width. `convert`, if given, turns the columns into record fields. A record begins its line
      (after any rank tag), and the other rules only read the text between records.
    - one record over several `name: number` lines (`values`: a pattern of one outer group and
      two inner ones, the name and the number, read by one split): the line named `opens` (one of
      the `fields`) opens a new record of its rank, and each value named in `fields` (logged
      name, record field) goes to the last record of its rank (as FIELD events do); the other
      values are the chunk's LOSSES (loss components).
    """

    pattern: str = ""
    types: dict = field(default_factory=dict)
    lead: int = 0
    convert: Callable | None = None
    values: re.Pattern | None = None
    opens: str = ""
    fields: tuple[tuple[str, str], ...] = ()

    @cached_property
    def regex(self) -> re.Pattern:
        """The pattern as one outer group, for `split`."""
        return re.compile(f"({self.pattern})")


def split(pattern: re.Pattern, text: str) -> tuple[np.ndarray, list[list]]:
    """(starts, columns of the inner groups) of every match of a pattern that is one outer group,
    from one `pattern.split`: the lengths of the text between matches give their positions, and
    no match object is made a line."""
    parts = pattern.split(text)
    step = pattern.groups + 1
    gaps = np.fromiter(map(len, parts[0 : len(parts) - 1 : step]), dtype=np.int64)
    sizes = np.fromiter(map(len, parts[1::step]), dtype=np.int64)
    return np.cumsum(gaps + sizes) - sizes, [parts[i::step] for i in range(2, step)]


def integers(tokens: list[str | None]) -> tuple[np.ndarray, np.ndarray]:
    """(int64 column, whether each is a record's) of digit tokens: -1 where missing (None), not a
    record's where past 10**18."""
    try:
        column = np.array([t or -1 for t in tokens], dtype=np.int64)
        return column, (column < _INT_LIMIT)
    except OverflowError:
        values = [int(t) if t else -1 for t in tokens]
        ok = np.array([v < _INT_LIMIT for v in values], dtype=bool)
        return np.array([v if k else 0 for v, k in zip(values, ok.tolist(), strict=True)], dtype=np.int64), ok


def floats(tokens: list[str | None]) -> np.ndarray:
    """float64 column of number tokens, as `float()` reads each; NaN where missing or not a number."""
    try:
        return np.array([t or "nan" for t in tokens], dtype=float)
    except ValueError:
        return np.array([_float(t) for t in tokens], dtype=float)


def _float(token: str | None) -> float:
    try:
        return float(token) if token else math.nan
    except ValueError:
        return math.nan


def _bulk_records(rule: BulkRule, text: str) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """(start positions, field columns) of every line of `text` that holds a record of the rule."""
    starts, groups = split(rule.regex, text)
    columns, keep = {}, np.ones(len(starts), dtype=bool)
    for name, kind in rule.types.items():
        tokens = groups[rule.regex.groupindex[name] - 2]
        if kind == "int":
            columns[name], ok = integers(tokens)
            keep &= ok
        else:
            columns[name] = floats(tokens) if kind == "float" else seconds_array(tokens)
    if not keep.all():  # an int past 10**18 is no record's
        starts, columns = starts[keep], {name: column[keep] for name, column in columns.items()}
    starts -= rule.lead
    return starts, columns


def _records(chunk: TextIndex, first_line: int, rule: BulkRule) -> tuple[dict, list[tuple[int, int]]]:
    """Columns of the records of a bulk rule of one record per line, and the spans of text left
    to the other rules."""
    begin, fields = _bulk_records(rule, chunk.text)
    if rule.convert is not None:
        fields = rule.convert(fields)
    line, ranks, content = chunk.lines(begin)
    keep = begin == content  # a record begins its line, after any rank tag
    if not keep.all():
        begin, line, ranks, fields = begin[keep], line[keep], ranks[keep], {k: v[keep] for k, v in fields.items()}
    cols = _columns(begin, first_line + line, ranks, fields)
    # The text between records, for the other rules: from the end of one record's line (a bulk
    # pattern reads within its line) to the start of the next one's, its newline included (for
    # rules that begin with one).
    lo = np.concatenate(([0], chunk.ends[line]))
    hi = np.concatenate((chunk.starts[line], [len(chunk.text)]))
    open_ = np.flatnonzero(hi - lo > 1)
    return cols, list(zip(lo[open_].tolist(), hi[open_].tolist(), strict=True))


def _columns(pos: np.ndarray, lines: np.ndarray, ranks: np.ndarray, fields: dict) -> dict:
    """A chunk's record columns: pos, line, rank, end_line, then ITER_FIELDS (-1 or NaN where
    not logged)."""
    cols = {"pos": pos, "line": lines, "rank": ranks, "end_line": lines}
    for name in ev.ITER_FIELDS:
        cols[name] = fields[name] if name in fields else np.full(len(pos), -1 if name in _INT_FIELDS else np.nan)
    return cols


def _blocks(chunk: TextIndex, first_line: int, rule: BulkRule, run_starts: np.ndarray) -> tuple:
    """(columns of the records of a bulk rule of `name: number` lines, FIELD hits for the values
    whose record is not among them, LOSSES columns). A value whose record is in an earlier chunk,
    or past a RUN_START hit (`run_starts`: the only events that can begin a run in between), is a
    FIELD hit."""
    pos, (logged, numbers) = split(rule.values, chunk.text)
    if not len(pos):
        return None, [], None
    # Each value gets its name's code: the record fields' names first, then the others (losses).
    taken = [name for name, _ in rule.fields]
    names = taken + [name for name in dict.fromkeys(logged) if name not in taken]
    code = np.fromiter(map({name: i for i, name in enumerate(names)}.__getitem__, logged), np.int64, len(logged))
    value, line = floats(numbers), np.searchsorted(chunk.newlines, pos)
    other = np.flatnonzero(code >= len(taken))
    losses = {"line": first_line + line[other], "value": value[other], "names": names[len(taken):],
              "component": (code[other] - len(taken)).astype(np.int32)} if len(other) else None
    kept = np.flatnonzero(code < len(taken))
    pos, code, value, line = pos[kept], code[kept], value[kept], line[kept]
    ranks, _ = chunk.tags(line)  # of the values records take alone: a tag is matched a line
    rec = np.flatnonzero(code == taken.index(rule.opens))
    target = _last_record(ranks, rec)
    segment = np.searchsorted(run_starts, pos, side="right")
    found = np.flatnonzero(target >= 0)
    same = np.zeros(len(pos), dtype=bool)  # whether a value's record is in this chunk and in its run
    same[found] = segment[found] == segment[rec[target[found]]]
    fields, leftover, ends = {}, [], line[rec].copy()  # ends: the last line of each record's block
    for i, (_, key) in enumerate(rule.fields):
        at = np.flatnonzero(code == i)
        ok, to = at[same[at]], target[at[same[at]]]
        integer = key in _INT_FIELDS
        column = fields[key] = np.full(len(rec), -1 if integer else np.nan, dtype=np.int64 if integer else float)
        column[to] = value[ok]
        np.maximum.at(ends, to, line[ok])
        leftover += [(int(pos[j]), ev.FIELD, {key: value[j].item()}) for j in at[~same[at]].tolist()]
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
    cols, spans = (None, None) if bulk is None or bulk.values else _records(index, first_line, bulk)
    hits = _hits(text, rules, spans)
    if bulk is not None and bulk.values:
        run_starts = np.array([h[0] for h in hits if h[1] == ev.RUN_START], dtype=np.int64)
        cols, leftover, losses = _blocks(index, first_line, bulk, run_starts)
        hits = sorted(hits + leftover, key=itemgetter(0))
        if losses is not None:  # the chunk's, for the whole file: last
            hits.append((len(text), ev.LOSSES, losses))
    steps = [h for h in hits if h[1] == ev.STEP]
    if steps:  # records of rules that read one at a time join the bulk rule's, in text order
        hits = [h for h in hits if h[1] != ev.STEP]
        cols = _merge(cols, _step_columns(index, first_line, steps))
    hit_pos = np.array([h[0] for h in hits], dtype=np.int64)
    line, ranks, _ = index.lines(hit_pos)
    records = 0 if cols is None else len(cols["line"])
    cuts = np.searchsorted(cols.pop("pos"), hit_pos).tolist() if records else [0] * len(hits)
    events: list[Event] = []
    done = 0
    for i, cut in enumerate([*cuts, records]):
        if cut > done:  # the records before the next hit (or the end of the chunk)
            events.append((int(cols["line"][done]), None, ev.BULK, ev.Bulk(cols, done, cut)))
            done = cut
        if i < len(hits):
            events.append((first_line + int(line[i]), None if ranks[i] < 0 else int(ranks[i]), *hits[i][1:]))
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
