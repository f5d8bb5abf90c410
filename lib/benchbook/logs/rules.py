"""The rule that turns a run's records into one throughput, visible and changeable: what a format
declares, what a user chose, and the rule applied to one run.

The CLI's argument parser and `benchbook formats` import this module without numpy, pandas or
pydantic: numpy is imported by the functions that apply a rule.

- `NamedRule`: a rule a format declares in its own module (`LogFormat.rules`, its default, `nvidia`,
  first): the arithmetic of the script that printed a published number, with that script's source.
  `nvidia` is NVIDIA's script; `dlperf` Oneflow-Inc/DLPerf's extract scripts; `perf` PaddlePaddle's.
- `Rule`: what a user chose (`--rule`, `--skip-records`, `--tail`, `--window`, `--method`, `--tolerance`, and
  the notebook parameters of the same names), validated once, here, on construction: `RuleError`
  names the field. `Rule.resolve(format)` gives the format's named rule with the user's parts put in
  place of its own: the one frozen object the analysis applies and `NamedRule.describe` puts in words.
  The DLPerf MXNet tables, for instance, are `Rule(name="dlperf")`, and `Rule(name="dlperf",
  window=50)` the same on half the records.
- `Run`: one run of a file after `assemble.fold`: views of its own part of the file's record columns
  (no copy: a run of a 400 MB log holds millions of records) and its metadata. `apply(run, rule)`
  says which of its records are warm-up, which are measured, and the value they give: a named
  rule's `select(run)` and `mark_warmup(run)` answer with a boolean array over `run[name]`, the
  records of the run's lowest rank (every rank prints the same global rate; the rule reads one).
  Within a run everything is numpy.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from ..errors import RuleError

if TYPE_CHECKING:
    import numpy as np

DEFAULT_RULE = "nvidia"
DEFAULT_TOLERANCE = 0.03
METHODS = {
    "mean": "arithmetic mean of the logged rates",
    "median": "median of the logged rates",
    "harmonic": "samples / time implied by the logged rates (step-weighted harmonic mean)",
    "elapsed": "samples / wall-clock time between the first and last measured records' timestamps",
    "last": "the last measured record's rate (a running mean's final value)",
    "epochs": "harmonic mean over the run's epochs after its first (the only one if there is one) of each "
              "epoch's rate: its logged per-epoch rate, else samples / time of the measured records from the "
              "first to the epoch's end",
}


@dataclass(frozen=True)
class NamedRule:
    """A named rule of a format: which records it reads, which are warm-up, how it averages, and the
    script whose arithmetic it is (repository, path, commit).

    mark_warmup : (Run: one run) -> boolean array over its records (`run[name]`): the warm-up; or None.
    select : (Run) -> boolean array of the records the rule reads (None: every record); the
        others are neither warm-up nor measured.
    skip : the first N records it reads are warm-up (where mark_warmup is None).
    tail : only the last N records it reads are measured, the others warm-up (where set: skip and
        mark_warmup are then None); a publisher's "mean of the last 20 logged rates".
    window : at most this many records after the warm-up.
    decimals : each rate is rounded to this many decimals before averaging, and so is the result.
    across_ranks : each record's rate is first the median of that record (epoch, iteration) over
        every rank that logged it.
    rank : the rank whose records it reads (None: the lowest that logged), where ranks log their own rates.
    drop_repeats : of the records that log one iteration in a row (the loss scaler's overflows, TF1 BERT's
        repeated `Iteration: 1`), it reads the last alone.
    verdict : (Run) -> (status, why or None): the run's status as the rule's own script defines it
        (dgxc-benchmarking's SUCCESS, INCOMPLETE, INVALID_GRAD_NORM), the runs' `rule_status`; or None.
    """

    name: str
    method: str
    warmup: str
    source: str
    mark_warmup: Callable[[Any], Any] | None = None
    select: Callable[[Any], Any] | None = None
    skip: int | None = None
    window: int | None = None
    tail: int | None = None
    decimals: int | None = None
    across_ranks: bool = False
    rank: int | None = None
    drop_repeats: bool = False
    words: str | None = None  # the rule in words where it is no average of rates (MLLOG's time to train)
    verdict: Callable[[Any], tuple[str, str | None]] | None = None

    def describe(self, samples: str = "samples") -> str:
        """The rule in words, with its source: the `rule` column of every run it was applied to; `samples` is
        what the runs' model counts (images, sequences: its unit's noun)."""
        if self.words:
            return f"{self.name}: {self.words} [{self.source}]"
        window = f", then use at most {self.window} records" if self.window else ""
        extra = []
        if self.across_ranks:
            extra.append("each record the median over the ranks that logged it")
        if self.rank is not None:
            extra.append(f"rank {self.rank}'s records")
        if self.drop_repeats:
            extra.append("of the records of one iteration in a row, the last alone")
        if self.decimals is not None:
            extra.append(f"rates and result rounded to {self.decimals} decimals")
        extra_text = f" ({'; '.join(extra)})" if extra else ""
        method = METHODS[self.method].replace("samples", samples)
        return f"{self.name}: skip {self.warmup}{window}; {method}{extra_text} [{self.source}]"


def _whole(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True)
class Rule:
    """How to recompute a run's throughput, as a user chose it; None leaves a part to the format's
    named rule. Every field is checked on construction (RuleError names it)."""

    name: str | None = None  # the format's named rule to start from; None: its default (nvidia)
    skip_records: int | None = None  # leading records of each run the analysis skips as warm-up
    tail: int | None = None  # only the last N records of each run are measured (the others are warm-up)
    rank: int | None = None  # the rank whose records are read (None: the lowest that logged)
    drop_repeats: bool | None = None  # True: of the records of one iteration in a row, read the last alone
    window: int | None = None  # records to use after the warm-up (all if unset)
    method: str | None = None  # how to average: one of METHODS
    tolerance: float = DEFAULT_TOLERANCE  # relative gap to the reported value that earns a warning

    FIELDS = {  # what each part takes, in words: the CLI's and the notebooks' messages
        "name": "a format's named rule (benchbook formats), or None for each format's default",
        "skip_records": "a whole number >= 0 (records skipped as warm-up; not the script's own --warmup_steps), "
                        "or None for the rule's own",
        "tail": "a whole number >= 1 (only the last N records are measured), or None; not with skip_records",
        "window": "a whole number >= 1 (records used after the warm-up), or None for all",
        "rank": "a whole number >= 0 (the rank whose records are read), or None for the lowest",
        "drop_repeats": "True (read the last of the records of one iteration in a row), False, or None for the "
                        "rule's own",
        "method": f"one of {', '.join(METHODS)}, or None for the rule's own",
        "tolerance": "a number > 0 (relative gap to the reported value that warns)",
    }

    def __post_init__(self) -> None:
        ok = {
            "name": self.name is None or (isinstance(self.name, str) and self.name != ""),
            "skip_records": self.skip_records is None or (_whole(self.skip_records) and self.skip_records >= 0),
            "tail": self.tail is None or (_whole(self.tail) and self.tail >= 1 and self.skip_records is None),
            "window": self.window is None or (_whole(self.window) and self.window >= 1),
            "rank": self.rank is None or (_whole(self.rank) and self.rank >= 0),
            "drop_repeats": self.drop_repeats is None or isinstance(self.drop_repeats, bool),
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
        named = fmt.rule(self.name)  # None: the format's default, its first
        parts: dict[str, Any] = {}
        if self.skip_records is not None:
            parts.update(skip=self.skip_records, mark_warmup=None, warmup=f"the first {self.skip_records} records")
        if self.tail is not None:
            parts.update(tail=self.tail, skip=None, mark_warmup=None, warmup=f"all but the last {self.tail} records")
        if self.window is not None:
            parts["window"] = self.window
        if self.rank is not None:
            parts["rank"] = self.rank
        if self.drop_repeats is not None:
            parts["drop_repeats"] = self.drop_repeats
        if self.method is not None:
            parts["method"] = self.method
        return dataclasses.replace(named, **parts) if parts else named

    def describe(self) -> str:
        """The choice in words, whatever the format: what a report says it applied."""
        parts = [f"the {self.name} rule"] if self.name else []
        if self.skip_records is not None:
            parts.append(f"skip the first {self.skip_records} records")
        if self.tail is not None:
            parts.append(f"only the last {self.tail} records")
        if self.window is not None:
            parts.append(f"at most {self.window} records")
        if self.rank is not None:
            parts.append(f"rank {self.rank}'s records")
        if self.drop_repeats:
            parts.append("the last of the records of one iteration in a row")
        if self.method:
            parts.append(self.method)
        if self.tolerance != DEFAULT_TOLERANCE:
            parts.append(f"warn beyond {self.tolerance:.4g} of the reported value")
        return ", ".join(parts) or "each log format's documented rule (benchbook formats)"


class Run:
    """A run's records (`all`: views of the file's columns, every rank; `run[name]`: its lowest
    rank's, or `rank`'s where given, the records a rule reads) and its metadata."""

    __slots__ = ("all", "meta", "own", "_cache")

    def __init__(self, columns: dict[str, np.ndarray], meta: dict, rank: int | None = None) -> None:
        import numpy as np

        self.all, self.meta, self._cache = columns, meta, {}
        ranks = columns["rank"]
        if not len(ranks):
            ranks = np.zeros(0, dtype=np.int64)
        mine = ranks == (ranks.min() if rank is None and len(ranks) else rank)
        self.own = slice(None) if mine.all() else np.flatnonzero(mine)  # the rank's rows of `all`

    def __getitem__(self, name: str) -> np.ndarray:
        """A column of the lowest rank's records."""
        if name not in self._cache:
            self._cache[name] = self.all[name][self.own]
        return self._cache[name]

    def __len__(self) -> int:
        return len(self["line"])

    def on_all(self, own_mask: np.ndarray) -> np.ndarray:
        """A mask over the lowest rank's records as a mask over all the run's records."""
        import numpy as np

        if isinstance(self.own, slice):
            return own_mask
        out = np.zeros(len(self.all["line"]), dtype=bool)
        out[self.own[own_mask]] = True
        return out


