"""Where benchbook's score of a result folder and the official tool's differ, and why: the cause and the
official figure beside benchbook's, so that a reader can trust the difference (`Folder.official`).

The official tool is mlperf-logging's `result_summarizer` (`_compute_strong_score_standalone`, which runs the
compliance checker on each file and drops the files it fails). Only causes benchbook can tell from the files
themselves are said here, with the number the official arithmetic gives; `checks.py` runs the tool itself
(`--check`) and names the causes only its own messages show (the v1.1 `weights_initialization` checks).
"""

from __future__ import annotations

import dataclasses
import os

from . import rules

TOOL = ("mlperf-logging 4.1.68 (PyPI, mlcommons/logging; result_summarizer.py, compliance_checker/"
        "mlp_compliance.py)")
# The rules ask for a number of runs, each "a complete execution of an implementation on a system, training a
# model from initialization to the quality target" (Definitions), "Each benchmark result is based on a set of
# run results" (Benchmark Results).
INDEPENDENT = ("the rules ask for N runs, each a complete execution training a model from initialization to the "
               "target (mlcommons/training_policies training_rules.adoc, Definitions: 'run'; Benchmark Results)")


def copies_reason(twins: list[tuple], required: int | None) -> str:
    """Why a folder holding byte-identical result files has no score: a rule it breaks."""
    pairs = "; ".join(f"{os.path.basename(str(b))} is byte-identical to {os.path.basename(str(a))}"
                      for a, b in twins)
    need = f"{required} " if required else ""
    return (f"{pairs}: one run logged twice is not two runs; {INDEPENDENT.replace('N runs', f'{need}runs')}, "
            "and these are not independent")


def _figure(found: rules.Score) -> str:
    return f"{found.minutes:.4f} minutes" if found.minutes is not None else f"no score ({found.reason})"


