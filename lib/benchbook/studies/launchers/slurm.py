"""`slurm`: one `sbatch` job per run; `srun` starts its tasks, in pyxis containers for NGC images.

The job script is the run's command: `benchbook run --dry-run` prints it as a here-document that
can be pasted into a shell on the login node. `execute` writes the script next to the run's log,
submits it, and follows the job through `scontrol` until it ends; the job's output goes straight
to the run's log, which is read as it grows (echo, last lines, no-progress watch). The run's
timeout and no-progress limit count from when the job starts running, not while it waits in the
queue; Ctrl-C (or SIGTERM), the timeout and a silent log `scancel` the job.

How a job ended, as Slurm 22.05 reports it (`scontrol show job -o`, kept MinJobAge after the end):
COMPLETED with ExitCode=0:0; FAILED with ExitCode=N:0 (srun passes on its task's exit status, and
128+S when a task died of signal S, with a line `srun: error: NODE: task I: <signal>` in the
log); CANCELLED with ExitCode=0:15; TIMEOUT (the job's --time) with ExitCode=0:15 and a line
`*** JOB N ON NODE CANCELLED AT ... DUE TO TIME LIMIT ***`; OUT_OF_MEMORY, NODE_FAIL and the other
terminal states where the cluster enforces them. A job the controller no longer knows (purged)
is read from the exit status file its script writes, else from those lines of its log.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shlex
import signal
import subprocess
import threading
import time
from pathlib import Path

from ...errors import BenchbookError
from ...runfolder import RESULTS
from ..failures import Ending
from . import lines
from .base import Launcher
from .command import safe_env, safe_line
from .process import no_follow
from .registry import register

POLL_S = 0.5
STATE_EVERY_S = 1.0
CANCEL_WAIT_S = 60.0
READ_BLOCK = 1 << 20  # the job's log is read this much at a time
UNREACHABLE_GIVE_UP_S = 600.0  # the controller not answering for this long ends the follow
TERMINAL = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL", "PREEMPTED",
            "BOOT_FAIL", "DEADLINE", "SPECIAL_EXIT", "REVOKED"}
#: ends that come from the scheduler, not from the run's own processes: the record says why
SCHEDULER_ENDS = {
    "CANCELLED": "the job was cancelled outside benchbook (scancel, or an administrator)",
    "TIMEOUT": "the job reached its Slurm time limit (--time; launcher.slurm.time in the study)",
    "OUT_OF_MEMORY": "out of memory: Slurm stopped the job at its memory limit (OUT_OF_MEMORY)",
    "NODE_FAIL": "the job's node failed", "BOOT_FAIL": "the job's node failed to boot",
    "PREEMPTED": "the job was preempted", "DEADLINE": "the job reached its deadline",
    "REVOKED": "the job was revoked", "SPECIAL_EXIT": "the job ended in Slurm's SPECIAL_EXIT state",
}
EXIT_FILE = ".exit.json"  # <run id>.exit.json: the job script's exit status, for a purged job
_SRUN_TASK = re.compile(r"^srun: error: \S+: tasks? [\d,\-]+: (.+)$")


class SlurmError(BenchbookError):
    """The scheduler could not be reached or refused the job; the message says what to do."""


def _call(argv: list[str], timeout: float = 30.0, env: dict | None = None,
          new_session: bool = False) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False, env=env,
                              stdin=subprocess.DEVNULL, start_new_session=new_session)
    except FileNotFoundError:
        raise SlurmError(f"`{argv[0]}` not found: install the Slurm client (slurm-client) configured for the cluster, "
                         "or run benchbook on the cluster's login node") from None
    except subprocess.TimeoutExpired:
        raise SlurmError(f"`{shlex.join(argv[:3])}` did not answer within {timeout:g} s: is slurmctld up?") from None


def job_info(job_id: str) -> dict[str, str] | None:
    """The job as `scontrol show job -o` tells it (JobState, ExitCode, Reason, NodeList...); None
    when Slurm no longer knows the job (purged MinJobAge after its end)."""
    r = _call(["scontrol", "show", "job", "-o", str(job_id)])
    if r.returncode != 0:
        if "Invalid job id" in r.stderr:
            return None
        raise SlurmError(f"scontrol show job {job_id} failed: {r.stderr.strip() or r.returncode}")
    # one line of Key=Value; only values that hold no spaces are read here
    return dict(re.findall(r"(?:^|\s)(\w+)=(\S*)", r.stdout))


def _state(info: dict | None) -> tuple[str | None, int | None, int | None]:
    if info is None:
        return None, None, None
    state = info.get("JobState")
    code = re.fullmatch(r"(\d+):(\d+)", info.get("ExitCode", ""))
    return state, int(code.group(1)) if code else None, int(code.group(2)) if code else None


def job_state(job_id: str) -> tuple[str | None, int | None, int | None]:
    """(state, exit status, signal) of a job from `scontrol show job`; state None when Slurm no
    longer knows the job (purged after MinJobAge)."""
    return _state(job_info(job_id))


def queued(job_ids: list[str]) -> dict[str, str]:
    """The states of those jobs that are still in the queue (pending, running, completing): one
    `squeue` call for them all."""
    if not job_ids:
        return {}
    r = _call(["squeue", "-h", "-o", "%i|%T", "-j", ",".join(job_ids)])
    if r.returncode != 0:
        if "Invalid job id" in r.stderr:  # every one of them is gone
            return {}
        raise SlurmError(f"squeue failed: {r.stderr.strip() or r.returncode}")
    return dict(line.split("|", 1) for line in r.stdout.split() if "|" in line)


def submit(script: Path, output: Path, argv: tuple[str, ...] = ("sbatch",), env: dict | None = None) -> str:
    """Submit a job script with its output to `output`; the job id. SlurmError when refused.

    sbatch runs in its own session, so that a Ctrl-C in the terminal does not stop it halfway:
    the job is queued or refused, and the caller (which knows its id) cancels it."""
    r = _call([*argv, "--parsable", f"--output={output}", "--open-mode=append", str(script)], timeout=60,
              env=env, new_session=True)
    if r.returncode != 0:
        message = (r.stderr.strip() or r.stdout.strip() or "no message").replace("\n", " / ")
        raise SlurmError(f"sbatch refused the job (exit {r.returncode}): {message}")
    job_id = r.stdout.strip().split(";")[0]
    if not job_id.isdigit():
        raise SlurmError(f"sbatch answered no job id: {r.stdout.strip()!r}")
    return job_id


def cancel(job_id: str) -> None:
    try:
        _call(["scancel", str(job_id)])
    except SlurmError:
        pass


def slurm_time(seconds: float) -> str:
    """A time limit as Slurm writes it: `HH:MM:SS`, or `D-HH:MM:SS` from one day on."""
    total = max(60, int(-(-seconds // 60) * 60))  # whole minutes, at least one
    days, rest = divmod(total, 86400)
    h, rest = divmod(rest, 3600)
    text = f"{h:02d}:{rest // 60:02d}:00"
    return f"{days}-{text}" if days else text


def layout(study, cfg) -> tuple[int, int, int]:
    """(nodes, tasks per node, GPUs per node) of the run's job."""
    if study.runtime == "cpu":
        return 1, cfg.get("processes", 1), 0
    if "gpu_counts" in cfg:  # benchmark.py measures several GPU counts in one process
        return 1, 1, max(cfg["gpu_counts"])
    nodes, per_node = cfg.get("nodes", 1), cfg.get("gpus_per_node", cfg.get("gpus", 1))
    tasks = 1 if study.spec.spawns_own_workers else per_node
    return nodes, tasks, per_node


