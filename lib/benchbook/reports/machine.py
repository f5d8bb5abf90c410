"""What a report says besides its analysis: this machine (its capture, whether it fits the study, repeats
that ran on different stacks), what the study needs, what differs from the published set-up, the runs that
did not complete, and the report's own description. Each is a frame computed from a `Report` (which holds
the analysis, the statistics and the reference comparison only), for the sections of the page (`sections`).
"""

from __future__ import annotations

import os
import platform
import shutil
import socket
import sys
import weakref
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from .. import __version__
from ..core.catalog import default as catalog
from ..environment import envs
from ..errors import BenchbookError
from ..runfolder import records
from ..studies import commands
from ..studies import study as studies
from .configs import GPUS
from .publish_files import portable

if TYPE_CHECKING:
    from .report import Report

_CAPTURES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # report -> its capture, taken once


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except OSError:
        return False


def capture(report: Report) -> dict:
    """The environment of this machine, captured once per report (see `_capture`)."""
    if report not in _CAPTURES:
        _CAPTURES[report] = _capture(report)
    return _CAPTURES[report]


def _capture(report: Report) -> dict:
    """The environment of this machine (and of the CPU framework's Python, when it exists): a run
    record's capture when one of the study's runs was captured on this machine (the runner captures
    once per run; capturing again costs seconds of every report), else captured now."""
    recorded = _recorded_capture(report)
    if recorded is not None:
        return recorded
    python = None
    if report.study and report.study.runtime == "cpu":
        named = envs.named(report.study.framework, report.study.python)
        if named and named[0].is_file():
            python = str(named[0])
        elif not named and envs.ready(report.study.framework):
            python = str(envs.python(report.study.framework))
    try:
        from ..environment import capture
        return capture.capture(python=python)
    except Exception as exc:  # the report goes on without it, saying why
        return {"host": {"hostname": platform.node(), "platform": platform.platform(),
                         "python": sys.version.split()[0]}, "capture_error": f"{type(exc).__name__}: {exc}"}

def _recorded_capture(report: Report) -> dict | None:
    if report.study is None or not _exists(report.source):
        return None
    for rec in records.find(report.source).values():
        env = rec.get("environment")
        if isinstance(env, dict) and env.get("hostname") == socket.gethostname():
            return env
    return None

def environment(report: Report) -> pd.DataFrame:
    """The machine in one table: what `benchbook env` shows, flattened."""
    from ..environment.summary import summary_rows
    try:
        rows = summary_rows(capture(report))
    except Exception:  # a fallback capture (see `capture`): show what it holds
        return pd.json_normalize(capture(report), sep=".").T.rename(columns={0: "value"})
    from rich.text import Text
    return pd.DataFrame([(k, Text.from_markup(str(v)).plain) for k, v in rows], columns=["", "value"]).set_index("")

def drift(report: Report) -> pd.DataFrame:
    """Repeats of one configuration that ran on environments that differ (from the run records)."""
    cols = ["configuration", "runs", "field", "values"]
    if not records.find(report.source) if _exists(report.source) else True:
        return pd.DataFrame(columns=cols)
    from ..environment.diff import describe, load
    try:
        loaded = load(report.source)
    except BenchbookError:
        return pd.DataFrame(columns=cols)
    rows = []
    for cfg, entries, differences in loaded.repeat_drift():
        label = ", ".join(f"{k}={cfg[k]}" for k in catalog().compared() if k in cfg)
        for d in differences:
            rows.append({"configuration": label, "runs": ", ".join(e.label for e in entries), "field": d.key,
                         "values": f"{describe(d.a)} vs {describe(d.b)}"})
    return pd.DataFrame(rows, columns=cols)

def fits(report: Report) -> pd.DataFrame:
    """Whether this machine can run the study: GPUs, container tooling, CPU environment."""
    rows = []
    if report.study is None:
        return pd.DataFrame([{"check": "launch", "ok": True, "detail": "analysis-only: nothing is launched"}])
    gpus = _gpu_count(capture(report))
    if report.study.runtime == "cpu":
        rows.append({"check": "runtime", "ok": True, "detail": "CPU workload: runs on any machine"})
        rows.append({"check": "cores", "ok": True, "detail": f"{os.cpu_count()} CPU cores"})
    else:
        need = max((c.get(GPUS) or max(c.get("gpu_counts", [0])) for c in
                    (s.config for s in studies.expand(report.study))), default=0)
        per_node = min(need, report.study.gpus_per_node)
        rows.append({"check": "GPUs", "ok": gpus >= per_node,
                     "detail": f"the study needs {per_node} GPUs per node; this machine has {gpus}"})
        tool = "docker" if report.study.container.mode != "inside" else None
        if tool:
            rows.append({"check": tool, "ok": shutil.which(tool) is not None,
                         "detail": shutil.which(tool) or f"{tool} is not on the PATH"})
    return pd.DataFrame(rows)

