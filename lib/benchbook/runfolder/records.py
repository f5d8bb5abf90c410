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
import stat
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core import config as axes
from ..core.catalog import default as catalog
from ..errors import BenchbookError

if TYPE_CHECKING:
    import pandas as pd

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
def json_keys() -> list[str]:
    """The keys of `benchbook analyze --json`, a contract other tools rely on: the configuration's axes
    (`core.config`) stand after source, run and format, the final value of each quality metric a model
    declares `final` (`core.config`: `final_<metric>`) after the failure."""
    return ["source", "run", "format", *catalog().run_keys(), "line_start", "line_end", "reported_throughput",
            "recomputed_throughput", "elapsed_throughput", "rule", "iterations", "warmup_records", "status",
            "failure", *catalog().finals(), "warnings", "reported"]


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
    """A value as plain JSON: NaN, infinities and pandas' NA become null, numpy scalars Python numbers
    (strict JSON: `Infinity` is no JSON, and no reader of a run record should meet it).

    pandas is not imported here: reading and writing records (each report's entry in `publish`) should
    not cost its 0.2 s import; a value can be pandas' NA only where pandas is already imported."""
    pandas = sys.modules.get("pandas")
    if value is None or (pandas is not None and value is pandas.NA):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [clean(v) for v in value]
    if hasattr(value, "item"):
        return clean(value.item())
    return value


def measures_by_run(measures: pd.DataFrame) -> dict[tuple, dict]:
    """(source, run) -> that run's measures as the CLI contract gives them: {key: {"value", "unit", "rule"}}."""
    by_run: dict[tuple, dict] = {}
    for source, run, key, value, unit, rule in measures[["source", "run", "measure", "value", "unit", "rule"]
                                                        ].itertuples(index=False, name=None):
        by_run.setdefault((source, int(run)), {})[key] = {"value": clean(value), "unit": unit, "rule": rule}
    return by_run


def run_dicts(runs: pd.DataFrame, measures: dict[tuple, dict] | None = None) -> list[dict]:
    """The analyzed runs (`Analysis.runs`) as the JSON objects of the CLI contract, one per run, each with its
    `measures` where they are given (`measures_by_run` of `Analysis.measures`).

    The frame is turned into dicts once: reading each field of each row from a Series cost a tenth
    of `benchbook analyze --json` on real-size logs."""
    out = [{k: clean(v) for k, v in row.items()} for row in runs[json_keys()].to_dict("records")]
    for row in out if measures is not None else ():
        row["measures"] = measures.get((row["source"], row["run"]), {})
    return out


def write(path: Path, record: dict[str, Any]) -> None:
    """Write a record atomically: readers see the old one or the new one, never a mixture."""
    path = Path(path)
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=".run.", suffix=".tmp", dir=path.parent)
        # readable as the logs beside it are (mkstemp makes 0600), writable by its owner alone: --resume
        # acts on a record only when no one else could have written it
        os.fchmod(fd, 0o644 & ~_UMASK)
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


MAX_DEPTH = 64  # levels of nesting a record may hold (benchbook writes under 10)


class _Unreadable(Exception):
    """Why a file holds no JSON that benchbook reads (the callers name the file)."""


def _load(path: Path) -> Any:
    """The JSON value of a file that is a regular file, not a link (a FIFO or a device would hang or
    never end; a link in a received folder may point anywhere), nested at most MAX_DEPTH deep."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise _Unreadable("a link, not a file benchbook wrote" if os.path.islink(path)
                          else f"not readable ({exc.strerror or exc})") from None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise _Unreadable("not a regular file")
        data = f.read()
    try:
        value = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise _Unreadable("not a text file (expected JSON in UTF-8)") from None
    except json.JSONDecodeError as exc:
        raise _Unreadable(f"not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    except RecursionError:
        raise _Unreadable(f"nested too deeply (at most {MAX_DEPTH} levels)") from None
    stack = [(value, 1)]
    while stack:  # iterative: a deep value must not exhaust the stack of what reads it next
        v, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise _Unreadable(f"nested too deeply (at most {MAX_DEPTH} levels)")
        if isinstance(v, dict | list):
            stack.extend((item, depth + 1) for item in (v.values() if isinstance(v, dict) else v))
    return value


def _number(v) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def _count(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _name(v) -> bool:
    """A plain file or folder name: never a path out of the run's folder."""
    return isinstance(v, str) and v not in ("", ".", "..") and "/" not in v and "\0" not in v


