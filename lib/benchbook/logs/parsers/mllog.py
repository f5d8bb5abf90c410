"""MLPerf Training result files (`result_N.txt`): the MLLOG log format, and the one reader of its lines.

Two line forms are read, whatever stands before the token (`[0] `, rank tags, launcher text):

- v0.7 on: `:::MLLOG {"time_ms": ..., "key": ..., "value": ..., "metadata": {...}}`, times in ms;
- v0.6: `:::MLL <seconds> <key>: {"value": ..., "metadata": {...}}`, times in seconds.

v0.5's `:::MLPv0.5.0` lines are refused. Only the keys a score, a check or a report needs are kept
(`needed`); a line with another key (most of them) is told by its key and its closing brace, its JSON
not parsed (`unneeded`), so that a broken one is not refused. `take` folds one kept record into a
`Run`, the first run_stop ending it (what mlcommons/logging's result_summarizer reads).

Both readers of result files use these: `benchbook mlperf score` (`mlperf/mllog.py`, a loop over a
file's lines) and `benchbook analyze` (this module's format: a record a KEYED event, a result file
one run whatever ranks logged in it, `conclude` then folds its records with `take`). An MLLOG run
logs no throughput: its named rule, `mlperf`, is time to train (first run_stop minus run_start).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field

from ..rules import NamedRule
from . import scanning
from .registry import LogFormat, register

TOKEN = ":::ML"  # what both line forms (and v0.5's) begin with
TOKEN_V07 = ":::MLLOG "
TOKEN_V06 = ":::MLL "
TOKEN_V05 = ":::MLPv0.5.0"
V05_REFUSED = "an MLPerf v0.5 log (':::MLPv0.5.0'); only v0.6 (':::MLL') and v0.7 on (':::MLLOG') are read"
# With the submission_* keys, what a run keeps (take); aggregated_eval_accuracy: Stable Diffusion's FID and CLIP.
KEPT = frozenset({"run_start", "run_stop", "eval_accuracy", "aggregated_eval_accuracy", "init_start", "init_stop",
                  "global_batch_size", "train_samples"})
UNIT_SECONDS = {"ms": 1000.0, "s": 1.0}  # the log's time unit, in units per second
_KEY_FIELD = '"key": "'  # how mlperf_logging writes a record's key (json.dumps' separators)
# What a list-valued eval_accuracy holds, by the logged submission_benchmark: Google's v0.6 TPU Mask R-CNN
# logs `[box AP, mask AP]` (mlcommons/training_results_v0.6 Google/results/tpu-v3-32/mask: [0.381, 0.343]
# at the end of result_0.txt, the order of the reference's "Box mAP of 0.377, mask mAP of 0.339",
# mlcommons/training@cdb75f06 object_detection/caffe2/README.md). Another list is named by position.
LIST_METRICS = {"mask": ("BBOX", "SEGM"), "maskrcnn": ("BBOX", "SEGM")}


class LineError(ValueError):
    """An MLLOG line that cannot be read; the message says why (its reader adds the file and line)."""


@dataclass(frozen=True)
class Evaluation:
    """One quality evaluation: `metric` is `accuracy` for a single number, else the name the log gives
    (Mask R-CNN: `BBOX` and `SEGM`, one row each)."""

    line: int
    time: float
    epoch: float | None
    samples: float | None
    metric: str
    value: float
    key: str = "eval_accuracy"  # or aggregated_eval_accuracy (Stable Diffusion's target key)


@dataclass
class Run:
    """What one result file says of its run. Times are in the log's own unit (`unit`: ms or s)."""

    path: str
    unit: str
    run_start: float | None = None
    run_start_line: int | None = None
    run_stop: float | None = None
    run_stop_line: int | None = None
    status: str | None = None
    init_start: float | None = None
    init_stop: float | None = None
    global_batch_size: float | None = None
    train_samples: float | None = None
    submission: dict[str, object] = field(default_factory=dict)
    evaluations: list[Evaluation] = field(default_factory=list)
    lines: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def time_to_train(self) -> float | None:
        """First run_stop minus the run_start before it, in the log's unit; None when either is missing."""
        if self.run_start is None or self.run_stop is None:
            return None
        return self.run_stop - self.run_start

    @property
    def minutes(self) -> float | None:
        ttt = self.time_to_train
        return None if ttt is None else ttt / UNIT_SECONDS[self.unit] / 60.0

    @property
    def init_seconds(self) -> float | None:
        if self.init_start is None or self.init_stop is None:
            return None
        return (self.init_stop - self.init_start) / UNIT_SECONDS[self.unit]

    @property
    def succeeded(self) -> bool:
        return self.status == "success"


