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

from ..errors import BenchbookError

RECORD = "run.json"
SCHEMA_VERSION = 1
STATUSES = ("running", "complete", "failed", "interrupted", "abandoned")
FAILURE_CAUSES = {
    "out_of_memory": "the run ran out of GPU or host memory",
    "timeout": "the run exceeded the study's per-run timeout and was stopped",
    "crash": "the process exited with a non-zero code or a signal",
    "no_progress": "the log stayed silent longer than the study's no_progress limit; the run was stopped",
    "missing_output": "the process exited cleanly but its log holds no complete measured run",
    "interrupted": "stopped by the user (Ctrl-C) or by a signal to benchbook",
    "disk_full": "the run's log or record could not be written: the disk (or the quota) was full",
    "storage_error": "the run's log or record could not be written (permissions, a lost file system)",
    "abandoned": "its launcher was killed and its processes are gone; --resume runs it again",
    "launch_error": "benchbook could not start or follow the run",
}
# The keys of `benchbook analyze --json`, a contract other tools rely on.
JSON_KEYS = ["source", "run", "format", "framework", "model", "gpus", "nodes", "processes", "batch_size",
             "global_batch_size", "precision", "xla", "dali", "synthetic", "repeat", "line_start", "line_end",
             "reported_throughput", "recomputed_throughput", "elapsed_throughput", "rule", "iterations",
             "warmup_records", "status", "failure", "final_top1", "warnings", "reported"]


class RecordError(BenchbookError):
    """A run record that cannot be read; the message names the file."""


class StorageError(BenchbookError, OSError):
    """Raised when a record cannot be written (disk full, quota, permissions); names the file."""

    def __str__(self) -> str:
        return self.strerror or super().__str__()


def _read_umask() -> int:
    """The process's umask, read once at import: os.umask can only read it by setting it, which for
    that moment would change the mode of files other threads create."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_UMASK = _read_umask()


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


def run_dicts(runs: pd.DataFrame) -> list[dict]:
    """The analyzed runs (`Analysis.runs`) as the JSON objects of the CLI contract, one per run.

    The frame is turned into dicts once: reading each field of each row from a Series cost a tenth
    of `benchbook analyze --json` on real-size logs."""
    return [{k: clean(v) for k, v in row.items()} for row in runs[list(JSON_KEYS)].to_dict("records")]


def write(path: Path, record: dict[str, Any]) -> None:
    """Write a record atomically: readers see the old one or the new one, never a mixture."""
    path = Path(path)
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=".run.", suffix=".tmp", dir=path.parent)
        os.fchmod(fd, 0o666 & ~_UMASK)  # readable as the logs beside it are (mkstemp makes 0600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(clean(record), f, indent=2, sort_keys=False)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        if tmp:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        if isinstance(exc, OSError) and not isinstance(exc, StorageError):
            raise StorageError(exc.errno, f"cannot write {path}: {exc.strerror or exc}", str(path)) from None
        raise


def write_in_place(path: Path, record: dict[str, Any]) -> None:
    """Overwrite an existing record inside the space it already holds (no new file, no new block
    when the new text is shorter): the last resort when the disk is full and `write` fails."""
    data = (json.dumps(clean(record), indent=1) + "\n").encode()
    try:
        with open(path, "r+b") as f:
            f.write(data)
            f.truncate()
            f.flush()
            os.fsync(f.fileno())
    except OSError as exc:
        raise StorageError(exc.errno, f"cannot write {path}: {exc.strerror or exc}", str(path)) from None


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
    except UnicodeDecodeError:
        raise RecordError(f"{path}: not a text file (expected JSON in UTF-8)") from None
    except json.JSONDecodeError as exc:
        raise RecordError(f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    except OSError as exc:
        raise RecordError(f"{path}: not readable ({exc.strerror or exc})") from None
    if not isinstance(data, dict):
        raise RecordError(f"{path}: expected a JSON object")
    return data


def config_beside(log: str | Path) -> dict:
    """The metadata of the run record next to a log (`<log>.run.json` or `run.json`): its
    `config` alone, the configuration the runner resolved (never the analysis it wrote back).

    A record that cannot be read gives no metadata rather than an error: the log stays the truth.
    So does a value of the wrong type (a batch size that is no whole number, say); a count written
    as digits in a string is read as the number.
    """
    p = Path(log)
    for candidate in (p.with_name(p.name + ".run.json"), p.with_name(RECORD)):
        if candidate.is_file():
            try:
                record = read_json(candidate)
            except RecordError:
                return {}
            config = record.get("config")
            if not isinstance(config, dict):
                return {}
            typed = {k: _typed(_CONFIG_KEYS[k], v) for k, v in config.items() if k in _CONFIG_KEYS}
            return {k: v for k, v in typed.items() if v is not None}
    return {}


# The keys of a record's `config` that describe its log's runs, and their types.
_CONFIG_KEYS = {"gpus": int, "nodes": int, "batch_size": int, "repeat": int, "precision": str, "xla": bool,
                "dali": bool, "synthetic": bool, "framework": str}


def _typed(kind: type, value):
    """A record's value as the type its key holds, or None."""
    if kind is int:
        if isinstance(value, str) and value.strip().isdigit():
            return int(value)
        return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None
    return value if isinstance(value, kind) else None


