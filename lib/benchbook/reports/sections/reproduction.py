"""3. Reproduction: per published row, what the grid does not show: its verdict in words, the published and
measured speedups, and how the measured configuration differs (the numbers themselves are in the grid,
once). Left out without a reference."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...core import config
from .. import configs, display, headline, references
from ..configs import BATCH, DALI, GPUS, NODES, PRECISION, SYNTHETIC, XLA
from .parts import section, together, words

if TYPE_CHECKING:
    from ..report import Report
    from . import Page

# Reproduction table headers for reading; GPUs, published, measured and verdict are the headers by which
# tools/check_reference_reports.py finds the table.
HEADERS = {**config.headers(), "delta_pct": "Δ %", "published_speedup": "published speedup",
           "measured_speedup": "measured speedup", "differences": "notes"}


def content(page: Page):
    return section("3. Reproduction", "Per published configuration, what the table at the top does not show: the "
                   "verdict in words, speedups and how the measured configuration differs; then what differs from "
                   "the published set-up.", table(page.report))


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
    comparison = comparison.assign(verdict=comparison["verdict"].map(said))
    if "published_speedup_printed" in comparison:
        comparison = comparison.assign(published_speedup=comparison["published_speedup_printed"])
    cols = [c for c in ("table", GPUS, NODES, BATCH, PRECISION, XLA, DALI, SYNTHETIC, "runs",
                        "verdict", "published_speedup", "measured_speedup", "differences")
            if c in comparison and not comparison[c].map(display.missing).all()]
    if "table" in cols:
        comparison = comparison.assign(table=comparison["table"].map(lambda t: report.reference.tables.get(t, t)))
    cols = [c for c in cols if c not in (NODES, *config.flags()) or comparison[c].astype(str).nunique() > 1]
    tol = comparison.attrs.get("tolerance", report.reference.tolerance)
    shown = display.table(comparison[cols].rename(columns=HEADERS), empty="nothing published", formats={
        "published speedup": display.as_printed, "measured speedup": 2, "runs": display.text})
    return together(shown, display.note(
        f"Published: {report.reference.statistic}; measured: the median over repeats. The verdict is "
        f"{said('reproduced')} when measured / published is within 1 ± {headline.percent(tol)} (the reference's "
        "tolerance), otherwise slower or faster."))
