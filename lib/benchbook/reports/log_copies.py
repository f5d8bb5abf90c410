"""The copies of a model report's logs beside its published page: which logs, under which names.

A shared or moved reports folder still opens every log in one click, as text: each log a run was read from is
copied into `logs/` beside the page (by the page's `finish`, `page_contract.copy_files`), under its name in the
folder analyzed, ending in `TEXT_SUFFIX`.
"""

from __future__ import annotations

import os
from pathlib import PurePosixPath

from ..logs import logfiles

LOGS = "logs"  # the folder of a published report that holds the copies of its logs


#: The one suffix of a copied log: a browser opens it as text, whatever the log's own name says (a log named
#: `x.htm`, `x.svg` or `x.xhtml` copied as such would be a live page in the reports' origin, its script run).
TEXT_SUFFIX = ".txt"


def shown_name(name: str) -> str:
    """A log's name as a page shows it: a name that is not UTF-8 (its bytes surrogate-escaped) with its bad
    bytes replaced, never an error."""
    return os.fsencode(name).decode("utf-8", errors="replace")


def of(report) -> list[tuple[PurePosixPath, object, str]]:
    """Each log a run of `report` (a `Report`) was read from, with where its copy goes beside the page: `logs/`
    and its name in the folder analyzed, ending in `TEXT_SUFFIX` (a member of an archive as a plain file, read
    through the archive reader and its limits). (copy's name, the log, its name as shown); a log that cannot be
    read (gone, or refused by the archive's limits) is under the report's problems already and is left out, as a
    name that would leave `logs/` is."""
    runs = report.analysis.runs
    wanted = set(runs["source"]) if len(runs) else set()
    files, _problems = logfiles.log_files(report.logs())
    out = []
    for log in files:
        if str(log) not in wanted:
            continue
        name = PurePosixPath(report.log_name(str(log)))
        if any(part in ("", ".", "..") for part in name.parts) or name.is_absolute():
            continue  # the archive reader refuses such members; never written outside `logs/`
        copy = name.name if name.suffix.lower() == TEXT_SUFFIX else name.name + TEXT_SUFFIX
        out.append((PurePosixPath(LOGS, *name.parent.parts, copy), log, shown_name(str(name))))
    return out
