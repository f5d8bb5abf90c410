"""Reading log files as text in bounded chunks of whole lines, whatever their bytes.

Logs can be hundreds of megabytes, so a file is never held whole nor split into a list of lines:
it is read in chunks that end on a newline, each decoded, normalised (CRLF, lone CR, NULs) and its
rank tags taken out (`ranks`) on its own. Line numbers are the file's, from 1."""

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
NUL_LINES_KEPT = 5  # the lines of a file's first NULs noted


@dataclass
class Chunk:
    """Whole lines of a file, their rank tags taken out: `first_line` is the file line number of
    the first, `ends` where each line ends (its newline; the text's end for the text after the
    last), `ranks` the rank whose tag opened each line (-1: none did)."""

    text: str
    first_line: int
    ends: np.ndarray
    ranks: np.ndarray

    @classmethod
    def of(cls, text: str, first_line: int = 1) -> Chunk:
        """The chunk of a text of whole lines: its rank tags taken out, its newlines found by numpy."""
        text, starts, tag_ranks = ranks.untag(text)
        wide = not text.isascii()  # its code points as numpy reads them: a byte each, or four
        codes = np.frombuffer(text.encode("utf-32-le" if wide else "ascii"), dtype=np.uint32 if wide else np.uint8)
        ends = np.append(np.flatnonzero(codes == 10), len(text))
        line_ranks = np.full(len(ends), -1, dtype=np.int64)
        line_ranks[np.searchsorted(ends, starts)] = tag_ranks
        return cls(text, first_line, ends, line_ranks)


@dataclass
class ReadStats:
    """What reading a file noticed, turned into warnings by the analysis."""

    bytes: int = 0
    invalid_utf8: bool = False
    cut_last_line: bool = False
    nul_bytes: int = 0  # NUL bytes left out of the text (a crash's zero-filled tail, a corrupted line)
    nul_lines: list[int] = field(default_factory=list)  # the first lines that held them (at most NUL_LINES_KEPT)


def _decode(raw: bytes, stats: ReadStats) -> str:
    """Bytes as normalised text: UTF-8 (invalid bytes replaced), CRLF and CR as LF."""
    try:
        text = str(raw, "utf-8")
    except UnicodeDecodeError:
        stats.invalid_utf8 = True
        text = str(raw, "utf-8", "replace")
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


def _drop_nuls(raw: bytes, first_line: int, stats: ReadStats) -> bytes:
    """The bytes without their NULs (a crash's zero-filled tail, a corrupted line: read as a
    character, one would stop the reading of the record around it), noting them in `stats`."""
    count = raw.count(0)
    stats.nul_bytes += count
    at = raw.find(0) if count else -1
    while at >= 0 and len(stats.nul_lines) < NUL_LINES_KEPT:  # the first NUL of each line, for a few lines
        line = first_line + raw.count(b"\n", 0, at)
        if line not in stats.nul_lines:
            stats.nul_lines.append(line)
        end = raw.find(b"\n", at)
        at = raw.find(0, end) if end >= 0 else -1
    return raw.replace(b"\0", b"") if count else raw


def chunks(path: str | os.PathLike, stats: ReadStats | None = None, size: int = CHUNK_BYTES) -> Iterator[Chunk]:
    """Yield the file as chunks of whole, normalised lines, and fill `stats` on the way. What is
    not a text log (missing, unreadable, empty, binary) raises LogError at the first chunk."""
    stats = stats if stats is not None else ReadStats()
    line, carry, open_lines = 1, b"", {}  # the unfinished last line read, ranks' partial lines left open
    try:
        f = open(path, "rb")
    except OSError as exc:
        raise LogError(os.fspath(path), f"cannot be read ({exc.strerror or exc})") from None
    with f:
        regular = stat.S_ISREG(os.fstat(f.fileno()).st_mode)
        while True:
            # As much as a file still holds, up to `size`, and a byte more (that tells its end, or that
            # it grew): f.read(n) allocates n bytes first, a chunk's worth for each small log otherwise.
            left = os.fstat(f.fileno()).st_size - f.tell() if regular else size
            data = f.read(min(size, max(left, 0) + 1))
            if not stats.bytes:  # the file's first bytes: none, or a NUL in its first line, is no text log
                if not data:
                    raise LogError(os.fspath(path), "the file is empty")
                nul = data.find(0, 0, SNIFF_BYTES)
                if nul >= 0 and data.find(b"\n", 0, nul) < 0:
                    raise LogError(os.fspath(path), "binary file (a NUL byte in its first line), not a text log")
            stats.bytes += len(data)
            raw = carry + data
            cut = raw.rfind(b"\n") + 1 if data else len(raw)
            raw, carry = raw[:cut], raw[cut:]
            if not raw or len(carry) > CARRY_CLEAN_BYTES:  # a line longer than a chunk, or a long unfinished
                carry = _drop_nuls(carry, line + raw.count(b"\n"), stats)  # one, loses its NULs now (a
                # zero-filled tail is never held whole)
            if raw:  # (else one line longer than a chunk: keep reading it)
                if not data:  # the file's end: its last line has no newline
                    stats.cut_last_line = True
                    raw += b"\n"
                text = _decode(_drop_nuls(raw, line, stats), stats)
                if open_lines or "]<std" in text:
                    text, open_lines = ranks.demux(text, open_lines)
                chunk = Chunk.of(text, line)
                line += len(chunk.ends) - 1
                yield chunk
            if not data:
                break