def needed(key: str) -> bool:
    return key in KEPT or key.startswith("submission_")


def unneeded(body: str, unit: str) -> bool:
    """A record whose key nothing here reads (most lines: throughput, tracked_stats, epoch_start...),
    told without parsing its JSON: its key read where it stands (v0.7: the first `"key": "` of the
    object, before any nested `{` or `[`; v0.6: the word before the JSON), and its object closed on the
    line. Anything else, or a key that is read, is parsed (and refused when it does not parse)."""
    if unit == "ms":
        at = body.find(_KEY_FIELD)
        if at < 0 or body.find("{", 1, at) >= 0 or body.find("[", 0, at) >= 0:
            return False
        start = at + len(_KEY_FIELD)
        key = body[start:body.find('"', start)]
    else:
        parts = body.split(" ", 2)
        if len(parts) < 3 or not parts[1].endswith(":"):
            return False
        key = parts[1][:-1]
    return not needed(key) and body.rstrip().endswith("}")


def parse_v07(text: str) -> tuple[float, str, object, dict]:
    """(time, key, value, metadata) of what follows `:::MLLOG `; LineError says why not."""
    try:
        record = json.loads(text)
    except json.JSONDecodeError as exc:
        raise LineError(f"the MLLOG JSON does not parse ({exc.msg} at column {exc.colno})") from None
    try:
        return float(record["time_ms"]), str(record["key"]), record.get("value"), record.get("metadata") or {}
    except (KeyError, TypeError, ValueError) as exc:
        raise LineError(f"an MLLOG record needs time_ms and key ({exc!r})") from None


def parse_v06(text: str) -> tuple[float, str, object, dict]:
    """(time, key, value, metadata) of what follows `:::MLL `; LineError says why not."""
    parts = text.split(" ", 2)
    if len(parts) < 3 or not parts[1].endswith(":"):
        raise LineError(f"expected ':::MLL <seconds> <key>: {{json}}', got {text[:80]!r}")
    try:
        stamp = float(parts[0])
    except ValueError:
        raise LineError(f"':::MLL' time {parts[0]!r} is not a number of seconds") from None
    try:
        record = json.loads(parts[2])
    except json.JSONDecodeError as exc:
        raise LineError(f"the MLLOG JSON does not parse ({exc.msg} at column {exc.colno})") from None
    if not isinstance(record, dict):
        raise LineError(f"expected a JSON object after the key, got {parts[2][:80]!r}")
    return stamp, parts[1][:-1], record.get("value"), record.get("metadata") or {}


def _number(value) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _evaluations(line: int, time: float, value, metadata: dict, benchmark=None,
                 key: str = "eval_accuracy") -> list[Evaluation]:
    """An eval_accuracy record as rows: one number, or one row per named metric (BBOX, SEGM); v0.6
    nests the number or the metrics under `accuracy` (with `epoch` beside it), or lists them
    (`LIST_METRICS`)."""
    epoch = _number(metadata.get("epoch_num"))
    if isinstance(value, dict) and "accuracy" in value:
        epoch = epoch if epoch is not None else _number(value.get("epoch"))
        value = value["accuracy"]
    samples = _number(metadata.get("samples_count"))
    if isinstance(value, dict):
        metrics = [(str(k), _number(v)) for k, v in value.items()]
    elif isinstance(value, list):
        names = LIST_METRICS.get(str(benchmark))
        names = names if names and len(names) == len(value) else [f"accuracy[{i}]" for i in range(len(value))]
        metrics = [(name, _number(v)) for name, v in zip(names, value, strict=True)]
    else:
        metrics = [("accuracy", _number(value))]
    return [Evaluation(line, time, epoch, samples, name, v, key) for name, v in metrics
            if v is not None and math.isfinite(v)]


def take(run: Run, number: int, time: float, key: str, value, metadata: dict) -> None:
    """Take one record into the run: the first run_stop ends it (later records are kept out)."""
    if run.run_stop is not None:
        return
    if key == "run_start":  # the last one before run_stop, as result_summarizer's _query_run_start_stop
        run.run_start, run.run_start_line = time, number
    elif key == "run_stop":
        run.run_stop, run.run_stop_line = time, number
        status = metadata.get("status")
        run.status = str(status) if status is not None else None
    elif key in ("eval_accuracy", "aggregated_eval_accuracy"):
        run.evaluations.extend(_evaluations(number, time, value, metadata, run.submission.get("benchmark"), key))
    elif key == "init_start":
        run.init_start = time if run.init_start is None else min(run.init_start, time)
    elif key == "init_stop":
        run.init_stop = time if run.init_stop is None else max(run.init_stop, time)
    elif key == "global_batch_size":
        run.global_batch_size = _number(value)
    elif key == "train_samples":
        run.train_samples = _number(value)
    elif key.startswith("submission_"):
        run.submission.setdefault(key[len("submission_"):], value)


