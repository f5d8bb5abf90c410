"""The caps on what an archive may make us read, and the metered streams that enforce them as the
bytes come (`archives` reads every member through a `Meter`)."""

from __future__ import annotations

import io
import lzma
import math
import os
import tarfile
import zipfile
import zlib
from dataclasses import dataclass

from ..errors import BenchbookError, LogError

SEP = "!"
PIECE = 64 << 10  # read from a decompressor at a time
RATIO_FROM = 1 << 20  # the ratio is checked once this much is inflated: a small file's says nothing
# What reading a damaged archive raises, from the standard library's modules.
DAMAGED = (OSError, EOFError, zlib.error, lzma.LZMAError, tarfile.TarError, zipfile.BadZipFile, ValueError)


class Refused(LogError):
    """A cap passed: what the member held is not read (a damaged member's lines before the fault are)."""


@dataclass(frozen=True)
class Limits:
    """The caps on what an archive may make us read (defaults: real logs compress 7-16 times)."""

    max_bytes: int = 4 << 30
    max_ratio: float = 200.0
    max_members: int = 10_000

    @classmethod
    def from_env(cls) -> Limits:
        """The defaults, each overridden by its BENCHBOOK_ARCHIVE_* variable (a positive number)."""
        values = {}
        for name, kind_ in (("max_bytes", int), ("max_ratio", float), ("max_members", int)):
            var = f"BENCHBOOK_ARCHIVE_{name.upper()}"
            raw = os.environ.get(var)
            if raw is None:
                continue
            try:
                values[name] = kind_(raw)
            except ValueError:
                values[name] = 0
            if not 0 < values[name] < math.inf:
                raise BenchbookError(f"{var}={raw!r}: expected a positive {'whole ' if kind_ is int else ''}number")
        return cls(**values)


class Meter(io.RawIOBase):
    """A stream counting the bytes read through it, refusing to read on (naming `member`) past
    `limits`: more than max_bytes since `start` (unless `sized`: a tar's members have exact sizes,
    checked from their headers), or more than max_ratio times the bytes counted `behind`."""

    def __init__(self, stream, where: str, limits: Limits | None = None, behind: Meter | None = None,
                 sized: bool = False):
        self.stream, self.where, self.limits, self.behind, self.sized = stream, where, limits, behind, sized
        self.count = self.start = 0
        self.member = ""
        self.fault: LogError | None = None

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:  # a zip member is (a zip inside it is read from its end); a tar's is not
        return isinstance(self.stream, zipfile.ZipExtFile) and self.stream.seekable()

    def seek(self, offset: int, whence: int = 0) -> int:
        return self.stream.seek(offset, whence)

    def tell(self) -> int:
        return self.stream.tell()

    def readinto(self, buffer) -> int:
        if self.fault:
            raise self.fault
        try:  # in pieces: a tar's member read past a cut loses the whole read
            data = self.stream.read(min(len(buffer), PIECE))
        except DAMAGED as exc:  # an end first (what a buffered read got stays its), the fault at the next read
            self.fault = LogError(self._named(), f"the archive is damaged ({type(exc).__name__}: {exc})")
            if not self.count:
                raise self.fault from None
            return 0
        buffer[: len(data)] = data
        self.count += len(data)
        if self.limits:
            self.check()
        return len(data)

    def check(self) -> None:
        limits = self.limits
        if not self.sized and self.count - self.start > limits.max_bytes:
            raise Refused(self._named(), f"inflates past {limits.max_bytes} bytes, the cap "
                                          "(BENCHBOOK_ARCHIVE_MAX_BYTES): refused")
        if self.behind is not None and self.count > RATIO_FROM and self.count > limits.max_ratio * self.behind.count:
            raise Refused(self._named(), f"inflates more than {limits.max_ratio:g} times its compressed size "
                                          "(BENCHBOOK_ARCHIVE_MAX_RATIO): refused as a bomb")

    def _named(self) -> str:
        return f"{self.where}{SEP}{self.member}" if self.member else self.where
