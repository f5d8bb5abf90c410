"""Reading log files as text in bounded chunks of whole lines, whatever their bytes.

Logs can be hundreds of megabytes, so a file is never held whole nor split into a list of lines:
it is read in chunks that end on a newline, each decoded, normalised (CRLF, lone CR) and
demultiplexed (rank tags) on its own. Line numbers are 1-based physical line numbers of the file.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from ..errors import LogError
from . import ranks

CHUNK_BYTES = 8 << 20
SNIFF_BYTES = 64 << 10  # of a file's first chunk, read to tell its format
CARRY_CLEAN_BYTES = 64 << 10  # an unfinished line longer than this loses its NULs before it is carried


@dataclass
class Chunk:
    """A run of whole lines of a file; `first_line` is the file line number of its first line."""

    text: str
    first_line: int


@dataclass
class ReadStats:
    """What reading a file noticed, turned into warnings by the analysis."""

    bytes: int = 0
    lines: int = 0
    invalid_utf8: bool = False
    demuxed_lines: int = 0
    cut_last_line: bool = False
    notes: list[str] = field(default_factory=list)
    nul_bytes: int = 0  # NUL bytes left out of the text (a crash's zero-filled tail, a corrupted line)
    nul_lines: list[int] = field(default_factory=list)  # the first lines that held them (at most NUL_LINES_KEPT)


NUL_LINES_KEPT = 5


def _decode(raw, stats: ReadStats) -> str:
    """Bytes (any buffer) as normalised text: UTF-8 (invalid bytes replaced), CRLF and CR as LF."""
    try:
        text = str(raw, "utf-8")
    except UnicodeDecodeError:
        stats.invalid_utf8 = True
        text = str(raw, "utf-8", "replace")
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text


def _drop_nuls(buf: np.ndarray, start: int, end: int, first_line: int, stats: ReadStats) -> int:
    """Move the bytes of buf[start:end] that are not NUL together, in place, and note where NULs
    were: a NUL is no character of a log (a zero-filled tail after a crash, a corrupted line), and
    read as one it would stop the reading of the record around it. Returns the new end. A tail of
    NULs costs a few passes over each chunk read, never a copy of the tail."""
    new = buf[start:end]
    nul = new == 0
    count = int(np.count_nonzero(nul))
    if not count:
        return end
    stats.nul_bytes += count
    if len(stats.nul_lines) < NUL_LINES_KEPT:  # the lines of the first runs of NULs
        runs = np.flatnonzero(nul[1:] & ~nul[:-1]) + 1
        firsts = ([0] if nul[0] else []) + runs[:NUL_LINES_KEPT].tolist()
        for at in firsts:
            line = first_line + int(np.count_nonzero(buf[: start + at] == 10))
            if line not in stats.nul_lines and len(stats.nul_lines) < NUL_LINES_KEPT:
                stats.nul_lines.append(line)
    if count == len(new):
        return start
    kept = new[~nul]
    buf[start : start + len(kept)] = kept
    return start + len(kept)


def _last_line_end(buf: np.ndarray, start: int, end: int) -> int:
    """Just past the last newline of buf[:end] (0 if none); the bytes before `start` (the carried
    end of a line) hold none."""
    at = np.flatnonzero(buf[start:end] == 10)
    return start + int(at[-1]) + 1 if len(at) else 0


def _refuse_binary(path: str, head: np.ndarray) -> None:
    """LogError for a file whose first bytes hold a NUL before any newline (a NUL in its first line)."""
    nul = np.flatnonzero(head == 0)
    if len(nul) and not (head[: nul[0]] == 10).any():
        raise LogError(path, "binary file (a NUL byte in its first line), not a text log")


def chunks(path: str | os.PathLike, stats: ReadStats | None = None, size: int = CHUNK_BYTES) -> Iterator[Chunk]:
    """Yield the file as chunks of whole, normalised lines, and fill `stats` on the way. What is
    not a text log (missing, unreadable, empty, binary) raises LogError at the first chunk."""
    stats = stats if stats is not None else ReadStats()
    line = 1
    carry = b""
    open_lines: dict = {}  # ranks' partial lines left at the end of the previous chunk
    try:
        f = open(path, "rb")
    except OSError as exc:
        raise LogError(os.fspath(path), f"cannot be read ({exc.strerror or exc})") from None
    with f:
        regular = stat.S_ISREG(os.fstat(f.fileno()).st_mode)
        while True:
            # As much as a file still holds, up to `size` (past its end, a byte tells whether it
            # grew), and room after it for a missing last newline.
            want = min(size, max(os.fstat(f.fileno()).st_size - f.tell(), 1)) if regular else size
            buf = np.empty(len(carry) + want + 1, dtype=np.uint8)  # not zeroed: it is read into
            view = memoryview(buf)
            view[: len(carry)] = carry
            got = f.readinto(view[len(carry) : len(carry) + want])
            if not stats.bytes:  # the file's first bytes
                if not got:
                    raise LogError(os.fspath(path), "the file is empty")
                _refuse_binary(os.fspath(path), buf[: min(got, SNIFF_BYTES)])
            stats.bytes += got
            end = len(carry) + got
            if not end:
                break
            if got:
                cut = _last_line_end(buf, len(carry), end)
                if cut == 0:  # one line longer than a chunk: keep reading it, without its NULs (a
                    end = _drop_nuls(buf, 0, end, line, stats)  # zero-filled tail is never held whole)
                    carry = bytes(view[:end])
                    continue
                if end - cut > CARRY_CLEAN_BYTES:  # a long unfinished line: its NULs go now (a zero-filled tail)
                    end = _drop_nuls(buf, cut, end, line, stats)
                carry = bytes(view[cut:end])
            else:
                carry = b""
                cut = end
                if buf[end - 1] != 10:
                    stats.cut_last_line = True
                    buf[end] = 10
                    cut += 1
            text = _decode(view[:cut], stats)
            if "\x00" in text:  # rare: the bytes again, without their NULs
                cut = _drop_nuls(buf, 0, cut, line, stats)
                text = _decode(view[:cut], stats)
            if open_lines or ranks.has_tags(text):
                text, n, open_lines = ranks.demux(text, open_lines)
                stats.demuxed_lines += n
            n_lines = text.count("\n")
            yield Chunk(text, line)
            line += n_lines
            stats.lines += n_lines
            if not got:
                break