def differences(key: str | None, benchmark: str, verdicts: list[rules.RunVerdict], runs: list, twins: list[tuple],
                ours: rules.Score, factor: float | None, required: int | None,
                division: str | None = None) -> dict | None:
    """What the official tool gives for this folder where benchbook's score differs from it, with the cause
    (None where they agree, as far as the files tell)."""
    if key is None or factor is None:
        return None
    if twins:
        counted = rules.score(verdicts, benchmark, factor, required)
        names = ", ".join(os.path.basename(str(b)) for _, b in twins)
        return _official(counted, f"result_summarizer counts every result_*.txt as a run, {names} too (a byte-"
                         f"identical copy); benchbook refuses the folder: {INDEPENDENT}")
    if key == "0.5":
        return {"score_minutes": None, "figure": "no score", "tool": TOOL,
                "cause": "mlperf-logging has no training 0.5.0 ruleset (its rounds begin with 0.6) and does not read "
                         "':::MLPv0.5.0' lines; benchbook scores by the v0.5 rules (params/references/mlperf/rules/"
                         "training_0.5.yaml)"}
    if key == "0.6" and ours.minutes is not None:
        return {"score_minutes": ours.minutes / 1000.0, "figure": f"{ours.minutes / 1000.0:.4f} minutes", "tool": TOOL,
                "cause": "result_summarizer reads v0.6's ':::MLL' times, in seconds, as milliseconds: its figure is "
                         "1000 times too small (it has no training_0.6.0 time unit)"}
    goal = rules.target(benchmark, key)
    if goal is not None and goal.aggregate and division != "open":
        redone, named = list(verdicts), []
        for i, (v, run) in enumerate(zip(verdicts, runs, strict=True)):
            if v.converged and _checker_fails(list(rules.evaluations(run, goal).values()), goal):
                redone[i] = dataclasses.replace(v, converged=False)
                named.append(os.path.basename(v.path))
        if named:
            wanted = ", ".join(b.metric for b in goal.clauses[0][1])
            return _official(rules.score(redone, benchmark, factor, required),
                             f"an evaluation of {', '.join(named)} logs some of {wanted} and not all: the compliance "
                             f"checker fails the file (its CHECK of {goal.aggregate['key']} asks every metric of the "
                             f"first evaluation, its ATLEAST_ONE_CHECK raises KeyError on one lacking the metric it "
                             f"reaches; {goal.source}) and result_summarizer drops the run; benchbook reads the "
                             "evaluations that hold every metric")
    if weights := rules.loaded().weights.get((key, benchmark)):
        redone, named = list(verdicts), []
        for i, (v, run) in enumerate(zip(verdicts, runs, strict=True)):
            if v.converged and division != "open" and _weights_fail(getattr(run, "tensors", []), weights[0]):
                redone[i], named = dataclasses.replace(v, converged=False), [*named, os.path.basename(v.path)]
        if named:
            return _official(rules.score(redone, benchmark, factor, required),
                             f"{WEIGHTS_HISTORY}: {', '.join(named)} log{'s' if len(named) == 1 else ''} no "
                             f"weights_initialization of each tensor its END check lists ({weights[1]})")
    early, named = list(verdicts), []
    for i, (v, run) in enumerate(zip(verdicts, runs, strict=True)):
        if not v.converged and "before run_start" in v.reason and not v.unread:
            again = rules.judge(dataclasses.replace(run, run_start_line=None), benchmark, key, division)
            if again.converged:
                early[i], named = again, [*named, os.path.basename(v.path)]
    if named:
        return _official(rules.score(early, benchmark, factor, required),
                         f"the compliance checker's ATLEAST_ONE_CHECK reads every evaluation of the file, so it counts "
                         f"{', '.join(named)}, whose target is reached only in an evaluation logged before run_start; "
                         "benchbook counts the evaluations of the timed run (run_start to run_stop)")
    if tuple(map(int, key.split("."))) >= (0, 7):
        redone, named = list(verdicts), []
        for i, (v, run) in enumerate(zip(verdicts, runs, strict=True)):
            if not v.converged and getattr(run, "status", "success") not in ("success", None):
                again = rules.judge(dataclasses.replace(run, status="success"), benchmark, key, division)
                if again.converged:
                    redone[i], named = again, [*named, os.path.basename(v.path)]
        if named:
            counted = rules.score(redone, benchmark, factor, required)
            if counted.minutes != ours.minutes:
                return _official(counted, f"from v0.7 mlperf-logging's rules ask only that run_stop has a status "
                                          f"(training_0.7.0/common.yaml:95) and count {', '.join(named)}, which "
                                          "reached the target; benchbook counts a run that did not log success as "
                                          "failed (the slowest slot)")
    return None


# mlperf-logging's own history of its training_1.1.0 rules (rulesdata.WEIGHTS_WARNED).
WEIGHTS_HISTORY = ("mlperf-logging 4.1.68 fails the file over the weights_initialization checks of its training_1.1.0 "
                   "rules, checks that mlperf-logging made warnings for ruleset 1.1.0 (the round's own review scored "
                   "these runs, as benchbook does) and failures again for 2.0 onward")


def _weights_fail(tensors: list, names: tuple[str, ...]) -> bool:
    """Whether the 1.1.0 weights_initialization checks fail a run: none logged (REQ AT_LEAST_ONE), one without
    metadata.tensor (its CHECK), or not each tensor the END check lists, as many times (sorted lists equal)."""
    return not tensors or None in tensors or sorted(tensors) != list(names)


def _checker_fails(groups: list[dict[str, float]], goal: rules.Target) -> bool:
    """Whether the compliance checker fails a run's evaluations built from one-metric records: the first lacks
    a metric (its CHECK), or the target's expression, read left to right and stopping at the first bound that
    does not hold (Python's `and`), reaches a metric an evaluation lacks (KeyError)."""
    bounds = goal.clauses[0][1]
    if groups and any(b.metric not in groups[0] for b in bounds):
        return True
    for values in groups:
        for b in bounds:
            if b.metric not in values:
                return True
            if not b.holds(values[b.metric]):
                break
    return False


def _official(found: rules.Score, cause: str) -> dict:
    return {"score_minutes": found.minutes, "figure": _figure(found), "cause": cause, "tool": TOOL}
