"""Line layouts: the per-step lines of a log, declared as pieces and read as columns.

A `Layout` describes a record line as a sequence of pieces: literal text, `Int` (digits), `Num`
(a logged number: digits, `.`, `e`, `E`, `+`, `-`), `Stamp` (a `YYYY-MM-DD HH:MM:SS[.,]f`
date-time) and `Seek` (further along the line, a literal and more pieces, which may be missing).
It is compiled to one regular expression that begins with its first literal, so that the regex
engine skips in C from one candidate line to the next; the pieces before that literal (a
timestamp of fixed width) are captured by a lookbehind. `records` matches it over a chunk and
converts each captured column at once with numpy: `int64`, `float64` (as `float()` reads each
token, NaN where it is none: `1.2.3`) and `datetime64[us]` (seconds since the epoch, UTC; NaN
where the digits are no date: 2021-02-30).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ..assemble import seconds_array

_INT_LIMIT = 10**18  # an Int of more digits is not a record's (an iteration, an epoch)


@dataclass(frozen=True)
class Int:
    """One or more digits (below 10**18), as an int64 column named `name` (-1 where missing)."""

    name: str


@dataclass(frozen=True)
class Num:
    """A logged number (`[0-9.eE+-]+`), as a float column named `name`, read as `float()` does
    (NaN where it is not a number, `1.2.3` say)."""

    name: str


@dataclass(frozen=True)
class Stamp:
    """`YYYY-MM-DD HH:MM:SS` with an optional `.` or `,` fraction: seconds since the epoch (UTC).
    `fraction` digits exactly, where the stamp stands before the layout's first literal (a
    lookbehind has a fixed width); any number of them (or none) elsewhere."""

    name: str = "timestamp"
    fraction: int | None = None

    def regex(self) -> str:
        tail = r"(?:[.,][0-9]+)?" if self.fraction is None else rf"[.,][0-9]{{{self.fraction}}}"
        return rf"[0-9]{{4}}-[0-9]{{2}}-[0-9]{{2}} [0-9]{{2}}:[0-9]{{2}}:[0-9]{{2}}{tail}"


@dataclass(frozen=True)
class Seek:
    """Further along the same line, `text` then `pieces`; their fields are missing (-1, NaN) on
    the lines where they are not found. Whether a line is a record does not depend on them."""

    text: str
    pieces: tuple

    def __init__(self, text: str, *pieces) -> None:
        object.__setattr__(self, "text", text)
        object.__setattr__(self, "pieces", pieces)


def _pattern(pieces) -> str:
    """The regex of a sequence of pieces, a named group a field."""
    out = []
    for piece in pieces:
        if isinstance(piece, str):
            out.append(re.escape(piece))
        elif isinstance(piece, Int):
            out.append(f"(?P<{piece.name}>[0-9]+)")
        elif isinstance(piece, Num):
            out.append(f"(?P<{piece.name}>[0-9.eE+-]+)")
        elif isinstance(piece, Stamp):
            out.append(f"(?P<{piece.name}>{piece.regex()})")
        elif isinstance(piece, Seek):
            out.append(f"(?:[^\\n]*?{re.escape(piece.text)}{_pattern(piece.pieces)})?")
        else:
            raise TypeError(f"not a layout piece: {piece!r}")
    return "".join(out)


def _fields(pieces):
    for piece in pieces:
        if isinstance(piece, Seek):
            yield from _fields(piece.pieces)
        elif not isinstance(piece, str):
            yield piece


class Layout:
    """A step line as pieces: `Layout(Stamp(fraction=3), ":INFO: Epoch[", Int("epoch"), ...)`."""

    def __init__(self, *pieces) -> None:
        for piece in pieces:  # a record is read within its line, and the scan relies on it
            text = piece.text if isinstance(piece, Seek) else piece
            if isinstance(text, str) and "\n" in text:
                raise ValueError(f"a Layout reads one line: {text!r} holds a newline")
        self.pieces = pieces
        self.first = next(i for i, p in enumerate(pieces) if isinstance(p, str))
        self.fields = tuple(_fields(pieces))

    @property
    def anchor(self) -> str:
        """The first literal: what the regex begins with."""
        return self.pieces[self.first]

    @cached_property
    def lead(self) -> int:
        """Characters of the record before its first literal (a lookbehind's fixed width)."""
        before = self.pieces[: self.first]
        sample = "".join("0000-00-00 00:00:00" + ("." + "0" * p.fraction if p.fraction else "")
                         if isinstance(p, Stamp) else p for p in before)
        if any(not isinstance(p, (str, Stamp)) or (isinstance(p, Stamp) and p.fraction is None) for p in before):
            raise ValueError("before a Layout's first literal stand only literals and Stamps of fixed fraction")
        return len(sample)

    @cached_property
    def regex(self) -> re.Pattern:
        """One outer group: the first literal, a lookbehind that captures what stands before it,
        then the rest."""
        anchor = re.escape(self.anchor)
        behind = f"(?<={_pattern(self.pieces[: self.first])}{anchor})" if self.first else ""
        return re.compile(f"({anchor}{behind}{_pattern(self.pieces[self.first + 1 :])})")


def split(pattern: re.Pattern, text: str) -> tuple[np.ndarray, np.ndarray, list[list]]:
    """(starts, ends, columns of the inner groups) of every match of a pattern that is one outer
    group, from one `pattern.split`: the lengths of the text between matches give their
    positions, and no match object is made a line."""
    parts = pattern.split(text)
    step = pattern.groups + 1
    n = (len(parts) - 1) // step
    if n == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), [[] for _ in range(2, step)]
    gaps = np.fromiter(map(len, parts[0 : len(parts) - 1 : step]), dtype=np.int64, count=n)
    sizes = np.fromiter(map(len, parts[1::step]), dtype=np.int64, count=n)
    ends = np.cumsum(gaps + sizes)
    return ends - sizes, ends, [parts[i::step] for i in range(2, step)]


