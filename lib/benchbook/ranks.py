"""Rank tags of `mpirun --tag-output`: find them, and undo the interleaving of ranks' partial lines.

mpirun writes each chunk a rank prints behind a tag such as `[1,3]<stdout>:`. When a rank writes
part of a line, another rank's chunk can follow on the same physical line, so one physical line
may hold pieces of several ranks' lines. Every newline still completes exactly one rank's line
(the rank of the last piece on that physical line), so demultiplexing keeps the line count and
every logical line keeps the physical line number on which it was completed.
"""

from __future__ import annotations

import re

# Optional OpenMPI 4 `--timestamp-output` prefix (ctime format), then `[job,rank]`, an optional
# `[host:pid]` of `--tag-output=detailed`, and the stream.
TAG = re.compile(
    r"(?:[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4})?"
    r"\[\d+,(\d+)\](?:\[[^\]\n]*\])?<(?:stdout|stderr|stddiag)>:"
)
# A physical line that holds a second tag after its first: only those need demultiplexing. The
# possessive loops keep this one pass over the text, however long its lines.
_MULTI = re.compile(r"<std(?:out|err|diag)>:[^\n<]*+(?:<(?!std(?:out|err|diag)>:)[^\n<]*+)*+<std(?:out|err|diag)>:")


def has_tags(text: str) -> bool:
    """Whether the text holds any rank tag at all (a cheap test before per-line work)."""
    return "]<std" in text


def rank_at(text: str, pos: int) -> int | None:
    """The rank whose tag opens the line holding `pos`, or None for an untagged line."""
    start = text.rfind("\n", 0, pos) + 1
    if text.startswith("[", start):  # the common case, without a regex
        comma, close = text.find(",", start, start + 16), text.find("]", start, start + 24)
        if 0 < comma < close and text[comma + 1 : close].isdigit() and text.startswith("<std", close + 1):
            return int(text[comma + 1 : close])
    m = TAG.match(text, start)
    return int(m.group(1)) if m else None


def _split(line: str) -> list[tuple[int | None, str]]:
    """Split one physical line into (rank, text) pieces; text before the first tag has rank None."""
    pieces: list[tuple[int | None, str]] = []
    last, rank = 0, None
    for m in TAG.finditer(line):
        if m.start() > last or rank is not None:
            pieces.append((rank, line[last : m.start()]))
        rank, last = int(m.group(1)), m.end()
    pieces.append((rank, line[last:]))
    return pieces


def demux(text: str, carry: dict | None = None) -> tuple[str, int, dict]:
    """Rewrite physical lines that hold pieces of several ranks as whole logical lines.

    Returns the new text, with exactly as many lines as the input, the number of physical lines
    rewritten, and the partial lines still open at the end of the text: pass those as `carry`
    with the text that follows, so that a line cut across two chunks is still completed. Text
    without interleaved tags and no carry is returned unchanged after one regex scan.
    """
    pending: dict[int | None, str] = dict(carry or {})
    first = 0 if pending else (m.start() if (m := _MULTI.search(text)) else None)
    if first is None:
        return text, 0, {}
    out: list[str] = []
    rewritten = 0
    pos = 0
    while first is not None:
        start = text.rfind("\n", 0, first) + 1
        out.append(text[pos:start])
        cursor = start
        # Rewrite from this line on until no rank has a partial line left over.
        while cursor < len(text):
            end = text.find("\n", cursor)
            end = len(text) if end < 0 else end
            pieces = _split(text[cursor:end])
            for rank, piece in pieces[:-1]:
                pending[rank] = pending.get(rank, "") + piece
            rank, piece = pieces[-1]
            line = pending.pop(rank, "") + piece
            out.append(line if rank is None else f"[1,{rank}]<stdout>:{line}")
            out.append("\n" if end < len(text) else "")
            rewritten += 1
            cursor = end + 1
            if not pending:
                break
        pos = min(cursor, len(text))
        m = _MULTI.search(text, pos) if not pending else None
        first = m.start() if m else None
    out.append(text[pos:])
    return "".join(out), rewritten, pending
