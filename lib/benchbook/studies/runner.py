"""Running a study: every configuration and repeat, each in its own folder with its log and record.

Layout: `<out>/<study name>/study.json` (what was asked) and one folder per run,
`<run id>/<run id>.log` (the process's output, teed live) and `<run id>/run.json` (the record).
Runs execute outside the caller (a child process in its own session), one at a time; a failed run
is recorded with its cause and the study goes on; Ctrl-C stops the current run cleanly, records
it as interrupted and stops the study. Finished runs are never touched again: `resume` redoes only
runs whose record is missing or not `complete`, keeping earlier attempts under `attempts/`.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import os
import platform
import signal
import socket
import stat
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from tqdm.auto import tqdm

from .. import __version__
from ..environment import envs
from ..errors import BenchbookError
from ..logs.analysis import analyze
from ..runfolder import liveness, records
from . import commands, launchers
from .commands import Command
from .failures import classify, storage_cause
from .launchers import process
from .launchers.process import no_follow
from .study import Study, StudyError, digest, expand, load

execute = process.execute  # one command as a child process, teed to its log (local launchers)


class StudyBusy(StudyError):
    """Another launcher holds the study folder."""


class StudyInterrupted(KeyboardInterrupt):
    """The user stopped the study; the current run is recorded as interrupted."""


def now() -> str:
    return dt.datetime.now(dt.UTC).astimezone().isoformat(timespec="seconds")


def study_dir(study: Study, out: Path) -> Path:
    return Path(out) / study.name


def _folder(path: Path) -> bool:
    """Whether `path` is a folder itself (False when it does not exist); StudyError when it is a link
    (one planted in a shared runs/ would send the study's writes anywhere), anything else, or unreadable."""
    try:
        mode = os.lstat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):  # making it says what is in the way
        return False
    except OSError as exc:
        raise StudyError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    if stat.S_ISLNK(mode):
        raise StudyError(f"{path} is a link (to {os.readlink(path)}): benchbook writes a study into a folder of its "
                         "own, never through a link; remove the link, or use --out DIR")
    if not stat.S_ISDIR(mode):
        raise StudyError(f"{path} is not a folder")
    return True


def _may_run(study: Study, run_id: str, run_dir: Path, say: Callable[[str], None]) -> bool:
    """Whether the run may be (re)done in `run_dir`: there is none yet, or an empty folder, or a folder
    of the user's own (not a link) holding an earlier attempt of this very run that is not complete and
    whose launcher is gone. Anything else is left alone, with a message."""
    if not os.path.lexists(run_dir):
        return True
    try:
        mode = os.lstat(run_dir).st_mode
        if stat.S_ISLNK(mode) or not stat.S_ISDIR(mode):
            what = f"a link (to {os.readlink(run_dir)})" if stat.S_ISLNK(mode) else "not a folder"
            say(f"{run_id}: {run_dir} is {what}, not a run folder: left alone (remove it to run {run_id})")
            return False
        attempts = run_dir / "attempts"
        if os.path.lexists(attempts) and not stat.S_ISDIR(os.lstat(attempts).st_mode):
            say(f"{run_id}: {attempts} is not a folder: left alone (remove it to run {run_id})")
            return False
        if not [p for p in run_dir.iterdir() if p.name != "attempts"]:
            return True
        old = records.read(run_dir / records.RECORD)
        owner = next((p for p in (run_dir, run_dir / records.RECORD) if os.lstat(p).st_uid != os.geteuid()), None)
    except OSError as exc:
        say(f"{run_id}: {exc.filename or run_dir} cannot be read ({exc.strerror or exc}): left alone")
        return False
    except records.RecordError as exc:
        say(f"{run_id}: {exc}: left alone (remove {run_dir} to run {run_id})")
        return False
    if (old.get("study"), old.get("run_id")) != (study.name, run_id):
        say(f"{run_id}: {run_dir / records.RECORD} is the record of run {old.get('run_id')!r} of study "
            f"{old.get('study')!r}, not of this run: left alone")
        return False
    if owner:
        say(f"{run_id}: {owner} belongs to another user (uid {os.lstat(owner).st_uid}): left alone")
        return False
    return old.get("status") != "running" or _take_over(run_dir, old, say)