def _optional(check: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda v: v is None or check(v)


_TEXT = _optional(lambda v: isinstance(v, str))
# host, boot, PID, start time, session, and the token in the run's environment (liveness, runner)
_IDENTITY = {"host": (_TEXT, "a host name"), "boot_id": (_TEXT, "text"), "pid": (_optional(_count), "a PID"),
             "start_ticks": (_optional(_count), "clock ticks"), "session": (_optional(_count), "a session id"),
             "token": (_TEXT, "text")}
# What status and resume read of a record, and the type each must have (missing is allowed).
_FIELDS = {
    "run_id": (_name, "a run id (a folder name)"), "study": (_TEXT, "a study name"),
    "log": (_name, "a file name in the run's folder"), "config": (lambda v: isinstance(v, dict), "an object"),
    "started_at": (_TEXT, "a time"), "ended_at": (_TEXT, "a time"), "duration_s": (_optional(_number), "seconds"),
    "exit_code": (_optional(lambda v: isinstance(v, int) and not isinstance(v, bool)), "an exit code"),
    "command_launcher": (_TEXT, "a launcher's name"), "child_pid": (_optional(_count), "a PID"),
    "slurm_job_id": (_optional(lambda v: _count(v) or isinstance(v, str) and v.isdigit()), "a job id"),
    "failure": (_optional(lambda v: isinstance(v, dict)), "an object"),
    "analysis": (lambda v: isinstance(v, list) and all(isinstance(r, dict) for r in v), "a list of objects"),
    "launcher": (_optional(lambda v: isinstance(v, dict)), "an object"),
    "child": (_optional(lambda v: isinstance(v, dict)), "an object"),
    "failure.cause": (lambda v: v is None or v in FAILURE_CAUSES, f"one of {', '.join(FAILURE_CAUSES)}"),
    "launcher.pid": (_optional(_count), "a PID"), "launcher.hostname": (_TEXT, "a host name"),
    "launcher.identity": (_optional(lambda v: isinstance(v, dict)), "an object"),
    **{f"child.{k}": check for k, check in _IDENTITY.items()},
    **{f"launcher.identity.{k}": check for k, check in _IDENTITY.items()},
}


def _check(record: dict, path: Path) -> None:
    """RecordError naming the file and the field when a field status or resume reads has the wrong type."""
    status = record.get("status")
    if status not in STATUSES:
        raise RecordError(f"{path}: `status` is {_shown(status)}, expected one of {', '.join(STATUSES)}")
    for field, (ok, what) in _FIELDS.items():
        value, found = record, True
        for key in field.split("."):
            if not isinstance(value, dict) or key not in value:
                found = False
                break
            value = value[key]
        if found and not ok(value):
            raise RecordError(f"{path}: `{field}` is {_shown(value)}, expected {what}")
    for n, run in enumerate(record.get("analysis") or []):
        if not _optional(_number)(run.get("recomputed_throughput")):
            raise RecordError(f"{path}: `analysis[{n}].recomputed_throughput` is "
                              f"{_shown(run.get('recomputed_throughput'))}, expected a number")


def _shown(value) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def read(path: Path) -> dict:
    """A run record; RecordError names the file (and the field) when it is not a readable record."""
    path = Path(path)
    try:
        record = _load(path)
    except FileNotFoundError:
        raise RecordError(f"{path}: no run record") from None
    except (_Unreadable, OSError) as exc:
        raise RecordError(f"{path}: not a readable run record: {_reason(exc)}") from None
    if not isinstance(record, dict) or "status" not in record or "config" not in record:
        raise RecordError(f"{path}: not a run record (expected a JSON object with `config` and `status`)")
    _check(record, path)
    return record


def read_json(path: Path) -> dict:
    """Any JSON object benchbook wrote (study.json); RecordError names the file if unreadable."""
    try:
        data = _load(Path(path))
    except (_Unreadable, OSError) as exc:
        raise RecordError(f"{path}: {_reason(exc)}") from None
    if not isinstance(data, dict):
        raise RecordError(f"{path}: expected a JSON object")
    return data


def _reason(exc: Exception) -> str:
    return str(exc) if isinstance(exc, _Unreadable) else f"not readable ({getattr(exc, 'strerror', None) or exc})"


def config_beside(log: str | Path) -> dict:
    """The metadata of the run record next to a log (`<log>.run.json` or `run.json`): its
    `config` alone, the configuration the runner resolved (never the analysis it wrote back).

    A record that cannot be read gives no metadata rather than an error: the log stays the truth.
    So does a value of the wrong type (a batch size that is no whole number, say); a count written
    as digits in a string is read as the number.
    """
    p = Path(log)
    for candidate in (p.with_name(p.name + ".run.json"), p.with_name(RECORD)):
        try:
            record = _load(candidate)
        except FileNotFoundError:
            continue
        except (_Unreadable, OSError):  # unreadable, a link, too deep: no metadata
            return {}
        config = record.get("config") if isinstance(record, dict) else None
        if not isinstance(config, dict):
            return {}
        known = catalog()
        keys = set(known.recorded())  # the keys of a record's `config` that describe its log's runs
        typed = {k: axes.typed(known.axis(k), v) for k, v in config.items() if k in keys}
        return {k: v for k, v in typed.items() if v is not None}
    return {}


def find(study_dir: Path) -> dict[str, dict]:
    """The readable records under a study folder, by run id (`problems` lists the others)."""
    return scan(study_dir)[0]


def scan(study_dir: Path) -> tuple[dict[str, dict], list[tuple[str, str]]]:
    """(readable records by run id, problems as (run folder, what is wrong)): a record that cannot be
    read or is not this folder's, a run folder that is a link or cannot be read, a run folder without
    a record, a finished run whose log is gone. Nothing is dropped silently; one bad folder never
    hides the others."""
    out, problems = {}, []
    study_dir = Path(study_dir)
    try:
        folders = sorted(p for p in study_dir.iterdir() if not p.name.startswith(".")) \
            if study_dir.is_dir() else []
    except OSError as exc:
        return {}, [(".", f"{study_dir}: cannot be read ({exc.strerror or exc})")]
    study = _study_name(study_dir)
    for folder in folders:
        try:
            problem = _scan_run(folder, study, out)
        except OSError as exc:  # a folder or record that cannot be read (permissions, a lost file system)
            problem = f"{exc.filename or folder}: cannot be read ({exc.strerror or exc})"
        if problem:
            problems.append((folder.name, problem))
    return out, problems


def _study_name(study_dir: Path) -> str | None:
    """The study a folder holds, as its study.json says (None when it says nothing readable)."""
    try:
        name = read_json(study_dir / "study.json").get("study")
    except RecordError:
        return None
    return name if isinstance(name, str) else None


def _scan_run(folder: Path, study: str | None, out: dict[str, dict]) -> str | None:
    """The record of one run folder into `out`; what is wrong with it, if anything."""
    mode = os.lstat(folder).st_mode
    if stat.S_ISLNK(mode):
        return f"{folder}: a link (to {os.readlink(folder)}), not a run folder: left out, and left alone by --resume"
    if not stat.S_ISDIR(mode):
        return None  # a file beside the run folders (study.json)
    p = folder / RECORD
    if not os.path.lexists(p):
        if any(q.suffix == ".log" for q in folder.iterdir()):  # a run folder, not some other folder
            return f"{p}: no run record beside the log"
        return None
    try:
        rec = read(p)
    except RecordError as exc:
        return str(exc)
    if rec.get("run_id", folder.name) != folder.name or study and rec.get("study", study) != study:
        return (f"{p}: the record of run {rec.get('run_id')!r} of study {rec.get('study')!r}, not of this folder "
                f"({folder.name!r} of {study!r}): left out")
    out[folder.name] = rec
    log = folder / str(rec.get("log") or f"{folder.name}.log")
    had_log = rec.get("status") == "complete" or bool(rec.get("analysis"))  # a refused job may have none
    if had_log and not os.path.lexists(log):
        return f"{log}: the run's log is missing (the record says {rec.get('status')})"
    return None


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
    import pandas as pd

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
            "throughput": analysis[0].get("recomputed_throughput") if len(analysis) == 1 else None,
            "problem": "; ".join(notes.pop(run_id, [])) or None,
        })
    for run_id, problem in notes.items():  # unreadable records: a row each, never dropped
        rows.append({"run_id": run_id, "status": "unreadable", "problem": "; ".join(problem)})
    return pd.DataFrame(rows, columns=["run_id", "status", "cause", "gpus", "batch_size", "precision", "xla",
                                       "repeat", "started_at", "duration_s", "exit_code", "throughput", "problem"])
