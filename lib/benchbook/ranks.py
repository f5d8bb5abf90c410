"""Rank tags of `mpirun --tag-output`: find them, and undo the interleaving of ranks' partial lines.

mpirun writes each chunk a rank prints behind a tag such as `[1,3]<stdout>:`. When a rank writes
part of a line, another rank's chunk can follow on the same physical line, so one physical line
may hold pieces of several ranks' lines. Every newline still completes exactly one rank's line
(the rank of the last piece on that physical line), so demultiplexing keeps the line count and
every logical line keeps the physical line number on which it was completed.
"""

from __future__ import annotations

import bisect
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


_OPEN, _COMMA, _CLOSE, _NEWLINE, _LT = 91, 44, 93, 10, 60
_WIDTH = 24  # characters searched for `[job,rank]`, as in rank_at
_STREAMS = np.array([list(b"<stdout>:"), list(b"<stderr>:")], dtype=np.uint8)
# `[1,0]<st` as a little-endian uint64, the digits masked out; then `stdout>:` and `stderr>:`.
_HEAD_MASK = np.uint64(int.from_bytes(bytes([255, 0, 255, 0, 255, 255, 255, 255]), "little"))
_HEAD = np.uint64(int.from_bytes(b"[0,0]<st", "little") & int(_HEAD_MASK))
# `[j,r]<st` with any j and r, as _multi_lines tells an opening tag of one-character job and rank.
_FORM_MASK = np.uint64(int.from_bytes(bytes([255, 0, 0, 0, 255, 255, 255, 255]), "little"))
_FORM = np.uint64(int.from_bytes(b"[0,0]<st", "little") & int(_FORM_MASK))
_OUT = np.uint64(int.from_bytes(b"stdout>:", "little"))
_ERR = np.uint64(int.from_bytes(b"stderr>:", "little"))


PAD = 64  # zero code points after a text in `codes`: windows of up to PAD never run off its end


def codes(text: str) -> np.ndarray:
    """The text's code points as a numpy array (one byte each when the text is ASCII), so that
    array positions are string positions, followed by PAD zeros."""
    if text.isascii():
        return np.frombuffer((text + "\0" * PAD).encode("ascii"), dtype=np.uint8)
    return np.frombuffer((text + "\0" * PAD).encode("utf-32-le"), dtype=np.uint32)


