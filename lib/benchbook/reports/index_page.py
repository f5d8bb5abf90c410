"""`reports/index.html`: a row per published report with its status, headline numbers and verdict.

Written by `benchbook publish` (publish.py) from each report's entry.json, whose `summary` is what the
notebook's `save_summary` wrote (Report.headline: runs, best configuration and its median in the
report's unit, verdict).
"""

from __future__ import annotations

import datetime as dt
import html
from pathlib import Path

from .. import __version__
from .publish_files import shown, write_text

__all__ = ["write_index"]


def _fmt(value) -> str:
    """Counts as integers, rates with two decimals, anything else (a dash) as it is."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    return f"{value:,}" if isinstance(value, int) else f"{value:,.2f}"


def _median(best: dict) -> str:
    """The best configuration's median with its report's unit: "42.49 samples/s" (a summary written
    before the unit was recorded shows the number alone)."""
    number = best.get("median_text") or _fmt(best.get("median", "-"))
    unit = best.get("unit")
    return f"{number} {unit}" if unit and number != "-" else number


def _when(stamp: str) -> str:
    """`20261124T100301Z` as `2026-11-24 10:03:01` (UTC, as the column says)."""
    try:
        return dt.datetime.strptime(stamp, "%Y%m%dT%H%M%SZ").strftime("%Y-%m-%d %H:%M:%S")
    except ValueError:
        return stamp


def write_index(reports: Path, entries: list[dict]) -> Path:
    """`reports/index.html`: a row per report with its status, headline numbers and verdict."""
    def e(text: str) -> str:  # a file name in an error may hold control characters or bytes that are not UTF-8
        return html.escape(shown(text))

    rows = []
    for entry in sorted(entries, key=lambda x: x["name"]):
        s = entry.get("summary") or {}
        best = s.get("best") or {}
        status = entry.get("status", "?")
        verdict = s.get("verdict", "-")
        name = entry["name"]
        links = (f'<a href="{e(name)}/report.html">report</a> · <a href="{e(name)}/code.html">code</a> · '
                 f'<a href="{e(name)}/{e(entry.get("executed") or "")}">notebook</a>')
        rows.append(
            f'<tr class="{e(status)}"><td><a href="{e(name)}/report.html">{e(name)}</a></td>'
            f'<td>{e(str(s.get("title", "")))}</td><td class="status">{e(status)}</td>'
            f'<td>{e(str(s.get("mode", "-")))}</td>'
            f'<td>{e(_fmt(s.get("complete", "-")))} / {e(_fmt(s.get("runs", "-")))}</td>'
            f'<td>{e(str(best.get("label", "-")))}</td><td class="num">{e(_median(best))}</td>'
            f'<td class="verdict">{e(str(verdict))}</td><td>{e(_when(entry.get("published_at", "")))}</td>'
            f'<td>{links}</td>'
            + (f'</tr><tr class="error"><td colspan="10">{e(entry["error"])}</td>' if entry.get("error") else "")
            + "</tr>")
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>benchbook reports</title><link rel="icon" href="data:,">
<style>
body {{ font-family: system-ui, sans-serif; margin: 2rem; color: #222; }}
table {{ border-collapse: collapse; width: 100%; }}
th, td {{ border-bottom: 1px solid #ddd; padding: .4rem .6rem; text-align: left; vertical-align: top; }}
th {{ background: #f4f4f4; }} td.num {{ text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }}
tr.failed td.status {{ color: #b00020; font-weight: bold; }} tr.ok td.status {{ color: #1b5e20; }}
tr.error td {{ color: #b00020; font-family: monospace; white-space: pre-wrap; }}
</style></head><body>
<h1>benchbook reports</h1>
<p>{len(entries)} reports · benchbook {e(__version__)} · best = the configuration with the highest median
throughput over repeats, in the report's unit · verdict = measured against the published reference.</p>
<table id="reports"><thead><tr><th>report</th><th>title</th><th>status</th><th>mode</th><th>runs complete</th>
<th>best configuration</th><th>median</th><th>verdict</th><th>published (UTC)</th><th>views</th></tr></thead>
<tbody>
{chr(10).join(rows)}
</tbody></table></body></html>
"""
    path = reports / "index.html"
    write_text(path, page)  # whole or not at all, never through a link planted as index.html
    return path
