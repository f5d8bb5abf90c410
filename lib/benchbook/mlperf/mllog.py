"""Reading one MLPerf Training result file (`result_N.txt`): the run it holds, as the MLLOG lines say.

Two line forms are read, whatever stands before the token (`[0] `, rank tags, launcher text):

- v0.7 on: `:::MLLOG {"time_ms": ..., "key": ..., "value": ..., "metadata": {...}}`, times in ms;
- v0.6: `:::MLL <seconds> <key>: {"value": ..., "metadata": {...}}`, times in seconds.

v0.5's `:::MLPv0.5.0` lines are refused. The file is read line by line (bounded memory), and only the
keys a score, a check or a report needs are kept; a line with another key (most of them) is told by its
key and its closing brace, its JSON not parsed (`_unneeded`), so that a broken one is not refused. This
module needs nothing but the standard library and `benchbook.errors`: it is pure, so that it can become
the engine's MLLOG log format unchanged.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import LogError
from ..logs.archives import ArchivePath

TOKEN = ":::ML"  # what both line forms (and v0.5's) begin with
TOKEN_V07 = ":::MLLOG "
TOKEN_V06 = ":::MLL "
TOKEN_V05 = ":::MLPv0.5.0"
KEPT = frozenset({"run_start", "run_stop", "eval_accuracy", "init_start", "init_stop", "global_batch_size",
                  "train_samples"})  # with the submission_* keys, what a run keeps (_fold)
UNIT_SECONDS = {"ms": 1000.0, "s": 1.0}  # the log's time unit, in units per second
_KEY_FIELD = '"key": "'  # how mlperf_logging writes a record's key (json.dumps' separators)


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


def _needed(key: str) -> bool:
    return key in KEPT or key.startswith("submission_")


def _unneeded(body: str, unit: str) -> bool:
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
    return not _needed(key) and body.rstrip().endswith("}")


def _line_v07(text: str, path: str, number: int) -> tuple[float, str, object, dict]:
    try:
        record = json.loads(text)
    except json.JSONDecodeError as exc:
        raise LogError(path, f"line {number}: the MLLOG JSON does not parse ({exc.msg} at column {exc.colno})"
                       ) from None
    try:
        return float(record["time_ms"]), str(record["key"]), record.get("value"), record.get("metadata") or {}
    except (KeyError, TypeError, ValueError) as exc:
        raise LogError(path, f"line {number}: an MLLOG record needs time_ms and key ({exc!r})") from None


def _line_v06(text: str, path: str, number: int) -> tuple[float, str, object, dict]:
    parts = text.split(" ", 2)
    if len(parts) < 3 or not parts[1].endswith(":"):
        raise LogError(path, f"line {number}: expected ':::MLL <seconds> <key>: {{json}}', got {text[:80]!r}")
    try:
        stamp = float(parts[0])
    except ValueError:
        raise LogError(path, f"line {number}: ':::MLL' time {parts[0]!r} is not a number of seconds") from None
    try:
        record = json.loads(parts[2])
    except json.JSONDecodeError as exc:
        raise LogError(path, f"line {number}: the MLLOG JSON does not parse ({exc.msg} at column {exc.colno})"
                       ) from None
    if not isinstance(record, dict):
        raise LogError(path, f"line {number}: expected a JSON object after the key, got {parts[2][:80]!r}")
    return stamp, parts[1][:-1], record.get("value"), record.get("metadata") or {}


def _number(value) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _evaluations(line: int, time: float, value, metadata: dict) -> list[Evaluation]:
    """An eval_accuracy record as rows: one number, or one row per named metric (BBOX, SEGM); v0.6
    nests the number or the metrics under `accuracy` (with `epoch` beside it)."""
    epoch = _number(metadata.get("epoch_num"))
    if isinstance(value, dict) and "accuracy" in value:
        epoch = epoch if epoch is not None else _number(value.get("epoch"))
        value = value["accuracy"]
    samples = _number(metadata.get("samples_count"))
    if isinstance(value, dict):
        metrics = [(str(k), _number(v)) for k, v in value.items()]
    else:
        metrics = [("accuracy", _number(value))]
    return [Evaluation(line, time, epoch, samples, name, v) for name, v in metrics
            if v is not None and math.isfinite(v)]


def _fold(run: Run, number: int, time: float, key: str, value, metadata: dict) -> None:
    """Take one record into the run: the first run_stop ends it (later records are kept out)."""
    if run.run_stop is not None:
        return
    if key == "run_start":  # the last one before run_stop, as result_summarizer's _query_run_start_stop
        run.run_start, run.run_start_line = time, number
    elif key == "run_stop":
        run.run_stop, run.run_stop_line = time, number
        status = metadata.get("status")
        run.status = str(status) if status is not None else None
    elif key == "eval_accuracy":
        run.evaluations.extend(_evaluations(number, time, value, metadata))
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


def read(path: str | Path | ArchivePath) -> Run:
    """The run of one result file. Raises LogError (file and line) for a file that is no MLLOG result
    (missing, v0.5, no MLLOG line, JSON that does not parse); a run without run_start or run_stop is
    returned with its problems (a truncated file ends before run_stop)."""
    name = str(path)
    run: Run | None = None
    number = 0
    last_was_cut = False
    try:
        opened = path.open(encoding="utf-8", errors="replace") if isinstance(path, ArchivePath) else \
            open(path, encoding="utf-8", errors="replace")
        with opened as f:
            for number, text in enumerate(f, 1):
                if TOKEN not in text:  # most lines: the launcher's and the framework's
                    continue
                at = text.find(TOKEN)
                if text.startswith(TOKEN_V07, at):
                    unit, parse, body = "ms", _line_v07, text[at + len(TOKEN_V07):]
                elif text.startswith(TOKEN_V06, at):
                    unit, parse, body = "s", _line_v06, text[at + len(TOKEN_V06):]
                elif text.startswith(TOKEN_V05, at):
                    raise LogError(name, f"line {number}: an MLPerf v0.5 log (':::MLPv0.5.0'); only v0.6 "
                                         "(':::MLL') and v0.7 on (':::MLLOG') are read")
                else:
                    continue
                last_was_cut = not text.endswith("\n")
                if run is None:
                    run = Run(name, unit)
                elif run.unit != unit:
                    raise LogError(name, f"line {number}: mixes ':::MLL' (v0.6, seconds) and ':::MLLOG' "
                                         "(v0.7 on, milliseconds) lines")
                if _unneeded(body, unit):
                    continue
                try:
                    record = parse(body, name, number)
                except LogError:
                    if last_was_cut:
                        raise LogError(name, f"line {number}: the file is truncated: its last MLLOG line "
                                             "is cut short") from None
                    raise
                if _needed(record[1]):
                    _fold(run, number, *record)
    except OSError as exc:
        raise LogError(name, f"cannot read: {exc.strerror or exc}") from None
    if run is None:
        raise LogError(name, "no MLLOG line (':::MLLOG' or ':::MLL'): not an MLPerf Training result file")
    run.lines = number
    if run.run_start is None:
        run.problems.append(f"{name}: no run_start in its {number} lines")
    elif run.run_stop is None:
        run.problems.append(f"{name}: no run_stop after run_start (line {run.run_start_line}); the file ends "
                            f"at line {number}: a truncated or aborted run")
    return run
