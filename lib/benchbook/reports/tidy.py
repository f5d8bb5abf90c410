"""The report's data for users: tidy frames with the run's name and its configuration on every row, so that a
user's own plot is one line (`sns.lineplot(report.iterations, x="iteration", y="throughput",
hue="configuration")`), and the data files beside report.html are the same frames.

- `runs(report)`: one row per run (the analysis's runs frame, `logs.frames.run_columns`), named;
- `iterations(report)`: one row per logged step (`ITERATION_COLUMNS` without the log's path), with its run's
  name and configuration;
- `evaluations(report)`: one row per evaluation and quality metric (long: `metric`, `value`, `unit`), with its
  run's name and configuration (the analysis keeps a column per metric; a user reads this one);
- `measures(report)`: one row per run and measure (`MEASURE_COLUMNS`), with its run's name and configuration.

A run's name is the runs table's (`run_names`); its configuration the plots' label ("8 GPUs · amp
· bs256", a model's own axes where they vary: `plot_base.config_labels`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

Report = Any  # a reports.report.Report, which reads these frames from here (named, not imported: no circle)

NAMED = {"run": "the run's name: its run id (a study folder) or log file:run index (logs analyzed)",
         "configuration": "the run's configuration in words, as the plots label it (GPUs · precision · batch, and "
                          "what varies)"}
ITERATION_SHOWN = ["run", "configuration", "line", "rank", "epoch", "iteration", "elapsed", "throughput", "loss",
                   "lr", "steps", "warmup", "measured"]


def run_names(report: Report, runs: pd.DataFrame) -> pd.Series:
    """Each run's name: its log's name and run index (`file.log:0`), its run id being its log's folder."""
    names = runs["source"].map(report.log_name) if report.log_dir is not None else runs["source"].map(
        lambda s: Path(s).parent.name if Path(s).parent != report.source else Path(s).name)  # the run id
    return names + ":" + runs["run"].astype(str)


def _names(report: Report) -> pd.DataFrame:
    """(source, run) -> the run's name and configuration, one row per run."""
    from .plot_base import config_labels

    runs = report.analysis.runs
    labels, _ = config_labels(runs) if len(runs) else (pd.Series(dtype=object), [])
    return pd.DataFrame({"source": runs["source"], "_run": runs["run"], "run": run_names(report, runs),
                         "configuration": labels})


def _named(report: Report, frame: pd.DataFrame, shown: list[str]) -> pd.DataFrame:
    if frame.empty:  # (an empty frame's columns have no type to merge on)
        return pd.DataFrame(columns=shown)
    named = frame.rename(columns={"run": "_run"}).merge(_names(report), on=["source", "_run"], how="left")
    return named[shown].reset_index(drop=True)


def runs(report: Report) -> pd.DataFrame:
    """One row per run: every column of the analysis's runs frame, `run` its name, `configuration` in words."""
    frame = report.analysis.runs
    return _named(report, frame, ["run", "configuration", *(c for c in frame.columns if c not in ("run",))])


def iterations(report: Report) -> pd.DataFrame:
    """One row per logged step, with its run's name and configuration (`ITERATION_SHOWN`), and the fields an LLM
    log states per record where its logs have them (`frames.LOGGED_COLUMNS`: step time, TFLOP/s/GPU...)."""
    from ..logs.frames import LOGGED_COLUMNS

    frame = report.analysis.iterations
    return _named(report, frame, [*ITERATION_SHOWN, *(c for c in LOGGED_COLUMNS if c in frame)])


EVALUATION_SHOWN = ["run", "configuration", "line", "epoch", "elapsed", "metric", "name", "value", "unit"]
EVALUATION_COLUMNS = {"line": "line of the evaluation in its log", "epoch": "epoch evaluated",
                      "elapsed": "seconds since the run's first timestamp", "metric": "the quality metric's key",
                      "name": "the metric in words (top-1 accuracy, box AP...)", "value": "its value, in `unit`",
                      "unit": "the metric's unit (a percent logged as a fraction is given in %)"}


def evaluations(report: Report) -> pd.DataFrame:
    """One row per evaluation and quality metric (the analysis's long frame), with the metric in words and its
    run's name and configuration; an evaluation that logged no quality is left out."""
    frame, known = report.analysis.evaluations, {m.key: m.name for m in report.analysis.catalog.metrics}
    long = frame.dropna(subset=["metric", "value"])
    long = long.assign(name=long["metric"].map(lambda key: known.get(key, key)))
    return _named(report, long, EVALUATION_SHOWN)


def measures(report: Report) -> pd.DataFrame:
    """One row per run and measure (throughput, tokens/s...), each with its unit and rule."""
    from ..logs.frames import MEASURE_COLUMNS

    frame = report.analysis.measures
    if frame is None:
        frame = pd.DataFrame(columns=list(MEASURE_COLUMNS))
    return _named(report, frame, ["run", "configuration", "measure", "value", "unit", "rule"])
