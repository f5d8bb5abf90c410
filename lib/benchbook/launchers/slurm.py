"""`slurm`: one `sbatch` job per run; `srun` starts its tasks, in pyxis containers for NGC images.

The job script is the run's command: `benchbook run --dry-run` prints it as a here-document that
can be pasted into a shell on the login node. `execute` writes the script next to the run's log,
submits it, and follows the job through `scontrol` until it ends; the job's output goes straight
to the run's log, which is read as it grows (echo, last lines, no-progress watch). The run's
timeout and no-progress limit count from when the job starts running, not while it waits in the
queue; Ctrl-C, the timeout and a silent log `scancel` the job.
"""

from __future__ import annotations

import collections
import dataclasses
import re
import shlex
import subprocess
import time
from pathlib import Path

from ..errors import BenchbookError
from ..failures import Ending
from . import register
from .base import RESULTS, SPAWNS_OWN_WORKERS, Launcher

POLL_S = 0.5
STATE_EVERY_S = 1.0
CANCEL_WAIT_S = 60.0
TERMINAL = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL", "PREEMPTED",
            "BOOT_FAIL", "DEADLINE", "SPECIAL_EXIT", "REVOKED"}


class SlurmError(BenchbookError):
    """The scheduler could not be reached or refused the job; the message says what to do."""


def _call(argv: list[str], timeout: float = 30.0) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except FileNotFoundError:
        raise SlurmError(f"`{argv[0]}` not found: install the Slurm client (slurm-client) configured for the cluster, "
                         "or run benchbook on the cluster's login node") from None
    except subprocess.TimeoutExpired:
        raise SlurmError(f"`{shlex.join(argv[:3])}` did not answer within {timeout:g} s: is slurmctld up?") from None


def job_state(job_id: str) -> tuple[str | None, int | None, int | None]:
    """(state, exit status, signal) of a job from `scontrol show job`; state None when Slurm no
    longer knows the job (purged after MinJobAge)."""
    r = _call(["scontrol", "show", "job", "-o", job_id])
    if r.returncode != 0:
        if "Invalid job id" in r.stderr:
            return None, None, None
        raise SlurmError(f"scontrol show job {job_id} failed: {r.stderr.strip() or r.returncode}")
    state = re.search(r"\bJobState=(\S+)", r.stdout)
    code = re.search(r"\bExitCode=(\d+):(\d+)", r.stdout)
    return (state.group(1) if state else None, int(code.group(1)) if code else None,
            int(code.group(2)) if code else None)


def submit(script: Path, output: Path, argv: tuple[str, ...] = ("sbatch",)) -> str:
    """Submit a job script with its output to `output`; the job id. SlurmError when refused."""
    r = _call([*argv, "--parsable", f"--output={output}", "--open-mode=append", str(script)], timeout=60)
    if r.returncode != 0:
        message = (r.stderr.strip() or r.stdout.strip() or "no message").replace("\n", " / ")
        raise SlurmError(f"sbatch refused the job (exit {r.returncode}): {message}")
    return r.stdout.strip().split(";")[0]