def _take_over(run_dir: Path, old: dict, say: Callable[[str], None]) -> bool:
    """An attempt whose record still says `running`: a launcher that lives, here or on another host, is
    left alone with a message; when it is gone, the record is marked `abandoned` and what is left of its
    processes stopped when they are provably its own (liveness: host, boot, PID, start time, and the
    run's token in their environment; the job's name and owner under Slurm), and only when no other
    user could have written the record."""
    status, note = records.live_status(old)
    if status == "running" and note is None:
        say(f"{run_dir.name}: still run by pid {old['launcher'].get('pid')}; left alone")
        return False
    if note and note.startswith("launched on"):
        say(f"{run_dir.name}: {note}; left alone (resume it on that host, or remove {run_dir} if it is dead)")
        return False
    writable = next((p for p in (run_dir, run_dir / records.RECORD) if os.lstat(p).st_mode & 0o022), None)
    name = old.get("command_launcher") or "local"
    if writable:
        done = f"nothing stopped: {writable} is writable by other users (stop its processes yourself if they run)"
    elif name not in launchers.REGISTRY:
        done = f"nothing stopped: launcher {name!r} is unknown here"
    else:
        done = launchers.get(name).abandon(old)
    say(f"{run_dir.name}: abandoned by its launcher; {done}")
    old.update(status="abandoned", ended_at=old.get("ended_at") or now(),
               failure={"cause": "abandoned", "detail": f"its launcher was killed; {done}", "last_lines": []})
    records.write(run_dir / records.RECORD, old)
    return True


def _archive(run_dir: Path) -> Path | None:
    """Move an unfinished earlier attempt aside (never deleted) so the run starts clean."""
    items = [p for p in run_dir.iterdir() if p.name != "attempts"]
    if not items:
        return None
    attempts = run_dir / "attempts"
    attempts.mkdir(mode=0o755, exist_ok=True)
    _folder(attempts)  # never a link (_may_run checked; this is the last look before writing into it)
    n = 1 + max((int(p.name) for p in attempts.iterdir() if p.name.isdigit()), default=0)
    target = attempts / str(n)
    target.mkdir(mode=0o755)
    for p in items:
        os.rename(p, target / p.name)  # the entry itself, a link as a link: never what it points to
    return target


def plan(study: Study, out: Path, python: str | None = None) -> list[tuple[str, Path, dict, Command]]:
    """(run id, run folder, configuration, command) of every run, in launch order."""
    sdir = study_dir(study, out).resolve()
    return [(s.run_id, sdir / s.run_id, s.config, commands.command(study, s.config, sdir / s.run_id, python))
            for s in expand(study)]


def _host() -> dict:
    return {"hostname": socket.gethostname(), "platform": platform.platform(), "python": sys.version.split()[0]}


def _capture(python: str | None, import_frameworks: bool = True) -> dict:
    """The environment of the run's host (and of the framework's Python for CPU runs). The frameworks
    are imported only to read their CUDA builds: a study on the CPU lists their packages' versions
    without importing them (importing TensorFlow cost each CPU study about 6 s)."""
    try:
        from ..environment import capture
    except Exception:
        return {"host": _host()}
    try:
        return capture.capture(python=python, import_frameworks=import_frameworks)
    except Exception as exc:  # a capture problem must never cost a run
        return {"host": _host(), "capture_error": f"{type(exc).__name__}: {exc}"}


def run_study(study: Study, out: Path, *, resume: bool = False, only: Callable[[str], bool] | None = None,
              echo: Callable[[str], None] | None = None, progress: bool = True,
              say: Callable[[str], None] = print) -> dict[str, dict]:
    """Run every run of the study that is not complete yet; return the records by run id."""
    sdir = study_dir(study, out)
    existing = {}
    if _folder(sdir):
        existing, wrong = records.scan(sdir)
        if wrong and wrong[0][0] == ".":  # the study folder itself cannot be read
            raise StudyError(wrong[0][1])
    if existing and not resume:
        done = sum(r.get("status") == "complete" for r in existing.values())
        raise StudyError(f"{sdir} already holds {len(existing)} runs ({done} complete) of study {study.name}; "
                         "use --resume to finish it (complete runs are kept), or --out DIR for a fresh study folder")
    sdir.mkdir(parents=True, exist_ok=True)
    _folder(sdir)  # still a folder, not a link put there meanwhile
    with _study_lock(sdir):
        return _run_locked(study, out, sdir, existing, only, echo, progress, say)


@contextlib.contextmanager
def _study_lock(sdir: Path):
    """One launcher per study folder: a second `run` (or a notebook's launch) fails instead of racing."""
    path = sdir.parent / f".{sdir.name}.lock"  # beside the folder: not a log to analyze
    try:  # never through a link (a planted one would have the lock's text written over its target)
        handle = open(path, "a+", opener=no_follow)
    except OSError as exc:
        what = "a link: remove it" if os.path.islink(path) else exc.strerror or str(exc)
        raise StudyError(f"{path}: cannot be opened ({what})") from None
    if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
        handle.close()
        raise StudyError(f"{path} is not a regular file: remove it")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        holder = handle.read().strip() or "another process"
        handle.close()
        raise StudyBusy(
            f"{sdir} is being run by {holder}; wait for it, or follow it with benchbook status {sdir}") from None
    handle.seek(0)
    handle.truncate()
    handle.write(f"pid {os.getpid()} on {socket.gethostname()}")
    handle.flush()
    try:
        yield
    finally:
        fcntl.flock(handle, fcntl.LOCK_UN)
        handle.close()