def records(layout: Layout, text: str) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """(start positions, field columns) of every line of `text` that holds a record of `layout`."""
    starts, _, groups = split(layout.regex, text)
    starts -= layout.lead
    values = {name: groups[index - 2] for name, index in layout.regex.groupindex.items()}
    columns, keep = {}, np.ones(len(starts), dtype=bool)
    for field in layout.fields:
        if isinstance(field, Int):
            columns[field.name], ok = integers(values[field.name])
            keep &= ok
        elif isinstance(field, Num):
            columns[field.name] = floats(values[field.name])
        else:
            columns[field.name] = seconds_array(values[field.name])
    if not keep.all():
        starts, columns = starts[keep], {k: v[keep] for k, v in columns.items()}
    return starts, columns


def integers(tokens: list[str | None]) -> tuple[np.ndarray, np.ndarray]:
    """(int64 column, whether each is a record's) of digit tokens: -1 where missing (None), not a
    record's where past 10**18."""
    try:
        column = np.array([t or -1 for t in tokens], dtype=np.int64)
        return column, (column < _INT_LIMIT)
    except OverflowError:
        values = [int(t) if t else -1 for t in tokens]
        ok = np.array([v < _INT_LIMIT for v in values], dtype=bool)
        return np.array([v if k else 0 for v, k in zip(values, ok.tolist(), strict=True)], dtype=np.int64), ok


def floats(tokens: list[str | None]) -> np.ndarray:
    """float64 column of number tokens, as `float()` reads each; NaN where missing or not a number."""
    try:
        return np.array([t or "nan" for t in tokens], dtype=float)
    except ValueError:
        return np.array([_float(t) for t in tokens], dtype=float)


def _float(token: str | None) -> float:
    try:
        return float(token) if token else math.nan
    except ValueError:
        return math.nan
