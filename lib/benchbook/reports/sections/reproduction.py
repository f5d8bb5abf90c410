"""3. Reproduction: per published row, what the grid does not show: how the configuration in the logs differs
from the published one (the numbers, verdicts and speedups are in the grid, once; a note that holds for every
row is said once above the table). Left out without a reference."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...core.catalog import default as catalog
from .. import configs, display, headline, references
from ..configs import BATCH, DALI, GPUS, NODES, PRECISION, SYNTHETIC, XLA
from .parts import section, together, words

if TYPE_CHECKING:
    from ..report import Report
    from . import Page

# Reproduction table headers for reading; GPUs, published, measured and verdict are the headers by which
# tools/check_reference_reports.py finds the table.
HEADERS = {**catalog().headers(), "delta_pct": "Δ %", "published_speedup": "published speedup",
           "measured_speedup": "measured speedup", "differences": "notes"}


def content(page: Page):
    return section("3. Reproduction", "Per published configuration, what the table at the top does not show: how "
                   "the configuration in the logs differs from the published one (the numbers, their verdicts and "
                   "speedups are in that table); then what differs from the published set-up.", table(page.report))


def shared_notes(notes: list[list[str]]) -> list[str]:
    """The notes every row has (in the first row's order), said once rather than on each row; none for one row."""
    if len(notes) < 2:
        return []
    return [n for n in notes[0] if all(n in row for row in notes[1:])]


def table(report: Report):
    if report.reference is None:
        return None
    comparison = report.reproduction()
    summary = references.verdict_summary(comparison)
    if summary["measured"] == 0:
        return display.note(f"none of the configurations in the logs is among the {summary['rows']} published by "
                            f"{report.reference.name}: no ratio to show")
    comparison = configs.sort_frame(comparison, report.reference)
    said = words(report)
    notes = [list(d) if isinstance(d, list | tuple) else [] for d in comparison.get("differences", [])]
    common = shared_notes(notes)
    comparison = comparison.assign(differences=[[n for n in row if n not in common] for row in notes])
    # (a model's own axes and the global batch where its rows state them: an LLM table's GBS, sequence, TP, PP...)
    cols = [c for c in ("table", GPUS, NODES, BATCH, PRECISION, XLA, DALI, SYNTHETIC, *references.STATED, "runs",
                        "differences") if c in comparison and not comparison[c].map(display.missing).all()]
    if "table" in cols:
        comparison = comparison.assign(table=comparison["table"].map(lambda t: report.reference.tables.get(t, t)))
    cols = [c for c in cols if c not in (NODES, *catalog().flags()) or comparison[c].astype(str).nunique() > 1]
    tol = comparison.attrs.get("tolerance", report.reference.tolerance)
    parts = [display.note(f"Every configuration: {'; '.join(common)}.")] if common else []
    if "differences" in cols:
        parts.append(display.table(comparison[cols].rename(columns=HEADERS), empty="nothing published",
                                   formats={"runs": display.text}))
    else:
        parts.append(display.note("no configuration differs from its published one otherwise"))
    number = said("measured")
    return together(*parts, display.note(
        f"Published: {report.reference.statistic}; {number}: the median over repeats. The verdict is "
        f"{said('reproduced')} when {number} / published is within 1 ± {headline.percent(tol)} (the reference's "
        "tolerance), otherwise slower or faster."))
