"""What the notebooks call: one `Report` per study (or folder of logs), one method per section.

The notebooks stay thin: a cell calls one method and shows the frame or figure it returns. A
report is in launch mode (it has a study and may run it) or analysis-only mode (`log_dir`: logs
that exist already, nothing is launched). Runs never execute inside the notebook kernel: `launch`
starts `benchbook run --resume` as a separate process and follows its run records.
"""

from __future__ import annotations

import functools
import os
import platform
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd

from .. import __version__
from ..core import config
from ..environment import envs
from ..errors import BenchbookError, RuleError
from ..logs import parsers
from ..logs.analysis import Analysis, analyze
from ..logs.rules import Rule
from ..runfolder import records
from ..studies import commands
from ..studies import study as studies
from . import metrics, tables

# processes: a CPU run's MPI ranks (views.runs shows the column only where it is not one per GPU); the
# configuration's headers are its axes' (core.config), the throughputs' are in the report's unit.
RUN_TABLE = ["run", "gpus", "processes", "batch_size", "precision", "xla", "repeat", "status",
             "reported_throughput", "recomputed_throughput", "iterations", "warnings"]


def run_headers(unit: str) -> dict[str, str]:
    """The runs table's headers: "GPUs", "per-GPU batch", "reported <unit>" (the report's unit)..."""
    return {**config.headers(), "run": "run id (folder) or file:run", "reported_throughput": f"reported {unit}",
            "recomputed_throughput": f"recomputed {unit}", "iterations": "records used"}


