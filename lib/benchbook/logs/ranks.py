"""Rank tags of `mpirun --tag-output`: undo the interleaving of ranks' partial lines, then take
the tags out, keeping each line's rank.

mpirun writes each piece a rank prints behind a tag such as `[1,3]<stdout>:`, and another rank's
piece can follow a partial line on the same physical line. Every newline still completes exactly
one rank's line (the rank of the last piece on it), so `demux` keeps the line count: every
logical line keeps the physical line number on which it was completed.
"""

from __future__ import annotations

import re

import numpy as np

# Optional OpenMPI 4 `--timestamp-output` prefix (ctime format), then `[job,rank]`, an optional
# `[host:pid]` of `--tag-output=detailed`, and the stream.
TAG = re.compile(
    r"(?:[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4})?"
    r"\[\d+,(\d+)\](?:\[[^\]\n]*\])?<(?:stdout|stderr|stddiag)>:"
)
_LINE_TAG = re.compile(r"\n" + TAG.pattern)  # one that opens a line (its newline: a literal first, for speed)
# A physical line that holds a second tag after its first: only those need demultiplexing. The
# possessive loops keep this one pass over the text, however long its lines.
_MULTI = re.compile(r"<std(?:out|err|diag)>:[^\n<]*+(?:<(?!std(?:out|err|diag)>:)[^\n<]*+)*+<std(?:out|err|diag)>:")


def untag(text: str) -> tuple[str, np.ndarray, np.ndarray]:
    """The text without the tags that open its lines, where those lines begin in it, and their
    ranks. One split finds every tag: [text before, rank, line after, rank, line after...]."""
    if "]<std" not in text:
        return text, np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    pieces = _LINE_TAG.split("\n" + text)  # (a newline before the first line, for its tag)
    lines = pieces[0::2]
    starts = np.cumsum(np.fromiter(map(len, lines), dtype=np.int64, count=len(lines)) + 1)[:-1] - 1
    return "\n".join(lines)[1:], starts, np.array(pieces[1::2], dtype=np.int64)


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
    without interleaved tags and no carry is returned unchanged after one regex search.
    """
    pending: dict[int | None, str] = dict(carry or {})
    multi = None if pending else _MULTI.search(text)  # the first line that holds a second tag
    first = multi.start() if multi else (0 if pending else None)
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
        multi = None if pending else _MULTI.search(text, pos)
        first = multi.start() if multi else None
    out.append(text[pos:])
    return "".join(out), rewritten, pending
