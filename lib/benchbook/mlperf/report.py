"""What the MLPerf notebook's cells call (`notebooks/mlperf.py`): one method per section, frames and
figures out. The scores come from `results.score`; the convergence curves read the result files again
(`mllog.read`, a few milliseconds a file) for their evaluations.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from ..errors import BenchbookError
from . import checks, mllog, published, results, rules


def _names(text: str | None) -> list[str]:
    return [t.strip() for t in (text or "").split(",") if t.strip()]


class MLPerfReport:
    """The result folders under `paths` (comma-separated), optionally one benchmark, one round and some
    submitters only. `expected` (a published set's expected.yaml) marks a published set, whose notebook
    shows every score beside the published one; the published scores are `params/references/mlperf/`
    (or `published_root`)."""

    def __init__(self, paths: str, benchmark: str | None = None, round_: str | None = None,
                 submitters: str | None = None, check: bool = False, expected: str | None = None,
                 published_root: str | None = None, title: str | None = None):
        places = results.find(_names(paths))  # folders, or folders inside archives: read where they are
        if not places:
            raise BenchbookError(f"no result_N.txt under {paths}")
        wanted = {s.lower() for s in _names(submitters)}
        scored = [(results.score_folder(place, round_), place) for place in places]
        kept = [(f, place) for f, place in scored if (benchmark is None or f.benchmark == benchmark)
                and (not wanted or str(f.submitter).lower() in wanted)]
        self.folders = [f for f, _ in kept]
        self._places = {f.folder: place for f, place in kept}
        if not self.folders:
            raise BenchbookError(f"no result folder under {paths} for benchmark={benchmark}, "
                                 f"submitters={submitters or 'any'}")
        self.paths, self.check, self.expected, self.published_root = paths, check, expected, published_root
        self.title = title or "MLPerf Training results"  # a published set's title, as its index row says it

    @staticmethod
    def _label(f: results.Folder) -> str:
        return f"{f.submitter} {f.system} {f.benchmark} {f.round}"

    label = _label  # a result as the tables name it

    def place(self, f: results.Folder):
        """Where a scored folder's result files are (a folder, or a folder in an archive)."""
        return self._places[f.folder]

    def published(self) -> pd.DataFrame:
        """The scores as MLCommons publishes them: one row per result, minutes."""
        return pd.DataFrame([{"round": f.round, "submitter": f.submitter, "system": f.system,
                              "benchmark": f.benchmark, "accelerators": f.accelerators,
                              "accelerator": f.accelerator, "framework": f.framework, "minutes": f.score_minutes,
                              "valid": ("yes" if f.valid else f"no: {f.reason}") + self._official(f)}
                             for f in self.folders])

    @staticmethod
    def _official(f: results.Folder) -> str:
        """Where the official tool's score differs (`official.differences`): its figure and the cause."""
        if not f.official:
            return ""
        figure = f.official.get("figure") or f"{f.official['score_minutes']:.4f} minutes"
        return f"; the official result_summarizer gives {figure}: {f.official['cause']} ({f.official['tool']})"

    def against_published(self) -> pd.DataFrame:
        """Each result's score beside the score published for it, where one is: the published scores
        of `params/references/mlperf/` (`published_root`), with their source; a result not there takes
        the `score_minutes` of the published set's expected.yaml (`expected`), if it holds one. Agreeing
        means within 0.0001 minutes, the 4 decimals the results are published with."""
        columns = ["result", "published", "minutes", "deviation", "agrees", "source"]
        listed = self._expected_scores()
        rows = []
        for f in self.folders:
            found = published.lookup(f.round, f.submitter, f.system, f.benchmark, self.published_root)
            if found is not None:
                want, source = found[0].minutes, found[1].where(found[0])
            else:
                key = next((k for k in listed if str(f.folder).replace("\\", "/").endswith(k)), None)
                if key is None:
                    continue
                want, source = listed[key], f"{self.expected}: {key}"
            got = f.score_minutes
            agrees = got is not None and abs(got - want) <= published.TOLERANCE_MINUTES + 1e-9
            rows.append({"result": self._label(f), "published": want, "minutes": got,
                         "deviation": None if got is None else got / want - 1, "agrees": agrees,
                         "source": source})
        return pd.DataFrame(rows, columns=columns)

    def _expected_scores(self) -> dict[str, float]:
        """expected.yaml's result folder -> score_minutes, where it gives a positive number."""
        if not self.expected:
            return {}
        import yaml

        doc = yaml.safe_load(Path(self.expected).read_text(encoding="utf-8")) or {}
        return {k: v["score_minutes"] for k, v in doc.items() if isinstance(v, dict)
                and isinstance(v.get("score_minutes"), (int, float)) and v["score_minutes"] > 0}

    def per_accelerator(self) -> pd.DataFrame:
        """Minutes times accelerators: what a result costs in accelerator time, fastest first."""
        rows = [{"result": self._label(f), "accelerator": f.accelerator, "accelerators": f.accelerators,
                 "minutes": f.score_minutes, "accelerator-minutes": f.accelerator_minutes}
                for f in self.folders]
        return pd.DataFrame(rows).sort_values("accelerator-minutes", na_position="last", kind="stable")

    def spread(self) -> pd.DataFrame:
        """Every run of every result: its minutes, and what the score did with it and why."""
        return pd.DataFrame([{"result": self._label(f), "file": r["file"], "minutes": r["minutes"],
                              "status": r["status"], "epochs": r["epochs"], "role": r["role"],
                              "why not converged": r["reason"]} for f in self.folders for r in f.run_details])

    def initialisation(self) -> pd.DataFrame:
        """Each run's initialisation (init_start..init_stop), outside the time to train."""
        return pd.DataFrame([{"result": self._label(f), "file": r["file"], "seconds": r["init_seconds"],
                              "global batch": r["global_batch_size"]} for f in self.folders for r in f.run_details])

    def evaluations(self) -> pd.DataFrame:
        """Every evaluation of every run (epoch, metric, value), with the round's target for the metric."""
        rows = []
        for f in self.folders:
            goal = rules.target(f.benchmark, f.round) if f.round else None
            thresholds = dict(goal.thresholds) if goal else {}
            for path in results.result_files(self._places[f.folder]):
                try:
                    run = mllog.read(path)
                except BenchbookError:
                    continue  # the score's problems already name it
                rows += [{"result": self._label(f), "file": path.name, "epoch": e.epoch, "metric": e.metric,
                          "value": e.value, "target": thresholds.get(e.metric)} for e in run.evaluations]
        return pd.DataFrame(rows, columns=["result", "file", "epoch", "metric", "value", "target"])

    def curves(self):
        """Accuracy against epoch, a line per run, the target as a dashed line; a panel per result and
        metric. None when no run logged an evaluation."""
        import matplotlib.pyplot as plt

        evals = self.evaluations().dropna(subset=["epoch"])
        if evals.empty:
            return None
        from ..reports.plot_base import ReportFigure

        panels = list(evals.groupby(["result", "metric"], sort=False))
        # constrained: the figure's title keeps its own room above the first panel's (a tight layout drew them over
        # each other); ReportFigure: shown with its description (alt text)
        fig, axes = plt.subplots(len(panels), 1, figsize=(8, 3 * len(panels)), squeeze=False, layout="constrained",
                                 FigureClass=ReportFigure)
        fig.suptitle("Convergence: quality against epoch, a line per run, the round's target dashed")
        for ax, ((result, metric), group) in zip(axes[:, 0], panels, strict=True):
            for name, run in group.groupby("file", sort=False):
                ax.plot(run["epoch"], run["value"], marker=".", label=name)
            if group["target"].notna().any():
                ax.axhline(group["target"].iloc[0], color="black", linestyle="--", linewidth=1, label="target")
            ax.set_title(f"{result}: {metric}", fontsize=10)
            ax.set_xlabel("epoch")
            ax.set_ylabel(metric)
            ax.legend(fontsize=7, ncol=3)
        plt.close(fig)
        return fig

    def checks_section(self):
        """mlperf-logging's own checks as a section, heading and table; None (nothing shown) where they were
        not asked for (check=False): a heading over "not run" says nothing."""
        if not self.check:
            return None
        from ..reports import display
        table = display.table(self.verdicts(), empty="no result folder")
        return display.Html('<h2 id="mlperf-logging-s-own-checks">mlperf-logging\'s own checks</h2><p>Compliance per '
                            "result file, the RCP check and result_summarizer's score, run on a temporary copy.</p>"
                            + table.markup, "mlperf-logging's own checks\n" + table.plain)

    def verdicts(self) -> pd.DataFrame:
        """mlperf-logging's compliance and RCP verdicts and its own score beside ours (check=True)."""
        if not self.check:
            return pd.DataFrame()
        rows = []
        for f in self.folders:
            for name, verdict in checks.run(f.folder, f.round, f.benchmark, f.as_dict()).items():
                rows.append({"result": self._label(f), "check": name, "verdict": verdict})
        return pd.DataFrame(rows)

    def summary(self, title: str | None = None):
        """What the index shows of these results (`summary.Summary`): results, valid ones, the fastest, and
        how many published scores follow from their result files."""
        from ..reports.publish_files import portable
        from ..reports.summary import Best, Summary
        valid = [f for f in self.folders if f.valid]
        best = min((f for f in valid if f.score_minutes is not None), key=lambda f: f.score_minutes, default=None)
        numbers = {"runs": sum(f.runs for f in self.folders),
                   "complete": sum(f.runs - f.runs_failed for f in self.folders),
                   "configurations": len(self.folders),
                   "verdict": f"{len(valid)} of {len(self.folders)} results valid"}
        compared = self.against_published()
        scored = compared.dropna(subset=["minutes"])
        if len(compared):
            from ..reports.headline import deviation_words  # the model reports' form of "by how much"
            ratios = scored["minutes"] / scored["published"]
            worst = float(scored.loc[scored["deviation"].abs().idxmax(), "deviation"]) if len(scored) else math.nan
            numbers |= {"verdict": "consistent" if compared["agrees"].all() else "not consistent",
                        "within": int(compared["agrees"].sum()), "published": int(len(compared)),
                        "tolerance": "0.0001 minutes",
                        "deviation": deviation_words(ratios.min(), ratios.max(), worst * 100, len(scored))
                        if len(scored) else ""}
        return Summary(kind="mlperf", title=title or self.title, mode="mlperf",
                       source=", ".join(portable(p, home=True) for p in _names(self.paths)),
                       best=None if best is None else Best(label=self._label(best), value=best.score_minutes,
                                                           text=f"{best.score_minutes:.4f}", unit="minutes"),
                       reference=self.expected and portable(self.expected, home=True),
                       rule="MLPerf Training's score (mlperf.rules)", **numbers)
