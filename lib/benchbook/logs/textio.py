"""Reading log files as text in bounded chunks of whole lines, whatever their bytes.

Logs can be hundreds of megabytes, so a file is never held whole nor split into a list of lines:
it is read in chunks that end on a newline, each decoded, normalised (CRLF, lone CR, NULs) and its
rank tags taken out on its own. Line numbers are the file's, from 1. A member of an archive
(`archives.ArchivePath`) is read the same way, streamed from the archive.

Rank tags of `mpirun --tag-output` (`[1,3]<stdout>:`): `demux` undoes the interleaving of ranks'
partial lines, then `untag` takes the tags out, keeping each line's rank. Another rank's piece can
follow a partial line on the same physical line, but every newline completes one rank's line (that
of its last piece), so `demux` keeps the line count, and every line the number of the line that
completed it."""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from ..core import userfiles
from ..errors import LogError
from .archives import ArchivePath

CHUNK_BYTES = 8 << 20
LINE_BYTES = 8 << 20  # a line read this far without its end is left out (a binary blob, a progress bar)
SNIFF_BYTES = 64 << 10  # of a file's first chunk, read to tell its format
CARRY_CLEAN_BYTES = 64 << 10  # an unfinished line longer than this loses its NULs before it is carried
NUL_LINES_KEPT = 5  # the lines of a file's first NULs noted


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
    # rank -> the pieces of its partial line, joined when a line completes it: a piece added to a
    # string copied the whole partial line, quadratic in a rank that never closes one (bench_ranks.py)
    pending: dict[int | None, list[str]] = {rank: [piece] for rank, piece in (carry or {}).items()}
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
                pending.setdefault(rank, []).append(text[last : m.start()])
            rank, last = m.group(1) and int(m.group(1)), m.end()
        line = "".join(pending.pop(rank, ())) + text[last:end]
        out.append((line if rank is None else f"[1,{rank}]<stdout>:{line}") + text[end : end + 1])
        pos = end + 1
    left = {rank: "".join(pieces) for rank, pieces in pending.items()}
    if not out:
        return text, left
    out.append(text[pos:])
    return "".join(out), left


@dataclass
class Chunk:
    """Whole lines of a file, their rank tags taken out: `first_line` is the file line number of
    the first, `ends` where each line ends (its newline; the text's end for the text after the
    last), `ranks` the rank whose tag opened each line (-1: none did)."""

    text: str
    first_line: int
    ends: np.ndarray
    ranks: np.ndarray
    wild_ranks: list[int] = field(default_factory=list)  # lines whose tag held a rank above MAX_RANK

    @classmethod
    def of(cls, text: str, first_line: int = 1) -> Chunk:
        """The chunk of a text of whole lines: its rank tags taken out, its newlines found by numpy."""
        text, starts, tag_ranks, wild = untag(text)
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


def _check_head(path, data: bytes) -> None:
    """The file's first bytes: none, or a NUL in its first line, is no text log (LogError)."""
    if not data:
        raise LogError(str(path), "the file is empty")
    nul = data.find(0, 0, SNIFF_BYTES)
    if nul >= 0 and _line_end(data[:nul]) < 0:
        raise LogError(str(path), "binary file (a NUL byte in its first line), not a text log")


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
        f = path.open("rb") if member else userfiles.open_regular(path)  # (a FIFO, /proc/kmsg: never read)
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
            if not stats.bytes:
                _check_head(path, data)
            stats.bytes += len(data)
            if skipping:  # the rest of a long line, up to its end (kept: the line is read as an empty one)
                end = _line_end(data)
                if end < 0 and data:
                    continue
                data, skipping = data[max(end, 0):], False
            raw = carry + data
            # The whole lines read end after the last LF or CR, but not after a CR that ends them (its LF may
            # come with the next read); at the file's end, all of it.
            nl = raw.rfind(b"\n")
            cut = max(nl, raw.rfind(b"\r", nl + 1, len(raw) - 1)) + 1 if data else len(raw)
            raw, carry = raw[:cut], raw[cut:]
            if raw:  # (else a line longer than a chunk: keep reading it)
                if not data:  # the file's end: its last line has no newline
                    stats.cut_last_line = True
                    raw += b"\n"
                text = _normalise(raw, line, stats)
                if open_lines or "]<std" in text:
                    text, open_lines = demux(text, open_lines)
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
