"""DLLogger lines as NVIDIA's DLLogger prints them on stdout (the NGC TensorFlow and MXNet ResNet-50
scripts): `DLL <date> <time> - <step> key : value [unit]  key : value ...`, pairs two spaces apart."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any, TextIO

import numpy as np

TIMESTAMP = "%Y-%m-%d %H:%M:%S.%f"


def format_value(value: Any, digits: int | str | None = None) -> str:
    """A logged value: booleans as True/False; floats with `digits` decimals, or formatted with the
    format spec `digits` when it is a string, else as Python's shortest repr (`90.0`, `0.016`)."""
    if isinstance(value, bool | np.bool_):
        return "True" if value else "False"
    if isinstance(value, float | np.floating):
        if isinstance(digits, str):
            return format(float(value), digits)
        if digits is not None:
            return f"{float(value):.{digits}f}"
        return repr(float(value))
    text = str(value)
    if not text or any(c in text for c in "\r\n") or "  " in text:
        raise ValueError(f"value {text!r} cannot be logged on one line with single spaces")
    return text


def format_pairs(pairs: Iterable[tuple]) -> str:
    """`key : value [unit]` pairs joined by two spaces; a pair is (key, value[, unit[, digits]])."""
    parts = []
    for pair in pairs:
        key, value, unit, digits = (*pair, None, None)[:4]
        if not key or any(c.isspace() for c in key):
            raise ValueError(f"bad key {key!r}")
        part = f"{key} : {format_value(value, digits)}"
        if unit:
            part += f" {unit}"
        parts.append(part)
    return "  ".join(parts)


def format_step(step: str | int | tuple[int, int]) -> str:
    """`PARAMETER `, `Summary: `, `Epoch: E  ` (an int) or `Epoch: E Iteration: I  ` (a pair), with the
    separator before the first pair: one space after PARAMETER and Summary:, two after an epoch or step."""
    if isinstance(step, tuple):
        epoch, iteration = step
        return f"Epoch: {int(epoch)} Iteration: {int(iteration)}  "
    if isinstance(step, int | np.integer):
        return f"Epoch: {int(step)}  "
    if step in ("PARAMETER", "Summary:"):
        return step + " "
    raise ValueError(f"unknown step {step!r}")


def format_line(stamp: datetime, step: str | int | tuple[int, int], pairs: Iterable[tuple]) -> str:
    """One DLLogger line, without the newline."""
    return f"DLL {stamp.strftime(TIMESTAMP)} - {format_step(step)}{format_pairs(pairs)}"


class DLLogger:
    """Writes DLLogger lines to a stream (stdout by default), flushing each; `log` returns its timestamp.

    A logger that is not `enabled` (an MPI rank other than 0) writes nothing but still returns the time.
    """

    def __init__(
        self, stream: TextIO | None = None, clock: Callable[[], datetime] = datetime.now, enabled: bool = True
    ):
        self.stream = stream
        self.clock = clock
        self.enabled = enabled

    def log(self, step: str | int | tuple[int, int], pairs: Iterable[tuple]) -> datetime:
        stamp = self.clock()
        if not self.enabled:
            return stamp
        stream = self.stream if self.stream is not None else sys.stdout
        stream.write(format_line(stamp, step, pairs) + "\n")
        stream.flush()
        return stamp
