"""One `Report` per study (or folder of logs): its analysis, statistics and reference comparison, as data.

The page's sections (`sections`) read it; a notebook cell shows one section. A
report is in launch mode (it has a study and may run it) or analysis-only mode (`log_dir`: logs
that exist already, nothing is launched). Launching a study is `studies.follow`'s: runs never execute
inside the notebook kernel.
"""

from __future__ import annotations

import functools
from pathlib import Path

import pandas as pd

from ..errors import BenchbookError, RuleError
from ..logs import parsers
from ..logs.analysis import Analysis, analyze
from ..logs.archives import SEP
from ..logs.rules import Rule
from ..runfolder import records
from ..studies import study as studies
from . import metrics


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

    def status(self) -> pd.DataFrame:
        """The study folder's run records: one row per run."""
        return records.table(self.source) if self._exists(self.source) else records.table(Path("/nonexistent"))

    # --- 4. analysis -----------------------------------------------------------------------------------

    @functools.cached_property
    def analysis(self) -> Analysis:
        if not self._exists(self.source):
            why = self._unexamined.get(str(self.source), "no such folder; run the study first (`make report` runs "
                                                          "the CPU studies) or set log_dir")
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
        """Statistics over repeats: of complete runs where the runs are ours; of every run with a number where
        the logs are someone else's (a publisher's log cut before its summary gave a published number by
        its logged records, as `benchbook summarize` keeps it; the `incomplete` column counts them)."""
        return metrics.aggregate(self.analysis.runs, complete_only=self.mode == "launch", catalog=self.analysis.catalog)

    # ------------------------------------------------------------ the report's data, tidy (reports/tidy.py)
    @functools.cached_property
    def runs(self) -> pd.DataFrame:
        """One row per run: the analysis's runs frame with each run's `run` name and `configuration` in words."""
        from . import tidy
        return tidy.runs(self)

    @functools.cached_property
    def iterations(self) -> pd.DataFrame:
        """One row per logged step (line, rank, epoch, iteration, elapsed s, throughput, loss, lr, steps, warmup,
        measured), with its run's name and configuration: `sns.lineplot(report.iterations, x="iteration",
        y="throughput", hue="configuration")`."""
        from . import tidy
        return tidy.iterations(self)

    @functools.cached_property
    def evaluations(self) -> pd.DataFrame:
        """One row per evaluation and quality metric (line, epoch, elapsed s, metric, name, value, unit), with its
        run's name and configuration."""
        from . import tidy
        return tidy.evaluations(self)

    @functools.cached_property
    def measures(self) -> pd.DataFrame:
        """One row per run and measure (throughput in the model's unit, tokens/s...), with unit and rule."""
        from . import tidy
        return tidy.measures(self)

    def log_name(self, source: str) -> str:
        """A log's name within the folder analyzed: `ngc-tf1-resnet50/tf_gpu1_amp_bs128.txt` for the member of
        `logs.tar.xz` (archives.SEP), `run-1/run-1.log` in a folder; the file's own name when the log is
        the source itself. The page's copy of the log has it, and an analysis-only runs table (sections.runs)
        names each run by it."""
        text, folder = str(source), str(self.source)
        if text.startswith(folder) and text[len(folder):][:1] in ("/", SEP) and len(text) > len(folder) + 1:
            return text[len(folder) + 1:]
        return Path(text).name

    @property
    def unit(self) -> str:
        """The throughput unit word used throughout the report: the reference's, else the model's."""
        if self.reference is not None:
            return self.reference.unit
        from .plots import rate_unit
        return rate_unit(self.analysis.runs)

    @functools.cached_property
    def reference(self):
        if not self.reference_name:
            return None
        from . import references
        return references.load(self.reference_name)

    def reproduction(self) -> pd.DataFrame:
        """Measured against published: ratio and verdict per published configuration, unrounded (the view
        shows each measured number to the published number's decimals); computed once."""
        return self._reproduction

    @functools.cached_property
    def _reproduction(self) -> pd.DataFrame:
        if self.reference is None:
            return pd.DataFrame(columns=["verdict"])
        from . import references
        other = any(row.measure != "throughput" for row in self.reference.rows)  # (tokens/s/GPU, step time...)
        measures = references.measure_stats(self.analysis.runs, self.analysis.measures,
                                            complete_only=self.mode == "launch") if other else None
        return references.compare(self.stats, self.reference, measures=measures)

    @functools.cached_property
    def words(self):
        """How this report says its verdicts, decided once: "reproduced" of our own runs (launch mode, or a
        study folder with run records), "consistent" of other logs, re-read (`headline.words_for`)."""
        from .headline import words_for
        return words_for(self.log_dir, self.source)

    def verdict(self) -> str:
        if self.reference is None:
            return "no reference"
        from . import references
        return references.verdict_summary(self.reproduction())["overall"]

    # --- for the index page ----------------------------------------------------------------------------

    def summary(self, title: str | None = None):
        """What the index shows of this report (`summary.Summary`), each number traceable to the runs
        frame; the best median in the report's unit (ModelSpec.unit). `title`: its page's heading."""
        from .headline import fastest, percent, size
        from .publish_files import portable
        from .summary import Best, Summary
        runs = self.analysis.runs
        numbers = {"runs": int(len(runs)),
                   "complete": int((runs["status"] == "complete").sum()) if len(runs) else 0,
                   "configurations": int(len(self.stats)),
                   "problems": len(self.analysis.problems) + len(self.record_problems())}
        if self.reference is not None:  # how many published configurations hold, and by how much
            from . import references
            comparison = self.reproduction()
            counts = references.verdict_summary(comparison)
            numbers |= {"within": int(counts["reproduced"]), "published": int(counts["rows"]),
                        "tolerance": "±" + percent(comparison.attrs.get("tolerance", self.reference.tolerance)),
                        "deviation": size(comparison) if "ratio" in comparison else ""}
        best = None
        if len(self.stats):
            from .configs import Configuration, own_varying
            b, _next, how = fastest(self.stats)
            # "apart": told from the next by the spread of repeats (headline.FASTEST_RULE); else the index says not
            best = Best(label=Configuration.of(b, own_varying(self.stats)).sentence(), value=float(b["median"]),
                        text=self._shown(b), unit=self.unit, runs=int(b["runs"]), how=how,
                        apart=how in ("apart", "alone"))
        return Summary(kind="model", title=title or self.title, mode=self.mode, verdict=self.words(self.verdict()),
                       best=best, source=portable(self.source, home=True), reference=self.reference_name,
                       rule=self.rule.describe(), **numbers)

    def _shown(self, stats_row) -> str:
        """A configuration's median as the grid shows it: to the digits of its published number."""
        from . import display, grid
        for cells in (g.cells for g in grid.grids(self.stats, self.reproduction() if self.reference else None,
                                                  self.reference)):
            for _, c in cells.iterrows():
                if c["measured"] == float(stats_row["median"]):
                    return display.fixed(c["measured"], c["decimals"])
        return display.fixed(stats_row["median"])
