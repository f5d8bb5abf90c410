"""Quality by step (BERT's MLM accuracy on held-out text): per run, the model's quality metric at each
evaluation against the training step it followed (the iteration of the run's last record at or before the
evaluation's line), first and last in a table and every one in a figure: whether the run learned.
Left out where no run evaluates."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from ....logs.frames import one_metric
from ... import display
from ...plot_base import PALETTE, new_figure, quality_of
from ..parts import run_label, section, together

if TYPE_CHECKING:
    from ...report import Report
    from .. import Page


def content(page: Page, heading: str, intro: str):
    return section(heading, intro, shown(page.report), level=3)


def by_step(report: Report) -> tuple[pd.DataFrame, str, str]:
    """Each evaluation of the model's metric with its step and its run's label; the metric's key and name."""
    metric = quality_of(report.analysis.runs)
    evals = one_metric(report.analysis.evaluations, metric.key)
    columns = ["source", "run", "line", "step", metric.key]
    if evals.empty:
        return pd.DataFrame(columns=columns), metric.key, f"{metric.name} ({metric.unit})"
    its = report.analysis.iterations
    steps = its.loc[its["iteration"] >= 0, ["source", "run", "line", "iteration"]].sort_values("line")
    evals = evals.sort_values("line")
    joined = pd.merge_asof(evals[["source", "run", "line", metric.key]], steps, on="line", by=["source", "run"])
    joined["step"] = joined["iteration"].fillna(0).astype(int)  # none before it: the untrained model, step 0
    return run_label(report, joined[columns]), metric.key, f"{metric.name} ({metric.unit})"


def quality_by_step_table(frame: pd.DataFrame, key: str) -> pd.DataFrame:
    """Per run: how many evaluations, the first and the last (step and value)."""
    per_run = (frame.sort_values(["source", "line"]).groupby("run", sort=False)
               .agg(n=(key, "size"), first_step=("step", "first"), first=(key, "first"), last_step=("step", "last"),
                    last=(key, "last")).reset_index())
    per_run.columns = ["run", "evaluations", "first step", "first", "last step", "last"]
    return per_run


def figure(frame: pd.DataFrame, key: str, name: str):
    fig = new_figure(9, 4)
    ax = fig.add_subplot()
    for i, (label, group) in enumerate(frame.sort_values("line").groupby("run", sort=False)):
        ax.plot(group["step"], group[key], marker="o", color=PALETTE[i % len(PALETTE)], label=label)
    ax.set_xlabel("training step")
    ax.set_ylabel(name)
    ax.legend(fontsize=8)
    fig.suptitle(f"{name} by training step")
    return fig


def shown(report: Report) -> display.Html | None:
    """The table of `quality_by_step_table` and the figure; None where no run evaluated the metric (no section)."""
    frame, key, name = by_step(report)
    if frame.empty:
        return None
    table = display.table(quality_by_step_table(frame, key), empty="no evaluation",
                          formats={"first": 2, "last": 2, "first step": 0, "last step": 0})
    return together(table, figure(frame, key, name))
