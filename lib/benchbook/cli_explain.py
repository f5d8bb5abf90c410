"""`benchbook explain`: which rules reproduce a published number from its log, how far each named rule
lands, and which rule the cells of a published table follow.

`explain LOG --published VALUE [--measure NAME]` explains one number for each run of LOG;
`explain DIR --reference NAME` every published row of a reference file (params/references/NAME.yaml)
against the runs of DIR of its configuration (GPUs, per-GPU batch, precision, and the flags and axes the
row states). Each cell is one table row (or, with `--json`, one JSON object a line): the named rule that
gives it, else the simplest rule of the search's space that does, else "no rule within the printed
precision" with the nearest rules and their distances. The search and its order: `logs/rule_search.py`.
"""

from __future__ import annotations

import argparse
import json
import math

from rich.console import Console
from rich.table import Table
from rich.text import Text

from .core.numbers import finite
from .errors import BenchbookError, shown

NEAREST_SHOWN = 3  # rules a row of the table names where none reproduces the cell


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """Add `explain` to the subcommands of `benchbook`."""
    e = sub.add_parser("explain", help="which rules reproduce a published number from its log, and how far each "
                                       "named rule lands", description=__doc__.splitlines()[0])
    e.add_argument("paths", nargs="+", help="log files, folders or archives (searched recursively)")
    what = e.add_mutually_exclusive_group(required=True)
    what.add_argument("--published", metavar="VALUE", help="the published number, with the digits it was printed "
                      "with (16142.9: reproduced within 0.05)")
    what.add_argument("--reference", metavar="NAME", action="append", help="every row of a reference file "
                      "(params/references/NAME.yaml) against the runs of its configuration; again for another "
                      "edition of the table (which rule each follows, and where it changed)")
    e.add_argument("--measure", default="throughput", metavar="NAME",
                   help="the measure the number is (throughput, tokens_per_s, ...; default throughput)")
    e.add_argument("--run", type=int, metavar="N", help="with --published: only the run N of each file")
    e.add_argument("--format", dest="log_format", metavar="NAME", help="force a log format instead of detecting it")
    e.add_argument("--json", action="store_true", help="one JSON object per published cell per line")
    e.set_defaults(func=cmd_explain)


def _cells_of_value(runs: list, printed: str, measure: str, only: int | None) -> list:
    from .logs.explain import explain

    chosen = [r for r in runs if only is None or r.index == only]
    if not chosen:
        raise BenchbookError(f"--run {only}: no such run in the logs (runs: "
                             f"{', '.join(sorted({str(r.index) for r in runs})) or 'none'})")
    return [explain(r, printed, measure) for r in chosen]


def _matches(row, logged) -> bool:
    """Whether a run is of the reference row's configuration: the same GPUs, per-GPU batch and precision, and
    no other value of a flag or an axis the row states (a flag the log does not give matches)."""
    from .models.reference_schema import FLAGS, STATED

    if any(logged.axis(k) != getattr(row, k) for k in ("gpus", "batch_size", "precision")):
        return False
    for key in (*FLAGS, *STATED):
        want, got = getattr(row, key, None), logged.axis(key)
        if want is not None and got is not None and not (isinstance(got, float) and math.isnan(got)) and got != want:
            return False
    return True


def _row_label(row) -> str:
    table = f"{row.table}: " if row.table else ""
    return f"{table}{row.gpus} GPUs, batch {row.batch_size}, {row.precision}"


def _cells_of_reference(runs: list, names: list[str], measure: str, err: Console) -> list:
    from .logs.explain import explain
    from .models.reference_schema import ReferenceError, load

    try:
        refs = [load(name) for name in names]
    except ReferenceError as exc:
        raise BenchbookError(f"--reference: {exc}") from None
    cells = []
    for ref, i, row in ((one, i, row) for one in refs for i, row in enumerate(one.rows)):
        label = _row_label(row)
        matched = [r for r in runs if _matches(row, r)]
        if not matched:
            err.print(Text(shown(f"benchbook: {ref.path}: rows[{i}] ({label}, published {row.as_printed('throughput')}"
                                 f"): no run of the logs has its configuration")), highlight=False)
        for logged in matched:
            cell = explain(logged, row.as_printed("throughput"), measure, label)
            cell.extra.update(reference=ref.name, row=i, table=row.table)
            cells.append(cell)
    return cells


def cmd_explain(args, out: Console, err: Console) -> int:
    from .logs.explain import editions, logged_runs

    runs, problems = logged_runs(args.paths, args.log_format)
    for p in problems:
        err.print(Text.assemble(("benchbook:", "bold red"), " ", shown(f"{p.source}: {p.reason}")), highlight=False)
    if args.published is not None:
        cells = _cells_of_value(runs, args.published, args.measure, args.run) if runs else []
    else:
        cells = _cells_of_reference(runs, args.reference, args.measure, err)
    tables = editions(cells, key=lambda cell: (cell.extra.get("reference"), cell.extra.get("table")))
    if args.json:
        for cell in cells:
            print(json.dumps(finite(cell.as_json()), allow_nan=False))
    else:
        _print_cells(out, cells)
        if args.reference:
            _print_tables(out, tables, cells)
    return 0 if cells else 1