# The engine's format: one pattern, every MLLOG line a KEYED event (unit, time, key, value, metadata).
_LINE = re.compile(r":::ML(?:LOG |L |Pv0\.5\.0)[^\n]*")
_FORMS = ((TOKEN_V07, "ms", parse_v07), (TOKEN_V06, "s", parse_v06))


def _record(m: re.Match):
    text = m.group(0)
    if text.startswith(TOKEN_V05):
        return scanning.REFUSE, V05_REFUSED
    for token, unit, parse in _FORMS:
        if text.startswith(token):
            body = text[len(token):]
            if unneeded(body, unit):
                return None
            try:
                record = parse(body)
            except LineError as exc:
                return scanning.REFUSE, str(exc)
            return (scanning.KEYED, (unit, *record)) if needed(record[1]) else None
    return None


_SNIFF = re.compile(r":::ML(?:LOG \{|L [0-9]|Pv0\.5\.0)")


def sniff(head: str) -> bool:
    return _SNIFF.search(head) is not None


def conclude(draft) -> None:
    """A run's KEYED records folded by `take` (those after the first run_stop left out), as the run's
    metadata, reported values, evaluations and end (`assemble.RunDraft`). `reported` holds what the
    runs frame has no column for (README, "MLPerf Training results")."""
    unit = draft.keyed[0][1][0]
    mixed = next((line for line, (other, *_) in draft.keyed if other != unit), None)
    if mixed is not None:
        raise scanning.Refused(mixed, "mixes ':::MLL' (v0.6, seconds) and ':::MLLOG' (v0.7 on, milliseconds) lines")
    run = Run("", unit)
    for line, (_, *record) in draft.keyed:
        take(run, line, *record)
    per_second = UNIT_SECONDS[unit]
    sub = run.submission
    benchmark = sub.get("benchmark")
    last = run.evaluations[-1] if run.evaluations else None
    draft.merge_meta({
        "model": "resnet50" if benchmark == "resnet" else benchmark,
        "global_batch_size": int(run.global_batch_size) if run.global_batch_size else None,
        "start_time": None if run.run_start is None else run.run_start / per_second,
    }, "the log")
    draft.reported.update({
        "time_to_train_minutes": run.minutes,
        "time_to_train_seconds": None if run.minutes is None else run.time_to_train / per_second,
        "run_stop_status": run.status, "run_start_line": run.run_start_line, "run_stop_line": run.run_stop_line,
        "init_seconds": run.init_seconds, "epochs": last.epoch if last else None,
        "samples": last.samples if last else None, "submitter": sub.get("org"), "platform": sub.get("platform"),
        "benchmark": benchmark, "division": sub.get("division"), "unit": unit,
        "quality": {e.metric: e.value for e in run.evaluations},  # each metric's last value, as logged
    })
    for e in run.evaluations:  # its benchmark's metric as the rule names it (accuracy, BBOX, SEGM), as logged
        draft.evals.append({"line": e.line, "rank": None, "epoch": e.epoch, "timestamp": e.time / per_second,
                            "eval_throughput": None, "metric": e.metric, "value": e.value})
    if run.run_stop is not None:
        if run.succeeded:
            draft.ended = "run_stop, status success"
        else:
            draft.failures.append((run.run_stop_line, f"run_stop status {run.status}"))


MLPERF = NamedRule(
    "mlperf", "elapsed", "nothing", "mlcommons/logging mlperf_logging/result_summarizer (first run_stop minus the "
    "run_start before it); mlcommons/training_policies training_rules.adoc, 'Benchmark timing'",
    words="time to train, the MLPerf way: the first run_stop minus the run_start before it, in the log's unit "
          "(reported: time_to_train_minutes); an MLLOG log logs no throughput, none is computed")


FORMAT = register(
    LogFormat(
        name="mllog",
        framework="unknown",  # MLLOG does not say; a run record beside the log may
        model="its submission_benchmark",
        sniff=sniff,
        patterns=[(_LINE, _record)],
        rules=(MLPERF,),  # no model's quality metric: a benchmark's quality is named by the rule (`metric`, `value`)
        conclude=conclude,
    )
)
