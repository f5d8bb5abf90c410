"""`benchbook env`: capture this environment; `benchbook env diff A B`: what differs between two.

`env` prints a table of the main fields, or with `--json` the whole record (the same record every
run embeds). `env diff` takes captures, run records, run folders or study folders (see
`benchbook.environment.diff`) and lists the differences most significant first; it exits 0 whether
or not they differ, so that scripts can read its output; an input it cannot read is an error
(exit 2 through `benchbook.cli.main`) that names the file.
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text

from . import environment
from .environment import Difference, Loaded, describe
from .environment.capture import capture
from .environment.summary import summary_rows
from .errors import BenchbookError, shown

DIFF_LIMIT = 40  # rows `env diff` shows without --all: the rest are Python packages in practice


def _text(value: str, style: str = "") -> Text:
    """A value from a capture or a path as terminal text: never rich markup, and its terminal escapes and
    bidi controls shown (`errors.shown`), never sent: a capture's host name can be anything."""
    return Text(shown(value), style=style)


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """Add `env` (and its `diff`) to the subcommands of `benchbook`."""
    e = sub.add_parser("env", help="capture the environment: GPUs, driver, CUDA, framework, container, code",
                       description="Capture this machine's environment (absent parts are recorded as absent).")
    e.add_argument("--json", action="store_true", help="print the whole record as JSON")
    e.add_argument("--python", metavar="PY", help="interpreter of the framework environment (default: benchbook's)")
    e.add_argument("--code", metavar="DIR", help="the model code's git checkout (repository, commit, local patch)")
    e.add_argument("--image", metavar="NAME", help="the container image the run uses")
    e.add_argument("--no-import", action="store_true",
                   help="list framework packages without importing them (faster; no build information)")
    e.set_defaults(func=cmd_env)
    esub = e.add_subparsers(dest="env_command", metavar="{diff}")
    d = esub.add_parser("diff", help="what differs between two environments, most significant first",
                        description="Compare two captures, run records (run.json or run folder) or study folders.")
    d.add_argument("a", metavar="A", help="capture JSON, run.json, run folder or study folder")
    d.add_argument("b", metavar="B", help="the same kinds as A")
    d.add_argument("--json", dest="diff_json", action="store_true", help="the differences as one JSON object")
    d.add_argument("--all", action="store_true", help=f"list every difference (default: the {DIFF_LIMIT} first)")
    d.set_defaults(func=cmd_env_diff)


# ---------------------------------------------------------------- env


def cmd_env(args, out: Console, err: Console) -> int:
    python = args.python
    if python and shutil.which(python) is None:
        raise BenchbookError(f"--python {python}: no such interpreter (give a path or a name on PATH)")
    if args.code and not Path(args.code).is_dir():
        raise BenchbookError(f"--code {args.code}: not a folder (give the model code's checkout)")
    record = capture(shutil.which(python) if python else None, args.code, image=args.image,
                     import_frameworks=not args.no_import)
    if args.json:
        print(json.dumps(record, indent=2))
        return 0
    t = Table(title=_text(f"environment of {record.get('hostname')}"), show_header=False)
    t.add_column("part", style="bold")
    t.add_column("value", overflow="fold")
    for part, value in summary_rows(record):
        t.add_row(part, value)  # rich markup, escaped by summary_rows
    out.print(t)
    return 0


# ---------------------------------------------------------------- env diff


def _label(loaded: Loaded) -> str:
    name = loaded.path.name or str(loaded.path)
    return f"{name} ({len(loaded.entries)} runs)" if loaded.kind == "study" else name


def cmd_env_diff(args, out: Console, err: Console) -> int:
    a, b = environment.load(args.a), environment.load(args.b)
    differences = environment.diff(a, b)
    drifts = {side: loaded.drift() for side, loaded in (("a", a), ("b", b)) if len(loaded.entries) > 1}
    for problem in a.problems + b.problems:
        err.print(Text.assemble(("warning", "yellow"), _text(f": {problem}")), highlight=False)
    if args.diff_json:
        print(json.dumps({"a": str(a.path), "b": str(b.path), "differences": [d.to_json() for d in differences],
                          "drift": {side: [d.to_json() for d in ds] for side, ds in drifts.items()},
                          "problems": a.problems + b.problems}, indent=2))
        return 0
    if not differences:
        out.print(Text.assemble(("no differences", "green"), _text(f" between {_label(a)} and {_label(b)}")),
                  highlight=False)
    else:
        listed = differences if args.all else differences[:DIFF_LIMIT]
        t = Table(title=f"{len(differences)} differences, most significant first")
        t.add_column("field", overflow="fold")
        t.add_column("what", style="dim")
        t.add_column(_text(f"A: {_label(a)}"), overflow="fold")
        t.add_column(_text(f"B: {_label(b)}"), overflow="fold")
        for d in listed:
            t.add_row(_text(d.key), d.category, _text(describe(d.a)), _text(describe(d.b)))
        out.print(t)
        if len(listed) < len(differences):
            rest = differences[len(listed):]
            kinds = ", ".join(dict.fromkeys(d.category for d in rest))
            out.print(_text(f"... and {len(rest)} more ({kinds}); --all lists them"), highlight=False)
    for side, ds in drifts.items():
        loaded = a if side == "a" else b
        if ds:
            out.print(_drift_table(side.upper(), loaded, ds))
    return 0


def _drift_table(side: str, loaded: Loaded, drift: list[Difference]) -> Table:
    """Within one study or multi-host run: the fields its members do not share, and who differs."""
    labels = [e.label for e in loaded.entries]
    t = Table(title=f"drift within {side}: {len(loaded.entries)} environments that should be alike")
    t.add_column("field", overflow="fold")
    t.add_column(_text(labels[0]), overflow="fold")
    t.add_column("instead", overflow="fold")
    t.add_column("in", overflow="fold")
    for d in drift:
        t.add_row(_text(d.key), _text(describe(d.a)), _text(describe(d.b)), _text(", ".join(labels[i]
                                                                                              for i in d.where)))
    return t