class Report:
    """A study's report: environment, set-up, launch, analysis and reproduction, as data."""

    def __init__(self, study: str | Path | None = None, log_dir: str | Path | None = None,
                 runs_dir: str | Path = "runs", reference: str | None = None, skip_records: int | None = None,
                 method: str | None = None, title: str | None = None, target_accuracy: float | None = None,
                 rule: str | Rule | None = None):
        self.study = studies.load(study) if study is not None else None
        self.log_dir = Path(log_dir) if log_dir is not None else None
        if self.study is None and self.log_dir is None:
            raise BenchbookError("a report needs a study file (study=...) or a folder of logs (log_dir=...)")
        self.runs_dir = Path(runs_dir)
        self.reference_name = reference if reference is not None else (self.study.reference if self.study else None)
        try:  # None leaves a part to the log format's rule; a Rule is one chosen whole (notebook_params)
            self.rule = rule if isinstance(rule, Rule) and skip_records is method is None else \
                parsers.choose(name=rule, skip_records=skip_records, method=method)
        except RuleError as exc:
            raise RuleError(f"report rule: {exc}") from None
        self.title = title if title is not None else (
            self.study.description or self.study.name if self.study else f"Logs in {self.log_dir}")
        self.target = target_accuracy if target_accuracy is not None else (
            self.study.target_accuracy if self.study else None)
        self._unexamined: dict[str, str] = {}  # path -> why it cannot be examined, shown under problems
        self.page_title: str | None = None  # the page's heading (page.title), for the browser and the index
        self.reference  # noqa: B018 -- a bad reference name fails here, before anything is launched

    # --- where things are ------------------------------------------------------------------------------

    @property
    def mode(self) -> str:
        return "analysis-only" if self.log_dir else "launch"

    def _exists(self, path: Path) -> bool:
        """Whether `path` exists; one that cannot be examined (a link into a folder without permission)
        counts as absent and is a problem of the report, shown with the others: the rest goes on."""
        try:
            return path.exists()
        except OSError as exc:
            self._unexamined[str(path)] = f"cannot be examined ({exc.strerror or exc}); left out"
            return False

    @property
    def source(self) -> Path:
        """The folder analyzed: `log_dir`, else the study's folder under `runs_dir`."""
        return self.log_dir if self.log_dir else self.runs_dir / self.study.name

    def describe(self) -> pd.DataFrame:
        rows = {"title": self.page_title or self.title, "mode": self.mode, "logs": str(self.source),
                "study file": str(self.study.path) if self.study else "-",
                "model / runtime": f"{self.study.model} / {self.study.runtime}" if self.study else "-",
                "reference": self.reference_name or "-", "published in": self._published_in(),
                "rule": self._rule_text(),
                "benchbook": __version__}
        return pd.DataFrame({"value": rows}).rename_axis("")

    def _published_in(self) -> str:
        """Where the published numbers come from, so that a reader can check them at the source."""
        if self.reference is None:
            return "-"
        src = self.reference.source
        return f"{src.title} ({src.url})" if src.url else src.title

    def _rule_text(self) -> str:
        return self.rule.describe()

    # --- 1. environment --------------------------------------------------------------------------------

    @functools.cached_property
    def capture(self) -> dict:
        """The environment of this machine (and of the CPU framework's Python, when it exists): a run
        record's capture when one of the study's runs was captured on this machine (the runner captures
        once per run; capturing again costs seconds of every report), else captured now."""
        recorded = self._recorded_capture()
        if recorded is not None:
            return recorded
        python = None
        if self.study and self.study.runtime == "cpu":
            named = envs.named(self.study.framework, self.study.python)
            if named and named[0].is_file():
                python = str(named[0])
            elif not named and envs.ready(self.study.framework):
                python = str(envs.python(self.study.framework))
        try:
            from ..environment import capture
            return capture.capture(python=python)
        except Exception as exc:  # the report goes on without it, saying why
            return {"host": {"hostname": platform.node(), "platform": platform.platform(),
                             "python": sys.version.split()[0]}, "capture_error": f"{type(exc).__name__}: {exc}"}

    def _recorded_capture(self) -> dict | None:
        if self.study is None or not self._exists(self.source):
            return None
        for rec in records.find(self.source).values():
            env = rec.get("environment")
            if isinstance(env, dict) and env.get("hostname") == socket.gethostname():
                return env
        return None

    def environment(self) -> pd.DataFrame:
        """The machine in one table: what `benchbook env` shows, flattened."""
        from ..environment.summary import summary_rows
        try:
            rows = summary_rows(self.capture)
        except Exception:  # a fallback capture (see `capture`): show what it holds
            return pd.json_normalize(self.capture, sep=".").T.rename(columns={0: "value"})
        from rich.text import Text
        return pd.DataFrame([(k, Text.from_markup(str(v)).plain) for k, v in rows], columns=["", "value"]).set_index("")

    def drift(self) -> pd.DataFrame:
        """Repeats of one configuration that ran on environments that differ (from the run records)."""
        cols = ["configuration", "runs", "field", "values"]
        if not records.find(self.source) if self._exists(self.source) else True:
            return pd.DataFrame(columns=cols)
        from ..environment.diff import describe, load
        try:
            loaded = load(self.source)
        except BenchbookError:
            return pd.DataFrame(columns=cols)
        rows = []
        for cfg, entries, differences in loaded.repeat_drift():
            label = ", ".join(f"{k}={cfg[k]}" for k in config.compared() if k in cfg)
            for d in differences:
                rows.append({"configuration": label, "runs": ", ".join(e.label for e in entries), "field": d.key,
                             "values": f"{describe(d.a)} vs {describe(d.b)}"})
        return pd.DataFrame(rows, columns=cols)

    def fits(self) -> pd.DataFrame:
        """Whether this machine can run the study: GPUs, container tooling, CPU environment."""
        rows = []
        if self.study is None:
            return pd.DataFrame([{"check": "launch", "ok": True, "detail": "analysis-only: nothing is launched"}])
        gpus = _gpu_count(self.capture)
        if self.study.runtime == "cpu":
            rows.append({"check": "runtime", "ok": True, "detail": "CPU workload: runs on any machine"})
            rows.append({"check": "cores", "ok": True, "detail": f"{os.cpu_count()} CPU cores"})
        else:
            need = max((c.get("gpus") or max(c.get("gpu_counts", [0])) for c in
                        (s.config for s in studies.expand(self.study))), default=0)
            per_node = min(need, self.study.gpus_per_node)
            rows.append({"check": "GPUs", "ok": gpus >= per_node,
                         "detail": f"the study needs {per_node} GPUs per node; this machine has {gpus}"})
            tool = "docker" if self.study.container.mode != "inside" else None
            if tool:
                rows.append({"check": tool, "ok": shutil.which(tool) is not None,
                             "detail": shutil.which(tool) or f"{tool} is not on the PATH"})
        return pd.DataFrame(rows)

    # --- 2. set-up -------------------------------------------------------------------------------------

    def setup(self) -> pd.DataFrame:
        """What the study needs and whether it is there."""
        if self.study is None:
            exists = self._exists(self.source)
            return pd.DataFrame([{"need": "logs", "ready": exists, "how": str(self.source)}])
        s = self.study
        if s.runtime == "cpu":
            return pd.DataFrame([
                _cpu_python_row(s.framework, s.python),
                {"need": "data", "ready": True, "how": "synthetic tensors, or scikit-learn's digits (in the package)"},
            ])
        rows = [{"need": "set-up step", "ready": None, "how": step} for step in commands.setup_steps(s)]
        if s.data.path:
            rows.append({"need": "data", "ready": Path(s.data.path).exists(), "how": s.data.path})
        return pd.DataFrame(rows)

    # --- 3. launch -------------------------------------------------------------------------------------

    def launch(self, poll_s: float = 2.0, quiet: bool = False) -> pd.DataFrame:
        """Run the study (resuming it) in a separate process and follow its records until it ends."""
        if self.study is None:
            print("analysis-only mode: nothing to launch")
            return self.status()
        from ..studies import runner

        folder = self.source
        holder = runner.busy(self.study, self.runs_dir)
        if holder:  # a launcher already runs it (another notebook, a terminal): follow it instead
            print(f"{folder} is being run by {holder}; following its records")
            while runner.busy(self.study, self.runs_dir):
                time.sleep(poll_s)
            return self.status()
        folder.mkdir(parents=True, exist_ok=True)
        log = self.runs_dir / f"{self.study.name}.launcher.log"  # beside the study folder, not in it
        argv = [sys.executable, "-m", "benchbook", "run", str(self.study.path), "--resume", "--out",
                str(self.runs_dir), "--quiet"]
        with open(log, "ab") as out:
            proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    start_new_session=True)
        if not quiet:
            print(f"started: {' '.join(argv)} (pid {proc.pid}); its output goes to {log}")
        seen: dict[str, str] = {}
        total = len(studies.expand(self.study))
        while True:
            done = proc.poll() is not None
            for run_id, rec in records.find(folder).items():
                status = rec.get("status")
                if status != "running" and seen.get(run_id) != status and rec.get("ended_at"):
                    seen[run_id] = status
                    if not quiet:
                        value = (rec.get("analysis") or [{}])[0].get("recomputed_throughput")
                        extra = f", {value:.1f} {self.study.spec.unit}" if value else (
                            f", {rec['failure']['cause']}" if rec.get("failure") else "")
                        print(f"[{len(seen)}/{total}] {run_id}: {status}{extra}", flush=True)
            if done:
                break
            time.sleep(poll_s)
        if proc.returncode not in (0, 1) and not quiet:
            tail = log.read_text(errors="replace").splitlines()[-10:]
            print(f"benchbook run exited with {proc.returncode}:\n" + "\n".join(tail))
        return self.status()

    def status(self) -> pd.DataFrame:
        """The study folder's run records: one row per run."""
        return records.table(self.source) if self._exists(self.source) else records.table(Path("/nonexistent"))

    # --- 4. analysis -----------------------------------------------------------------------------------

    @functools.cached_property
    def analysis(self) -> Analysis:
        if not self._exists(self.source):
            why = self._unexamined.get(str(self.source), "no such folder; run the study first or set log_dir")
            raise BenchbookError(f"{self.source}: {why}")
        return analyze(self.logs(), self.rule)

    def logs(self) -> list[Path]:
        """The logs to analyze: for a study folder, each run's current log (earlier attempts kept
        under `attempts/` are not part of the results); otherwise every file under `log_dir`."""
        found, wrong = records.scan(self.source)
        if (found or wrong) and not self.log_dir:
            logs = [self.source / run_id / rec.get("log", f"{run_id}.log") for run_id, rec in found.items()]
            # a run whose record cannot be read still has its log: analyzed, and listed under problems
            logs += [self.source / run_id / f"{run_id}.log" for run_id, _ in wrong if run_id not in found]
            return sorted({log for log in logs if self._exists(log)})
        return [self.source]

    def record_problems(self) -> list[tuple[str, str]]:
        """Run records that cannot be read and logs that are gone, in launch mode, and paths that cannot be
        examined: never dropped."""
        found = records.problems(self.source) if not self.log_dir and self._exists(self.source) else []
        return found + sorted(self._unexamined.items())

    @functools.cached_property
    def stats(self) -> pd.DataFrame:
        return metrics.aggregate(self.analysis.runs)

    def runs(self) -> pd.DataFrame:
        """One row per run found in the logs, the columns a reader needs (all columns: `analysis.runs`)."""
        runs = self.analysis.runs
        headers = run_headers(self.unit)
        if runs.empty:
            return pd.DataFrame(columns=[headers.get(k, k) for k in RUN_TABLE])
        names = runs["source"].map(lambda s: Path(s).parent.name if Path(s).parent != self.source else Path(s).name)
        view = runs.assign(run=names + ":" + runs["run"].astype(str),
                           warnings=runs["warnings"].map(lambda w: "; ".join(w)))
        return view[RUN_TABLE].rename(columns=headers)

    @property
    def unit(self) -> str:
        """The throughput unit word used throughout the report: the reference's, else the model's."""
        if self.reference is not None:
            return self.reference.unit
        from .plots import rate_unit
        return rate_unit(self.analysis.runs)

    def problems(self) -> pd.DataFrame:
        from .publish_files import shown  # a file name as it is, escaped: no control character, no invalid byte
        rows = [{"file": shown(str(p.source)), "problem": p.reason} for p in self.analysis.problems]
        rows += [{"file": run_id, "problem": problem} for run_id, problem in self.record_problems()]
        return pd.DataFrame(rows, columns=["file", "problem"])

    def summary(self) -> pd.DataFrame:
        """The table in the layout of the published reports: median, mean and speedup over repeats."""
        return tables.published_layout(self.stats).round(2)

    def scaling(self) -> pd.DataFrame:
        """Median, speedup and efficiency per configuration, unrounded (the view rounds, like the headline)."""
        cols = ["gpus", "nodes", "processes", "precision", "batch_size", "xla", "runs", "median", "speedup",
                "efficiency"]
        return self.stats[cols].sort_values(["precision", "batch_size", "xla", "gpus", "processes"]).reset_index(
            drop=True)

    def time_to_train(self) -> pd.DataFrame:
        from .plots import quality_of
        key = quality_of(self.analysis.runs).key  # the model's own headline metric (ModelSpec.quality)
        if self.analysis.evaluations.empty:
            return pd.DataFrame(columns=["source", "run", "reached", "seconds", "epoch", key, f"final_{key}"])
        return metrics.time_to_target(self.analysis.evaluations, self.target or 0.0, key)

    # --- 5. reproduction -------------------------------------------------------------------------------

    @functools.cached_property
    def reference(self):
        if not self.reference_name:
            return None
        from . import references
        return references.load(self.reference_name)

    def reproduction(self) -> pd.DataFrame:
        """Measured against published: ratio and verdict per published configuration, unrounded (the view
        shows each measured number to the published number's decimals)."""
        if self.reference is None:
            return pd.DataFrame(columns=["verdict"])
        from . import references
        return references.compare(self.stats, self.reference)

    def reference_differences(self) -> pd.DataFrame:
        """What differs between the published set-up and this study's (its first run's environment)."""
        if self.reference is None:
            return pd.DataFrame(columns=["difference"])
        from . import references
        first = next(iter(records.find(self.source).values()), None) if self._exists(self.source) else None
        if self.log_dir is not None and not first:
            from .logged_setup import log_differences
            return log_differences(self)
        lines = references.differences(self.reference, first if first else self.capture,
                                       first.get("config") if first else None)
        return pd.DataFrame({"difference": lines})

    def verdict(self) -> str:
        if self.reference is None:
            return "no reference"
        from . import references
        return references.verdict_summary(self.reproduction())["overall"]

    def failures(self) -> pd.DataFrame:
        """Runs that did not complete: from run records when the project launched them, else from logs."""
        rows = []
        for run_id, rec in (records.find(self.source).items() if self._exists(self.source) else []):
            if rec.get("status") != "complete":
                failure = rec.get("failure") or {}
                rows.append({"run": run_id, "status": rec.get("status"), "cause": failure.get("cause"),
                             "detail": failure.get("detail"),
                             "last lines": "\n".join(failure.get("last_lines") or [])[-2000:]})
        if not rows:
            runs = self.analysis.runs
            for _, r in runs[runs["status"] != "complete"].iterrows():
                rows.append({"run": f"{Path(r['source']).name}:{r['run']}", "status": r["status"],
                             "cause": r["failure"], "detail": "; ".join(r["warnings"]), "last lines": ""})
        return pd.DataFrame(rows, columns=["run", "status", "cause", "detail", "last lines"])

    # --- for the index page ----------------------------------------------------------------------------

    def headline(self) -> dict:
        """The numbers the index page shows, each traceable to the runs frame; the best median in the
        report's unit (ModelSpec.unit)."""
        runs = self.analysis.runs
        best = self.stats.sort_values("median", ascending=False).head(1)
        from .headline import words_for
        out = {
            "title": self.page_title or self.title, "mode": self.mode, "source": str(self.source),
            "runs": int(len(runs)),
            "complete": int((runs["status"] == "complete").sum()) if len(runs) else 0,
            "configurations": int(len(self.stats)), "reference": self.reference_name,
            "verdict": words_for(self.log_dir, self.source)(self.verdict()),
            "problems": len(self.analysis.problems) + len(self.record_problems()),
        }
        if self.reference is not None:  # how many published configurations hold, and by how much
            from . import headline, references
            comparison = self.reproduction()
            counts = references.verdict_summary(comparison)
            out |= {"within": int(counts["reproduced"]), "published": int(counts["rows"]),
                    "tolerance": "±" + headline.percent(comparison.attrs.get("tolerance", self.reference.tolerance)),
                    "deviation": headline.size(comparison) if "ratio" in comparison else ""}
        if len(best):
            from .configs import describe
            b = best.iloc[0]
            out["best"] = {"label": describe(b["gpus"], b["processes"], b["precision"], b["batch_size"], b["xla"]),
                           "median": float(b["median"]), "median_text": self._shown(b), "unit": self.unit,
                           "runs": int(b["runs"])}
        return out

    def _shown(self, stats_row) -> str:
        """A configuration's median as the grid shows it: to the digits of its published number."""
        from . import display, grid
        for cells in (g.cells for g in grid.grids(self.stats, self.reproduction() if self.reference else None,
                                                  self.reference)):
            for _, c in cells.iterrows():
                if c["measured"] == float(stats_row["median"]):
                    return display.fixed(c["measured"], c["decimals"])
        return display.fixed(stats_row["median"])

    def save_summary(self, path: str | Path | None) -> dict:
        """Write the headline as JSON for `benchbook publish`'s index (no-op without a path)."""
        data = self.headline()
        if path is not None:
            records.write(Path(path), data)  # whole or not at all
        return data


def _cpu_python_row(framework: str, study_python: str | None) -> dict:
    """The set-up row of a CPU study's Python: the one the study's `python:` or BENCHBOOK_PYTHON_<FRAMEWORK>
    names (used as it is), else the framework's environment (built from pinned requirements by the first run)."""
    named = envs.named(framework, study_python)
    if named:
        python, setting = named
        usable = python.is_file() and os.access(python, os.X_OK)
        return {"need": f"{framework} Python", "ready": usable,
                "how": f"{python}, named by {setting} (used as it is, nothing installed)"
                       + ("" if usable else ": not an executable file")}
    ready = envs.ready(framework)
    return {"need": f"{framework} CPU environment", "ready": ready,
            "how": str(envs.path(framework)) if ready else "created by the first run (pinned requirements)"}


def _gpu_count(capture: dict) -> int:
    gpus = capture.get("gpus")
    if isinstance(gpus, dict):
        if isinstance(gpus.get("devices"), list):
            return len(gpus["devices"])
        return int(gpus.get("count") or 0)
    if isinstance(gpus, list):
        return len(gpus)
    return 0
