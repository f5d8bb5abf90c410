"""The rule that turns a run's records into one throughput, visible and changeable.

Two objects, one module (standard library only: the CLI's argument parser and `benchbook formats`
import it without numpy, pandas or pydantic):

- `NamedRule`: a rule a format declares in its own module (`LogFormat.rules`, its default, `nvidia`,
  first): the arithmetic of the script that printed a published number, with that script's source.
  `nvidia` is NVIDIA's script; `dlperf` Oneflow-Inc/DLPerf's extract scripts; `perf` PaddlePaddle's.
- `Rule`: what a user chose (`--rule`, `--skip-records`, `--window`, `--method`, `--tolerance`, and
  the notebook parameters of the same names), validated once, here, on construction: `RuleError`
  names the field. `Rule.resolve(format)` gives the format's named rule with the user's parts put in
  place of its own: the one frozen object the analysis applies and `NamedRule.describe` puts in words.
  The DLPerf MXNet tables, for instance, are `Rule(name="dlperf")`, and `Rule(name="dlperf",
  window=50)` the same on half the records.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import RuleError

DEFAULT_RULE = "nvidia"
DEFAULT_TOLERANCE = 0.03
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
class NamedRule:
    """A named rule of a format: which records it reads, which are warm-up, how it averages, and the
    script whose arithmetic it is (repository, path, commit).

    mark_warmup : (run.Run: one run) -> boolean array over its records (`run[name]`): the warm-up; or None.
    select : (run.Run) -> boolean array of the records the rule reads (None: every record); the
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

    def describe(self) -> str:
        """The rule in words, with its source: the `rule` column of every run it was applied to."""
        window = f", then use at most {self.window} records" if self.window else ""
        extra = []
        if self.across_ranks:
            extra.append("each record the median over the ranks that logged it")
        if self.decimals is not None:
            extra.append(f"rates and result rounded to {self.decimals} decimals")
        extra_text = f" ({'; '.join(extra)})" if extra else ""
        return f"{self.name}: skip {self.warmup}{window}; {METHODS[self.method]}{extra_text} [{self.source}]"


def _whole(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True)
class Rule:
    """How to recompute a run's throughput, as a user chose it; None leaves a part to the format's
    named rule. Every field is checked on construction (RuleError names it)."""

    name: str | None = None  # the format's named rule to start from; None: its default (nvidia)
    skip_records: int | None = None  # leading records of each run the analysis skips as warm-up
    window: int | None = None  # records to use after the warm-up (all if unset)
    method: str | None = None  # how to average: one of METHODS
    tolerance: float = DEFAULT_TOLERANCE  # relative gap to the reported value that earns a warning

    FIELDS = {  # what each part takes, in words: the CLI's and the notebooks' messages
        "name": "a format's named rule (benchbook formats), or None for each format's default",
        "skip_records": "a whole number >= 0 (records skipped as warm-up; not the script's own --warmup_steps), "
                        "or None for the rule's own",
        "window": "a whole number >= 1 (records used after the warm-up), or None for all",
        "method": f"one of {', '.join(METHODS)}, or None for the rule's own",
        "tolerance": "a number > 0 (relative gap to the reported value that warns)",
    }

    def __post_init__(self) -> None:
        ok = {
            "name": self.name is None or (isinstance(self.name, str) and self.name != ""),
            "skip_records": self.skip_records is None or (_whole(self.skip_records) and self.skip_records >= 0),
            "window": self.window is None or (_whole(self.window) and self.window >= 1),
            "method": self.method is None or self.method in METHODS,
            "tolerance": isinstance(self.tolerance, (int, float)) and not isinstance(self.tolerance, bool)
                         and 0 < self.tolerance < float("inf"),
        }
        for name, good in ok.items():
            if not good:
                error = RuleError(f"{name} = {getattr(self, name)!r}: expected {self.FIELDS[name]}")
                error.field = name  # the CLI names its option, a notebook its parameter
                raise error

    def resolve(self, fmt: Any) -> NamedRule:
        """The named rule of `fmt` (a `parsers.LogFormat`, which imports this module) with this rule's
        parts in place of its own; UnknownNameError (listing the format's rules) where the format has no
        rule of that name."""
        named = fmt.rule(self.name or DEFAULT_RULE)
        parts: dict[str, Any] = {}
        if self.skip_records is not None:
            parts.update(skip=self.skip_records, mark_warmup=None, warmup=f"the first {self.skip_records} records")
        if self.window is not None:
            parts["window"] = self.window
        if self.method is not None:
            parts["method"] = self.method
        return dataclasses.replace(named, **parts) if parts else named

    def describe(self) -> str:
        """The choice in words, whatever the format: what a report says it applied."""
        parts = [f"the {self.name} rule"] if self.name else []
        if self.skip_records is not None:
            parts.append(f"skip the first {self.skip_records} records")
        if self.window is not None:
            parts.append(f"at most {self.window} records")
        if self.method:
            parts.append(self.method)
        if self.tolerance != DEFAULT_TOLERANCE:
            parts.append(f"warn beyond {self.tolerance:.4g} of the reported value")
        return ", ".join(parts) or "each log format's documented rule (benchbook formats)"