def fill_steps(cols: dict[str, np.ndarray]) -> np.ndarray:
    """Iterations each of a run's records covers: as logged, else the gap to the previous record of
    its rank, else the run's median gap (1 without any); a whole epoch's record (no iteration) only
    as logged."""
    import numpy as np

    steps = cols["steps"]
    missing = np.isnan(steps)
    if not missing.any():
        return steps
    if len(steps) == 1:  # no gap to measure, said plainly (a file may paste 50,000 runs of one record)
        whole_epoch = cols["iteration"][0] < 0 and cols["epoch"][0] >= 0
        return np.array([math.nan if whole_epoch else 1.0])
    it, rank = cols["iteration"], cols["rank"]
    order = None if (rank[1:] >= rank[:-1]).all() else np.argsort(rank, kind="stable")  # each rank's records
    ranks, its = (rank, it) if order is None else (rank[order], it[order])
    gaps = np.full(len(it), np.nan)
    np.subtract(its[1:], its[:-1], out=gaps[1:], casting="unsafe")  # exact: iterations are far below 2**53
    gaps[1:][ranks[1:] != ranks[:-1]] = np.nan
    if order is not None:
        gaps[order] = gaps.copy()
    gaps[(gaps <= 0) | (it < 0)] = np.nan
    known = gaps[~np.isnan(gaps)]
    whole_epoch = (it < 0) & (cols["epoch"] >= 0)
    gaps[np.isnan(gaps) & ~whole_epoch] = np.median(known) if len(known) else 1.0
    return np.where(missing, gaps, steps)


