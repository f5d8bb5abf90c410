"""Explain published numbers from their logs: each cell's run, the rule search (`rule_search`) on it, and
which rule the cells of one table (an edition of a publisher's table) follow, in data a command or a report
page shows. The runs come from `analysis.analyze_file`, as `benchbook analyze` reads them, so that each found
rule's value is the one `benchbook analyze` prints with its options.
"""

from __future__ import annotations

import collections
import math
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..errors import BenchbookError
from . import parsers
from .rule_search import Candidate, FoundRule, Search, half_unit, search

CHANCE_FIT = 0.5  # values of the space expected by chance within the printed digits that make a found rule a fit


@dataclass
class LoggedRun:
    """One run of a log, ready to search: its row of `benchbook analyze` (axes, metadata) and its records."""

    source: str
    index: int
    fmt: Any  # parsers.LogFormat
    row: Any  # the analysis row (a namedtuple of frames.row_columns)
    run: Any  # rules.Run

    def axis(self, key: str):
        return getattr(self.row, key, None)


def logged_runs(paths: Iterable[str | os.PathLike], log_format: str | None = None
                ) -> tuple[list[LoggedRun], list[Any]]:
    """Every run of the logs (files, folders, archives) with its records, and the files that could not be read
    (`logfiles.Problem`s, as `benchbook analyze` reports them)."""
    from ..core.catalog import default as catalog
    from .analysis import analyze_file
    from .logfiles import Problem, log_files
    from .rules import Run

    files, problems = log_files(paths)
    out = []
    for path in files:
        try:
            rows, cols, *_ = analyze_file(path, None, log_format, catalog())
        except (BenchbookError, OSError, UnicodeError, ValueError) as exc:
            problems.append(Problem(str(path), getattr(exc, "reason", str(exc))))
            continue
        run_of = cols["run"]
        for row in rows:
            mine = run_of == row.run
            out.append(LoggedRun(str(path), int(row.run), parsers.get(row.format), row,
                                 Run({name: column[mine] for name, column in cols.items()}, row.meta)))
    return out, problems


def measure_scale(logged: LoggedRun, measure: str) -> float:
    """What turns the run's samples a second into the published measure (tokens/s: the sequence length);
    an error naming the measure where the format's runs do not measure it as a rate."""
    found = {m.key: m for m in logged.fmt.measures}
    if measure not in found:
        raise BenchbookError(f"--measure {measure!r}: the {logged.fmt.name} runs of {logged.source} measure "
                             f"{', '.join(found)}")
    volume = found[measure].volume
    if volume == "samples":
        return 1.0
    if volume in ("tokens", "tokens_per_gpu"):
        seq_len, gpus = logged.axis("seq_len"), logged.axis("gpus")
        if not seq_len or (volume == "tokens_per_gpu" and not gpus):
            raise BenchbookError(f"--measure {measure}: {logged.source} run {logged.index} names no sequence length"
                                 f"{'' if volume == 'tokens' else ' or GPU count'} to count its tokens by")
        return float(seq_len) / (float(gpus) if volume == "tokens_per_gpu" else 1.0)
    raise BenchbookError(f"--measure {measure!r} is a field the log states ({volume}), not a rate a rule computes: "
                         "explain takes a rate (throughput, tokens/s)")


