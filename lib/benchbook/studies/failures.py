"""Why a run did not complete, from how its process ended, its last log lines and its analysis."""

from __future__ import annotations

import errno
import re
import signal
from dataclasses import dataclass, field

_OOM = re.compile(
    r"out of memory|OutOfMemory|ResourceExhausted|OOM when allocating|CUDA_ERROR_OUT_OF_MEMORY|"
    r"\bMemoryError\b|std::bad_alloc|Cannot allocate memory|cudaErrorMemoryAllocation",
    re.IGNORECASE,
)
_ERROR_LINE = re.compile(r"^\s*(?:\S+(?:Error|Exception)\b|error:|Error:|ERROR\b|terminate called|Segmentation fault)")


@dataclass
class Ending:
    """How a run's process ended, as the runner saw it."""

    exit_code: int | None
    timed_out: bool = False
    stalled: bool = False
    interrupted: bool = False
    tail: list[str] = field(default_factory=list)
    #: the run's log could not be written (errno, path, message): disk full, quota, permissions
    write_error: dict | None = None


def storage_cause(errno_value: int | None) -> str:
    """`disk_full` for a full disk or quota, `storage_error` for any other failed write."""
    return "disk_full" if errno_value in (errno.ENOSPC, errno.EDQUOT) else "storage_error"


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


def classify(end: Ending, analyzed: list[dict]) -> tuple[str, dict | None]:
    """(status, failure) of a run: `complete` with no failure, or `failed`/`interrupted` with a cause.

    A run is complete only when its process exited cleanly *and* its log holds a complete measured
    run; a clean exit with nothing measured is `missing_output`, not a success.
    """
    tail = end.tail[-30:]
    if end.interrupted:
        return "interrupted", {"cause": "interrupted", "detail": "stopped by the user", "last_lines": tail}
    if end.write_error:
        w = end.write_error
        return "failed", {"cause": storage_cause(w["errno"]), "path": w["path"],
                          "detail": f"cannot write {w['path']}: {w['message']}; the run was stopped",
                          "last_lines": tail}
    if end.timed_out:
        return "failed", {"cause": "timeout", "detail": "stopped at the per-run timeout", "last_lines": tail}
    if end.stalled:
        return "failed", {"cause": "no_progress", "detail": "no log output within the no_progress limit",
                          "last_lines": tail}
    text = "\n".join(tail)
    logged = [r.get("failure") for r in analyzed if r.get("failure")]
    if end.exit_code == 0:
        done = [r for r in analyzed if r.get("status") == "complete" and r.get("recomputed_throughput")]
        if done and len(done) == len(analyzed):
            return "complete", None
        if not analyzed:
            detail = "the log holds no run in a known format"
        else:
            detail = "; ".join(f"run {r['run']}: {r['status']}, {r.get('iterations', 0)} records"
                               for r in analyzed if r not in done)
        return "failed", {"cause": "missing_output", "detail": detail, "last_lines": tail}
    if _OOM.search(text) or any("memory" in f for f in logged):
        line = next((ln for ln in reversed(tail) if _OOM.search(ln)), "")
        return "failed", {"cause": "out_of_memory", "detail": line.strip() or logged[0], "exit_code": end.exit_code,
                          "last_lines": tail}
    if end.exit_code is not None and end.exit_code < 0:
        detail = f"killed by {_signal_name(end.exit_code)}"
        if end.exit_code == -signal.SIGKILL:
            detail += " (not by benchbook: often the kernel's out-of-memory killer)"
    else:
        detail = f"exit code {end.exit_code}"
    error = next((ln.strip() for ln in reversed(tail) if _ERROR_LINE.search(ln)), None)
    if error:
        detail += f": {error}"
    return "failed", {"cause": "crash", "detail": detail, "exit_code": end.exit_code, "last_lines": tail}
