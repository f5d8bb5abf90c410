"""The published form of a report, always: a row per GPU count, a column per precision x batch, as the
reference's own table, published and measured side by side with the deviation in percent.

`grids` computes the tables as data, one `Grid` per table of the reference (DLPerf's README has six:
FP32, AMP, AMP + XLA, and three kinds of input), each a tidy frame with a row per cell (place, column,
published text, measured value, the decimals to show it with, deviation, verdict); `render` turns them
into HTML that scrolls sideways when wider than the page (never a long form). Measured configurations
that no published row names get a grid of their own (or, with a one-table reference, the same grid
with a dash for the published number). Without a reference, a grid of the measured medians, runs and
speedup.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass

import pandas as pd

from ..core.catalog import default as catalog
from . import configs, display
from .configs import BATCH, GPUS, PRECISION, PROCESSES

CELL_COLUMNS = {
    "place": "row key: configs.place (GPUs, or 0 and processes on the CPU)",
    "column": "column key: (precision, batch, flags...) in the page's order",
    "published": "the published number as its publication printed it (None: not published)",
    "measured": "the measured median (NaN: not measured)",
    "decimals": "decimals the measured number is shown with: the published number's",
    "delta_pct": "(measured / published - 1) x 100",
    "verdict": "the comparison's verdict for the cell (None without a published number)",
    "runs": "runs behind the median", "speedup": "measured speedup against 1 GPU (NaN: none)",
}


@dataclass
class Grid:
    """One table of the published form: its caption and a row per cell (CELL_COLUMNS)."""

    caption: str
    cells: pd.DataFrame
    with_reference: bool
    unit: str | None = None  # its rows' measure's unit where it is not the page's (an LLM table's tokens/s/GPU)


def _flags_that_vary(rows: list[dict]) -> list[str]:
    """The flags a column label must name: those with two known values among the rows (a flag a
    publication does not state, or a log does not show, matches either)."""
    return [f for f in catalog().labelled() if len({catalog().axis(f).value(r.get(f)) for r in rows} - {None}) > 1]


def _column(row, varying) -> tuple:
    return (str(row[PRECISION]), configs.as_int(row[BATCH]),
            *((f, catalog().axis(f).value(row.get(f))) for f in varying))


def _measured_rows(stats: pd.DataFrame) -> list[dict]:
    return [dict(r) for _, r in stats.iterrows()]


def _cell(place, column, measured=None, published=None, decimals=2, verdict=None, delta=math.nan) -> dict:
    return {"place": place, "column": column, "published": published,
            "measured": float(measured["median"]) if measured is not None else math.nan,
            "decimals": decimals, "delta_pct": delta, "verdict": verdict,
            "runs": int(measured["runs"]) if measured is not None else 0,
            "speedup": float(measured["speedup"]) if measured is not None and not display.missing(
                measured.get("speedup")) else math.nan}


def grids(stats: pd.DataFrame, comparison: pd.DataFrame | None, reference=None) -> list[Grid]:
    """The published form as data: one Grid per table of the reference (in its order), then one of the
    measured configurations it does not publish; one Grid of the measured alone without a reference."""
    measured = _measured_rows(stats)
    if comparison is None or comparison.empty or reference is None:
        varying = _flags_that_vary(measured)
        cells = [_cell(configs.place(m[GPUS], m.get(PROCESSES)), _column(m, varying), m) for m in measured]
        return [Grid("", _ordered(pd.DataFrame(cells, columns=list(CELL_COLUMNS)), reference), False)] if cells else []
    published = comparison.to_dict("records")
    measures = _row_measures(published, reference)
    matches = [_matching(r, measured) if k == "throughput" else None for r, k in zip(published, measures, strict=True)]
    # measured configurations no row names, in the throughput's unit: beside throughput rows only
    rest = [m for i, m in enumerate(measured) if i not in set(matches)] if set(measures) == {"throughput"} else []
    for r, measure in zip(published, measures, strict=True):  # a reference of one table: no label (maybe NaN)
        r["table"] = None if display.missing(r["table"]) else r["table"]
        r["_throughput"] = True if measure == "throughput" else None  # (its measured cell: the stats' alone)
    tables = list(dict.fromkeys(r["table"] for r in published))
    out = []
    for table in tables:
        rows = [(r, m) for r, m in zip(published, matches, strict=True) if r["table"] == table]
        alone = len(tables) == 1  # one published table: the unpublished configurations join it
        varying = _flags_that_vary([r for r, _ in rows] + (rest if alone else []))
        cells = [_cell(configs.place(r[GPUS]), _column(r, varying), _measured_of(r, m, measured),
                       r["published_printed"], display.decimals(r["published_printed"]), r["verdict"],
                       r["delta_pct"]) for r, m in rows]
        cells += _unpublished(rest, varying, cells) if alone else []
        out.append(Grid("" if display.missing(table) else reference.tables.get(table, table),
                        _ordered(pd.DataFrame(cells, columns=list(CELL_COLUMNS)), reference), True,
                        _table_unit([k for r, k in zip(published, measures, strict=True) if r["table"] == table],
                                    reference)))
    if rest and len(tables) > 1:
        cells = _unpublished(rest, _flags_that_vary(rest), [])
        out.append(Grid("measured, not in the published tables",
                        _ordered(pd.DataFrame(cells, columns=list(CELL_COLUMNS)), reference), True))
    return out


def _row_measures(published: list[dict], reference) -> list[str]:
    """Each comparison row's headline measure: its reference row's (`compare` keeps the rows' order)."""
    rows = getattr(reference, "rows", [])
    if len(rows) != len(published):
        return ["throughput"] * len(published)
    return [getattr(r, "measure", "throughput") for r in rows]


def _measured_of(row: dict, match: int | None, measured: list[dict]) -> dict | None:
    """What a published cell shows as measured: its throughput configuration's statistics, or, for a row of
    another measure, the comparison's own numbers of that measure (median, runs, speedup)."""
    if match is not None:
        return measured[match]
    if display.missing(row["measured"]) or not display.missing(row.get("_throughput")):
        return None
    return {"median": row["measured"], "runs": row["runs"], "speedup": row.get("measured_speedup")}


def _table_unit(measures: list[str], reference) -> str | None:
    """The unit of a table whose rows all publish one measure with a unit of its own, where it is not the
    reference's; None otherwise (the page's unit)."""
    from ..models.reference_schema import catalog_measure

    keys = set(measures)
    measure = catalog_measure(next(iter(keys))) if len(keys) == 1 else None
    unit = measure.unit if measure is not None else None
    return unit if unit and unit != getattr(reference, "unit", None) else None


def _unpublished(rest: list[dict], varying: list[str], published_cells: list[dict]) -> list[dict]:
    """Measured cells without a published number, shown to the decimals of their column's published ones."""
    decimals = {c["column"]: c["decimals"] for c in published_cells}
    return [_cell(configs.place(m[GPUS], m.get(PROCESSES)), _column(m, varying), m,
                  decimals=decimals.get(_column(m, varying), 2)) for m in rest]


def _matching(row: dict, measured: list[dict]) -> int | None:
    """The measured configuration a comparison row was compared with (references.compare chose it: the
    same GPUs, batch and precision, and its median)."""
    if display.missing(row["measured"]):
        return None
    for i, m in enumerate(measured):
        if (configs.as_int(m[GPUS]), configs.as_int(m[BATCH]), str(m[PRECISION])) == (
                row[GPUS], row[BATCH], row[PRECISION]) and float(m["median"]) == float(row["measured"]):
            return i
    return None


def _ordered(cells: pd.DataFrame, reference) -> pd.DataFrame:
    columns = configs.order(list(dict.fromkeys(cells["column"])), reference)
    rank = {c: i for i, c in enumerate(columns)}
    return cells.assign(_c=cells["column"].map(rank), _p=cells["place"]).sort_values(["_c", "_p"], kind="stable").drop(
        columns=["_c", "_p"]).reset_index(drop=True)


def decimals_by_configuration(grids_: list[Grid]) -> dict[tuple, int]:
    """(GPUs, precision, batch) -> the decimals the grid shows that configuration's numbers with, so that
    every table of the page writes a configuration's throughputs alike (one number, one way)."""
    out: dict[tuple, int] = {}
    for g in grids_:
        for c in g.cells.to_dict("records"):
            out.setdefault((c["place"][0], str(c["column"][0]), c["column"][1]), int(c["decimals"]))
    return out


# --------------------------------------------------------------------------------------------- rendering


def _column_text(column: tuple) -> str:
    precision, batch, *flags = column
    return configs.column_label(precision, batch, dict(flags))


def render(grid: Grid, unit: str, word=lambda verdict: verdict) -> display.Html:
    """One grid as a table: a row per place, per column published | measured | Δ % (with a reference;
    the Δ cell coloured by its verdict, the verdict its tooltip, `word` the verdict as the page says
    it) or measured | runs (| speedup)."""
    cells = grid.cells
    columns = list(dict.fromkeys(cells["column"]))
    places = sorted(dict.fromkeys(cells["place"]))
    by = {(c["place"], c["column"]): c for c in cells.to_dict("records")}
    speedup = bool(not grid.with_reference and cells["speedup"].notna().any())
    number = word("measured")  # "recomputed" on logs re-read, where nothing ran here (headline.Words)
    sub = ["published", number, "Δ %"] if grid.with_reference else [number, "runs"] + ["speedup"] * speedup
    first = "ran on" if all(p[0] == 0 for p in places) else "GPUs"
    head1 = f'<th rowspan="2">{first}</th>' + "".join(
        f'<th colspan="{len(sub)}">{html.escape(_column_text(c))}</th>' for c in columns)
    head2 = "".join(f"<th>{html.escape(s)}</th>" for _ in columns for s in sub)
    body, plain = [], [" | ".join([first] + [_column_text(c) for c in columns])]
    for p in places:
        row = [(configs.place_label(p), "", "")]
        for c in columns:
            cell = by.get((p, c))
            if cell is None:
                row += [(display.DASH, "num", "")] * len(sub)
                continue
            value = display.fixed(cell["measured"], cell["decimals"])
            if grid.with_reference:
                verdict = None if display.missing(cell["verdict"]) else cell["verdict"]
                cls = "num" + (" bb-reproduced" if verdict == "reproduced" else
                               " bb-off" if verdict in ("slower", "faster") else "")
                row += [(display.as_printed(cell["published"]), "num", ""), (value, "num", ""),
                        (display.signed(cell["delta_pct"], 2), cls, word(verdict) if verdict else "")]
            else:
                row += [(value, "num", ""), (str(cell["runs"]), "num", "")]
                row += [(display.fixed(cell["speedup"], 2), "num", "")] if speedup else []
        body.append(_row_markup(row))
        plain.append(" | ".join(v for v, _, _ in row))
    for row in speedup_rows(by, places, columns) if grid.with_reference else []:
        body.append(_row_markup(row, "bb-speedup"))
        plain.append(" | ".join(v for v, _, _ in row))
    unit = grid.unit or unit
    caption = f"{grid.caption} ({unit})" if grid.caption else unit
    markup = (f'<div class="bb-scroll"><table class="bb-table bb-headline"><caption>{html.escape(caption)}</caption>'
              f"<thead><tr>{head1}</tr><tr>{head2}</tr></thead><tbody>{''.join(body)}</tbody></table></div>")
    return display.Html(markup, f"{caption}\n" + "\n".join(plain))


def _row_markup(row: list[tuple[str, str, str]], cls: str = "") -> str:
    return (f'<tr class="{cls}">' if cls else "<tr>") + "".join(
        f'<td class="{c}"' + (f' title="{html.escape(title)}"' if title else "") + f">{html.escape(v)}</td>"
        for v, c, title in row) + "</tr>"


def _ratio_cells(top: dict | None, bottom: dict | None) -> list[tuple[str, str, str]]:
    """published | recomputed | Δ % of a speedup: the ratio of two cells' published numbers and of their
    medians, to 2 decimals (dashes where either cell lacks one)."""
    if top is None or bottom is None:
        return [(display.DASH, "num", "")] * 3
    published = (float(top["published"]) / float(bottom["published"])
                 if not display.missing(top["published"]) and not display.missing(bottom["published"])
                 and float(bottom["published"]) else math.nan)
    measured = top["measured"] / bottom["measured"] if bottom["measured"] else math.nan
    delta = (measured / published - 1) * 100 if not math.isnan(published) and not math.isnan(measured) else math.nan
    return [(display.fixed(published, 2), "num", ""), (display.fixed(measured, 2), "num", ""),
            (display.signed(delta, 2), "num", "")]


def speedup_rows(by: dict, places: list, columns: list) -> list[list[tuple[str, str, str]]]:
    """The speedups NVIDIA's tables carry beside the throughputs, as rows under them: 1 GPU -> N GPUs per
    column (its weak scaling), and FP32 -> AMP per GPU count for each AMP column with an FP32 column of the
    same batch and flags; each as the ratio of the published numbers beside the ratio of the medians."""
    rows = []
    one = (1, 0)
    for p in places:
        if p[0] > 1 and one in places and any((p, c) in by and (one, c) in by for c in columns):
            cells = [c for col in columns for c in _ratio_cells(by.get((p, col)), by.get((one, col)))]
            rows.append([(f"speedup 1 → {p[0]} GPUs", "", "")] + cells)  # weak scaling
    fp32_of = {c: next((f for f in columns if f[0] == "fp32" and f[1:] == c[1:]), None) for c in columns
               if c[0] in ("amp", "fp16")}
    if not any(fp32_of.values()):
        return rows
    for p in places:
        cells = []
        for col in columns:
            base = fp32_of.get(col)
            cells += _ratio_cells(by.get((p, col)), by.get((p, base))) if base else [("", "", "")] * 3
        if any(v not in ("", display.DASH) for v, _, _ in cells):
            where = configs.place_label(p) + (" GPU" + "s" * (p[0] > 1) if p[0] > 0 else "")
            rows.append([(f"speedup FP32 → mixed, {where}", "", "")] + cells)
    return rows


def render_all(grids_: list[Grid], unit: str, word=lambda verdict: verdict) -> display.Html:
    if not grids_:
        return display.note("no run in the logs gave a throughput: nothing to tabulate")
    parts = [render(g, unit, word) for g in grids_]
    return display.Html("".join(p.markup for p in parts), "\n\n".join(p.plain for p in parts))