def find(study_dir: Path) -> dict[str, dict]:
    """The readable records under a study folder, by run id (`problems` lists the others)."""
    return scan(study_dir)[0]


def scan(study_dir: Path) -> tuple[dict[str, dict], list[tuple[str, str]]]:
    """(readable records by run id, problems as (run folder, what is wrong)): a record that cannot be
    read, a run folder without a record, a finished run whose log is gone. Nothing is dropped silently."""
    out, problems = {}, []
    study_dir = Path(study_dir)
    folders = sorted(p for p in study_dir.iterdir() if p.is_dir() and not p.name.startswith(".")) \
        if study_dir.is_dir() else []
    for folder in folders:
        p = folder / RECORD
        if not p.exists():
            if any(q.suffix == ".log" for q in folder.iterdir()):  # a run folder, not some other folder
                problems.append((folder.name, f"{p}: no run record beside the log"))
            continue
        try:
            rec = read(p)
        except RecordError as exc:
            problems.append((folder.name, str(exc)))
            continue
        run_id = rec.get("run_id", folder.name)
        out[run_id] = rec
        log = folder / str(rec.get("log") or f"{run_id}.log")
        had_log = rec.get("status") == "complete" or bool(rec.get("analysis"))  # a refused job may have none
        if had_log and not log.exists():
            problems.append((run_id, f"{log}: the run's log is missing (the record says {rec.get('status')})"))
    return out, problems


def problems(study_dir: Path) -> list[tuple[str, str]]:
    """What is wrong with the records and logs of a study folder (see `scan`)."""
    return scan(study_dir)[1]


def live_status(rec: dict) -> tuple[str, str | None]:
    """(status, note) of a record as it stands now: a `running` record whose launcher and process are
    gone is `abandoned`; one started on another host cannot be checked from here and says so."""
    status = rec.get("status")
    if status != "running":
        return status, None
    from . import liveness

    launcher = rec.get("launcher") or {}
    ident = launcher.get("identity") or ({"host": launcher.get("hostname"), "pid": launcher.get("pid")}
                                         if launcher.get("hostname") else None)
    where = liveness.state(ident)
    if where == "elsewhere":
        return status, f"launched on {ident.get('host')} (pid {ident.get('pid')}): not checked from here"
    if where == "gone":
        job = f" (slurm job {rec['slurm_job_id']} may still be queued: --resume cancels it)" \
            if rec.get("slurm_job_id") else ""
        return "abandoned", f"its launcher is gone; --resume runs it again{job}"
    if where == "unknown":
        return status, "recorded by an older benchbook: cannot tell whether it still runs"
    return status, None


def table(study_dir: Path) -> pd.DataFrame:
    """One row per run record of a study folder: the state of a study at a glance (tidy)."""
    rows = []
    found, wrong = scan(study_dir)
    notes = {}
    for run_id, problem in wrong:
        notes.setdefault(run_id, []).append(problem)
    for run_id, rec in found.items():
        cfg = rec.get("config", {})
        analysis = rec.get("analysis") or []
        status, note = live_status(rec)
        if note:
            notes.setdefault(run_id, []).append(note)
        rows.append({
            "run_id": run_id, "status": status, "cause": (rec.get("failure") or {}).get("cause"),
            "gpus": cfg.get("gpus"), "batch_size": cfg.get("batch_size"), "precision": cfg.get("precision"),
            "xla": cfg.get("xla"), "repeat": cfg.get("repeat"), "started_at": rec.get("started_at"),
            "duration_s": rec.get("duration_s"), "exit_code": rec.get("exit_code"),
            "throughput": (analysis[0].get("recomputed_throughput") if len(analysis) == 1 else None),
            "problem": "; ".join(notes.pop(run_id, [])) or None,
        })
    for run_id, problem in notes.items():  # unreadable records: a row each, never dropped
        rows.append({"run_id": run_id, "status": "unreadable", "problem": "; ".join(problem)})
    return pd.DataFrame(rows, columns=["run_id", "status", "cause", "gpus", "batch_size", "precision", "xla",
                                       "repeat", "started_at", "duration_s", "exit_code", "throughput", "problem"])
