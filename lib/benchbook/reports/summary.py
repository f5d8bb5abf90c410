"""A page's summary: what the index shows of it, the same frozen fields for every kind of report.

Written by `page_contract.finish` (through `write_summary`), read back by `benchbook publish` into the report's
entry, shown by the index (`index_page`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from .. import __version__
from ..errors import BenchbookError

SCHEMA = 1  # the summary's schema version, in every summary: a change of its fields is a new one
KINDS = ("model", "mlperf", "comparison")


@dataclass(frozen=True)
class Best:
    """The best of a page's configurations (the fastest median, the shortest time to train): its label, its value
    and that value as the page shows it, the unit, the runs behind it and whether it is told from the next
    (`how`: headline.FASTEST_RULE's apart, alone, overlap or single)."""

    label: str
    value: float
    text: str
    unit: str
    runs: int | None = None
    how: str | None = None
    apart: bool | None = None


@dataclass(frozen=True)
class Summary:
    """What the index shows of one page, the same fields for every kind. Headline numbers: runs, complete,
    configurations, problems and, against published numbers, within of published within tolerance, by how much
    (deviation). Provenance: what was read (source), the reference, the rule, benchbook's version."""

    kind: str
    title: str
    verdict: str
    mode: str
    runs: int = 0
    complete: int = 0
    configurations: int | None = None
    problems: int | None = None
    within: int | None = None
    published: int | None = None
    tolerance: str | None = None
    deviation: str | None = None
    best: Best | None = None
    source: str = ""
    reference: str | None = None
    rule: str | None = None
    benchbook: str = __version__
    schema: int = SCHEMA

    def __post_init__(self):
        if self.kind not in KINDS:
            raise BenchbookError(f"summary kind {self.kind!r}: expected one of {', '.join(KINDS)}")

    def as_dict(self) -> dict:
        """The summary as written: every field, keys sorted (a diff of two summaries reads field by field)."""
        return _sorted(dataclasses.asdict(self))


def _sorted(value):
    if isinstance(value, dict):
        return {k: _sorted(value[k]) for k in sorted(value)}
    return [_sorted(v) for v in value] if isinstance(value, list) else value