def apply(run: Run, rule: NamedRule, samples: float) -> tuple[np.ndarray, np.ndarray, float | None, float | None,
                                                           list[EpochRate]]:
    """The rule applied to one run: (warm-up, measured) as masks over all its records, the rule's
    value, the wall-clock value of the measured records (samples a step over the seconds between
    the first and last: None where either gives none) and, where the rule is per epoch, the epochs
    its value is made of (`EpochRate`s; none for the other methods).

    The rule reads the lowest rank's records: those without a rate and those it does not `select`
    are neither warm-up nor measured; then the warm-up (its own marks, or its first `skip` records);
    then at most `window` records. The rates it averages are rounded where its script rounds each
    speed (Python's round(), as DLPerf's scripts do), each the median over the ranks that logged the
    same (epoch, iteration) where it says so (DLPerf's MXNet script), and so is its value."""
    import numpy as np

    if rule.rank is not None:  # another rank's records than the lowest's
        run = Run(run.all, run.meta, rule.rank)
    reads = reads_of(run, rule)
    if rule.tail is not None:  # the last `tail` records it reads
        warm = (np.cumsum(reads) <= np.count_nonzero(reads) - rule.tail) & reads
    elif rule.mark_warmup is None:  # the first records (of those the rule reads, if it chooses them)
        at = np.arange(len(reads)) if rule.select is None else np.cumsum(reads) - 1
        warm = (at < (rule.skip or 0)) & reads
    else:
        warm = np.asarray(rule.mark_warmup(run), dtype=bool) & reads
    use = ~warm & reads
    if rule.window:
        use &= np.cumsum(use) <= rule.window
    warm, use = run.on_all(warm), run.on_all(use)

    rates = rates_of(run, rule)
    epochs: list[EpochRate] = []
    if rule.method == "epochs":
        got, epochs = _epochs(run.all, rates, use, warm)
    else:
        got = value(run.all, rates, use, rule.method, samples)
    if rule.decimals is not None:  # numpy's round, as the scripts round np.mean()'s float64
        got = float(np.round(got, rule.decimals))
    wall = value(run.all, run.all["throughput"], use, "elapsed", samples)
    return warm, use, None if math.isnan(got) else float(got), None if math.isnan(wall) else float(wall), epochs


