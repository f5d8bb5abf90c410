"""Rank tags of `mpirun --tag-output`: find them, and undo the interleaving of ranks' partial lines.

mpirun writes each chunk a rank prints behind a tag such as `[1,3]<stdout>:`. When a rank writes
part of a line, another rank's chunk can follow on the same physical line, so one physical line
may hold pieces of several ranks' lines. Every newline still completes exactly one rank's line
(the rank of the last piece on that physical line), so demultiplexing keeps the line count and
every logical line keeps the physical line number on which it was completed.
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
# A physical line that holds a second tag after its first: only those need demultiplexing. The
# possessive loops keep this one pass over the text, however long its lines.
_MULTI = re.compile(r"<std(?:out|err|diag)>:[^\n<]*+(?:<(?!std(?:out|err|diag)>:)[^\n<]*+)*+<std(?:out|err|diag)>:")


def has_tags(text: str) -> bool:
    """Whether the text holds any rank tag at all (a cheap test before per-line work)."""
    return "]<std" in text


def newlines(text: str) -> np.ndarray:
    """Positions (in code points) of the text's newlines, found by numpy in one pass."""
    if text.isascii():
        return np.flatnonzero(np.frombuffer(text.encode("ascii"), dtype=np.uint8) == 10)
    return np.flatnonzero(np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32) == 10)


class TextIndex:
    """Where a text's lines are, and the rank tag that opens each line asked about. The text
    after its last newline counts as a line (empty when the text ends with one)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.newlines = newlines(text)
        self.starts = np.concatenate(([0], self.newlines + 1))  # where each 0-based line starts
        self.ends = np.append(self.newlines, len(text))  # and where it ends (its newline)
        self.tagged = has_tags(text)

    def lines(self, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(0-based line, rank, content start) of the lines holding text positions."""
        line = np.searchsorted(self.newlines, pos)
        return (line, *self.tags(line))

    def tags(self, lines: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(rank, content start) of each of the lines: -1 and the line's start where no tag opens it."""
        starts = self.starts[lines]
        rank = np.full(len(lines), -1, dtype=np.int64)
        if not self.tagged:
            return rank, starts
        content = starts.copy()
        match = TAG.match
        for i, start in enumerate(starts.tolist()):
            tag = match(self.text, start)
            if tag:
                rank[i], content[i] = int(tag.group(1)), tag.end()
        return rank, content


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
