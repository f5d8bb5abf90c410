"""MLPerf Training v0.5, the first round: its log lines and its results layout, read for the scorer.

A v0.5 line (mlperf_compliance 0.0.x, as mlcommons/training_results_v0.5 holds them) is
`:::MLPv0.5.0 <benchmark> <seconds> (<file>:<line>) <key>[: <json>]`: `run_start`, `eval_accuracy:
{"epoch": 1, "value": 22.4}`, `run_stop` or `run_stop: {"success": true}`, then `run_final`; `eval_target`
logs the target the implementation stopped at. The layout is `v0.5.0/<submitter>/<entry>/results/<system>/
<benchmark>/result_N.txt`, with `<system>/entry.json` (division, framework, `nodes`: accelerator, count per
node, nodes) and no `systems/` folder; `<submitter>/<entry>/submission.json` names the organisation.
The round's rules (targets, runs, timing) are `params/references/mlperf/rules/training_0.5.yaml`'s.
"""

from __future__ import annotations

import json
import math
import re

from ..logs.parsers.mllog import LineError, Run, take

TOKEN = ":::MLPv0.5.0"
KEPT = frozenset({"run_start", "run_stop", "eval_accuracy", "eval_target"})
ROUND_FOLDER = "v0.5.0"  # the layout's first folder (training_results_v0.5's own)


def key_of(body: str) -> str | None:
    """The key of what follows the token (` gnmt 1544234436.28 (nmt.py:701) run_final`), without parsing its
    value; None where the line is not of that form."""
    parts = body.split(" ", 3)
    if len(parts) < 4 or parts[0] != "" or not parts[3].startswith("("):
        return None
    close = parts[3].find(") ")
    if close < 0:
        return None
    return parts[3][close + 2:].split(":", 1)[0].strip()


def parse(body: str) -> tuple[str, float, str, object]:
    """(benchmark, seconds, key, value) of a v0.5 line's body; LineError says why not."""
    parts = body.split(" ", 3)
    if len(parts) < 4 or parts[0] != "" or not parts[3].startswith("(") or ") " not in parts[3]:
        raise LineError(f"expected ':::MLPv0.5.0 <benchmark> <seconds> (<file>:<line>) <key>[: <json>]', got "
                        f"{body[:80]!r}")
    try:
        stamp = float(parts[2])
    except ValueError:
        raise LineError(f"':::MLPv0.5.0' time {parts[2]!r} is not a number of seconds") from None
    if not math.isfinite(stamp):
        raise LineError(f"':::MLPv0.5.0' time {parts[2]!r} is not a finite number of seconds")
    rest = parts[3][parts[3].find(") ") + 2:]
    key, _, text = rest.partition(":")
    value = None
    if text.strip():
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise LineError(f"the value of {key.strip()!r} does not parse as JSON ({exc.msg} at column "
                            f"{exc.colno})") from None
    return parts[1], stamp, key.strip(), value


def fold(run: Run, number: int, record: tuple[str, float, str, object]) -> None:
    """Take one v0.5 record into the run, as the engine's `take` takes a later round's: the benchmark from
    the line, eval_accuracy's `{"epoch", "value"}` as value and epoch, run_stop's `success` as its status
    (a bare run_stop, as NVIDIA's logs have it, says nothing: the target decides); the first eval_target
    logged kept as the submission's `eval_target` (checked against the rule's target)."""
    benchmark, stamp, key, value = record
    if run.run_stop is not None:
        return
    run.submission.setdefault("benchmark", benchmark)
    if key == "eval_accuracy":
        epoch = value.get("epoch") if isinstance(value, dict) else None
        inner = value.get("value") if isinstance(value, dict) and "value" in value else value
        take(run, number, stamp, key, inner, {"epoch_num": epoch} if epoch is not None else {})
    elif key == "run_stop":
        success = value.get("success") if isinstance(value, dict) else None  # true, or Google's "true"
        failed = success is not None and str(success).strip().lower() in ("false", "0", "no")
        take(run, number, stamp, key, None, {"status": "aborted" if failed else "success"})
    elif key == "eval_target":
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            run.submission.setdefault("eval_target", float(value))
    else:
        take(run, number, stamp, key, value, {})


def system(text: str) -> dict:
    """entry.json (a JSON object) as the systems file's fields: accelerators per node and nodes of its first
    `nodes` entry, the accelerator, framework and division. ValueError/KeyError/TypeError when it is not."""
    entry = json.loads(text, parse_constant=_refuse)
    nodes = entry["nodes"]
    node = nodes[0] if isinstance(nodes, list) else nodes
    per_node, count = node.get("num_accelerators"), node.get("num_nodes")
    # Google's entries count a pod's accelerators in all (tpuv3-512: 512 over 32 hosts), NVIDIA's per node
    # (DGX-2H Pod: 16 on each of 36): where the accelerator's name ends in the count, it is the whole system's.
    sized = _SIZE.search(str(node.get("accelerator") or ""))
    if sized and isinstance(per_node, int) and isinstance(count, int) and count > 1 and \
            int(sized.group(1)) == per_node and per_node % count == 0:
        per_node //= count
    return {"accelerators_per_node": per_node, "number_of_nodes": count,
            "accelerator_model_name": node.get("accelerator"), "framework": entry.get("framework"),
            "division": entry.get("division")}


_SIZE = re.compile(r"-(\d{1,6})$")


def _refuse(constant: str):
    raise ValueError(f"{constant} is not a JSON number")


def target_problems(runs: list, goal) -> list[str]:
    """Where a run's logged eval_target is not the rule's target (`rules.Target`): named, the rule's applied."""
    if goal is None:
        return []
    metric, want = goal.thresholds[0]
    out = []
    for run in runs:
        logged = run.submission.get("eval_target") if isinstance(run, Run) else None
        if logged is not None and not math.isclose(logged, want, rel_tol=1e-6):
            out.append(f"{run.path}: logs eval_target {logged:g}, the round's rule is {goal.describe()} "
                       f"({goal.source}): the rule's target is applied")
    return out