def _number(value: float, printed: str) -> str:
    """A value with three digits more than the published number was printed with: 16142.922 for 16142.9."""
    decimals = len(printed.partition(".")[2]) + 3
    return f"{value:.{decimals}f}"


def _distance(c, cell) -> str:
    if c.value is None:
        return f"{c.rule.cli()}: no value"
    return f"{c.rule.cli()}: {_number(c.value * cell.scale, cell.printed)} ({100 * c.relative_distance:+.4f}%)"


def _explanation(cell) -> tuple[str, str, str, list[str]]:
    """A cell's explanation: (the rule that gives it, its value, its distance, what else to know)."""
    best = cell.best()
    if best is not None:
        kind = {"named": "named rule", "reported": "the log's own figure"}.get(cell.verdict(),
                                                                              "found rule, no named rule gives it")
        said = f"{best.rule.cli()} [{kind}, {best.digits}]: {best.words.split(' [')[0]}"  # (source: benchbook formats)
        value, distance = _number(best.value * cell.scale, cell.printed), f"{100 * best.relative_distance:+.5f}%"
    else:
        said, value, distance = "no rule within the printed precision", "-", "-"
    also = [f"{cell.found.found_count} stretch(es) and method(s) of the searched space give it "
            f"(about {cell.found.chance:.2g} expected by chance in a space this size)"]
    own = [cell.found.reported] if cell.found.reported is not None else []
    also += [f"named {_distance(c, cell)}" for c in cell.found.named + own if c is not best]
    also += [f"nearest {_distance(c, cell)}" for c in cell.found.nearest[:NEAREST_SHOWN]]
    if cell.edition_rule is not None and cell.extra.get("reference"):
        also.append(f"the table's rule {cell.edition_rule.cli()} (its numbers {cell.edition_digits}): "
                    f"{'gives it' if cell.follows(cell.edition_rule) else 'does not give it'}")
    if cell.digits_unlike_table():
        also.append(f"{best.rule.cli()} gives it {best.digits}, unlike the table's other numbers: take it for a fit")
    elif cell.likely_fit():
        also.append(f"{best.rule.cli()} is one of the values a space this size holds by chance: take it for a fit")
    return said, value, distance, also


def _where(cell) -> str:
    return f"{cell.logged.source} run {cell.logged.index}" + (f" [{cell.label}]" if cell.label else "")


def _print_cells(out: Console, cells: list) -> None:
    """A table on a terminal; elsewhere (a file, a pipe) plain lines, a cell and its explanation each."""
    if not out.is_terminal:
        for cell in cells:
            said, value, distance, also = _explanation(cell)
            print(shown(f"{_where(cell)}: published {cell.printed} (+/- {cell.found.tolerance * cell.scale:.2g})"))
            print(shown(f"  explained by {said}" + (f"; {value} ({distance})" if value != "-" else "")))
            for line in also:
                print(shown(f"  {line}"))
        return
    t = Table(title=f"{len(cells)} published cells and the rules that give them", show_lines=True)
    for col in ("cell", "published", "explained by", "value", "distance", "also"):
        t.add_column(col, overflow="fold")
    for cell in cells:
        said, value, distance, also = _explanation(cell)
        t.add_row(*(Text(shown(str(v))) for v in (_where(cell), cell.printed, said, value, distance,
                                                 "\n".join(also))))
    out.print(t)


def _print_tables(out: Console, tables: dict, cells: list) -> None:
    """Each table's rule (the one most of its cells follow) and the cells that follow another."""
    for (reference, table), (rule, count, digits) in tables.items():
        members = [c for c in cells if (c.extra.get("reference"), c.extra.get("table")) == (reference, table)]
        name = f"{reference}" + (f" table {table}" if table else "")
        if rule is None:
            print(shown(f"{name}: none of its {len(members)} cells is reproduced by any rule of the space"))
            continue
        print(shown(f"{name}: {count} of {len(members)} cells follow {rule.cli()} (its numbers {digits} to "
                    "their printed digits)"))
        for cell in members:
            if not cell.follows(rule):
                best = cell.best()
                other = best.rule.cli() if best is not None else "no rule within the printed precision"
                unlike = f" ({best.digits}, unlike the table)" if cell.digits_unlike_table() else ""
                unlike += " (likely a fit)" if cell.likely_fit() else ""
                print(shown(f"  {cell.label} ({cell.printed}): {other}{unlike}"))
    rules = {reference: [rule.cli() if rule else "none" for (r, _), (rule, _, _) in tables.items() if r == reference]
             for reference, _ in tables}
    for (before, was), (after, now) in zip(list(rules.items()), list(rules.items())[1:], strict=False):
        if was != now:
            print(shown(f"the rule changed from {before} ({', '.join(dict.fromkeys(was))}) to {after} "
                        f"({', '.join(dict.fromkeys(now))})"))
