"""The one scanning loop every format shares: regex rules over a chunk, events in line order.

Each rule is a compiled pattern plus a handler from its match to `(kind, data)` (or None to
ignore the match). Patterns must begin with a literal so that the regex engine skips ahead in C
instead of trying every position; that, not cleverness in Python, is what keeps parsing fast.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from operator import itemgetter

from .. import events as ev
from ..events import Event
from ..ranks import has_tags, rank_at

Handler = Callable[[re.Match], "tuple[str, object] | None"]
Rule = tuple[re.Pattern, Handler]

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


def scan(text: str, first_line: int, rules: Iterable[Rule]) -> list[Event]:
    """Apply every rule to the whole chunk and return the events sorted by position."""
    hits: list[tuple[int, str, object]] = []
    for pattern, handler in rules:
        for m in pattern.finditer(text):
            out = handler(m)
            if out is not None:
                hits.append((m.start(), out[0], out[1]))
    hits.sort(key=itemgetter(0))
    tagged = has_tags(text)
    events: list[Event] = []
    line, last = first_line, 0
    for pos, kind, data in hits:
        line += text.count("\n", last, pos)
        last = pos
        events.append((line, rank_at(text, pos) if tagged else None, kind, data))
    return events


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
