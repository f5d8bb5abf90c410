"""The MLPerf Training rule: the quality targets per round and benchmark, the runs a result needs, and
the score (the olympic mean of the runs' times to train, in minutes, times the folder's scaling.json).

Every number here names where it comes from. The official scorer is mlperf-logging's
`result_summarizer` (mlcommons/logging); the rule is repeated, not imported, so that scoring needs
nothing but the standard library and PyYAML (`checks.py` runs the official tools beside it). The targets
and run counts are data (`params/references/mlperf/rules/`), read from mlperf-logging's own files
(`rulesdata`), not numbers written here.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from ..core import numbers, project
from ..errors import BenchbookError
from .mllog import UNIT_SECONDS, Named, Run

MLPERF_LOGGING = "mlcommons/logging (mlperf-logging 4.1.68)"
RULES = project.REFERENCES / "mlperf" / "rules"
# training.yaml: generated from mlperf-logging (`rulesdata`); training_0.6.yaml: v0.6 targets, by hand;
# training_0.5.yaml: v0.5's runs and targets, by hand from the round's rules (mlperf-logging has no 0.5.0).
RULE_FILES = ("training.yaml", "training_0.6.yaml", "training_0.5.yaml")


@dataclass(frozen=True)
class Bound:
    """What one metric of an evaluation must be: from `min`, up to `max`, each inclusive or not."""

    metric: str
    min: float | None = None
    min_inclusive: bool = True
    max: float | None = None
    max_inclusive: bool = False

    def holds(self, value: float | None) -> bool:
        if value is None:
            return False
        low = self.min is None or (value >= self.min if self.min_inclusive else value > self.min)
        high = self.max is None or (value <= self.max if self.max_inclusive else value < self.max)
        return low and high

    def describe(self) -> str:
        """`accuracy >= 0.759` (the rule's `< 1.0` beside a lower bound, and `> 0` beside an upper one,
        left out: they only refuse a broken value)."""
        parts = []
        if self.min is not None and not (self.max is not None and self.min == 0):
            parts.append(f"{'>=' if self.min_inclusive else '>'} {self.min:g}")
        if self.max is not None and not (self.min not in (None, 0) and self.max == 1.0):
            parts.append(f"{'<=' if self.max_inclusive else '<'} {self.max:g}")
        return f"{self.metric} {' and '.join(parts)}"


@dataclass(frozen=True)
class Target:
    """The quality a run must reach in one evaluation of `key`, as its round's closed rule says: the bounds
    of the clause that applies to the run's global batch (most rules have one clause for every batch)."""

    benchmark: str
    round: str
    key: str
    check: str
    source: str
    clauses: tuple[tuple[dict | None, tuple[Bound, ...]], ...]
    aggregate: dict | None = None  # how the compliance rule builds `key` from other records (rulesdata.aggregate)

    def bounds(self, batch: float | None = None) -> tuple[Bound, ...]:
        for when, bounds in self.clauses:
            if when is None or batch is None or \
                    (batch < when["below"] if "below" in when else batch >= when["at_least"]):
                return bounds
        return self.clauses[0][1]

    def reached(self, values: dict[str, float], batch: float | None = None) -> bool:
        return all(b.holds(values.get(b.metric)) for b in self.bounds(batch))

    def describe(self, batch: float | None = None) -> str:
        return " and ".join(b.describe() for b in self.bounds(batch))

    @property
    def thresholds(self) -> tuple[tuple[str, float], ...]:
        """(metric, the bound a curve is drawn at) of the first clause."""
        return tuple((b.metric, b.min if b.min not in (None, 0) else b.max) for b in self.clauses[0][1])


@dataclass(frozen=True)
class RoundRules:
    """Per round (`'4.0'`), per benchmark: the runs a result needs (with their source) and the target."""

    runs: dict[str, dict[str, tuple[int, str]]]
    targets: dict[str, dict[str, Target]]
    unread: dict[tuple[str, str], str]  # (round, benchmark) -> why its rule's target is not checked
    init_limits: dict[str, dict]  # round -> {minutes: {division: minutes}, check, source}
    # (round, benchmark) -> (the tensors weights_initialization must name, source): rulesdata.WEIGHTS_WARNED
    weights: dict[tuple[str, str], tuple[tuple[str, ...], str]] = field(default_factory=dict)


def _target(round_: str, benchmark: str, entry: dict) -> Target:
    clauses = tuple((c.get("batch"), tuple(Bound(**b) for b in c["bounds"])) for c in entry["clauses"])
    return Target(benchmark, round_, entry["key"], entry["check"], entry["source"], clauses, entry.get("aggregate"))


