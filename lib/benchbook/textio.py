"""Reading log files as text in bounded chunks of whole lines, whatever their bytes.

Logs can be hundreds of megabytes, so a file is never held whole nor split into a list of lines:
it is read in chunks that end on a newline, each decoded, normalised (CRLF, lone CR) and
demultiplexed (rank tags) on its own. Line numbers are 1-based physical line numbers of the file.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field

from . import ranks
from .errors import LogError

CHUNK_BYTES = 8 << 20
SNIFF_BYTES = 64 << 10


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


def _decode(raw: bytes, stats: ReadStats) -> str:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        stats.invalid_utf8 = True
        text = raw.decode("utf-8", "replace")
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text


def check_readable(path: str | os.PathLike) -> None:
    """Refuse what is not a text log: missing, empty or binary files raise LogError."""
    p = os.fspath(path)
    try:
        size = os.path.getsize(p)
        with open(p, "rb") as f:
            head = f.read(8192)
    except OSError as exc:
        raise LogError(p, f"cannot be read ({exc.strerror or exc})") from None
    if size == 0:
        raise LogError(p, "the file is empty")
    if b"\x00" in head:
        raise LogError(p, "binary file (NUL bytes in its first 8 KiB), not a text log")


def head(path: str | os.PathLike, size: int = SNIFF_BYTES) -> str:
    """The first `size` bytes as normalised text, for format detection."""
    with open(path, "rb") as f:
        raw = f.read(size)
    text = _decode(raw, ReadStats())
    return ranks.demux(text)[0] if ranks.has_tags(text) else text


def chunks(path: str | os.PathLike, stats: ReadStats | None = None, size: int = CHUNK_BYTES) -> Iterator[Chunk]:
    """Yield the file as chunks of whole, normalised lines, and fill `stats` on the way."""
    stats = stats if stats is not None else ReadStats()
    line = 1
    carry = b""
    open_lines: dict = {}  # ranks' partial lines left at the end of the previous chunk
    with open(path, "rb") as f:
        while True:
            raw = f.read(size)
            stats.bytes += len(raw)
            data = carry + raw
            if not data:
                break
            if raw:
                cut = data.rfind(b"\n") + 1
                if cut == 0:  # one line longer than a chunk: keep reading it
                    carry = data
                    continue
                data, carry = data[:cut], data[cut:]
            else:
                carry = b""
                if not data.endswith(b"\n"):
                    stats.cut_last_line = True
                    data += b"\n"
            text = _decode(data, stats)
            if open_lines or ranks.has_tags(text):
                # An ASCII text has its bytes' positions (a lone CR read as LF too): demux reads them.
                text, n, open_lines = ranks.demux(text, open_lines, data if len(data) == len(text) else None)
                stats.demuxed_lines += n
            n_lines = len(ranks.index(text)[1])  # the scan of this chunk reads the same index
            yield Chunk(text, line)
            line += n_lines
            stats.lines += n_lines
            if not raw:
                break
