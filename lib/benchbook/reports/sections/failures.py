"""The last numbered section: the run records (launch mode: nothing was launched in analysis-only mode),
runs that did not complete, with the cause, and files that could not be analyzed."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from ...core.catalog import default as catalog
from .. import display, machine
from ..configs import GPUS
from .parts import cpu_as_word, section, together

if TYPE_CHECKING:
    from ..report import Report
    from . import Page

# The run records' fields as a reader reads them (times are shown in UTC).
STATUS_HEADERS = {**catalog().headers(), "run_id": "run id", "started_at": "started", "ended_at": "ended",
                  "duration_s": "duration s", "exit_code": "exit code"}


def content(page: Page):
    report = page.report
    shown = together(*filter(None, [launch_status(report), display.table(machine.failures(report),
                                                                         empty="every run completed"),
                                    display.table(problems(report), empty="every file was analysed")]))
    return section(*heading(report), shown)


def heading(report: Report) -> tuple[str, str]:
    """The heading and paragraph: launch-mode text only where something was launched."""
    n = 4 if report.reference is not None else 3
    if report.log_dir is not None:
        return (f"{n}. Failures and problems", "Runs that did not complete, with the cause, then files that could "
                "not be analyzed.")
    return (f"{n}. Launch, failures and problems", "The study runs in a separate process (benchbook run --resume), "
            "never in this kernel; its run records are shown here. Runs that did not complete follow, with the "
            "cause and the last log lines, then files that could not be analyzed.")


def launch_status(report: Report):
    """Launch mode: the run records, one row per run; nothing in analysis-only mode (nothing was launched)."""
    if report.log_dir is not None:
        return None
    status = report.status()
    if GPUS in status:
        status = status.assign(**{GPUS: cpu_as_word(status[GPUS])})
    headers = {**STATUS_HEADERS, "throughput": f"throughput {report.unit}"}
    return display.table(status.rename(columns=headers),
                         empty=f"no run record in {report.source}: the study has not run yet",
                         formats={"started": display.utc, "ended": display.utc, "duration s": 1,
                                  f"throughput {report.unit}": 2, "exit code": display.text})


def problems(report: Report) -> pd.DataFrame:
    """Files that could not be analyzed, run records that cannot be read and logs that are gone: never
    dropped."""
    from ..publish_files import shown  # a file name as it is, escaped: no control character, no invalid byte
    rows = [{"file": shown(str(p.source)), "problem": p.reason} for p in report.analysis.problems]
    rows += [{"file": run_id, "problem": problem} for run_id, problem in report.record_problems()]
    return pd.DataFrame(rows, columns=["file", "problem"])