@functools.cache
def loaded(root: Path = RULES) -> RoundRules:
    """The rule files of `root`, read once."""
    runs: dict[str, dict[str, tuple[int, str]]] = {}
    targets: dict[str, dict[str, Target]] = {}
    unread: dict[tuple[str, str], str] = {}
    init_limits: dict[str, dict] = {}
    weights: dict[tuple[str, str], tuple[tuple[str, ...], str]] = {}
    for name in RULE_FILES:
        path = root / name
        try:
            # libyaml's loader where PyYAML has it: the pure-Python one takes 0.3 s over training.yaml
            doc = yaml.load(path.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
            for round_, benchmarks in doc["rounds"].items():
                if "init_limit" in benchmarks:
                    init_limits[round_] = benchmarks["init_limit"]
                for benchmark, entry in benchmarks.items():
                    if benchmark == "init_limit":
                        continue
                    if "weights_initialization" in entry:
                        found = entry["weights_initialization"]
                        weights[(round_, benchmark)] = (tuple(found["names"]), found["source"])
                    if "runs" in entry:
                        runs.setdefault(round_, {})[benchmark] = (entry["runs"], entry["runs_source"])
                    goal = entry.get("target")
                    if goal and "unread" in goal:
                        unread[(round_, benchmark)] = f"{goal['source']}: {goal['check']} ({goal['unread']})"
                    elif goal:
                        targets.setdefault(round_, {})[benchmark] = _target(round_, benchmark, goal)
        except (OSError, yaml.YAMLError, KeyError, TypeError, AttributeError) as exc:
            raise BenchbookError(f"{path}: the MLPerf rules as data cannot be read ({exc!r}): restore it from "
                                 "the repository, or `python -m benchbook.mlperf.rulesdata --write`") from None
    return RoundRules(runs, targets, unread, init_limits, weights)


def _newest(counts: dict[str, dict[str, tuple[int, str]]]) -> dict[str, tuple[int, str]]:
    out: dict[str, tuple[int, str]] = {}
    for round_ in sorted(counts, key=lambda r: tuple(map(int, r.split(".")))):
        out.update(counts[round_])
    return out


# The result files a result needs, by benchmark (each round's are `runs_required`): mlperf-logging's
# benchmark_meta.py (_ALL_RESULT_FILE_COUNTS['training']), through training.yaml.
RUNS_REQUIRED = {b: n for b, (n, _) in _newest(loaded().runs).items()}
RUNS_SOURCE = f"{MLPERF_LOGGING}: mlperf_logging/benchmark_meta.py (_ALL_RESULT_FILE_COUNTS), params/references/" \
              "mlperf/rules/training.yaml"
# Runs dropped at each end: result_summarizer.py's `max_dropped_scores = 4 if benchmark == "unet3d" else 1`.
DROPPED = {"unet3d": 4}
BENCHMARK_ALIASES = {"mask": "maskrcnn"}  # result_summarizer's _benchmark_alias


def runs_required(benchmark: str, round_: str | None = None) -> int | None:
    """The result files `benchmark` needs in `round_` (else in the newest round that has it)."""
    if round_:
        found = loaded().runs.get(round_key(round_), {}).get(benchmark)
        if found:
            return found[0]
    return RUNS_REQUIRED.get(benchmark)


def division_of(run: Run, division: str | None = None) -> str:
    """'open' or 'closed': the folder's division where it is known (one per folder), else the run's own."""
    said = division if division is not None else run.submission.get("division", "")
    return "open" if str(said).strip().lower() == "open" else "closed"


def setup_over_limit(run: Run, round_: str, division: str | None = None) -> str | None:
    """Why a run's setup (the first init_start to init_stop, else to run_start) passes its round's limit
    (the compliance rule's, per division), if it does."""
    limit = loaded().init_limits.get(round_key(round_))
    end = run.init_stop if run.init_stop is not None else run.run_start
    if not limit or run.init_start is None or end is None:
        return None
    division = division_of(run, division)
    most = limit["minutes"].get(division)
    setup = (end - run.init_start) / UNIT_SECONDS[run.unit] / 60.0
    if most is None or setup < most:
        return None
    until = "init_stop" if run.init_stop is not None else "run_start"
    return (f"setup (the first init_start to {until}) {numbers.shown(setup)} minutes, not under the {division} "
            f"division's {most:g} minutes ({limit['source']}): the run is dropped")


def rounds_with_target(benchmark: str) -> list[str]:
    return [r for r, found in loaded().targets.items() if benchmark in found]


def unread_target(benchmark: str, round_: str) -> str | None:
    """Why the round's rule for `benchmark` has a target benchbook does not check, if it has one."""
    return loaded().unread.get((round_key(round_), benchmark))


_ROUND = re.compile(r"v?(\d+)\.(\d+)(?:\.\d+)?")


def round_key(text: str) -> str:
    """'v1.0', '1.0', '1.0.0', 'training_results_v1.0' -> '1.0'."""
    m = _ROUND.search(str(text))
    if not m:
        raise BenchbookError(f"round {text!r}: expected a version such as v1.0 (or training_results_v1.0)")
    return f"{int(m.group(1))}.{int(m.group(2))}"


def target(benchmark: str, round_: str) -> Target | None:
    return loaded().targets.get(round_key(round_), {}).get(benchmark)


@dataclass
class RunVerdict:
    """One run as the score sees it: its minutes, whether it counts as converged, and why not."""

    path: str
    minutes: float | None
    status: str | None
    converged: bool
    reason: str
    epochs: float | None = None
    samples: float | None = None
    best: dict[str, float] = field(default_factory=dict)
    unread: bool = False  # the file could not be read as a result (a format, a line): no run to judge


def evaluations(run: Run, goal: Target | None) -> dict[tuple, dict[str, float]]:
    """The run's evaluations as its target reads them, in the order logged: (line, epoch, samples) ->
    {metric: value}. One record each (a number, or a dict of metrics); where the target's key is built
    from records of one metric each (`Target.aggregate`), those records grouped as the compliance
    checker's BEGIN block groups them: by the metadata field `by`, each metric's last value."""
    out: dict[tuple, dict[str, float]] = {}
    agg = goal.aggregate if goal else None
    groups: dict[float, tuple] = {}
    for e in run.evaluations:
        if agg and isinstance(e, Named) and e.key == agg["from"]:
            by = e.group(agg["by"])
            if by is None:  # (the checker's loop raises KeyError on such a record: it is in no evaluation)
                continue
            where = groups.setdefault(by, (e.line, e.epoch, e.samples if agg["by"] != "samples_count" else by))
            out.setdefault(where, {})[e.metric] = e.value
        elif goal is None or e.key == goal.key:
            out.setdefault((e.line, e.epoch, e.samples), {})[e.metric] = e.value
    return out


def _seen(by_epoch: dict[tuple, dict[str, float]], goal: Target, most: int = 3) -> str:
    """The values a run's evaluations gave, the last `most` of them, for a reason that names them."""
    if not by_epoch:
        built = f" (built from {goal.aggregate['from']} records naming their metadata's " \
                f"{goal.aggregate['metric']!r}, by {goal.aggregate['by']})" if goal.aggregate else ""
        return f"no {goal.key} evaluation{built}"
    wanted = [b.metric for b in goal.clauses[0][1]]
    shown = []
    for (line, epoch, samples), values in list(by_epoch.items())[-most:]:
        at = f"samples_count {_whole(samples)}" if samples is not None else \
            f"epoch {_whole(epoch)}" if epoch is not None else f"line {line}"
        missing = [m for m in wanted if m not in values]
        shown.append(f"{at}: " + ", ".join(f"{k} {v:g}" for k, v in values.items())
                     + (f" (no {', '.join(missing)})" if missing else ""))
    count = len(by_epoch)
    return f"{count} evaluation{'s' if count > 1 else ''}, " + ("the last: " if count > most else "") + "; ".join(shown)


def _whole(x: float) -> str:
    return f"{x:.0f}" if x.is_integer() and abs(x) < 1e15 else f"{x:g}"


def judge(run: Run, benchmark: str, round_: str, division: str | None = None) -> RunVerdict:
    """A run converged when its setup is within the round's limit, run_stop says success and (where the
    round's target is known, and the run is of the closed division) one evaluation after run_start
    reached it; epochs/samples to converge are those of that evaluation (else the last). `division`: the
    folder's (its systems file's), which a run's own submission_division does not override."""
    # The open division sets no quality target (mlcommons/logging, mlperf_logging/compliance_checker/
    # training_4.0.0/open_resnet.yaml: eval_accuracy `v['value'] < 1.0`): run_stop's status decides.
    goal = None if division_of(run, division) == "open" else target(benchmark, round_)
    by_epoch = evaluations(run, goal)
    early = [k for k in by_epoch if run.run_start_line is not None and k[0] < run.run_start_line]
    for k in early:  # an evaluation before run_start is no evaluation of the timed run
        del by_epoch[k]
    batch = run.global_batch_size
    hit = next((k for k, values in by_epoch.items() if goal and goal.reached(values, batch)), None)
    last = next(reversed(by_epoch), None)
    where = hit or last
    verdict = RunVerdict(run.path, run.minutes, run.status, False, "",
                         epochs=where[1] if where else None, samples=where[2] if where else None,
                         best=by_epoch[last] if last else {})
    if run.minutes is None:
        verdict.reason = run.problems[0] if run.problems else "no time to train"
    elif not (math.isfinite(run.minutes) and run.minutes > 0):
        verdict.reason = (f"time to train {run.minutes} minutes (run_stop, line {run.run_stop_line}, minus "
                          f"run_start, line {run.run_start_line}): not a positive finite time")
    elif run.init_start is not None and run.init_stop is not None and run.init_stop < run.init_start:
        verdict.reason = (f"init_stop is before the first init_start ({numbers.shown(run.init_seconds, 3)} seconds): a "
                          "negative initialisation time, the log's clock is not one")
    elif over := setup_over_limit(run, round_, division):
        verdict.reason = over
    elif not run.succeeded:
        verdict.reason = f"run_stop status {run.status!r} (line {run.run_stop_line}), not 'success'"
    elif goal is not None and hit is None:
        before = (f"; {len(early)} evaluation{'s' if len(early) > 1 else ''} before run_start (line "
                  f"{run.run_start_line}) not counted") if early else ""
        verdict.reason = f"target {goal.describe(batch)} not reached ({_seen(by_epoch, goal)}{before}; {goal.source})"
    else:
        verdict.converged = True
    return verdict


@dataclass
class Score:
    """A result folder's score: None with `reason` when it is invalid."""

    minutes: float | None
    valid: bool
    reason: str
    runs_required: int | None
    dropped_each_end: int
    counted: list[float]


def score(verdicts: list[RunVerdict], benchmark: str, scaling_factor: float = 1.0,
          required: int | None = None) -> Score:
    """Drop the fastest and the slowest (unet3d: 4 each), mean of the rest, times scaling_factor; a run
    that did not converge takes a slowest slot, and more of them than slots dropped make it invalid."""
    required = required or RUNS_REQUIRED.get(benchmark)
    drop = DROPPED.get(benchmark, 1)
    failed = [v for v in verdicts if not v.converged]
    times = sorted(v.minutes for v in verdicts if v.converged)
    if required is None:
        return Score(None, False, f"unknown benchmark {benchmark!r}: no run count in {RUNS_SOURCE}", None, drop, [])
    if len(verdicts) < required:
        return Score(None, False, f"{len(verdicts)} of the {required} result files {benchmark} needs",
                     required, drop, [])
    if len(failed) > drop:
        unread = sum(v.unread for v in failed)
        said = [f"{unread} result file{'s' if unread > 1 else ''} cannot be read"] if unread else []
        if len(failed) > unread:
            said.append(f"{len(failed) - unread} run{'s' if len(failed) - unread > 1 else ''} did not converge")
        return Score(None, False, f"{' and '.join(said)}, at most {drop} may fail: "
                     + "; ".join(f"{v.path}: {v.reason}" for v in failed), required, drop, [])
    counted = times[drop: len(times) - (drop - len(failed))]
    if not counted:
        return Score(None, False, "no run left after dropping the fastest and the slowest", required, drop, [])
    minutes = math.fsum(t / len(counted) for t in counted) * scaling_factor  # (each term: no overflow in the sum)
    if not math.isfinite(minutes):
        return Score(None, False, f"the mean of the runs' times ({minutes}) is not a finite number", required, drop,
                     counted)
    return Score(minutes, True, "", required, drop, counted)


def roles(verdicts: list[RunVerdict], benchmark: str) -> list[str]:
    """What the score did with each run: counted, or dropped as the fastest, the slowest, or a run that
    did not converge (in a slowest slot)."""
    drop = DROPPED.get(benchmark, 1)
    order = sorted((i for i, v in enumerate(verdicts) if v.converged), key=lambda i: verdicts[i].minutes)
    slowest = max(drop - (len(verdicts) - len(order)), 0)
    out = ["dropped: did not converge (a slowest slot)"] * len(verdicts)
    for rank, i in enumerate(order):
        out[i] = ("dropped: fastest" if rank < drop else
                  "dropped: slowest" if rank >= len(order) - slowest else "counted")
    return out