def cancel(job_id: str) -> None:
    try:
        _call(["scancel", job_id])
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
    tasks = 1 if study.model in SPAWNS_OWN_WORKERS else per_node
    return nodes, tasks, per_node


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
        lines = ["#!/bin/bash", f"#SBATCH --job-name={study.name}.{cfg['run_id']}", f"#SBATCH --nodes={nodes}",
                 f"#SBATCH --ntasks-per-node={tasks}"]
        lines += [f"#SBATCH --gpus-per-node={gpus}"] if gpus else []
        lines.append(f"#SBATCH --time={slurm_time(opts.time or study.timeout)}")
        lines += [f"#SBATCH --partition={opts.partition}"] if opts.partition else []
        lines += [f"#SBATCH --account={opts.account}"] if opts.account else []
        lines += ["#SBATCH --exclusive"] if opts.exclusive else []
        lines += [f"#SBATCH --output={log}", "#SBATCH --open-mode=append"]
        lines += [f"#SBATCH {o}" for o in opts.sbatch]
        lines += [f"export {k}={shlex.quote(v)}" for k, v in cmd.env.items()]
        container = self._container(study, run_dir)
        srun = ["srun"] + ([f"--mpi={opts.mpi}"] if opts.mpi else []) + container + opts.srun
        for pre in cmd.pre:  # clean-up once per job, where the run sees the paths (in its container)
            lines.append(shlex.join(["srun", "--nodes=1", "--ntasks=1", *container, *pre]))
        if cmd.cwd and not container:
            lines.append(f"cd {shlex.quote(cmd.cwd)}")
        lines.append(shlex.join([*srun, *cmd.argv]))
        return dataclasses.replace(cmd, argv=["sbatch"], pre=[], cwd=None, launcher=self.name,
                                   script="\n".join(lines) + "\n")

    def execute(self, cmd, log, timeout=None, no_progress=None, echo=None, started=None) -> Ending:
        log = Path(log)
        tail: collections.deque[str] = collections.deque(maxlen=50)
        script = log.with_suffix(".sbatch")
        script.write_text(cmd.script or "", encoding="utf-8")
        try:
            job_id = submit(script, log, tuple(cmd.argv))
        except SlurmError as exc:
            return Ending(exit_code=127, tail=[f"error: {exc}"])
        if started:
            started({"slurm_job_id": job_id, "job_script_file": script.name})
        reader = _LogReader(log, tail, echo)
        ending = Ending(exit_code=None)
        state, code, sig = "PENDING", None, None
        running_since = last_output = None
        next_state = 0.0
        try:
            while True:
                now = time.monotonic()
                if reader.read():
                    last_output = now
                if now >= next_state:
                    state, code, sig = job_state(job_id)
                    next_state = now + STATE_EVERY_S
                    if state is None or state in TERMINAL:
                        break
                    if state == "RUNNING" and running_since is None:
                        running_since = last_output = now
                if running_since is not None:
                    if timeout and now - running_since > timeout:
                        ending.timed_out = True
                        state, code, sig = self._cancel(job_id, reader)
                        break
                    if no_progress and now - last_output > no_progress:
                        ending.stalled = True
                        state, code, sig = self._cancel(job_id, reader)
                        break
                time.sleep(POLL_S)
        except KeyboardInterrupt:
            ending.interrupted = True
            state, code, sig = self._cancel(job_id, reader)
        for _ in range(10):  # the last lines can reach a shared file system after the job ends
            if not reader.read():
                break
            time.sleep(POLL_S)
        reader.finish()
        if state == "TIMEOUT":
            ending.timed_out = True
        ending.exit_code = (-sig if sig else code) if state != "OUT_OF_MEMORY" else (code or -9)
        note = {"OUT_OF_MEMORY": "out of memory (Slurm: OUT_OF_MEMORY)", "NODE_FAIL": "error: the node failed",
                "BOOT_FAIL": "error: the node failed to boot", "PREEMPTED": "error: the job was preempted",
                "CANCELLED": "error: the job was cancelled", "DEADLINE": "error: the job reached its deadline"}
        tail.append(f"slurm job {job_id}: {state or 'gone from the controller (state unknown)'}"
                    + (f" ({note[state]})" if state in note and not ending.interrupted else ""))
        ending.tail = list(tail)
        return ending

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

    def abandon(self, record: dict) -> None:
        """A run left `running` by a killed benchbook: cancel its job if Slurm still has it."""
        job = record.get("slurm_job_id")
        if job:
            try:
                state, _, _ = job_state(str(job))
            except SlurmError:
                return
            if state and state not in TERMINAL:
                cancel(str(job))


class _LogReader:
    """The job's output file read as it grows: complete lines to the echo and the tail."""

    def __init__(self, path: Path, tail: collections.deque, echo):
        self.path, self.tail, self.echo = path, tail, echo
        self.offset, self.partial = 0, b""

    def read(self) -> bool:
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                chunk = f.read()
        except FileNotFoundError:
            return False
        if not chunk:
            return False
        self.offset += len(chunk)
        lines = (self.partial + chunk).split(b"\n")
        self.partial = lines.pop()
        for raw in lines:
            self._line(raw)
        return True

    def finish(self) -> None:
        if self.partial:
            self._line(self.partial)
            self.partial = b""

    def _line(self, raw: bytes) -> None:
        line = raw.decode("utf-8", "replace").rstrip("\r")
        self.tail.append(line)
        if self.echo:
            self.echo(line)
