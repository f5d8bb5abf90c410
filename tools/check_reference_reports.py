"""Publish analysis-only reports of the published reference logs and check what they show.

For the MXNet, TF1 and Mask R-CNN logs, every published number of the reference must appear in a
`published` cell of the report's published grid (the first screen's table: a row per GPU count, per
precision x batch published | measured | Δ %) as the publication printed it (its digits, a trailing zero
included: `Row.as_printed`), its Δ cell carrying the verdict "consistent" (the publication's own logs,
re-read: nothing was re-run); the page must open with the verdict sentence and the grid (before section
1) and show no raw None/NaN/<NA> cell. Exit 1 with a line per problem.

    python tools/check_reference_reports.py ../shared/reference-logs [--reports DIR]
"""

from __future__ import annotations

import argparse
import sys
from html.parser import HTMLParser
from pathlib import Path

from benchbook import models
from benchbook.reports import publish, references

# report name: (log folder, notebook model, reference), from each model's `reference_reports`
REPORTS = {r.report: (r.log_folder, spec.name, r.reference) for spec in models.specs() for r in spec.reference_reports}


EXPECTED_VERDICT = "consistent"  # analysis-only reports of a publication's own logs


class Tables(HTMLParser):
    """Every <table> of a page as rows of cell texts (header rows included); `attributes` holds each
    table's class and, per row, each cell's attributes (colspan, title)."""

    def __init__(self):
        super().__init__()
        self.tables: list[list[list[str]]] = []
        self.attributes: list[tuple[str, list[list[dict]]]] = []
        self._row: list[str] | None = None
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.tables.append([])
            self.attributes.append((dict(attrs).get("class") or "", []))
        elif tag == "tr" and self.tables:
            self._row = []
            self.attributes[-1][1].append([])
        elif tag in ("td", "th") and self._row is not None:
            self._cell = []
            self.attributes[-1][1][-1].append(dict(attrs))

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self._row.append("".join(self._cell).strip())
            self._cell = None
        elif tag == "tr" and self._row is not None:
            self.tables[-1].append(self._row)
            self._row = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


NUMBER_WORDS = ("measured", "recomputed")  # our own runs' number; a publication's logs re-read (nothing ran here)


def grid_cells(page: str) -> list[dict[str, str]]:
    """Each published | measured | Δ % cell group of the page's published grids (tables of class
    bb-headline), as {"GPUs", "column", "published", "measured", "delta", "verdict"}: the verdict is the
    Δ cell's title."""
    parser = Tables()
    parser.feed(page)
    out = []
    for table, (cls, attrs) in zip(parser.tables, parser.attributes, strict=True):
        heads = table[1][:3] if len(table) >= 3 else []
        if "bb-headline" not in cls.split() or heads not in [["published", w, "Δ %"] for w in NUMBER_WORDS]:
            continue
        columns = [text for text, a in zip(table[0][1:], attrs[0][1:], strict=True)
                   for _ in range(int(a.get("colspan") or 1) // 3)]
        for row, cells in zip(table[2:], attrs[2:], strict=True):
            if row[0].startswith("speedup"):  # the ratios under the numbers (grid.speedup_rows): no published cell
                continue
            for i, column in enumerate(columns):
                published, measured, delta = row[1 + 3 * i: 4 + 3 * i]
                if published == "–":
                    continue
                out.append({"GPUs": row[0], "column": column, "published": published, "measured": measured,
                            "delta": delta, "verdict": cells[3 + 3 * i].get("title") or ""})
    return out


RAW = {"None", "NaN", "nan", "<NA>", "NaT", "[]", "?"}


def opening_problems(page: str) -> list[str]:
    """What is wrong with the top of a report and its cells: the verdict and the headline table come
    before section 1, and no cell holds a raw missing value."""
    problems = []
    verdict, table = page.find('<p class="bb-verdict"'), page.find('class="bb-table bb-headline"')
    section = page.find(">1. Set-up<")
    if verdict < 0 or table < 0:
        problems.append("no verdict sentence or headline table")
    elif section >= 0 and not verdict < table < section:
        problems.append("the verdict and the headline table are not the first thing on the page")
    parser = Tables()
    parser.feed(page)
    raw = sorted({c for t in parser.tables for r in t for c in r if c in RAW})
    if raw:
        problems.append(f"raw values in table cells: {', '.join(raw)}")
    return problems


def published_problems(rows: list[dict[str, str]], published: list[references.Row],
                       verdict: str = EXPECTED_VERDICT) -> list[str]:
    """What is wrong with the grid read back from a page (`grid_cells`), against the reference's rows: each
    published number must be in a `published` cell as its text, the digits the publication printed (so
    that 3038.730 shown as 3038.73 is caught), with the verdict `verdict`."""
    problems = []
    if len(rows) != len(published):
        problems.append(f"{len(rows)} published cells in the grid, {len(published)} published")
    for row in published:
        printed = row.as_printed("throughput")
        match = [r for r in rows if r.get("published") == printed]
        if not match:
            same = [r["published"] for r in rows if _number(r.get("published")) == row.throughput]
            problems.append(f"published {printed} is not in the report's grid"
                            + (f" (shown as {same[0]})" if same else ""))
        elif match[0].get("verdict") != verdict:
            problems.append(f"published {printed}: verdict {match[0].get('verdict')!r}, "
                            f"measured {match[0].get('measured')}")
    return problems


def _number(text: str | None) -> float | None:
    try:
        return float(str(text).replace(",", ""))
    except ValueError:
        return None


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("logs", type=Path)
    p.add_argument("--reports", type=Path, default=Path("reports-reference"))
    args = p.parse_args(argv)
    targets = [publish.for_logs(args.logs / folder, model, name, ref or None)
               for name, (folder, model, ref) in REPORTS.items()]
    entries = publish.publish(targets, args.reports, progress=False)
    problems = [f"{e['name']}: notebook failed: {e.get('error')}" for e in entries if e.get("status") != "ok"]
    for name, (_folder, _model, ref) in REPORTS.items():
        page = (args.reports / name / "report.html").read_text(encoding="utf-8")
        problems += [f"{name}: {p}" for p in opening_problems(page)]
        rows = grid_cells(page)
        problems += [f"{name}: {p}" for p in published_problems(rows, references.load(ref).rows)]
        print(f"{name}: {len(rows)} configurations, verdicts: "
              f"{sorted({r.get('verdict') for r in rows})} ({args.reports / name / 'report.html'})")
    for line in problems:
        print("MISMATCH " + line)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