def busy(study: Study, out: Path) -> str | None:
    """Who runs the study folder now ("pid N on host"), or None when no launcher holds it."""
    sdir = study_dir(study, out)
    if not _folder(sdir):
        return None
    try:
        with _study_lock(sdir):
            return None
    except StudyBusy as exc:
        return str(exc).split(" is being run by ", 1)[1].split(";")[0]


def _run_locked(study, out, sdir, existing, only, echo, progress, say) -> dict[str, dict]:
    python = envs.ensure(study.framework, say, study.python) if study.runtime == "cpu" else None
    runs = plan(study, out, str(python) if python else None)
    if only:
        runs = [r for r in runs if only(r[0])]
    meta_path = sdir / "study.json"
    meta = records.read_json(meta_path) if os.path.lexists(meta_path) else {"attempts": []}
    if not isinstance(meta.get("attempts", []), list):
        raise records.RecordError(f"{meta_path}: `attempts` is not a list: not a study.json benchbook wrote")
    if meta.get("study_digest") and meta["study_digest"] != digest(study.path):
        say(f"warning: {study.path} changed since this study folder was started; "
            "each run's record holds the configuration it ran with")
    meta.update(study=study.name, study_file=str(study.path), study_digest=digest(study.path),
                study_text=Path(study.path).read_text(encoding="utf-8"), runs=[r[0] for r in runs],
                benchbook_version=__version__)
    meta["attempts"] = [*meta.get("attempts", []), {"started_at": now(), "pid": os.getpid(), **_host()}]
    records.write(meta_path, meta)
    environment = _capture(str(python) if python else None,
                           import_frameworks=study.runtime != "cpu" or study.cpu.device == "cuda")

    todo = [r for r in runs if existing.get(r[0], {}).get("status") != "complete"]
    bar = tqdm(total=len(runs), initial=len(runs) - len(todo), unit="run", desc=study.name,
               disable=not progress or not sys.stderr.isatty(), dynamic_ncols=True)
    lines = progress and bar.disable  # a log or a pipe: a plain line per run, not a bar redrawn
    began = time.monotonic()
    write = (lambda line: bar.write(line)) if echo is True else echo
    results = dict(existing)
    # SIGINT and SIGTERM stop the study cleanly, even when it was started with SIGINT ignored (the
    # `benchbook run ... &` of a script): its training processes then get the default SIGINT back too
    stops = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)  # SIGHUP: the terminal was closed
    previous = {s: signal.getsignal(s) for s in stops}
    if threading.current_thread() is threading.main_thread():
        for s in stops:
            signal.signal(s, _STOPS.handle)
    try:
        for i, (run_id, run_dir, cfg, cmd) in enumerate(todo):
            bar.set_postfix_str(run_id)
            if lines:
                print(f"{study.name}: run {len(runs) - len(todo) + i + 1}/{len(runs)} {run_id} ..."
                      + left(time.monotonic() - began, i, len(todo) - i), flush=True)  # a pipe shows it now
            if not _may_run(study, run_id, run_dir, bar.write):
                continue
            results[run_id] = _one(study, run_id, run_dir, cfg, cmd, environment, write)
            bar.update(1)
            status = results[run_id]["status"]
            if status != "complete":
                failure = results[run_id]["failure"]
                bar.write(f"{run_id}: {status} ({failure['cause']}: {failure['detail']})")
            if status == "interrupted":
                raise StudyInterrupted(run_id)
    finally:
        bar.close()
        if threading.current_thread() is threading.main_thread():
            for s, handler in previous.items():
                signal.signal(s, handler)
    return results


def left(spent: float, done: int, remaining: int) -> str:
    """" ~N s left" from the runs of this invocation so far (their mean duration), "" before the first ends."""
    return f" ~{round(spent / done * remaining)} s left" if done else ""


class _Stops:
    """The study's stop signals (Ctrl-C, SIGTERM, SIGHUP) as a KeyboardInterrupt, at once, except while a
    run that has ended is being recorded: then the stop waits until its record is written. A second or
    third Ctrl-C pressed while a run stops would otherwise land in its analysis and leave the record
    saying `running` (as if benchbook had died) although the run and its log are finished."""

    def __init__(self):
        self.holding, self.pending = False, False

    def handle(self, signum, frame):
        if self.holding:
            self.pending = True
            return
        raise KeyboardInterrupt

    @contextlib.contextmanager
    def held(self):
        self.holding, self.pending = True, False
        try:
            yield
        finally:
            self.holding = False
        if self.pending:
            self.pending = False
            raise KeyboardInterrupt


_STOPS = _Stops()


