"""Launching a study from a notebook: `benchbook run --resume` in a process of its own, its records
followed until it ends. A report's notebook calls `launch` before it builds its `Report`, which only
analyses what the study folder holds.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from ..runfolder import records
from . import runner
from .study import Study, expand


def launch(study: Study, runs_dir: str | Path = "runs", poll_s: float = 2.0, quiet: bool = False) -> None:
    """Run the study (resuming it) in a separate process and follow its records until it ends; a study
    that another launcher runs already (another notebook, a terminal) is followed instead."""
    runs_dir = Path(runs_dir)
    folder = runs_dir / study.name
    holder = runner.busy(study, runs_dir)
    if holder:
        print(f"{folder} is being run by {holder}; following its records")
        while runner.busy(study, runs_dir):
            time.sleep(poll_s)
        return
    folder.mkdir(parents=True, exist_ok=True)
    log = runs_dir / f"{study.name}.launcher.log"  # beside the study folder, not in it
    argv = [sys.executable, "-m", "benchbook", "run", str(study.path), "--resume", "--out", str(runs_dir), "--quiet"]
    with open(log, "ab") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
    if not quiet:
        print(f"started: {' '.join(argv)} (pid {proc.pid}); its output goes to {log}")
    _follow(proc, folder, len(expand(study)), study.spec.unit, poll_s, quiet)
    if proc.returncode not in (0, 1) and not quiet:
        tail = log.read_text(errors="replace").splitlines()[-10:]
        print(f"benchbook run exited with {proc.returncode}:\n" + "\n".join(tail))


def _follow(proc: subprocess.Popen, folder: Path, total: int, unit: str, poll_s: float, quiet: bool) -> None:
    """Print each run's ending as its record says it, until the process ends."""
    seen: dict[str, str] = {}
    while True:
        done = proc.poll() is not None
        for run_id, rec in records.find(folder).items():
            status = rec.get("status")
            if status != "running" and seen.get(run_id) != status and rec.get("ended_at"):
                seen[run_id] = status
                if not quiet:
                    value = (rec.get("analysis") or [{}])[0].get("recomputed_throughput")
                    extra = f", {value:.1f} {unit}" if value else (
                        f", {rec['failure']['cause']}" if rec.get("failure") else "")
                    print(f"[{len(seen)}/{total}] {run_id}: {status}{extra}", flush=True)
        if done:
            return
        time.sleep(poll_s)