def reads_of(run: Run, rule: NamedRule) -> np.ndarray:
    """The lowest rank's records the rule reads: those with a rate that it selects."""
    import numpy as np

    reads = ~np.isnan(run["throughput"])
    if rule.select is not None:
        reads &= np.asarray(rule.select(run), dtype=bool)
    if rule.drop_repeats:  # a read record whose iteration the next read record logs again
        at = np.flatnonzero(reads)
        iteration = run["iteration"][at]
        reads[at[:-1][iteration[:-1] == iteration[1:]]] = False
    return reads


def rates_of(run: Run, rule: NamedRule) -> np.ndarray:
    """The rates the rule averages, over all the run's records: rounded where its script rounds each
    speed, each the median over the ranks that logged the same (epoch, iteration) where it says so."""
    import numpy as np

    rates = run.all["throughput"]
    if rule.decimals is not None:
        rates = np.array([round(r, rule.decimals) for r in rates.tolist()], dtype=float)
    if rule.across_ranks and len(rates):
        import pandas as pd  # here alone: a grouped median, for the one rule that reads every rank

        keys = pd.DataFrame({"epoch": run.all["epoch"], "iteration": run.all["iteration"], "rate": rates})
        rates = keys.groupby(["epoch", "iteration"], sort=False)["rate"].transform("median").to_numpy()
    return rates


def _total(values: np.ndarray) -> float:
    """The sum of a run's values as numpy's `add.reduceat` adds a stretch: the order every earlier
    output of benchbook was computed in (numpy's pairwise `sum` and a plain running sum each differ
    from it in the last digits)."""
    import numpy as np

    with np.errstate(over="ignore"):  # a sum past the largest float is inf, said by the caller (`_mean`)
        return float(np.add.reduceat(values, [0])[0]) if len(values) else 0.0


def _mean(values: np.ndarray, count: int) -> float:
    """`_total(values) / count`; where the sum passes the largest float (rates of 1e308), the mean
    of the values scaled by the largest of them, then scaled back: a mean of finite values is finite."""
    import numpy as np

    total = _total(values)
    if math.isfinite(total) or not np.isfinite(values).all():
        return total / count
    scale = float(np.abs(values).max())
    return _total(values / scale) / count * scale


