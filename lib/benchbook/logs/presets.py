"""What a format's named rules are (`Preset`) and the averaging methods they may use (`METHODS`).

Kept apart from `rules.Rule` (a pydantic model) and the rules' numpy arithmetic, so that listing the
formats and their rules (`benchbook formats`, the argument parser) imports neither.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .rules import Rule

METHODS = {
    "mean": "arithmetic mean of the logged rates",
    "median": "median of the logged rates",
    "harmonic": "images / time implied by the logged rates (step-weighted harmonic mean)",
    "elapsed": "images / wall-clock time between the first and last measured records' timestamps",
    "last": "the last measured record's rate (a running mean's final value)",
    "epochs": "harmonic mean over the run's epochs after its first (the only one if there is one) of each "
              "epoch's rate: its logged per-epoch rate, else images / time of the measured records from the "
              "first to the epoch's end",
}


@dataclass(frozen=True)
class Preset:
    """A named rule of a format: which records it reads, which are warm-up, how it averages, and the
    script whose arithmetic it is (repository, path, commit).

    mark_warmup : (RunRecords) -> boolean array of the warm-up records; or None and `skip`.
    select : (RunRecords) -> boolean array of the records the rule reads (None: every record); the
        others are neither warm-up nor measured.
    skip : the first N records it reads are warm-up (where mark_warmup is None).
    window : at most this many records after the warm-up.
    decimals : each rate is rounded to this many decimals before averaging, and so is the result.
    across_ranks : each record's rate is first the median of that record (epoch, iteration) over
        every rank that logged it.
    """

    name: str
    method: str
    warmup: str
    source: str
    mark_warmup: Callable[[Any], Any] | None = None
    select: Callable[[Any], Any] | None = None
    skip: int | None = None
    window: int | None = None
    decimals: int | None = None
    across_ranks: bool = False

    def describe(self, rule: Rule) -> str:
        """The preset as `rule` overrides it, in words, with its source."""
        text = rule.describe(self.method, self.warmup)
        if self.window and not rule.window:
            head, _, tail = text.partition("; ")
            text = f"{head}, then use at most {self.window} records; {tail}"
        extra = []
        if self.across_ranks:
            extra.append("each record the median over the ranks that logged it")
        if self.decimals is not None:
            extra.append(f"rates and result rounded to {self.decimals} decimals")
        if extra:
            text += f" ({'; '.join(extra)})"
        return f"{self.name}: {text} [{self.source}]"