def exit_file(log: Path) -> Path:
    """Where the job script writes its exit status: `<run id>.exit.json` beside `<run id>.log`."""
    return log.with_name(log.stem + EXIT_FILE)


def ending_of(state: str | None, code: int | None, sig: int | None, tail: list[str],
              status_file: Path | None = None) -> tuple[str | None, int | None]:
    """(state, exit code as the local executor reports it: negative for a signal) of a job that
    left the queue. A purged job (state None) is read from its exit status file or its log."""
    if state is None:
        try:
            status = json.loads(status_file.read_text())["exit_status"] if status_file else None
        except (OSError, ValueError, KeyError, TypeError):
            status = None
        if isinstance(status, int):
            state, code, sig = ("COMPLETED" if status == 0 else "FAILED"), status, 0
        elif any("DUE TO TIME LIMIT" in line for line in tail):
            state, code, sig = "TIMEOUT", 0, signal.SIGTERM
        elif any(re.search(r"\*\*\* JOB \d+ ON \S+ CANCELLED AT", line) for line in tail):
            state, code, sig = "CANCELLED", 0, signal.SIGTERM
        else:
            return None, None
    if state == "UNKNOWN":  # benchbook stopped following (the controller did not answer)
        return state, None
    exit_code = -sig if sig else code
    if state == "FAILED" and code and code > 128:
        # srun's own status is 128+S when a task died of signal S; its message names the signal
        killed = [m.group(1) for m in map(_SRUN_TASK.match, tail) if m]
        if killed and not killed[-1].startswith("Exited with exit code"):
            exit_code = -(code - 128)
    if state == "CANCELLED" and not sig:
        # scancel's SIGTERM reaches the steps and the batch shell in either order: when the steps
        # die first the shell may exit with their status (seen: 1); the scheduler stopped it all the same
        exit_code = -signal.SIGTERM
    if state == "OUT_OF_MEMORY" and not exit_code:
        exit_code = -signal.SIGKILL
    elif state != "COMPLETED" and not exit_code:
        exit_code = -signal.SIGTERM  # the scheduler stopped it: never an exit status of 0
    return state, exit_code


