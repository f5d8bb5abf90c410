"""The MLPerf Training rule: the quality targets per round and benchmark, the runs a result needs, and
the score (the olympic mean of the runs' times to train, in minutes, times the folder's scaling.json).

Every number here names where it comes from. The official scorer is mlperf-logging's
`result_summarizer` (mlcommons/logging); the rule is repeated, not imported, so that scoring needs
nothing outside the standard library (`checks.py` runs the official tools beside it).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from ..errors import BenchbookError
from .mllog import Run

MLPERF_LOGGING = "mlcommons/logging (mlperf-logging 4.1.68)"


@dataclass(frozen=True)
class Target:
    """The quality a run must reach in one evaluation: every metric at least its threshold and below
    1.0 (the compliance rules' `v['value'] >= 0.7590 and v['value'] < 1.0`)."""

    benchmark: str
    rounds: tuple[str, ...]
    thresholds: tuple[tuple[str, float], ...]
    source: str

    def reached(self, values: dict[str, float]) -> bool:
        return all(name in values and threshold <= values[name] < 1.0 for name, threshold in self.thresholds)

    def describe(self) -> str:
        return " and ".join(f"{name} >= {threshold}" for name, threshold in self.thresholds)


def _closed(round_: str, name: str, line: int) -> str:
    return f"{MLPERF_LOGGING}: mlperf_logging/compliance_checker/training_{round_}.0/closed_{name}.yaml:{line}"


TARGETS = (
    Target("resnet", ("0.6",), (("accuracy", 0.759),),
           "mlcommons/training_policies issue #170 (2019-01-17, 'Resnet quality target moved to 0.759') and "
           "#179 ('used this accuracy successfully in v0.6'); mlperf-logging's training_0.6.0 configs do not "
           "check it (common.yaml: 'since target is not printed I can not confirm the accuracy')"),
    *(Target("resnet", (r,), (("accuracy", 0.759),), _closed(r, "resnet", line))
      for r, line in (("0.7", 18), ("1.0", 18), ("1.1", 195), ("2.0", 195), ("2.1", 195), ("3.0", 17),
                      ("3.1", 17), ("4.0", 17))),
    Target("maskrcnn", ("0.6",), (("BBOX", 0.377), ("SEGM", 0.339)),
           "mlcommons/training@cdb75f06: object_detection/caffe2/README.md ('Box mAP of 0.377, mask mAP of "
           "0.339'); mlperf-logging's training_0.6.0 configs do not check it"),
    *(Target("maskrcnn", (r,), (("BBOX", 0.377), ("SEGM", 0.339)), _closed(r, "maskrcnn", line))
      for r, line in (("0.7", 55), ("1.0", 55), ("1.1", 92), ("2.0", 94), ("2.1", 94), ("3.0", 55), ("3.1", 55))),
)

# The result files a result needs, by benchmark: mlperf-logging's benchmark_meta.py
# (_ALL_RESULT_FILE_COUNTS['training'], which result_summarizer applies to every round).
RUNS_REQUIRED = {"bert": 10, "dlrm": 5, "dlrm_dcnv2": 10, "gnmt": 10, "gpt3": 3, "maskrcnn": 5, "minigo": 10,
                 "resnet": 5, "ssd": 5, "retinanet": 5, "stable_diffusion": 10, "transformer": 10, "ncf": 10,
                 "rnnt": 10, "unet3d": 40, "gnn": 10, "rgat": 10, "llama2_70b_lora": 10, "llama31_405b": 3}
RUNS_SOURCE = f"{MLPERF_LOGGING}: mlperf_logging/benchmark_meta.py (_ALL_RESULT_FILE_COUNTS)"
# Runs dropped at each end: result_summarizer.py's `max_dropped_scores = 4 if benchmark == "unet3d" else 1`.
DROPPED = {"unet3d": 4}
BENCHMARK_ALIASES = {"mask": "maskrcnn"}  # result_summarizer's _benchmark_alias

_ROUND = re.compile(r"v?(\d+)\.(\d+)(?:\.\d+)?")


def round_key(text: str) -> str:
    """'v1.0', '1.0', '1.0.0', 'training_results_v1.0' -> '1.0'."""
    m = _ROUND.search(str(text))
    if not m:
        raise BenchbookError(f"round {text!r}: expected a version such as v1.0 (or training_results_v1.0)")
    return f"{int(m.group(1))}.{int(m.group(2))}"


def target(benchmark: str, round_: str) -> Target | None:
    key = round_key(round_)
    return next((t for t in TARGETS if t.benchmark == benchmark and key in t.rounds), None)


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


def judge(run: Run, benchmark: str, round_: str) -> RunVerdict:
    """A run converged when run_stop says success and (where the round's target is known, and the run
    is of the closed division) one evaluation reached it; epochs/samples to converge are those of that
    evaluation (else the last)."""
    by_epoch: dict[tuple, dict[str, float]] = {}
    for e in run.evaluations:
        by_epoch.setdefault((e.line, e.epoch, e.samples), {})[e.metric] = e.value
    # The open division sets no quality target (mlcommons/logging, mlperf_logging/compliance_checker/
    # training_4.0.0/open_resnet.yaml: eval_accuracy `v['value'] < 1.0`): run_stop's status decides.
    goal = None if str(run.submission.get("division", "")).lower() == "open" else target(benchmark, round_)
    hit = next((k for k, values in by_epoch.items() if goal and goal.reached(values)), None)
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
    elif not run.succeeded:
        verdict.reason = f"run_stop status {run.status!r} (line {run.run_stop_line}), not 'success'"
    elif goal is not None and hit is None:
        verdict.reason = f"target {goal.describe()} not reached (last evaluation: {verdict.best or 'none'})"
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


def score(verdicts: list[RunVerdict], benchmark: str, scaling_factor: float = 1.0) -> Score:
    """Drop the fastest and the slowest (unet3d: 4 each), mean of the rest, times scaling_factor; a run
    that did not converge takes a slowest slot, and more of them than slots dropped make it invalid."""
    required = RUNS_REQUIRED.get(benchmark)
    drop = DROPPED.get(benchmark, 1)
    failed = [v for v in verdicts if not v.converged]
    times = sorted(v.minutes for v in verdicts if v.converged)
    if required is None:
        return Score(None, False, f"unknown benchmark {benchmark!r}: no run count in {RUNS_SOURCE}", None, drop, [])
    if len(verdicts) < required:
        return Score(None, False, f"{len(verdicts)} of the {required} result files {benchmark} needs",
                     required, drop, [])
    if len(failed) > drop:
        return Score(None, False, f"{len(failed)} runs did not converge, at most {drop} may: "
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
