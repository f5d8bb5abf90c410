"""The one scanning loop every format shares: regex rules over a chunk, events in line order.

Each rule is a compiled pattern plus a handler from its match to `(kind, data)` (or None to
ignore the match). Patterns must begin with a literal so that the regex engine skips ahead in C
instead of trying every position; that, not cleverness in Python, is what keeps parsing fast.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from operator import itemgetter

import numpy as np

from .. import events as ev
from ..assemble import seconds_array as stamps  # noqa: F401  (used by the formats)
from ..events import Event
from ..ranks import has_tags, rank_at

Handler = Callable[[re.Match], "tuple[str, object] | None"]
Rule = tuple[re.Pattern, Handler]


@dataclass(frozen=True)
class BulkRule:
    """The per-step lines that make up most of a log, read as columns instead of one event each.

    `pattern` matches one record from the start of its line; its groups feed `convert`, which
    turns the string columns into STEP fields (numpy arrays, or scalars for constants). It is
    searched behind a newline (a literal the regex engine skips to) or behind an mpirun rank tag,
    whose rank becomes the first group.
    """

    pattern: re.Pattern
    convert: Callable[[np.ndarray], dict]

    @property
    def tagged(self) -> re.Pattern:
        return _compiled(r"\[\d+,(\d+)\](?:\[[^\]\n]*\])?<std(?:out|err|diag)>:" + self.pattern.pattern)

    @property
    def untagged(self) -> re.Pattern:
        return _compiled("\n" + self.pattern.pattern)


@functools.lru_cache(maxsize=64)
def _compiled(pattern: str) -> re.Pattern:
    return re.compile(pattern)


def _bulk(text: str, first_line: int, rule: BulkRule, tagged: bool):
    """(positions, events data) of every bulk record in the chunk, as one BULK payload."""
    first = rule.pattern.match(text)
    found = [(0, (None, *first.groups()) if tagged else first.groups())] if first else []
    if tagged:  # untagged lines can sit among tagged ones (a run launched without mpirun)
        found += [(m.start() + 1, (None, *m.groups())) for m in rule.untagged.finditer(text)]
        found += [(m.start(), m.groups()) for m in rule.tagged.finditer(text)]
        found.sort(key=itemgetter(0))
    else:
        found += [(m.start() + 1, m.groups()) for m in rule.untagged.finditer(text)]
    if not found:
        return np.zeros(0, dtype=np.int64), None
    pos = np.fromiter((f[0] for f in found), dtype=np.int64, count=len(found))
    groups = np.array([f[1] for f in found], dtype=object)
    if tagged:
        ranks = np.array([-1 if r is None else int(r) for r in groups[:, 0]], dtype=np.int64)
        groups = groups[:, 1:]
    else:
        ranks = np.full(len(found), -1, dtype=np.int64)
    # Line numbers: newlines before each position, from the text's code points.
    codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
    newlines = np.flatnonzero(codes == 10)
    fields = rule.convert(groups)
    n = len(found)
    cols = {"line": first_line + np.searchsorted(newlines, pos), "rank": ranks}
    for name in ev.ITER_FIELDS:
        value = fields.get(name)
        if value is None:
            value = np.full(n, -1 if name in ("epoch", "iteration") else np.nan)
        cols[name] = np.broadcast_to(value, (n,)) if np.ndim(value) == 0 else value
    return pos, cols

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


def scan(text: str, first_line: int, rules: Iterable[Rule], bulk: BulkRule | None = None) -> list[Event]:
    """Apply every rule to the whole chunk and return the events sorted by position.

    Records of the bulk rule come as BULK events, one per stretch between other events.
    """
    tagged = has_tags(text)
    hits: list[tuple[int, str, object]] = []
    for pattern, handler in rules:
        skip = 1 if pattern.pattern.startswith("\\n") else 0  # a leading newline belongs to the line before
        for m in pattern.finditer(text):
            out = handler(m)
            if out is not None:
                hits.append((m.start() + skip, out[0], out[1]))
    hits.sort(key=itemgetter(0))
    bulk_pos, bulk_cols = _bulk(text, first_line, bulk, tagged) if bulk is not None else (None, None)
    cuts = np.searchsorted(bulk_pos, [h[0] for h in hits]) if bulk_cols is not None else None
    events: list[Event] = []
    line, last, done = first_line, 0, 0
    for i, (pos, kind, data) in enumerate(hits):
        line += text.count("\n", last, pos)
        last = pos
        if cuts is not None and cuts[i] > done:
            events.append(_bulk_event(bulk_cols, done, cuts[i]))
            done = cuts[i]
        events.append((line, rank_at(text, pos) if tagged else None, kind, data))
    if bulk_cols is not None and done < len(bulk_pos):
        events.append(_bulk_event(bulk_cols, done, len(bulk_pos)))
    return events


def _bulk_event(cols: dict, start: int, stop: int) -> Event:
    part = {k: v[start:stop] for k, v in cols.items()}
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
