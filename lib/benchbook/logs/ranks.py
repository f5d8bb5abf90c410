"""Rank tags of `mpirun --tag-output` (`[1,3]<stdout>:`): undo the interleaving of ranks' partial
lines, then take the tags out, keeping each line's rank. Another rank's piece can follow a partial
line on the same physical line, but every newline completes one rank's line (that of its last
piece), so `demux` keeps the line count, and every line the number of the line that completed it."""

from __future__ import annotations

import re

import numpy as np

# The largest rank read from a tag: 2**20 - 1, above the process count of any training job (the
# largest MPI jobs run a few hundred thousand ranks). A larger number is no rank a log of ours holds
# (a corrupted or crafted line), and ranks index per-rank arrays: such a line is left out (read as an
# empty line, so that line numbers hold), and `untag` says which.
MAX_RANK = (1 << 20) - 1

# OpenMPI's `--timestamp-output` (ctime) and/or `--tag-output` `[job,rank]` (`[host:pid]` after it if detailed),
# then the stream (open-mpi/ompi orte/mca/iof/base/iof_base_output.c@34d089db: "%s<%s>:" with timestamps alone).
TAG = re.compile(
    r"(?:[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4}|(?=\[))"
    r"(?:\[\d+,(\d+)\](?:\[[^\]\n]*\])?)?<(?:stdout|stderr|stddiag)>:"
)
_LINE_TAG = re.compile(r"\n" + TAG.pattern)  # one that opens a line (its newline: a literal first, for speed)
# A physical line that holds a second tag after its first: only those need demultiplexing. The
# possessive loops keep this one pass over the text, however long its lines.
_MULTI = re.compile(r"<std(?:out|err|diag)>:[^\n<]*+(?:<(?!std(?:out|err|diag)>:)[^\n<]*+)*+<std(?:out|err|diag)>:")


def untag(text: str) -> tuple[str, np.ndarray, np.ndarray, np.ndarray]:
    """The text without the tags that open its lines, where those lines begin in it, their ranks,
    and which of those tags held a rank above MAX_RANK (their lines emptied, rank -1). One split
    finds every tag: [text before, rank, line after, rank, line after...]."""
    if "<std" not in text:
        none = np.zeros(0, dtype=np.int64)
        return text, none, none, none.astype(bool)
    pieces = _LINE_TAG.split("\n" + text)  # (a newline before the first line, for its tag)
    lines, tagged = pieces[0::2], pieces[1::2]
    tags = [r or -1 for r in tagged] if None in tagged else tagged  # -1: a timestamp alone
    try:
        ranks = np.array(tags, dtype=np.int64)
    except OverflowError:  # a number past int64: out of range as any above MAX_RANK
        ranks = np.array([r if len(str(r)) < 8 else MAX_RANK + 1 for r in tags], dtype=np.int64)
    wild = ranks > MAX_RANK
    if wild.any():
        ranks[wild] = -1
        for k in np.flatnonzero(wild).tolist():  # the tagged line (up to its newline) left out
            after = lines[k + 1]
            lines[k + 1] = after[after.find("\n"):] if "\n" in after else ""
    starts = np.cumsum(np.fromiter(map(len, lines), dtype=np.int64, count=len(lines)) + 1)[:-1] - 1
    return "\n".join(lines)[1:], starts, ranks, wild


def demux(text: str, carry: dict | None = None) -> tuple[str, dict]:
    """The text with each physical line that holds pieces of several ranks' lines rewritten as
    the line it completes (as many lines as before), and the partial lines still open at its end:
    pass those as `carry` with the text that follows. Without interleaved tags or carry, the text
    itself comes back, after one regex search."""
    pending: dict[int | None, str] = dict(carry or {})  # rank -> its partial line
    out, pos = [], 0  # pos: where the text not yet copied to `out` begins, a line's start
    while pos < len(text):
        if not pending:  # from the next line that holds a second tag, until no rank has a partial line
            multi = _MULTI.search(text, pos)
            if multi is None:
                break
            start = text.rfind("\n", 0, multi.start()) + 1
            out.append(text[pos:start])
            pos = start
        end = text.find("\n", pos)
        end = len(text) if end < 0 else end
        rank, last = None, pos  # the text before a line's first tag has no rank
        for m in TAG.finditer(text, pos, end):
            if m.start() > last or rank is not None:
                pending[rank] = pending.get(rank, "") + text[last : m.start()]
            rank, last = m.group(1) and int(m.group(1)), m.end()
        line = pending.pop(rank, "") + text[last:end]
        out.append((line if rank is None else f"[1,{rank}]<stdout>:{line}") + text[end : end + 1])
        pos = end + 1
    if not out:
        return text, pending
    out.append(text[pos:])
    return "".join(out), pending
