"""NVIDIA DLLogger stdout lines, shared by the formats that print them.

A line reads `DLL <date> <time> - <step> key : value [unit]  key : value ...`, where the step is
`PARAMETER`, `()`, `(epoch)`, `(epoch, step)`, `Epoch: E Iteration: I`, `Epoch: E` or `Summary:`.
Units come and go between container versions (`images/s`, `[images/s]`, none), so values are
read up to the unit and the unit is dropped.
"""

from __future__ import annotations

import re
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # a rule reads one run; the analysis imports run.py, listing the formats does not
    from ..rules import Run


# `DLL` then the timestamp, then the step, then the key-values. A literal start keeps it fast.
LINE = re.compile(
    r"DLL (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?) - "
    r"(PARAMETER|\(\)|\((\d+)\)|\((\d+), (\d+)\)|Summary:|Epoch: (\d+)(?: Iteration: (\d+))?|Iteration: (\d+))"
    r" ?([^\n]*)"
)
# key : value, with an optional unit that is not itself the next key.
_KV = re.compile(r"(\S+) : (\S+)(?: (?!\S+ : )(\[[^\]]*\]|[A-Za-z%/]+(?:/[A-Za-z]+)?))?")


def values(rest: str) -> dict[str, str]:
    """The key-value pairs of a DLLogger line's body, values as the raw strings (units dropped)."""
    return {k: v for k, v, _ in _KV.findall(rest)}


def parameters(rest: str) -> dict[str, str]:
    """The pairs of a PARAMETER line, whose values may hold single spaces (pairs are 2-space apart)."""
    out: dict[str, str] = {}
    rest = rest.strip()
    # Runs of two or more spaces: a plain split on two, when spaces are the only white space.
    parts = rest.split("  ") if rest.isprintable() else re.split(r"\s{2,}", rest)
    for part in parts:
        key, sep, value = part.partition(" : ")
        if sep:  # interned: pasted runs repeat the same names and values (10**6 runs, 10**7 strings)
            out[sys.intern(key.strip())] = sys.intern(value.strip())
    return out


def step_of(m: re.Match) -> tuple[str, int | None, int | None]:
    """(kind, epoch, iteration) of a LINE match; kind is parameter, summary, epoch or step."""
    step = m.group(2)
    if step == "PARAMETER":
        return "parameter", None, None
    if step in ("()", "Summary:"):
        return "summary", None, None
    if m.group(3) is not None:
        return "epoch", int(m.group(3)), None
    if m.group(4) is not None:
        return "step", int(m.group(4)), int(m.group(5))
    if m.group(6) is not None:
        return ("step" if m.group(7) is not None else "epoch"), int(m.group(6)), (
            int(m.group(7)) if m.group(7) is not None else None
        )
    return "step", None, int(m.group(8))


def truthy(value: str | None) -> bool | None:
    """A logged boolean (`True`, `1`, `yes`...) as a bool; None when absent or not a boolean."""
    if value is None:
        return None
    v = value.strip().strip("'\"").lower()
    if v in ("true", "1", "yes", "on"):
        return True
    if v in ("false", "0", "no", "off", "none"):
        return False
    return None


def before_warmup_steps(run: Run):
    """The DLLogger scripts' own warm-up rule: records before the run's `warmup_steps` (its
    PARAMETER line) are warm-up; the scripts' summaries average the records from that step on."""
    return run["iteration"] < int(run.meta.get("warmup_steps") or 0)