@dataclass
class Cell:
    """One published number and what explains it: the search on its run, in the measure's unit (`scale`)."""

    logged: LoggedRun
    printed: str
    measure: str
    scale: float
    found: Search
    label: str = ""  # the cell in words (a reference row's table and configuration)
    edition_rule: FoundRule | None = None  # the rule most cells of its table follow (`editions`)
    edition_digits: str = "either"  # how its table prints its numbers by that rule (`printing`)
    extra: dict = field(default_factory=dict)

    @property
    def published(self) -> float:
        return float(self.printed)

    def verdict(self) -> str:
        """named (a named rule gives it), reported (the log's own figure does), found (only a rule of the
        space), none (no rule within the printed digits)."""
        if any(c.reproduces for c in self.found.named):
            return "named"
        if self.found.reported is not None and self.found.reported.reproduces:
            return "reported"
        return "found" if self.found.found else "none"

    def best(self) -> Candidate | None:
        """The simplest rule that gives it, or None."""
        return next((c for c in self.found.candidates() if c.reproduces), None)

    def as_json(self) -> dict[str, Any]:
        def scaled(c: Candidate) -> dict:
            out = c.as_json()
            out["value"] = None if c.value is None else c.value * self.scale
            return out

        edition = self.edition_rule
        return {"source": self.logged.source, "run": self.logged.index, "published": self.published,
                "printed": self.printed, "measure": self.measure, "cell": self.label, "verdict": self.verdict(),
                "candidates": [scaled(c) for c in self.found.candidates()],
                "reproducing_stretches": self.found.found_count, "expected_by_chance": self.found.chance,
                "tolerance": self.found.tolerance * self.scale,
                "searched": self.found.space,
                "table_rule": None if edition is None else {"cli": edition.cli(), "options": edition.options()},
                "follows_table_rule": None if edition is None else self.follows(edition),
                "table_digits": self.edition_digits, "digits_unlike_table": self.digits_unlike_table(),
                "likely_fit": self.likely_fit(), **self.extra}

    def digits_unlike_table(self) -> bool:
        """Whether the simplest rule that gives the cell does so only as its table does not print: cut to
        the digits in a table that rounds (or rounded below them in one that cuts)."""
        best = self.best()
        if best is None or best.relative_distance is None:
            return False
        if self.edition_digits == "rounded":
            return best.digits == "truncated"
        return self.edition_digits == "truncated" and best.relative_distance < 0

    def likely_fit(self) -> bool:
        """Whether the rule that gives the cell is only found (no named rule, not the log's own figure) in a
        space that holds about one such value or more by chance, or gives it as its table does not print."""
        return self.verdict() == "found" and (self.found.chance >= CHANCE_FIT or self.digits_unlike_table())

    def follows(self, rule: FoundRule) -> bool:
        return any(c.reproduces and c.rule == rule for c in self.found.candidates())


def explain(logged: LoggedRun, printed: str, measure: str = "throughput", label: str = "") -> Cell:
    """The search for one published number (as printed) on one run."""
    try:
        tolerance, published = half_unit(printed), float(printed)
    except ValueError:
        raise BenchbookError(f"published value {printed!r}: expected a number as a table prints it (digits, a "
                             "point and digits)") from None
    if not (math.isfinite(published) and published > 0):
        raise BenchbookError(f"published value {printed!r}: expected a number > 0")
    scale = measure_scale(logged, measure)
    samples = logged.axis("global_batch_size")
    samples = float(samples) if isinstance(samples, (int, float)) and samples == samples else math.nan
    reported = logged.axis("reported_throughput")
    reported = float(reported) if isinstance(reported, (int, float)) and reported == reported else None
    found = search(logged.run, logged.fmt, samples, published / scale, printed, tolerance=tolerance / scale,
                   reported=reported)
    return Cell(logged, printed, measure, scale, found, label)


def printing(candidates: list[Candidate]) -> str:
    """How a table prints its numbers, from the values its rule gives for its cells: "rounded" where one lies
    below its printed number (a cut never does), "truncated" where one lies half a unit or more above it (a
    rounding never does), "mixed" where both, "either" where neither tells."""
    below = any(c.relative_distance is not None and c.relative_distance < 0 for c in candidates)
    above = any(c.digits == "truncated" for c in candidates)
    return {(True, True): "mixed", (True, False): "rounded", (False, True): "truncated"}.get((below, above), "either")


def editions(cells: list[Cell], key=lambda cell: cell.extra.get("table")
             ) -> dict[Any, tuple[FoundRule | None, int, str]]:
    """For each table of the cells (`key`), the rule most of its cells follow (named rules first, then the
    simplest), how many follow it and how the table prints its digits by it (`printing`); None where no
    cell is reproduced. Sets each cell's `edition_rule` and `edition_digits`."""
    groups: dict[Any, list[Cell]] = collections.defaultdict(list)
    for cell in cells:
        groups[key(cell)].append(cell)
    out = {}
    for table, members in groups.items():
        counts: collections.Counter = collections.Counter()
        for cell in members:
            counts.update({c.rule for c in cell.found.candidates() if c.reproduces})
        best = min(counts, key=lambda r: (-counts[r], not r.named, r.size, r.cli()), default=None)
        given = [c for cell in members for c in cell.found.candidates() if c.reproduces and c.rule == best]
        how = printing(given)
        out[table] = (best, counts[best] if best is not None else 0, how)
        for cell in members:
            cell.edition_rule, cell.edition_digits = best, how
    return out
