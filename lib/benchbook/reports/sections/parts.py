"""What several sections share: a heading with its anchor, a section shown only with a body, several
outputs as one, and how a report says where and on what it measured."""

from __future__ import annotations

import html
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from ...core.catalog import default as catalog
from .. import configs, display, headline, machine, references
from ..configs import GPUS, NODES, REPEAT, gpu_counts

if TYPE_CHECKING:
    from ..report import Report


def heading(text: str, level: int) -> str:
    anchor = "".join(c if c.isalnum() else "-" for c in text.lower()).strip("-")
    return f'<h{level} id="{html.escape(anchor)}">{html.escape(text)}</h{level}>'


def section(title: str, intro: str | None, body, level: int = 2):
    """A section with its heading and paragraph, or None (nothing shown) when its body is None (a model's
    section whose records the logs do not hold): the one way a section is left out."""
    if body is None:
        return None
    inner = body if isinstance(body, display.Html) else display.Html(body._repr_html_(), repr(body))
    markup = heading(title, level) + (f"<p>{html.escape(intro)}</p>" if intro else "") + inner.markup
    return display.Html(markup, "\n".join(filter(None, [title, intro, inner.plain])))


def together(*parts) -> display.Html:
    """Notes, tables and figures shown as one output, in order."""
    markup = [p.markup if isinstance(p, display.Html) else p._repr_html_() for p in parts]
    plain = [p.plain if isinstance(p, display.Html) else repr(p) for p in parts]
    return display.Html("".join(markup), "\n\n".join(plain))


def words(report: Report) -> headline.Words:
    """How this report says its verdicts: "reproduced" of our own runs, "consistent" of other logs."""
    return report.words


def comparison_of(report: Report) -> pd.DataFrame | None:
    """The comparison with the reference when some published configuration was measured, else None."""
    if report.reference is None:
        return None
    comparison = report.reproduction()
    return comparison if references.verdict_summary(comparison)["measured"] > 0 else None


def measured_on(report: Report) -> str:
    """What the numbers were measured on, as far as the logs (analysis-only) or this machine say."""
    runs = report.analysis.runs
    gpus = gpu_counts(runs)
    if report.log_dir is not None:
        count = (configs.join_counts(gpus) + " GPU" + "s" * (gpus != [1])) if gpus and gpus != [0] \
            else ("the CPU" if gpus == [0] else "an unknown number of GPUs")
        return f"{count} (GPU type not in the logs)" if gpus and gpus != [0] else count
    if gpus in ([], [0]):
        cpu = ((machine.capture(report).get("system") or {}).get("cpu") or {}).get("model")
        return f"this machine's CPU ({cpu})" if cpu else "this machine's CPU"
    return configs.join_counts(gpus) + " GPUs of this machine"


def measured_what(report: Report) -> str:
    runs = report.analysis.runs
    files = runs["source"].nunique() if len(runs) else 0
    if report.log_dir is not None:
        return (f"{len(runs)} run{'s' * (len(runs) != 1)} in {files} log file{'s' * (files != 1)} of "
                f"{report.log_dir.name or report.log_dir}")
    return f"{report.title} ({len(runs)} run{'s' * (len(runs) != 1)})"


def on_cpu(report: Report) -> bool:
    """Whether the report's runs are on the CPU: its study's runtime, else a run of the logs without a GPU."""
    if report.study is not None:
        return report.study.runtime == "cpu"
    gpus = report.analysis.runs[GPUS] if len(report.analysis.runs) else []
    return any(g == 0 for g in gpus if not display.missing(g))


def cpu_as_word(gpus: pd.Series) -> pd.Series:
    """A GPU count for reading: 0 (a CPU run) is "CPU"."""
    return gpus.astype(object).where(pd.to_numeric(gpus, errors="coerce") != 0, "CPU")


def one_process_per_gpu(gpus: pd.Series, processes: pd.Series) -> bool:
    """Every run whose process count is known ran one per GPU: the GPU count says it all (a CPU run's
    processes say more)."""
    processes, gpus = pd.to_numeric(processes, errors="coerce"), pd.to_numeric(gpus, errors="coerce")
    known = processes.notna()
    return bool((processes[known] == gpus[known]).all())


def constant_flags(table: pd.DataFrame) -> list[str]:
    """Flag columns (by their headers: XLA, DALI, synthetic data; nodes, repeat) with one value in every row:
    the set-up line says it once (MXNet's "XLA no" on every row says nothing)."""
    names = [catalog().headers()[key] for key in (*catalog().flags(), NODES, REPEAT)]
    return [c for c in names if c in table and table[c].astype(str).nunique() <= 1 and len(table) > 1]


def run_label(report: Report, records: pd.DataFrame) -> pd.DataFrame:
    """`records` (rows with source and run) with a `run` label: file:run (GPUs or CPU, precision, batch)."""
    runs = report.analysis.runs[["source", "run", *report.analysis.catalog.run_keys()]]
    joined = records.merge(runs, on=["source", "run"], how="left")
    own = configs.own_varying(runs)
    label = [configs.Configuration.of(row, own).run(Path(row["source"]).name, row["run"])
             for row in joined.to_dict("records")]
    return joined.assign(run=label)


def per_run(report: Report, column: str, order: str, **aggregations) -> pd.DataFrame:
    """The iteration records that logged `column` (an epoch's own line, iteration -1, left out), a row per
    run in `order` within each run: `aggregations` as pandas' named aggregation (`first=(column, "first")`);
    empty where no record logged it. The own sections' first/last-per-run tables."""
    its = report.analysis.iterations
    logged = its[its["iteration"] >= 0].dropna(subset=[column])
    if logged.empty:
        return pd.DataFrame(columns=["run", *aggregations])
    return (run_label(report, logged).sort_values(["source", "run", order]).groupby("run", sort=False)
            .agg(**aggregations).reset_index())
