"""What the published number is and how benchbook recomputes it: the model's `rule` paragraph, DLPerf's
only where its rule or reference is used, the CPU workload's only where the runs are on the CPU; then
what the sections below hold, for this mode."""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

from .. import display, headline
from .parts import on_cpu

if TYPE_CHECKING:
    from . import Page


def content(page: Page, rule: str, dlperf: str | None = None, cpu: str | None = None) -> display.Html:
    report = page.report
    parts = [rule]
    uses_dlperf = report.rule.name == "dlperf" or (report.reference is not None and
                                                  str(report.reference.name).startswith("dlperf"))
    if dlperf and uses_dlperf:
        parts.append(dlperf)
    if cpu and on_cpu(report):
        parts.append(cpu)
    sections = ["1. the set-up " + ("the logs describe" if report.log_dir is not None else "that produced the numbers"),
                "2. analysis"]
    sections += ["3. reproduction"] if report.reference is not None else []
    sections.append(f"{len(sections) + 1}. " + ("failures and problems" if report.log_dir is not None
                                               else "launch, failures and problems"))
    parts.append(f"Details follow: {', '.join(sections)}. Every number comes from a log line or a run record; the "
                 f"per-run table names the file and run of each. Recomputed by {headline.rule_name(report.rule.name)}.")
    return display.Html("".join(f"<p>{html.escape(p)}</p>" for p in parts), "\n\n".join(parts))
