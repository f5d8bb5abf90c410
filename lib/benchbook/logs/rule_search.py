"""Which rules reproduce a published number from its run's records: the search behind `benchbook explain`.

A publisher rarely says how a table's number was computed, and changes the arithmetic quietly. The
search tries every rule of the space a format allows and keeps those that give the published value to
its printed digits (below: rounded or cut):

- the records: those each named rule of the format reads (its `select`: the end-of-run figure left
  out, evaluation steps, a line two ranks printed), and the same without the records of an iteration
  logged again after them (the loss scaler's overflows), each set once, on each rank;
- a contiguous stretch of them: all, skip the first S (said also as "the last N"), the first W, or
  skip S then W (S below a bound that keeps the search within `PAIR_BUDGET` windows a method, shared
  by the record sets: a log of many ranks has as many windows in all as one of one rank);
- the method: mean, harmonic, elapsed (every stretch), median (all, skip S, the first W), last (all, the
  first W: the last record of every skip is the same).

A value reproduces the published one where it rounds to the printed digits (within half a unit of the
last) or is cut to them (within one unit above: NVIDIA's TF1 ResNet-50 page and PaddlePaddle/Perf's
PyTorch BERT table print the logs' figures truncated), each candidate saying which. Where the log
reports its own figure (`reported_throughput`: MXNet's benchmark.py table), that figure is a candidate
too. As a space this large holds values near any number, each search says how many of its values fall
within the printed precision by chance (`Search.chance`): a found rule in a space where several do is a
fit, never to be taken for the publisher's rule on one cell alone (`logs/explain.editions` looks across
a table's cells).

Every stretch of a method is computed at once from prefix sums over the records (numpy), so that a
run of 100,000 records is searched in seconds. The values of the rules shown are then recomputed by
the engine (`rules.apply`), so that each is the value `benchbook analyze` prints for its options.
Ordered simplest first: named rules, then the fewest options beyond `--rule`, then the fewest records
skipped from the start, then the fewest dropped from the end.
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .rules import NamedRule, Rule, apply, rates_of, reads_of

if TYPE_CHECKING:
    import numpy as np

    from .rules import Run

SEARCHED_METHODS = ("mean", "harmonic", "elapsed", "last", "median")
PAIR_BUDGET = 4_000_000  # skip-and-window stretches a method, over all record sets: the bound on the skip
SHOWN = 20  # reproducing found rules kept in a result (the count says how many there are)
NEAREST = 5  # nearest found rules kept where none reproduces
MAX_RANKS = 64  # ranks whose own records are searched (the lowest first)
MEDIAN_BUDGET = 100_000  # records of all sets whose medians are searched, the lowest rank's sets first
REPORTED = "reported"  # the FoundRule base of the log's own figure
CHANCE_SPAN = 0.01  # the relative span around the published value whose values estimate the chance of a hit
_NUMBER = re.compile(r"^[+-]?([0-9]+)(\.([0-9]+))?$")


def half_unit(printed: str) -> float:
    """Half a unit of the last digit of a number as printed ("16142.9" -> 0.05, "1412" -> 0.5); a
    ValueError naming the text where it is no plain decimal number."""
    m = _NUMBER.match(printed.strip())
    if not m:
        raise ValueError(f"{printed!r} is not a number as a table prints it (digits, a point and digits)")
    return 0.5 * 10.0 ** -len(m.group(3) or "")


@dataclass(frozen=True)
class FoundRule:
    """A rule of the space: a named rule's records (`base`), with the options that make it (None: the
    named rule's own part). `named` is True for a format's named rule as declared."""

    base: str
    method: str | None = None
    skip: int | None = None
    tail: int | None = None
    window: int | None = None
    rank: int | None = None
    drop_repeats: bool = False
    named: bool = False

    def options(self) -> dict[str, Any]:
        """The `Rule` fields (and `benchbook analyze` options) that re-run it."""
        if self.base == REPORTED:
            return {}
        parts = {"name": self.base, "skip_records": self.skip, "tail": self.tail, "window": self.window,
                 "rank": self.rank, "drop_repeats": self.drop_repeats or None, "method": self.method}
        return {k: v for k, v in parts.items() if v is not None}

    def cli(self) -> str:
        """The rule as the options of `benchbook analyze`."""
        flags = {"name": "--rule", "skip_records": "--skip-records", "tail": "--tail", "window": "--window",
                 "rank": "--rank", "drop_repeats": "--drop-repeats", "method": "--method"}
        if self.base == REPORTED:
            return "reported_throughput (the log's own figure)"
        return " ".join(flags[k] if v is True else f"{flags[k]} {v}" for k, v in self.options().items())

    def rule(self) -> Rule:
        return Rule(**self.options())

    @property
    def size(self) -> int:
        """Options beyond `--rule`: the measure of simplicity."""
        return max(0, len(self.options()) - 1)


@dataclass(frozen=True)
class Candidate:
    """A rule and what it gives: its value (None where it gives none), its relative distance to the
    published value, and whether that is within the printed precision."""

    rule: FoundRule
    words: str  # the rule as `benchbook formats` and the runs' `rule` column say it
    value: float | None
    relative_distance: float | None
    reproduces: bool
    digits: str | None = None  # how it gives the printed digits: rounded, truncated (None: it does not)

    def as_json(self) -> dict[str, Any]:
        return {"rule": {"words": self.words, "name": self.rule.base, "named": self.rule.named,
                         "options": self.rule.options(), "cli": self.rule.cli(), "digits": self.digits},
                "value": self.value, "relative_distance": self.relative_distance, "reproduces": self.reproduces}


@dataclass
class Search:
    """What the search found for one published value of one run."""

    published: float
    printed: str
    tolerance: float  # absolute: half a unit of the last printed digit
    named: list[Candidate]  # every named rule of the format, in its order
    found: list[Candidate]  # reproducing rules of the space that no named rule gives, simplest first (SHOWN)
    found_count: int  # how many stretches-and-methods reproduce it, shown or not
    nearest: list[Candidate] = field(default_factory=list)  # where none reproduces: the nearest found rules
    space: str = ""  # what was searched, in words
    reported: Candidate | None = None  # the log's own figure, where it reports one
    chance: float = 0.0  # values of the space expected within the printed precision by chance

    def candidates(self) -> list[Candidate]:
        """Simplest first: the named rules that reproduce it, the log's own figure, the found ones, then the
        other named rules, the log's figure and the nearest found ones with their distances."""
        own = [self.reported] if self.reported is not None else []
        first = [c for c in self.named + own if c.reproduces]
        return first + self.found + [c for c in self.named + own if not c.reproduces] + self.nearest

    @property
    def reproduced(self) -> bool:
        return any(c.reproduces for c in self.candidates())


