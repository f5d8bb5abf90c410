"""`reports/index.html`: the published sets reproduced from their logs, then the reports of runs.

Written by `benchbook publish` (publish.py) from each report's entry.json, whose `summary` is what the
notebook's page wrote at its end (`summary.Summary`, the same fields for every kind of report: runs, the
best configuration and its value in the report's unit, the verdict and how far from the published numbers).
"""

from __future__ import annotations

import datetime as dt
import html
from pathlib import Path
from urllib.parse import quote

from .. import __version__
from . import data_files
from .publish_files import shown, write_text

__all__ = ["write_index"]


def _fmt(value) -> str:
    """Counts as integers, rates with two decimals, anything else (a dash) as it is."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    return f"{value:,}" if isinstance(value, int) else f"{value:,.2f}"


def _median(best: dict) -> str:
    """The best configuration's value (a model report's median) as its page shows it, with its unit: "42.49
    samples/s"."""
    number = best.get("text") or _fmt(best.get("value", "-"))
    unit = best.get("unit")
    return f"{number} {unit}" if unit and number != "-" else number


def _when(stamp: str) -> str:
    """`20261124T100301Z` as `2026-11-24 10:03:01` (UTC, as the column says)."""
    try:
        return dt.datetime.strptime(stamp, "%Y%m%dT%H%M%SZ").strftime("%Y-%m-%d %H:%M:%S")
    except ValueError:
        return stamp


def _e(text: str) -> str:  # a file name in an error may hold control characters or bytes that are not UTF-8
    return html.escape(shown(text))


def _wrapping(text: str) -> str:
    """`text` escaped, with a line break allowed after each `/`, `_` and `–`: a repository or container
    (mlcommons/training_results_v0.7, nvcr.io/nvidia/mxnet:19.07-py3) or a range of ratios wraps at its
    parts, never mid-word."""
    return _e(text).replace("/", "/<wbr>").replace("_", "_<wbr>").replace("–", "–<wbr>")


def _href(entry: dict, file: str) -> str:
    """A link into the report's folder, escaped: its name a path of one part however it is spelled (a folder
    named `javascript:...` is a relative path, `javascript%3A...`), `file` a path inside that folder (its
    `executed/...` notebook; an entry's `executed` of `../x`, `/x` or `http://...` links the folder itself:
    quoted, a `:` cannot make a scheme after the folder's name)."""
    parts = file.split("/")
    inside = all(parts) and "\\" not in file and not {"..", "."} & set(parts)  # (an empty part: a leading /, //)
    return _e(quote(entry["name"], safe="") + "/" + quote(file if inside else "", safe="/"))


def _links(entry: dict) -> str:
    return (f'<a href="{_href(entry, "report.html")}">report</a> · <a href="{_href(entry, "code.html")}">code</a> · '
            f'<a href="{_href(entry, str(entry.get("executed") or ""))}">notebook</a>')


def _data(entry: dict) -> str:
    """The links to the report's tables as data (data_files), beside its page: "data: runs.csv · runs.json..."."""
    names = [n for n in entry.get("data") or [] if n in data_files.NAMES]
    return f'<div class="data">data: {data_files.links(names, entry["name"] + "/")}</div>' if names else ""


def _error_row(entry: dict, columns: int) -> str:
    return f'</tr><tr class="error"><td colspan="{columns}">{_e(entry["error"])}</td>' if entry.get("error") else ""


def _published_row(entry: dict) -> str:
    """A published set: who published it, on what, and how many of its numbers follow from its logs."""
    s, status = entry.get("summary") or {}, entry.get("status", "?")
    about = (entry.get("target") or {}).get("about") or {}
    within = (f'{_fmt(s["within"])} of {_fmt(s["published"])} within {s.get("tolerance", "")}'
              if isinstance(s.get("within"), int) and isinstance(s.get("published"), int) else "-")
    return (f'<tr class="{_e(status)}"><td class="set"><a href="{_href(entry, "report.html")}">'
            f'{_e(str(about.get("title") or s.get("title") or entry["name"]))}</a>'
            f'<div class="views">{_links(entry)}</div>{_data(entry)}</td>'
            f'<td data-label="publisher">{_wrapping(str(about.get("publisher", "-")))}</td>'
            f'<td data-label="hardware">{_e(str(about.get("hardware", "-")))}</td>'
            f'<td data-label="framework and container">{_wrapping(str(about.get("software", "-")))}</td>'
            f'<td class="status" data-label="status">{_e(status)}</td>'
            f'<td class="verdict" data-label="verdict">{_e(str(s.get("verdict", "-")))}</td>'
            f'<td class="within" data-label="configurations">{_e(within)}</td>'
            f'<td class="size" data-label="by how much">{_wrapping(str(s.get("deviation") or "-"))}</td>'
            + _error_row(entry, 8) + "</tr>")


BEST_NOT_APART = {"overlap": "not told from the next: their repeats overlap",
                  "single": "not told from the next: single runs, no spread of repeats"}


def _best_label(best: dict) -> str:
    """The highest median's configuration, and whether it is told from the next (headline.FASTEST_RULE)."""
    label = str(best.get("label", "-"))
    why = BEST_NOT_APART.get(str(best.get("how"))) if best.get("apart") is False else None
    return f"{label} ({why})" if why else label


