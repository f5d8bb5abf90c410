"""Reading log files as text in bounded chunks of whole lines, whatever their bytes.

Logs can be hundreds of megabytes, so a file is never held whole nor split into a list of lines:
it is read in chunks that end on a newline, each decoded, normalised (CRLF, lone CR, NULs) and its
rank tags taken out (`ranks`) on its own. Line numbers are the file's, from 1. A member of an archive
(`archives.ArchivePath`) is read the same way, streamed from the archive."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from ..errors import LogError
from . import ranks
from .archives import ArchivePath

CHUNK_BYTES = 8 << 20
LINE_BYTES = 8 << 20  # a line read this far without its end is left out (a binary blob, a progress bar)
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
    wild_ranks: list[int] = field(default_factory=list)  # lines whose tag held a rank above ranks.MAX_RANK

    @classmethod
    def of(cls, text: str, first_line: int = 1) -> Chunk:
        """The chunk of a text of whole lines: its rank tags taken out, its newlines found by numpy."""
        text, starts, tag_ranks, wild = ranks.untag(text)
        wide = not text.isascii()  # its code points as numpy reads them: a byte each, or four
        codes = np.frombuffer(text.encode("utf-32-le" if wide else "ascii"), dtype=np.uint32 if wide else np.uint8)
        ends = np.append(np.flatnonzero(codes == 10), len(text))
        line_ranks = np.full(len(ends), -1, dtype=np.int64)
        at = np.searchsorted(ends, starts)
        line_ranks[at] = tag_ranks
        return cls(text, first_line, ends, line_ranks, (first_line + at[wild]).tolist() if wild.any() else [])


@dataclass
class ReadStats:
    """What reading a file noticed, turned into warnings by the analysis."""

    bytes: int = 0
    invalid_utf8: bool = False
    cut_last_line: bool = False
    nul_bytes: int = 0  # NUL bytes left out of the text (a crash's zero-filled tail, a corrupted line)
    nul_lines: list[int] = field(default_factory=list)  # the first lines that held them (at most NUL_LINES_KEPT)
    long_lines: list[int] = field(default_factory=list)  # lines left out: longer than a chunk (the first few)
    long_count: int = 0
    wild_rank_lines: list[int] = field(default_factory=list)  # lines whose rank tag was out of range (first few)
    wild_rank_count: int = 0
    fault: str = ""  # why an archive member's reading stopped before its end (damaged, a cap passed)

    def note(self, name: str, lines: list[int]) -> None:
        """Count `lines` in `<name>_count` and keep the first NUL_LINES_KEPT in `<name>_lines`."""
        setattr(self, f"{name}_count", getattr(self, f"{name}_count") + len(lines))
        kept = getattr(self, f"{name}_lines")
        kept.extend(lines[: NUL_LINES_KEPT - len(kept)])


def _normalise(raw: bytes, first_line: int, stats: ReadStats) -> str:
    """Bytes as text: NULs left out, CRLF and CR as LF, UTF-8 (invalid bytes replaced). CR is
    normalised in the bytes: in UTF-8 no other character holds its byte."""
    raw = _drop_nuls(raw, first_line, stats)
    if b"\r" in raw:
        raw = raw.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    try:
        return str(raw, "utf-8")
    except UnicodeDecodeError:
        stats.invalid_utf8 = True
        return str(raw, "utf-8", "replace")


def _drop_nuls(raw: bytes, first_line: int, stats: ReadStats) -> bytes:
    """The bytes without their NULs (a crash's zero-filled tail, a corrupted line: read as a
    character, one would stop the reading of the record around it), noting them in `stats`."""
    count = raw.count(0)
    stats.nul_bytes += count
    at = raw.find(0) if count else -1
    while at >= 0 and len(stats.nul_lines) < NUL_LINES_KEPT:  # the first NUL of each line, for a few lines
        line = first_line + _lines(raw, at)
        if line not in stats.nul_lines:
            stats.nul_lines.append(line)
        end = _line_end(raw, at)
        at = raw.find(0, end) if end >= 0 else -1
    return raw.replace(b"\0", b"") if count else raw


def _lines(raw: bytes, end: int) -> int:
    """The line ends (LF, CR, CRLF) in `raw` before `end`."""
    return raw.count(b"\n", 0, end) + raw.count(b"\r", 0, end) - raw.count(b"\r\n", 0, end)


def _line_end(raw: bytes, start: int = 0) -> int:
    """Where the first line end (LF or CR) from `start` is; -1 where none."""
    nl, cr = raw.find(b"\n", start), raw.find(b"\r", start)
    return cr if nl < 0 or 0 <= cr < nl else nl


def _cut(raw: bytes) -> int:
    """Where the whole lines of bytes read end: after the last LF or CR, but not after a CR that
    ends them (its LF may come with the next read)."""
    nl = raw.rfind(b"\n")
    return max(nl, raw.rfind(b"\r", nl + 1, len(raw) - 1)) + 1


def _read(f, n: int, stats: ReadStats) -> bytes:
    """Up to `n` bytes of an archive member; none once its archive fails after its first bytes, the
    fault noted (before them, LogError)."""
    try:
        data = f.read(n)
        if data or not f.fault:
            return data
        raise f.fault  # the member's end came from a fault
    except LogError as exc:
        if not stats.bytes:
            raise
        stats.fault = f"{exc.reason}: the lines before are read, the rest of the member is not"
        return b""


def chunks(path: str | os.PathLike | ArchivePath, stats: ReadStats | None = None, size: int = CHUNK_BYTES,
           longest: int = LINE_BYTES) -> Iterator[Chunk]:
    """Yield the file as chunks of whole, normalised lines, and fill `stats` on the way. What is
    not a text log (missing, unreadable, empty, binary) raises LogError at the first chunk. A line
    is left out (noted in `stats`, read as an empty line) once `longest` bytes of it are read
    without its end: what is held stays under 2 * `size` + `longest`, whatever the file. A member
    whose archive fails (damaged, cut short, a cap passed) after its first bytes ends there, the
    fault noted in `stats`."""
    stats = stats if stats is not None else ReadStats()
    line, carry, open_lines = 1, b"", {}  # the unfinished last line read, ranks' partial lines left open
    skipping = False  # in a line longer than `size`, until its end
    member = isinstance(path, ArchivePath)
    try:
        f = path.open("rb") if member else open(path, "rb")
    except OSError as exc:
        raise LogError(str(path), f"cannot be read ({exc.strerror or exc})") from None
    with f:
        regular = not member and stat.S_ISREG(os.fstat(f.fileno()).st_mode)
        while True:
            # As much as a file still holds, up to `size`, and a byte more (that tells its end, or that
            # it grew): f.read(n) allocates n bytes first, a chunk's worth for each small log otherwise.
            left = os.fstat(f.fileno()).st_size - f.tell() if regular else \
                path.size - stats.bytes if member and path.size is not None else size
            data = _read(f, min(size, max(left, 0) + 1), stats) if member else f.read(min(size, max(left, 0) + 1))
            if not stats.bytes:  # the file's first bytes: none, or a NUL in its first line, is no text log
                if not data:
                    raise LogError(str(path), "the file is empty")
                nul = data.find(0, 0, SNIFF_BYTES)
                if nul >= 0 and _line_end(data[:nul]) < 0:
                    raise LogError(str(path), "binary file (a NUL byte in its first line), not a text log")
            stats.bytes += len(data)
            if skipping:  # the rest of a long line, up to its end (kept: the line is read as an empty one)
                end = _line_end(data)
                if end < 0 and data:
                    continue
                data, skipping = data[max(end, 0):], False
            raw = carry + data
            cut = _cut(raw) if data else len(raw)
            raw, carry = raw[:cut], raw[cut:]
            if raw:  # (else a line longer than a chunk: keep reading it)
                if not data:  # the file's end: its last line has no newline
                    stats.cut_last_line = True
                    raw += b"\n"
                text = _normalise(raw, line, stats)
                if open_lines or "]<std" in text:
                    text, open_lines = ranks.demux(text, open_lines)
                chunk = Chunk.of(text, line)
                line += len(chunk.ends) - 1
                if chunk.wild_ranks:
                    stats.note("wild_rank", chunk.wild_ranks)
                yield chunk
            if not cut or len(carry) > CARRY_CLEAN_BYTES:  # a line longer than a chunk, or a long unfinished
                carry = _drop_nuls(carry, line, stats)  # one, loses its NULs now (a zero-filled tail is
                # never held whole)
            if len(carry) >= longest:
                stats.note("long", [line])
                carry, skipping = b"", True
            if not data:
                break