class TextIndex:
    """What numpy reads of a text, made once for all who ask: its code points (`codes`), the
    positions of its newlines and, on first use, where every line starts and the rank tag that
    opens it (`tags_at`). The text after its last newline counts as a line (empty when the text
    ends with one)."""

    __slots__ = ("text", "points", "newlines", "_lines")

    def __init__(self, text: str, points: np.ndarray | None = None) -> None:
        self.text = text
        self.points = codes(text) if points is None else points
        self.newlines = np.flatnonzero(self.points == _NEWLINE)
        self._lines: tuple | None = None

    def lines(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(start, rank, content start) of every line: the rank is -1 and the content starts at
        the line's start where no tag opens the line."""
        if self._lines is None:
            starts = np.concatenate(([0], self.newlines + 1))
            self._lines = (starts, *tags_at(self.text, self.points, starts))
        return self._lines

    def line_of(self, pos: np.ndarray) -> np.ndarray:
        """The 0-based line of each text position."""
        return np.searchsorted(self.newlines, pos)


# The last text indexed: reading a chunk (its line count, rank tags) and scanning it share it.
# One reference, replaced whole, so that a thread never sees another text's arrays.
_INDEX: TextIndex | None = None


def text_index(text: str, points: np.ndarray | None = None) -> TextIndex:
    """The TextIndex of a text; the last text's is kept. `points`, when the caller has them, are
    the text's `codes` (what reading a file's ASCII bytes gives without a copy)."""
    global _INDEX
    last = _INDEX
    if last is None or last.text is not text:
        last = _INDEX = TextIndex(text, points)
    return last


def index(text: str) -> tuple[np.ndarray, np.ndarray]:
    """(code points, newline positions) of a text (see TextIndex)."""
    last = text_index(text)
    return last.points, last.newlines


def windows(points: np.ndarray, starts: np.ndarray, width: int) -> np.ndarray:
    """The `width` (at most PAD) code points from each start (a position in the text, or just
    past it), as rows of a (starts, width) array; past the end of the text they are 0."""
    size = points.itemsize
    view = np.ndarray((len(points) - width + 1, width), dtype=points.dtype, buffer=points, strides=(size, size))
    return view[_below(starts, len(view))]


def _below(starts: np.ndarray, size: int) -> np.ndarray:
    """Positions past `size` - 1 as `size` - 1; a copy only where one is (a maximum reads them,
    a minimum writes them all)."""
    return starts if not len(starts) or starts.max() < size else np.minimum(starts, size - 1)


def words(points: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """The 8 code points (ASCII, uint8) from each start as one little-endian uint64: a literal of
    up to 8 characters is then one comparison a line."""
    view = np.ndarray((len(points) - 7,), dtype="<u8", buffer=points, strides=(1,))
    return view[_below(starts, len(view))]


def tags_at(text: str, points: np.ndarray, starts: np.ndarray,
            tagged: bool | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(rank, content start) of the lines that begin at `starts`, all at once.

    `points` is `codes(text)`. The rank is -1 and the content starts at the line start where no tag
    opens the line; otherwise the content starts after the tag. Plain `[j,r]<stdout>:` and
    `<stderr>:` tags are read with numpy from a window at each line start, a column at a time;
    any other candidate by `TAG`, as `rank_at` reads it.
    """
    n = len(starts)
    rank = np.full(n, -1, dtype=np.int64)
    content = np.array(starts, dtype=np.int64)
    if n == 0 or not (has_tags(text) if tagged is None else tagged):
        return rank, content
    first = points[content]
    cand = np.flatnonzero(first == _OPEN)
    # The usual `[1,r]<stdout>:`: one-digit job and rank, read from fixed columns.
    if points.dtype == np.uint8:  # as two uint64: `[j,r]<st` and `stdout>:` or `stderr>:`
        head, tail = words(points, content[cand]), words(points, content[cand] + 6)
        plain = (head & _HEAD_MASK) == _HEAD
        job, own = (head >> np.uint64(8)) & np.uint64(255), (head >> np.uint64(24)) & np.uint64(255)
        plain &= (job >= 48) & (job <= 57) & (own >= 48) & (own <= 57) & ((tail == _OUT) | (tail == _ERR))
        values = own.astype(np.int64) - 48
    else:
        short = windows(points, content[cand], 14)
        plain = (short[:, 0] == _OPEN) & (short[:, 2] == _COMMA) & (short[:, 4] == _CLOSE)
        for col in (1, 3):
            plain &= (short[:, col] >= 48) & (short[:, col] <= 57)
        plain &= ((short[:, 5:14] == _STREAMS[0]).all(axis=1)) | ((short[:, 5:14] == _STREAMS[1]).all(axis=1))
        values = short[:, 3].astype(np.int64) - 48
    hit = cand[plain]
    rank[hit] = values[plain]
    content[hit] += 14
    done = np.zeros(n, dtype=bool)
    done[hit] = True
    cand = cand[~plain]
    chars = np.ascontiguousarray(windows(points, content[cand], _WIDTH + 10).T)
    m = len(cand)
    # `[`, digits, `,`, digits, `]`: walk the columns with the state of each line.
    comma = np.zeros(m, dtype=np.int64)  # column of the comma, 0 until seen
    close = np.zeros(m, dtype=np.int64)  # column of the `]`, 0 until seen
    value = np.zeros(m, dtype=np.int64)
    going = np.ones(m, dtype=bool)
    for j in range(1, _WIDTH):
        c = chars[j]
        digit = (c >= 48) & (c <= 57)
        at_comma = going & (comma == 0) & (c == _COMMA) & (j >= 2)
        at_close = going & (comma > 0) & (c == _CLOSE) & (j >= comma + 2)
        in_rank = going & (comma > 0) & digit
        value = np.where(in_rank, value * 10 + c - 48, value)
        comma[at_comma] = j
        close[at_close] = j
        going &= digit | at_comma
        if not going.any():
            break
    ok = np.zeros(m, dtype=bool)
    lines = np.arange(m)
    for stream in _STREAMS:  # `<stdout>:` or `<stderr>:` after the `]`
        same = close > 0
        for i, code in enumerate(stream):
            same &= chars[np.minimum(close + 1 + i, _WIDTH + 9), lines] == code
        ok |= same
    hit = cand[ok]
    rank[hit] = value[ok]
    content[hit] += close[ok] + 10
    done[hit] = True
    # Lines that may still hold a tag: a `[` that was not a plain tag, or a `--timestamp-output` prefix.
    other = ((first == _OPEN) | ((first >= 65) & (first <= 90))) & ~done
    for i in np.flatnonzero(other).tolist():
        tag = TAG.match(text, int(starts[i]))
        if tag:
            rank[i], content[i] = int(tag.group(1)), tag.end()
    return rank, content


_TAGGED: tuple = (None, False)  # the last text asked about, and the answer (as _INDEX)


def has_tags(text: str) -> bool:
    """Whether the text holds any rank tag at all (a cheap test before per-line work; reading
    and scanning a chunk ask it of the same text)."""
    global _TAGGED
    last = _TAGGED
    if last[0] is not text:
        last = _TAGGED = (text, "]<std" in text)
    return last[1]


def rank_at(text: str, pos: int) -> int | None:
    """The rank whose tag opens the line holding `pos`, or None for an untagged line."""
    start = text.rfind("\n", 0, pos) + 1
    if text.startswith("[", start):  # the common case, without a regex
        comma, close = text.find(",", start, start + 16), text.find("]", start, start + 24)
        if (0 < comma < close and text[start + 1 : comma].isdecimal() and text[comma + 1 : close].isdecimal()
                and text.startswith(("<stdout>:", "<stderr>:"), close + 1)):
            return int(text[comma + 1 : close])
    m = TAG.match(text, start)
    return int(m.group(1)) if m else None


def _multi_lines(text: str, raw: bytes | None = None) -> list[int]:
    """Start positions of the physical lines where a `<std` stands elsewhere than in a tag that
    opens the line (`\n[j,r]<std`, one or two digits each): the only lines that can hold a second
    tag. Found with numpy, as a regex would try every tag of every line; each is then checked.
    `raw` is the text as ASCII bytes when the caller has them (read from the file): no copy then."""
    if raw is None:
        raw = text.encode("ascii") if text.isascii() else None
    points = np.frombuffer(raw, dtype=np.uint8) if raw is not None else codes(text)[: len(text)]
    lt = np.flatnonzero(points[: max(len(points) - 3, 0)] == _LT)
    if raw is not None and len(lt) and len(points) >= 8:
        # Most are the `<` of a `[j,r]<std` that opens its line: one word a `<` tells them (an
        # unaligned uint64 view of the bytes, as `words`); the others are looked at as below.
        at = np.maximum(lt - 5, 0)  # where `[` would be (lt < len - 3, so the word fits)
        word = np.ndarray((len(points) - 7,), dtype="<u8", buffer=points, strides=(1,))[at]
        common = (lt >= 5) & ((word & _FORM_MASK) == _FORM) & (points[lt + 3] == 100)  # "[j,r]<std"
        common &= (at == 0) | (points[np.maximum(at - 1, 0)] == _NEWLINE)
        lt = lt[~common]
    lt = lt[(points[lt + 1] == 115) & (points[lt + 2] == 116) & (points[lt + 3] == 100)]  # "std"
    closed = points[lt - 1] == _CLOSE  # an opening tag's `<` follows its `]`
    elsewhere, lt = lt[~closed], lt[closed]
    for size in (5, 6, 7):  # `[j,r]`, with one or two digits each, tried on what the last size left
        at = lt - size  # where its `[` would be
        ok = (at >= 0) & (points[np.maximum(at, 0)] == _OPEN)
        ok &= (at == 0) | (points[np.maximum(at - 1, 0)] == _NEWLINE)
        lt = lt[~ok]
    return sorted({text.rfind("\n", 0, p) + 1 for p in (*elsewhere.tolist(), *lt.tolist())})


def _next_multi(text: str, candidates: list[int], pos: int) -> int | None:
    """Where the first line at or after `pos` that holds a second tag starts (None if none does)."""
    for i in range(bisect.bisect_left(candidates, pos), len(candidates)):
        start = candidates[i]
        end = text.find("\n", start)
        m = _MULTI.search(text, start, len(text) if end < 0 else end)
        if m:
            return m.start()
    return None


# TAG without its optional time prefix, which is checked behind each match: the search then
# skips to the `[`, where TAG itself would be tried at every character.
_TAG_CORE = re.compile(TAG.pattern[TAG.pattern.index(r"\[\d+,") :])
_TAG_STAMP = re.compile(TAG.pattern[3 : TAG.pattern.index(")?")])
_STAMP_WIDTH = 24


def _split(line: str) -> list[tuple[int | None, str]]:
    """Split one physical line into (rank, text) pieces; text before the first tag has rank None."""
    pieces: list[tuple[int | None, str]] = []
    last, rank = 0, None
    for m in _TAG_CORE.finditer(line):
        start = m.start()
        if (start - _STAMP_WIDTH >= last and line[start - 1].isdigit()  # a stamp ends with its year
                and _TAG_STAMP.fullmatch(line, start - _STAMP_WIDTH, start)):
            start -= _STAMP_WIDTH
        if start > last or rank is not None:
            pieces.append((rank, line[last:start]))
        rank, last = int(m.group(1)), m.end()
    pieces.append((rank, line[last:]))
    return pieces


def demux(text: str, carry: dict | None = None, raw: bytes | None = None) -> tuple[str, int, dict]:
    """Rewrite physical lines that hold pieces of several ranks as whole logical lines.

    Returns the new text, with exactly as many lines as the input, the number of physical lines
    rewritten, and the partial lines still open at the end of the text: pass those as `carry`
    with the text that follows, so that a line cut across two chunks is still completed. Text
    without interleaved tags and no carry is returned unchanged after one numpy scan for lines
    with two `<std` (the only candidates, each then checked by a regex). `raw`, when given, is
    the text as ASCII bytes.
    """
    pending: dict[int | None, str] = dict(carry or {})
    candidates = _multi_lines(text, raw)
    first = 0 if pending else _next_multi(text, candidates, 0)
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
        first = _next_multi(text, candidates, pos) if not pending else None
    out.append(text[pos:])
    return "".join(out), rewritten, pending