def _run_row(entry: dict) -> str:
    """A report of runs: its status, headline numbers and verdict."""
    s = entry.get("summary") or {}
    best = s.get("best") or {}
    status = entry.get("status", "?")
    return (f'<tr class="{_e(status)}"><td><a href="{_href(entry, "report.html")}">{_e(entry["name"])}</a></td>'
            f'<td data-label="title">{_e(str(s.get("title", "")))}</td>'
            f'<td class="status" data-label="status">{_e(status)}</td>'
            f'<td data-label="mode">{_e(str(s.get("mode", "-")))}</td>'
            f'<td data-label="runs complete">{_e(_fmt(s.get("complete", "-")))} / {_e(_fmt(s.get("runs", "-")))}</td>'
            f'<td data-label="best configuration">{_e(_best_label(best))}</td>'
            f'<td class="num" data-label="median">{_e(_median(best))}</td>'
            f'<td class="verdict" data-label="verdict">{_e(str(s.get("verdict", "-")))}</td>'
            f'<td data-label="published (UTC)">{_e(_when(entry.get("published_at", "")))}</td>'
            f'<td data-label="views">{_links(entry)}{_data(entry)}</td>'
            + _error_row(entry, 10) + "</tr>")


def write_index(reports: Path, entries: list[dict]) -> Path:
    """`reports/index.html` in two parts: the published sets reproduced from their own logs (a report
    whose target names its publisher), then the reports of runs, each a row with its verdict."""
    ordered = sorted(entries, key=lambda x: x["name"])
    published = [x for x in ordered if ((x.get("target") or {}).get("about") or {}).get("publisher")]
    runs = [x for x in ordered if x not in published]
    published_part = "" if not published else f"""<h2>Published results reproduced from their logs</h2>
<p>The logs each publication released with its numbers, shipped in <code>examples/published/</code> and read in
place; each number recomputed by the rule of the script that printed it. Nothing was run:
"consistent" says the published numbers follow from these logs.</p>
<div class="scroll"><table id="published"><thead><tr><th>set</th><th>publisher</th><th>hardware</th>
<th>framework and container</th><th>status</th><th>verdict</th><th>configurations</th><th>by how much</th></tr></thead>
<tbody>
{chr(10).join(_published_row(x) for x in published)}
</tbody></table></div>
"""
    runs_part = "" if not runs else f"""<h2>Runs on this machine</h2>
<p>best = the configuration with the highest median throughput over repeats, in the report's unit; it is told
from the next only when its slowest repeat is faster than every repeat of the next (else the row says so) ·
verdict = measured against the published reference.</p>
<div class="scroll"><table id="reports"><thead><tr><th>report</th><th>title</th><th>status</th><th>mode</th>
<th>runs complete</th><th>best configuration</th><th>median</th><th>verdict</th><th>published (UTC)</th>
<th>views</th></tr></thead>
<tbody>
{chr(10).join(_run_row(x) for x in runs)}
</tbody></table></div>
"""
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>benchbook reports</title><link rel="icon" href="data:,">
<style>
body {{ font-family: system-ui, sans-serif; margin: 1.5rem; color: #222; }}
table {{ border-collapse: collapse; width: 100%; margin-bottom: 2rem; font-size: .92em; }}
th, td {{ border-bottom: 1px solid #ddd; padding: .4rem .45rem; text-align: left; vertical-align: top; }}
th {{ background: #f4f4f4; }} td.num {{ text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }}
tr.failed td.status {{ color: #b00020; font-weight: bold; }} tr.ok td.status {{ color: #1b5e20; }}
tr.error td {{ color: #b00020; font-family: monospace; white-space: pre-wrap; }}
.scroll {{ overflow-x: auto; margin-bottom: 2rem; }} .scroll table {{ margin-bottom: 0; }}
#published td {{ overflow-wrap: break-word; }} td.set {{ min-width: 15rem; }} td.size {{ min-width: 9rem; }}
#published td.verdict, #published td.status {{ overflow-wrap: normal; white-space: nowrap; }}
.views {{ font-size: .85em; margin-top: .2rem; white-space: nowrap; }}
.data {{ font-size: .8em; margin-top: .2rem; color: #555; }}
@media (max-width: 1100px) {{  /* narrower than the tables' columns need: a block a row */
  body {{ margin: .8rem; }}
  .scroll table, .scroll thead, .scroll tbody, .scroll tr, .scroll td {{ display: block; width: auto; }}
  .scroll thead {{ display: none; }}
  .scroll tr {{ display: flex; flex-direction: column; border-bottom: 2px solid #bbb; padding: .3rem 0; }}
  .scroll td {{ order: 3; }} .scroll td:first-child {{ order: 0; }} .scroll td.verdict {{ order: 1; }}
  .scroll td.within, .scroll td.size {{ order: 2; }} .scroll td.num {{ text-align: left; }}
  .scroll td {{ border: none; padding: .1rem .2rem; min-width: 0 !important; }}
  .scroll td[data-label]::before {{ content: attr(data-label) ": "; font-weight: 600; color: #555; }}
}}
</style></head><body>
<h1>benchbook reports</h1>
<p>{len(entries)} reports · benchbook {_e(__version__)}</p>
{published_part}{runs_part}</body></html>
"""
    path = reports / "index.html"
    write_text(path, page)  # whole or not at all, never through a link planted as index.html
    return path
