"""Scaling: speedup and efficiency per configuration against a measured 1-GPU run (1 process on the CPU),
in the page's order; the medians are the grid's. Left out where no configuration has a speedup."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from .. import configs, display
from ..configs import BATCH, GPUS, NODES, PRECISION, PROCESSES, XLA
from .parts import constant_flags, cpu_as_word, on_cpu, one_process_per_gpu, section

if TYPE_CHECKING:
    from ..report import Report
    from . import Page


def content(page: Page):
    base, per = ("the 1-process median", "process") if on_cpu(page.report) else ("the 1-GPU median", "GPU")
    return section("Scaling", f"Speedup against {base} of the same batch and precision, and efficiency: speedup "
                   f"per {per}.", table(page.report), level=3)


def table(report: Report):
    own = configs.own_varying(report.stats)  # a model's own axes (a phase) where they tell rows apart
    cols = [GPUS, NODES, PROCESSES, PRECISION, BATCH, XLA, *own, "runs", "median", "speedup", "efficiency"]
    shown = report.stats[cols].sort_values([PRECISION, BATCH, XLA, GPUS, PROCESSES])
    shown = shown.reset_index(drop=True)
    if shown.empty or shown["speedup"].map(display.missing).all():
        return None
    shown = configs.sort_frame(shown, report.reference)
    if pd.Series(shown[NODES]).astype(str).isin(["?", "<NA>", "nan", "None"]).all():
        shown = shown.drop(columns=[NODES])
    if one_process_per_gpu(shown[GPUS], shown[PROCESSES]):
        shown = shown.drop(columns=[PROCESSES])
    shown = shown.drop(columns=["median"]).assign(
        efficiency=pd.to_numeric(shown["efficiency"], errors="coerce") * 100, **{GPUS: cpu_as_word(shown[GPUS])})
    shown = shown.rename(columns={**report.analysis.catalog.headers(), "efficiency": "efficiency %"})
    shown = shown.drop(columns=constant_flags(shown))
    return display.table(shown, empty="no run gave a throughput", formats={"speedup": 2, "efficiency %": 1})
