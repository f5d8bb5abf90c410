"""2. Analysis, Runs: one row per run found in the logs, in the page's order, the columns a reader needs
(every column: `report.analysis.runs`); the processes column only where a run had other than one per GPU
(CPU runs); throughputs to the digits the grid shows their configuration with."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from ...core.catalog import Catalog
from ...core.catalog import default as catalog
from .. import configs, display, grid
from ..configs import BATCH, GPUS, PRECISION, PROCESSES, REPEAT, XLA
from ..tidy import run_names
from .parts import comparison_of, constant_flags, cpu_as_word, heading, one_process_per_gpu, together

if TYPE_CHECKING:  # (not the Page: data_files reads the table of this module, and the Page data_files)
    from ..report import Report

# processes: a CPU run's MPI ranks (shown only where it is not one per GPU); the configuration's headers
# are its axes' (the catalog's), the throughputs' are in the report's unit. A model's own axes (BERT's sequence
# length and phase) follow the precision where a run gives them (`columns`).
RUN_TABLE = ["run", GPUS, PROCESSES, BATCH, PRECISION, XLA, REPEAT, "status",
             "reported_throughput", "recomputed_throughput", "iterations", "warnings"]


def columns(runs: pd.DataFrame) -> list[str]:
    """RUN_TABLE with the model's own axes that some run gives, after the precision and XLA."""
    at = RUN_TABLE.index(XLA) + 1
    return [*RUN_TABLE[:at], *configs.own_given(runs), *RUN_TABLE[at:]]


def headers(unit: str, known: Catalog | None = None) -> dict[str, str]:
    """The runs table's headers: "GPUs", "per-GPU batch", "reported <unit>" (the report's unit)..., the axes'
    from `known` (a report's: its analysis's catalog; None: the default one)."""
    return {**(known or catalog()).headers(), "run": "run id (folder) or file:run",
            "reported_throughput": f"reported {unit}", "recomputed_throughput": f"recomputed {unit}",
            "iterations": "records used"}


def table(report: Report) -> pd.DataFrame:
    """One row per run, named by its run id (a study folder) or its log's name and run (analysis-only)."""
    runs = report.analysis.runs
    named = headers(report.unit, report.analysis.catalog)
    if runs.empty:
        return pd.DataFrame(columns=[named.get(k, k) for k in RUN_TABLE])
    shown = columns(runs)
    view = runs.assign(run=run_names(report, runs), warnings=runs["warnings"].map(lambda w: "; ".join(w)))
    return view[shown].rename(columns=named)


INTRO = ("One row per run found in the logs: metadata, the value the script reported and the value recomputed by "
         "the rule above.")


def content(page):
    """The page's (`sections.Page`) part heading (2. Analysis), the section's, and the table."""
    return together(display.Html(heading("2. Analysis", 2) + heading("Runs", 3) + f"<p>{INTRO}</p>",
                                 f"2. Analysis\nRuns\n{INTRO}"), _body(page))


def _body(page):
    report = page.report
    rates = [f"reported {report.unit}", f"recomputed {report.unit}"]
    shown = table(report)
    if shown.empty:
        return display.note(f"no run found in {report.source}")
    head = report.analysis.catalog.headers()  # the table's columns are the axes' headers
    keys = shown.rename(columns={head[GPUS]: GPUS, head[BATCH]: BATCH})
    shown = shown.loc[configs.sort_frame(keys, report.reference).index]
    digits = grid.decimals_by_configuration(grid.grids(report.stats, comparison_of(report), report.reference))
    places = [configs.place(g, p)[0] for g, p in zip(shown[head[GPUS]], shown[head[PROCESSES]], strict=True)]
    decimals = [digits.get((g, str(p), configs.as_int(b)), 2)
                for g, p, b in zip(places, shown[head[PRECISION]], shown[head[BATCH]], strict=True)]
    shown = shown.assign(**{r: [display.fixed(v, d) for v, d in zip(shown[r], decimals, strict=True)]
                            for r in rates})
    gpus, processes = head[GPUS], head[PROCESSES]
    if {processes, gpus} <= set(shown) and one_process_per_gpu(shown[gpus], shown[processes]):
        shown = shown.drop(columns=[processes])
    shown = shown.drop(columns=constant_flags(shown)).assign(**{gpus: cpu_as_word(shown[gpus])})
    return display.table(shown, empty=f"no run found in {report.source}", numeric=rates,
                         formats={"records used": display.text})