class _Deferred:
    """SIGINT and SIGTERM held while a job is submitted (main thread only), raised as
    KeyboardInterrupt after, once its id is known and it can be cancelled."""

    def __enter__(self):
        self.caught: list[int] = []
        self.previous = {}
        if threading.current_thread() is threading.main_thread():
            for s in (signal.SIGINT, signal.SIGTERM):
                self.previous[s] = signal.signal(s, lambda signum, frame: self.caught.append(signum))
        return self

    def __exit__(self, *exc):
        for s, handler in self.previous.items():
            signal.signal(s, handler)
        self.previous = {}
        return False

    def release(self) -> None:
        """After the `with`: raise the Ctrl-C (or SIGTERM) that came while the handlers were held."""
        if self.caught:
            raise KeyboardInterrupt


@register
class Slurm(Launcher):
    name = "slurm"
    uses_docker = False  # pyxis starts the containers

    def _container(self, study, run_dir) -> list[str]:
        if study.runtime == "cpu":
            return []
        opts, c = study.launcher.slurm, study.container
        mounts = {}
        if study.data.path:
            mounts[study.data.path] = study.data.mount
        mounts[str(run_dir)] = RESULTS
        mounts.update(c.mounts)
        mounts.update(opts.container_mounts)
        out = [f"--container-image={opts.container_image or c.image}",
               "--container-mounts=" + ",".join(f"{h}:{m}" for h, m in mounts.items())]
        if study.code and study.code.workdir:
            out.append(f"--container-workdir={study.code.workdir}")
        return out

    def finish(self, study, cfg, run_dir, cmd):
        opts = study.launcher.slurm
        nodes, tasks, gpus = layout(study, cfg)
        log = run_dir / f"{cfg['run_id']}.log"
        # a CPU run with a thread count gets that many CPUs per task (the whole node with --exclusive)
        threads = study.cpu.threads if study.runtime == "cpu" and study.cpu and study.cpu.threads else 0
        lines = ["#!/bin/bash", f"#SBATCH --job-name={study.name}.{cfg['run_id']}", f"#SBATCH --nodes={nodes}",
                 f"#SBATCH --ntasks-per-node={tasks}"]
        lines += [f"#SBATCH --cpus-per-task={threads}"] if threads else []
        lines += [f"#SBATCH --gpus-per-node={gpus}"] if gpus else []
        lines.append(f"#SBATCH --time={slurm_time(opts.time or study.timeout)}")
        lines += [f"#SBATCH --partition={opts.partition}"] if opts.partition else []
        lines += [f"#SBATCH --account={opts.account}"] if opts.account else []
        lines += ["#SBATCH --exclusive"] if opts.exclusive else []
        lines += [f"#SBATCH --output={log}", "#SBATCH --open-mode=append"]
        lines += [f"#SBATCH {o}" for o in opts.sbatch]
        for n, line in enumerate(lines):  # sbatch reads these itself: a newline would start a shell line
            safe_line(line, f"job script line {n + 1}")
        lines += [f"export {k}={shlex.quote(v)}" for k, v in safe_env(cmd.env).items()]
        container = self._container(study, run_dir)
        srun = (["srun"] + ([f"--mpi={opts.mpi}"] if opts.mpi else []) + ([f"--cpus-per-task={threads}"] if threads
                                                                         else []) + container + opts.srun)
        for pre in cmd.pre:  # clean-up once per job, where the run sees the paths (in its container)
            lines.append(shlex.join(["srun", "--nodes=1", "--ntasks=1", *container, *pre]))
        if cmd.cwd and not container:
            lines.append(f"cd {shlex.quote(cmd.cwd)}")
        lines.append(shlex.join([*srun, *cmd.argv]))
        # the exit status, for when the controller has forgotten the job by the time benchbook asks
        lines.append(f'status=$?; echo "{{\\"exit_status\\": $status}}" > {shlex.quote(str(exit_file(log)))}; '
                     "exit $status")
        return dataclasses.replace(cmd, argv=["sbatch"], pre=[], cwd=None, launcher=self.name,
                                   script="\n".join(lines) + "\n")

    def execute(self, cmd, log, timeout=None, no_progress=None, echo=None, started=None) -> Ending:
        log = Path(log)
        script = log.with_suffix(".sbatch")
        with open(script, "w", encoding="utf-8", opener=no_follow) as f:  # never through a planted link
            f.write(cmd.script or "")
        note = echo or (lambda line: None)
        reader = _LogReader(log, echo)
        tail = reader.tail.lines
        ending = Ending(exit_code=None)
        job_id = refused = None
        state, code, sig = "PENDING", None, None
        try:
            with _Deferred() as held:
                try:
                    # the job gets this environment (sbatch --export=ALL), unbuffered as local runs are
                    job_id = submit(script, log, tuple(cmd.argv), env={**os.environ, "PYTHONUNBUFFERED": "1"})
                except SlurmError as exc:
                    refused = exc
                if started and job_id:
                    started({"slurm_job_id": job_id, "job_script_file": script.name})
            held.release()  # a Ctrl-C during the submission is raised here, the job id known
            if refused:
                return Ending(exit_code=127, tail=[f"error: {refused}"])
            state, code, sig = self._follow(job_id, reader, ending, timeout, no_progress, note, started)
        except KeyboardInterrupt:
            ending.interrupted = True
            if job_id is None:
                return Ending(exit_code=None, interrupted=True,
                              tail=[f"interrupted while the job was submitted{f' ({refused})' if refused else ''}"])
            state, code, sig = self._cancel(job_id, reader)
        for _ in range(10):  # the last lines can reach a shared file system after the job ends
            if not reader.read():
                break
            time.sleep(POLL_S)
        reader.finish()
        stopped_here = ending.interrupted or ending.timed_out or ending.stalled  # benchbook cancelled it
        state, ending.exit_code = ending_of(state, code, sig, list(tail), exit_file(log))
        if state == "TIMEOUT":  # the job's own time limit
            ending.timed_out = True
        if state is None:
            tail.append(f"error: slurm job {job_id} left the controller before its end was seen, and wrote no exit "
                        f"status ({exit_file(log).name}): its end is unknown")
        elif state in SCHEDULER_ENDS and not stopped_here:
            tail.append(f"error: slurm job {job_id} ended {state}: {SCHEDULER_ENDS[state]}")
        else:
            tail.append(f"slurm job {job_id}: {state}" + (f", exit code {code}" if code else ""))
        ending.tail = list(tail)
        return ending

    def _follow(self, job_id, reader, ending, timeout, no_progress, note, started=None):
        """Follow the job until it leaves the queue, or stop it; (state, exit status, signal)."""
        running_since = last_output = None
        next_state, unreachable_since, shown, placed = 0.0, None, None, False
        while True:
            now = time.monotonic()
            if reader.read():
                last_output = now
            if now >= next_state:
                next_state = now + STATE_EVERY_S
                try:
                    info = job_info(job_id)
                    unreachable_since = None
                except SlurmError as exc:  # the controller restarts, the network hiccups: keep following
                    unreachable_since = unreachable_since or now
                    if now - unreachable_since > UNREACHABLE_GIVE_UP_S:
                        reader.tail.lines.append(f"error: {exc} (for {UNREACHABLE_GIVE_UP_S:g} s; job {job_id} may "
                                                 f"still run: scancel {job_id})")
                        return "UNKNOWN", None, None
                    info = {"JobState": "UNREACHABLE", "Reason": str(exc)}
                state, code, sig = _state(info)
                nodes = info.get("NodeList") if info else None
                if started and nodes not in (None, "None", "(null)", "") and not placed:
                    placed = True  # where it runs: the record's environment is the submitting host's
                    started({"slurm_nodes": nodes})
                if state is None or state in TERMINAL:
                    return state, code, sig
                seen = (state, info.get("Reason") if state != "RUNNING" else info.get("NodeList"))
                if seen != shown:  # what the job waits for, or where it runs
                    why = f" ({'on ' if state == 'RUNNING' else ''}{seen[1]})" if seen[1] not in (None, "None") else ""
                    note(f"slurm job {job_id}: {state}{why}")
                    shown = seen
                if state == "RUNNING" and running_since is None:
                    running_since = last_output = now
            if running_since is not None:
                if timeout and now - running_since > timeout:
                    ending.timed_out = True
                    return self._cancel(job_id, reader)
                if no_progress and now - last_output > no_progress:
                    ending.stalled = True
                    return self._cancel(job_id, reader)
            time.sleep(POLL_S)

    def _cancel(self, job_id: str, reader: _LogReader) -> tuple[str | None, int | None, int | None]:
        """scancel, then wait for the job to leave the running states."""
        cancel(job_id)
        deadline = time.monotonic() + CANCEL_WAIT_S
        state = code = sig = None
        while time.monotonic() < deadline:
            reader.read()
            try:
                state, code, sig = job_state(job_id)
            except SlurmError:
                break
            if state is None or state in TERMINAL:
                break
            time.sleep(POLL_S)
        return state, code, sig

    def abandon(self, record: dict) -> str:
        """A run left `running` by a killed benchbook: cancel its job if Slurm still has it and it is
        that run's job (its name is `<study>.<run id>`, and it is this user's: root could cancel anyone's),
        and wait for it to leave the node before the run's folder is moved aside; what was done, in words."""
        job = record.get("slurm_job_id")
        if not job:
            return "no job was submitted"
        try:
            info = job_info(str(job))
        except SlurmError as exc:
            return f"slurm job {job}: not checked ({exc}); cancel it yourself if it still runs"
        state, _, _ = _state(info)
        if state is None or state in TERMINAL:
            return f"slurm job {job} has ended"
        expected = f"{record.get('study')}.{record.get('run_id')}"
        if info.get("JobName") != expected:
            return f"slurm job {job} is now {info.get('JobName')!r}, not this run's {expected!r}: left alone"
        owner = re.fullmatch(r"[^()]*\((\d+)\)", info.get("UserId", ""))
        if not owner or int(owner.group(1)) != os.getuid():
            return (f"slurm job {job} belongs to {info.get('UserId')!r}, not to this user (uid {os.getuid()}): "
                    "left alone")
        self._cancel(str(job), _LogReader(Path(os.devnull), None))
        return f"slurm job {job} cancelled"


class _LogReader:
    """The job's output file read as it grows, a block at a time: its last lines (`\r` ends one too) to
    the tail, its lines as a terminal shows them to the echo."""

    def __init__(self, path: Path, echo):
        self.path, self.echo = path, echo
        self.tail = lines.Tail()
        self.shown = lines.Lines()
        self.offset = 0

    def read(self) -> bool:
        """Whether the log grew since the last read."""
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                grew = False
                while block := f.read(READ_BLOCK):
                    grew = True
                    self.offset += len(block)
                    self.tail.feed(block)
                    if self.echo:
                        for line in self.shown.feed(block):
                            self.echo(line)
        except FileNotFoundError:
            return False
        return grew

    def finish(self) -> None:
        self.tail.finish()
        if self.echo:
            for line in self.shown.finish():
                self.echo(line)
