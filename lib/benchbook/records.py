"""Run records: the JSON file (`run.json`) next to each run's log that says everything about the run.

A record holds the resolved configuration, the exact command, the environment variables, start
and end times, exit code, status, failure cause with the last log lines, and the analysis result.
It is written when the run starts (status `running`) and rewritten when it ends, always atomically
(a temporary file renamed over the old one), so a crash or `kill -9` never leaves half a record;
a record still saying `running` after its launcher died is how `--resume` knows to redo the run.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd

from .errors import BenchbookError

RECORD = "run.json"
SCHEMA_VERSION = 1
STATUSES = ("running", "complete", "failed", "interrupted")
FAILURE_CAUSES = {
    "out_of_memory": "the run ran out of GPU or host memory",
    "timeout": "the run exceeded the study's per-run timeout and was stopped",
    "crash": "the process exited with a non-zero code or a signal",
    "no_progress": "the log stayed silent longer than the study's no_progress limit; the run was stopped",
    "missing_output": "the process exited cleanly but its log holds no complete measured run",
    "interrupted": "stopped by the user (Ctrl-C) or by a signal to benchbook",
}
# The keys of `benchbook analyze --json`, a contract other tools rely on.
JSON_KEYS = ["source", "run", "format", "framework", "model", "gpus", "nodes", "processes", "batch_size",
             "global_batch_size", "precision", "xla", "dali", "synthetic", "repeat", "line_start", "line_end",
             "reported_throughput", "recomputed_throughput", "elapsed_throughput", "rule", "iterations",
             "warmup_records", "status", "failure", "final_top1", "warnings", "reported"]


class RecordError(BenchbookError):
    """A run record that cannot be read; the message names the file."""


def clean(value):
    """A value as plain JSON: NaN and pandas' NA become null, numpy scalars Python numbers."""
    if value is pd.NA or value is None:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [clean(v) for v in value]
    if hasattr(value, "item"):
        return clean(value.item())
    return value


def run_dict(row: pd.Series) -> dict:
    """One analyzed run (a row of `Analysis.runs`) as the JSON object of the CLI contract."""
    return {k: clean(row[k]) for k in JSON_KEYS}


def write(path: Path, record: dict[str, Any]) -> None:
    """Write a record atomically: readers see the old one or the new one, never a mixture."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=".run.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(clean(record), f, indent=2, sort_keys=False)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def read(path: Path) -> dict:
    """A run record; RecordError names the file when it is not a readable record."""
    path = Path(path)
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RecordError(f"{path}: no run record") from None
    except (OSError, ValueError) as exc:
        raise RecordError(f"{path}: not a readable run record ({exc})") from None
    if not isinstance(record, dict) or "status" not in record or "config" not in record:
        raise RecordError(f"{path}: not a run record (expected a JSON object with `config` and `status`)")
    return record


def read_json(path: Path) -> dict:
    """Any JSON object benchbook wrote (study.json); RecordError names the file if unreadable."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise RecordError(f"{path}: not readable JSON ({exc})") from None
    if not isinstance(data, dict):
        raise RecordError(f"{path}: expected a JSON object")
    return data


def find(study_dir: Path) -> dict[str, dict]:
    """The records under a study folder, by run id (unreadable ones are skipped by the caller's choice)."""
    out = {}
    for p in sorted(Path(study_dir).glob(f"*/{RECORD}")):
        try:
            rec = read(p)
        except RecordError:
            continue
        out[rec.get("run_id", p.parent.name)] = rec
    return out


def table(study_dir: Path) -> pd.DataFrame:
    """One row per run record of a study folder: the state of a study at a glance (tidy)."""
    rows = []
    for run_id, rec in find(study_dir).items():
        cfg = rec.get("config", {})
        analysis = rec.get("analysis") or []
        rows.append({
            "run_id": run_id, "status": rec.get("status"), "cause": (rec.get("failure") or {}).get("cause"),
            "gpus": cfg.get("gpus"), "batch_size": cfg.get("batch_size"), "precision": cfg.get("precision"),
            "xla": cfg.get("xla"), "repeat": cfg.get("repeat"), "started_at": rec.get("started_at"),
            "duration_s": rec.get("duration_s"), "exit_code": rec.get("exit_code"),
            "throughput": (analysis[0].get("recomputed_throughput") if len(analysis) == 1 else None),
        })
    return pd.DataFrame(rows, columns=["run_id", "status", "cause", "gpus", "batch_size", "precision", "xla",
                                       "repeat", "started_at", "duration_s", "exit_code", "throughput"])