@dataclass(frozen=True)
class _Records:
    """One record set: the records of one rank a named rule reads, as arrays in order."""

    rule: NamedRule
    rank: int | None  # None: the lowest rank's (the engine's default)
    drop_repeats: bool  # without the records of an iteration logged again after them
    rates: np.ndarray
    steps: np.ndarray
    stamps: np.ndarray

    @property
    def name(self) -> str:
        return (self.rule.name + (" without repeats" if self.drop_repeats else "")
                + ("" if self.rank is None else f" on rank {self.rank}"))


def _record_sets(run: Run, fmt: Any) -> list[_Records]:
    """Each distinct set of records (and rounding) the format's named rules read, named by the first,
    on the lowest rank, then on each other rank that logged rates (MAX_RANKS at most)."""
    import numpy as np

    from .rules import Run

    ranks = np.unique(run.all["rank"][~np.isnan(run.all["throughput"])]).tolist()
    seen, out, rates_by = set(), [], {}  # a rule's rates are over every rank's records: made once
    for rank in [None, *ranks[1:MAX_RANKS]]:
        view = run if rank is None else Run(run.all, run.meta, rank)
        for named, drop in ((named, drop) for named in fmt.rules for drop in (False, True)):
            if named.words or named.method == "epochs" and named.select is None:
                continue  # no average of rates (MLLOG's time to train), or MXNet's whole-run epochs
            reads = reads_of(view, dataclasses.replace(named, drop_repeats=drop) if drop else named)
            key = (rank, reads.tobytes(), named.decimals, named.across_ranks)
            if key in seen or not reads.any():
                continue
            seen.add(key)
            how = (named.decimals, named.across_ranks)
            rates = rates_by[how] if how in rates_by else rates_by.setdefault(how, rates_of(view, named))
            rates = rates if isinstance(view.own, slice) else rates[view.own]
            out.append(_Records(named, rank, drop, rates[reads], view["steps"][reads], view["timestamp"][reads]))
    return out