def _one(study: Study, run_id: str, run_dir: Path, cfg: dict, cmd: Command, environment: dict,
         echo: Callable[[str], None] | None) -> dict:
    if _folder(run_dir):
        _archive(run_dir)
    run_dir.mkdir(mode=0o755, exist_ok=True)  # writable by the user alone, as its record is
    log = run_dir / f"{run_id}.log"
    record = {
        "schema_version": records.SCHEMA_VERSION, "run_id": run_id, "study": study.name,
        "study_file": str(study.path), "study_digest": digest(study.path), "status": "running",
        "config": cfg, "code": study.code.model_dump() if study.code else None,
        "container": study.container.model_dump() if study.container else None,
        "command": cmd.argv, "command_line": cmd.shell(), "pre": cmd.pre, "env": cmd.env, "cwd": cmd.cwd,
        "command_launcher": cmd.launcher, "job_script": cmd.script,
        "log": log.name, "started_at": now(), "ended_at": None, "duration_s": None, "exit_code": None,
        "failure": None, "analysis": [], "launcher": {"pid": os.getpid(), **_host(),
                                                      "identity": liveness.identity(os.getpid()),
                                                      "benchbook_version": __version__},
        "environment": environment,
    }
    records.write(run_dir / records.RECORD, record)
    t0 = time.monotonic()

    def started(info: dict) -> None:  # child_pid, or the scheduler's job id: what `abandon` needs
        record.update(info)
        records.write(run_dir / records.RECORD, record)

    try:
        ending = launchers.get(cmd.launcher).execute(cmd, log, study.timeout, study.no_progress, echo, started)
    except BaseException as exc:  # the record must not stay `running`: say how the run ended, then go on up
        with _STOPS.held():
            _ended_early(run_dir, record, exc, t0)
        raise
    with _STOPS.held():  # a Ctrl-C now stops the study once the record says how the run ended
        return _finished(run_dir, record, ending, log, t0)


def _finished(run_dir: Path, record: dict, ending, log: Path, t0: float) -> dict:
    """The record of a run that ended: its end, exit code, analysis and status, written."""
    record.update(ended_at=now(), duration_s=round(time.monotonic() - t0, 3), exit_code=ending.exit_code)
    try:
        result = analyze([log])
        analyzed = records.run_dicts(result.runs)
        problems = [p.reason for p in result.problems]
    except Exception as exc:  # the run is measured; an analysis bug must not lose its record
        analyzed, problems = [], [f"analysis failed: {type(exc).__name__}: {exc}"]
    status, failure = classify(ending, analyzed)
    record.update(status=status, failure=failure, analysis=analyzed, analysis_problems=problems)
    try:
        records.write(run_dir / records.RECORD, record)
    except records.StorageError as exc:
        _ended_early(run_dir, record, exc, t0)
        raise
    return record


def _ended_early(run_dir: Path, record: dict, exc: BaseException, t0: float) -> None:
    """Record a run that benchbook itself could not finish following: interrupted (a second Ctrl-C,
    SIGHUP), its record unwritable (disk full: the shortest record, written in place), or a bug."""
    if isinstance(exc, KeyboardInterrupt):
        status, cause, detail = "interrupted", "interrupted", "stopped by the user"
    elif isinstance(exc, OSError):
        status, cause = "failed", storage_cause(exc.errno)
        detail = str(exc) if isinstance(exc, records.StorageError) else f"{exc.filename}: {exc.strerror}"
    else:
        status, cause, detail = "failed", "launch_error", f"{type(exc).__name__}: {exc}"
    record.update(status=status, ended_at=now(), duration_s=round(time.monotonic() - t0, 3),
                  failure={"cause": cause, "detail": detail, "last_lines": []})
    path = run_dir / records.RECORD
    try:
        records.write(path, record)
    except records.StorageError:
        short = {k: record.get(k) for k in ("schema_version", "run_id", "study", "study_file", "status", "config",
                                            "command_line", "log", "started_at", "ended_at", "duration_s",
                                            "exit_code", "failure")}
        with contextlib.suppress(records.StorageError):
            records.write_in_place(path, short)


def prepare_environments(paths: list[str]) -> int:
    """`python -m benchbook.studies.runner STUDY...`: the framework environments of these CPU studies, built
    now (one after the other), as `make report` does while it publishes; 1 when one could not be built."""
    failed = 0
    for path in paths:
        try:
            spec = load(path)
            if spec.runtime == "cpu":
                envs.ensure(spec.framework, lambda m: print(m, flush=True), spec.python)
        except BenchbookError as exc:  # the study's own run says it again, in its report
            print(f"benchbook: {path}: {exc}", file=sys.stderr, flush=True)
            failed = 1
    return failed


if __name__ == "__main__":  # `make report`: the environments, built beside the published sets
    sys.exit(prepare_environments(sys.argv[1:]))