def value(cols: dict[str, np.ndarray], rates: np.ndarray, measured: np.ndarray, method: str,
          global_batch: float) -> float:
    """The run's throughput by `method` from its `measured` records (a mask over `cols`, all its
    records); NaN where they give none. Sums run over all the records, unmeasured ones as zeros."""
    import numpy as np

    count = int(np.count_nonzero(measured))
    if not count:
        return math.nan
    if method == "mean":
        return _mean(np.where(measured, rates, 0.0), count)
    if method == "median":
        return float(np.median(rates[measured]))
    if method == "last":
        return float(rates[np.flatnonzero(measured)[-1]])
    steps = cols["steps"]
    if method == "epochs":
        return _epochs(cols, rates, measured)[0]
    if method == "harmonic":  # samples over the time the rates imply, positive rates only
        with np.errstate(invalid="ignore", divide="ignore"):
            positive = measured & (rates > 0)
            if not positive.any():
                return math.nan
            samples = _total(np.where(positive, steps, 0.0))
            return samples / _total(np.where(positive, steps / rates, 0.0))
    # elapsed: samples between the first and last measured records over the time between them
    at = np.flatnonzero(measured)
    if count < 2:
        return math.nan
    first, last = at[0], at[-1]
    seconds = cols["timestamp"][last] - cols["timestamp"][first]
    samples = _total(np.where(measured, steps, 0.0)) - steps[first]  # the steps after the first
    if not (seconds > 0 and global_batch > 0):  # False where either is NaN
        return math.nan
    return float(global_batch * samples / seconds)


class EpochRate(NamedTuple):
    """One epoch of a run whose rule is per epoch: the rate the rule gives it, whether the rule's value
    uses it, and the first and last lines of the epoch's records it reads."""

    epoch: int
    rate: float
    used: bool
    line_start: int
    line_end: int


def _epochs(cols: dict[str, np.ndarray], rates: np.ndarray, measured: np.ndarray,
            warmup: np.ndarray | None = None) -> tuple[float, list[EpochRate]]:
    """MXNet benchmark.py's number: the harmonic mean of the rates of the run's epochs after its
    first (`-w 1`; the first alone where it has no other), and the epochs it is made of, in line
    order (with the whole-epoch records of `warmup`, unused). Where every measured record is a whole
    epoch's (no iteration), each carries that epoch's rate (fit.py of 20.12+ logs it); otherwise an
    epoch's rate is samples / time of the measured records from the first to the epoch's end, as
    fit.py of 19.07 divides the batch by the mean of a list of durations it never resets."""
    import numpy as np

    at = np.flatnonzero(measured)
    whole_warm = [] if warmup is None else np.flatnonzero(warmup & (cols["iteration"] < 0) & (cols["epoch"] >= 0))
    skipped = [EpochRate(int(cols["epoch"][i]), float(rates[i]), False, int(cols["line"][i]), int(cols["line"][i]))
               for i in whole_warm]  # DLLogger's warm-up epoch: shown, not used
    if not len(at):
        return math.nan, skipped
    epoch, rate, steps, line = cols["epoch"][at], rates[at], cols["steps"][at], cols["line"][at]
    whole = not (cols["iteration"][at] >= 0).any()
    first_epoch = cols["epoch"].min()
    per_epoch = []  # (epoch, its rate, first and last line), one per stretch of the measured records in one epoch
    samples = seconds = 0.0
    with np.errstate(invalid="ignore", divide="ignore"):
        starts = np.flatnonzero(np.concatenate(([True], epoch[1:] != epoch[:-1])))
        for a, b in zip(starts.tolist(), [*starts[1:].tolist(), len(at)], strict=True):
            lines = (int(line[a]), int(line[b - 1]))
            if whole:
                per_epoch.append((epoch[a], rate[b - 1], *lines))
                continue
            samples += _total(steps[a:b])
            seconds += _total(steps[a:b] / rate[a:b])
            per_epoch.append((epoch[a], samples / seconds, *lines))
    later = any(e > first_epoch for e, *_ in per_epoch)
    rows = [EpochRate(int(e), float(r), bool(e > first_epoch or not later), s, t) for e, r, s, t in per_epoch]
    after = [r.rate for r in rows if r.used]
    rows = sorted(skipped + rows, key=lambda r: r.line_start)
    if not all(r > 0 for r in after):
        return math.nan, rows
    return len(after) / sum(1.0 / r for r in after), rows