def _suffix_medians(values: np.ndarray) -> np.ndarray:
    """The median of each suffix `values[s:]`, as np.median computes it: the values in sorted order as a
    linked list from which each first value is taken out in turn, the lower median moving one place at
    most (a Python loop of a few steps a record: 100,000 records in a fraction of a second)."""
    import numpy as np

    n = len(values)
    order = np.argsort(values, kind="stable")
    ordered = values[order].tolist()
    place = np.empty(n, dtype=np.int64)
    place[order] = np.arange(n)  # each value's place in sorted order
    before, after = list(range(-1, n - 1)), list(range(1, n + 1))
    out = []
    low, count = (n - 1) // 2, n  # the lower median's place, and how many values are left
    for at in place.tolist():
        out.append(ordered[low] if count % 2 else (ordered[low] + ordered[after[low]]) / 2)
        if count % 2 and at >= low:  # the lower median's index goes down by one: it moves back
            low = before[low]
        elif not count % 2 and at <= low:  # it stays, its value moves forward
            low = after[low]
        back, forward = before[at], after[at]  # take it out of the list
        if forward < n:
            before[forward] = back
        if back >= 0:
            after[back] = forward
        count -= 1
    return np.array(out, dtype=float)


@dataclass(frozen=True)
class _Layout:
    """Where each stretch's value lies in a method's array: the skips alone (S, n) for S below `suffixes`,
    the first W (0, W) for W below n, then for each skip S from 1 its windows (S, E), S < E < n."""

    n: int
    suffixes: int
    pairs: np.ndarray  # where the windows of skip S = 1, 2, ... begin

    def locate(self, at: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The (start, end) of the stretches at these places."""
        import numpy as np

        start, end = np.zeros(len(at), dtype=np.int64), np.full(len(at), self.n, dtype=np.int64)
        skip_alone, first = at < self.suffixes, (at >= self.suffixes) & (at < self.suffixes + self.n - 1)
        start[skip_alone] = at[skip_alone]
        end[first] = at[first] - self.suffixes + 1
        window = ~(skip_alone | first)
        block = np.searchsorted(self.pairs, at[window], side="right") - 1
        start[window] = block + 1
        end[window] = block + 2 + (at[window] - self.pairs[block])
        return start, end


def _stretches(recs: _Records, method: str, samples: float, budget: int = PAIR_BUDGET
               ) -> tuple[_Layout, np.ndarray]:
    """Every stretch of the records the method is searched over and its value (NaN where it gives none),
    from prefix sums, one skip's windows at a time (slices: no index arrays of the 4 million windows)."""
    import numpy as np

    rates, steps, stamps, n = recs.rates, recs.steps, recs.stamps, len(recs.rates)
    bound = skip_bound(n, budget) if method in ("mean", "harmonic", "elapsed") and n > 2 else 0
    skips = np.arange(1, bound + 1)
    suffixes = 1 if method == "last" else n  # (the last record of every skip is the same one)
    pairs = suffixes + n - 1 + np.concatenate(([0], np.cumsum(n - skips - 1)))[:-1] if bound else np.zeros(0, int)
    out = np.empty(suffixes + n - 1 + int(np.sum(n - skips - 1)))
    with np.errstate(invalid="ignore", divide="ignore"):
        if method in ("last", "median"):
            if method == "last":
                out[0], out[1:] = rates[n - 1], rates[: n - 1]
            else:
                out[:n], out[n:] = _suffix_medians(rates), _suffix_medians(rates[::-1])[::-1][: n - 1]
            return _Layout(n, suffixes, pairs), out
        if method == "mean":
            done = np.concatenate(([0.0], np.cumsum(rates)))
            spent = np.arange(n + 1, dtype=float)  # a mean is the rates' sum over their count
        elif method == "harmonic":
            positive = rates > 0
            done = np.concatenate(([0.0], np.cumsum(np.where(positive, steps, 0.0))))
            spent = np.concatenate(([0.0], np.cumsum(np.where(positive, steps / rates, 0.0))))
        else:  # elapsed: the samples after the first record over the seconds from it to the last
            done = np.concatenate(([0.0], np.cumsum(steps)))

        def between(s: int, ends: slice) -> np.ndarray:
            if method != "elapsed":
                worked = done[ends] - done[s]
                return np.where(worked > 0, worked / (spent[ends] - spent[s]), np.nan)
            last = np.arange(n + 1)[ends] - 1
            seconds = stamps[last] - stamps[s]
            got = samples * (done[ends] - done[s] - steps[s]) / seconds
            return np.where((seconds > 0) & (samples > 0), got, np.nan)

        if method == "elapsed":
            seconds = stamps[n - 1] - stamps
            out[:n] = np.where(seconds > 0, samples * (done[n] - done[:n] - steps) / seconds, np.nan)
            if not samples > 0:
                out[:n] = np.nan
        else:
            worked = done[n] - done[:n]
            out[:n] = np.where(worked > 0, worked / (spent[n] - spent[:n]), np.nan)
        out[n: 2 * n - 1] = between(0, slice(1, n))
        for k, s in enumerate(skips.tolist()):
            out[pairs[k]: pairs[k] + n - s - 1] = between(s, slice(s + 1, n))
    return _Layout(n, suffixes, pairs), out


def skip_bound(n: int, budget: int = PAIR_BUDGET) -> int:
    """The largest skip searched with a window, for a record set of n records: the windows within `budget`."""
    return min(n - 1, max(1, budget // max(n, 1)))


def _forms(recs: _Records, method: str, start: int, end: int) -> list[FoundRule]:
    """The rules that measure the stretch [start, end) of the record set: as a skip and as a tail."""
    named, n = recs.rule, len(recs.rates)
    window = None if end == n and not named.window else end - start
    how = None if method == named.method else method
    skip_own = named.mark_warmup is None and named.tail is None and (named.skip or 0) == start
    base = named.name
    out = [FoundRule(base, how, None if skip_own else start, None, window, recs.rank, recs.drop_repeats)]
    if start > 0:  # the same stretch as the last N records: said first where N is the smaller number
        out.insert(0 if n - start < start else 1,
                   FoundRule(base, how, None, n - start, window, recs.rank, recs.drop_repeats))
    return out


def digits(value: float | None, published: float, tol: float) -> str | None:
    """How `value` gives the printed number: "rounded" (within half a unit, `tol`, of it), "truncated" (cut
    to its digits: within one unit above), or None."""
    if value is None or math.isnan(value):
        return None
    off, slack = value - published, 1e-9 * abs(published)
    if abs(off) <= tol + slack:
        return "rounded"
    return "truncated" if -slack <= off < 2 * tol else None


def _candidate(run: Run, fmt: Any, rule: FoundRule, samples: float, published: float, tol: float) -> Candidate:
    """The rule applied by the engine, as `benchbook analyze` applies it."""
    applied = rule.rule().resolve(fmt) if not rule.named else fmt.rule(rule.base)
    got = apply(run, applied, samples)[2]
    return _scored(rule, applied.describe(), got, published, tol)


def _scored(rule: FoundRule, words: str, got: float | None, published: float, tol: float) -> Candidate:
    how = digits(got, published, tol)
    return Candidate(rule, words, got, None if got is None else (got - published) / published, how is not None, how)


def _order(recs: list[_Records], method: str, start: int, end: int, base_at: int) -> tuple:
    """Simplest first: the fewest options (a stretch's skip and end, another method, another rank),
    then the fewest records skipped from the start, then dropped from the end."""
    records = recs[base_at]
    n = len(records.rates)
    options = (start > 0) + (end < n) + (method != records.rule.method) + (records.rank is not None) + \
        records.drop_repeats
    return options, start, n - end, SEARCHED_METHODS.index(method), base_at


def search(run: Run, fmt: Any, samples: float, published: float, printed: str | None = None,
           shown: int = SHOWN, tolerance: float | None = None, reported: float | None = None) -> Search:
    """Every rule of the format's space that gives `published` from the run's records within half a
    unit of the last digit of `printed` (default: the value as Python writes it; `tolerance`, absolute,
    in its place where the value was scaled from the printed one), simplest first, and each named
    rule's value and distance. `samples`: the samples a step (the global batch: `elapsed`); `reported`: the
    run's own figure (`reported_throughput`), a candidate where given."""
    import numpy as np

    printed = printed if printed is not None else repr(float(published)).removesuffix(".0")
    tol = half_unit(printed) if tolerance is None else tolerance
    if not (isinstance(published, (int, float)) and math.isfinite(published) and published > 0):
        raise ValueError(f"published value {published!r}: expected a number > 0")
    named = [_candidate(run, fmt, FoundRule(r.name, named=True), samples, published, tol) for r in fmt.rules]
    sets = _record_sets(run, fmt)
    budget = PAIR_BUDGET // max(1, len(sets))
    hits: list[tuple] = []  # (order, set, method, start, end)
    near: list[tuple] = []  # (distance, set, method, start, end)
    count, searched, nearby = 0, 0, 0
    for at, recs in enumerate(sets):
        medians = sum(len(s.rates) for s in sets[: at + 1]) <= MEDIAN_BUDGET or at == 0
        for method in SEARCHED_METHODS if medians else SEARCHED_METHODS[:-1]:
            layout, got = _stretches(recs, method, samples, budget)
            searched += len(got)
            off = np.abs(got - published)
            close = np.flatnonzero(off <= CHANCE_SPAN * published)  # (NaN is never close)
            nearby += len(close)
            signed = got[close] - published
            good = close[(signed >= -tol * (1 + 1e-9)) & (signed < 2 * tol)]  # rounded or truncated
            count += len(good)
            start, end = layout.locate(good)
            for i in np.lexsort((start, (start > 0).astype(int) + (end < layout.n)))[: 4 * shown]:
                hits.append((_order(sets, method, int(start[i]), int(end[i]), at), at, method, int(start[i]),
                             int(end[i])))
            pool = close if len(close) else np.flatnonzero(np.isfinite(off))
            closest = pool[np.argpartition(off[pool], NEAREST)[:NEAREST]] if len(pool) > NEAREST else pool
            start, end = layout.locate(closest)
            near += [(float(off[i]), at, method, int(a), int(b)) for i, a, b in zip(closest, start, end, strict=True)]
    hits.sort()
    own = None if reported is None else _scored(
        FoundRule(REPORTED), "the figure the run reports in its log (benchbook analyze's reported_throughput)",
        float(reported), published, tol)
    known = {c.value for c in named if c.value is not None}
    found = _unique(run, fmt, sets, [h[1:] for h in hits], samples, published, tol, known, shown)
    reproduced = found or any(c.reproduces for c in named) or (own is not None and own.reproduces)
    nearest = [] if reproduced else _unique(run, fmt, sets, [n[1:] for n in sorted(near)], samples, published, tol,
                                       known, NEAREST, any_distance=True)
    bounds = ", ".join(f"the records {s.name} reads ({len(s.rates)}; skip S then W for S up to "
                       f"{skip_bound(len(s.rates), budget)})" for s in sets)
    space = f"{searched:,} stretches and methods ({', '.join(SEARCHED_METHODS)}) of {bounds or 'no records'}"
    chance = nearby * 3 * tol / (2 * CHANCE_SPAN * published)  # the values near it, spread evenly, in 1.5 units
    return Search(float(published), printed, tol, named, found, count, nearest, space, own, chance)


def _unique(run: Run, fmt: Any, sets: list[_Records], picks: list[tuple], samples: float, published: float,
            tol: float, known: set, limit: int, any_distance: bool = False) -> list[Candidate]:
    """The picked stretches as rules (each as a skip and as the last N), checked by the engine: each value
    once, none a named rule gives."""
    out: list[Candidate] = []
    seen = set(known)
    for at, method, start, end in picks:
        forms = [_candidate(run, fmt, rule, samples, published, tol) for rule in _forms(sets[at], method, start, end)]
        value = forms[0].value
        if value is None or value in seen or not (forms[0].reproduces or any_distance):
            continue
        seen.add(value)
        out += forms
        if len(out) >= limit:
            return out[:limit]
    return out