def setup(report: Report) -> pd.DataFrame:
    """What the study needs and whether it is there."""
    if report.study is None:
        exists = _exists(report.source)
        return pd.DataFrame([{"need": "logs", "ready": exists, "how": str(report.source)}])
    s = report.study
    if s.runtime == "cpu":
        return pd.DataFrame([
            _cpu_python_row(s.framework, s.python),
            {"need": "data", "ready": True, "how": "synthetic tensors, or scikit-learn's digits (in the package)"},
        ])
    rows = [{"need": "set-up step", "ready": None, "how": step} for step in commands.setup_steps(s)]
    if s.data.path:
        rows.append({"need": "data", "ready": Path(s.data.path).exists(), "how": s.data.path})
    return pd.DataFrame(rows)


def describe(report: Report, title: str | None = None) -> pd.DataFrame:
    """The report in one table; `title`: its page's heading (`sections.Page.heading`), else the report's own."""
    rows = {"title": title or report.title, "mode": report.mode, "logs": portable(report.source, home=True),
            "study file": portable(report.study.path, home=True) if report.study else "-",
            "model / runtime": f"{report.study.model} / {report.study.runtime}" if report.study else "-",
            "reference": report.reference_name or "-", "published in": _published_in(report),
            "rule": report.rule.describe(),
            "benchbook": __version__}
    return pd.DataFrame({"value": rows}).rename_axis("")

def _published_in(report: Report) -> str:
    """Where the published numbers come from, so that a reader can check them at the source."""
    if report.reference is None:
        return "-"
    src = report.reference.source
    return f"{src.title} ({src.url})" if src.url else src.title


def reference_differences(report: Report) -> pd.DataFrame:
    """What differs between the published set-up and this study's (its first run's environment)."""
    if report.reference is None:
        return pd.DataFrame(columns=["difference"])
    from . import references
    first = next(iter(records.find(report.source).values()), None) if _exists(report.source) else None
    if report.log_dir is not None and not first:
        from .logged_setup import log_differences
        return log_differences(report)
    lines = references.differences(report.reference, first if first else capture(report),
                                   first.get("config") if first else None)
    return pd.DataFrame({"difference": lines})


def failures(report: Report) -> pd.DataFrame:
    """Runs that did not complete: from run records when the project launched them, else from logs."""
    rows = []
    for run_id, rec in (records.find(report.source).items() if _exists(report.source) else []):
        if rec.get("status") != "complete":
            failure = rec.get("failure") or {}
            rows.append({"run": run_id, "status": rec.get("status"), "cause": failure.get("cause"),
                         "detail": failure.get("detail"),
                         "last lines": "\n".join(failure.get("last_lines") or [])[-2000:]})
    if not rows:
        runs = report.analysis.runs
        for _, r in runs[runs["status"] != "complete"].iterrows():
            rows.append({"run": f"{Path(r['source']).name}:{r['run']}", "status": r["status"],
                         "cause": r["failure"], "detail": "; ".join(r["warnings"]), "last lines": ""})
    return pd.DataFrame(rows, columns=["run", "status", "cause", "detail", "last lines"])


def _cpu_python_row(framework: str, study_python: str | None) -> dict:
    """The set-up row of a CPU study's Python: the one the study's `python:` or BENCHBOOK_PYTHON_<FRAMEWORK>
    names (used as it is), else the framework's environment (built from pinned requirements by the first run)."""
    named = envs.named(framework, study_python)
    if named:
        python, setting = named
        usable = python.is_file() and os.access(python, os.X_OK)
        return {"need": f"{framework} Python", "ready": usable,
                "how": f"{portable(python, home=True)}, named by {setting} (used as it is, nothing installed)"
                       + ("" if usable else ": not an executable file")}
    ready = envs.ready(framework)
    return {"need": f"{framework} CPU environment", "ready": ready,
            "how": portable(envs.path(framework), home=True) if ready else
            "created by the first run (pinned requirements)"}


def _gpu_count(capture: dict) -> int:
    gpus = capture.get("gpus")
    if isinstance(gpus, dict):
        if isinstance(gpus.get("devices"), list):
            return len(gpus["devices"])
        return int(gpus.get("count") or 0)
    if isinstance(gpus, list):
        return len(gpus)
    return 0
