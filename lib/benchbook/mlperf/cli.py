"""`benchbook mlperf score PATH...`: the MLPerf Training score of every result folder under PATH (and of
every sweep point of a benchbook study folder); `benchbook mlperf run STUDY`: a launch study (`launch`).

A table, or with `--json` one object per result folder per line (`results.Folder`); `--check` adds
the verdicts of mlperf-logging's own compliance and RCP checkers, run on a temporary copy. Nothing
under PATH is written. Exit 0 when the folders could be read (an invalid result is an answer, with
its reason), 2 through `benchbook.cli.main` when a PATH holds no result folder.
"""

from __future__ import annotations

import argparse
import json
import math

from rich.console import Console
from rich.table import Table
from rich.text import Text

HELP = "score MLPerf Training result folders (result_N.txt) by the MLPerf rule, read-only"


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """Add `mlperf` (and its `score`) to the subcommands of `benchbook`."""
    m = sub.add_parser("mlperf", help=HELP, description="MLPerf Training results: read, score and check them.")
    msub = m.add_subparsers(dest="mlperf_command", metavar="{score,run}", required=True)
    s = msub.add_parser("score", help="the score of every result folder under PATH (minutes)",
                        description="Score MLPerf Training result folders: the runs the round requires, the "
                                    "fastest and the slowest dropped, the mean of the rest, times the folder's "
                                    "committed scaling.json. Nothing under PATH is written.")
    s.add_argument("paths", nargs="+", metavar="PATH", help="a results repository clone, a submitter folder, a "
                   "results/ folder or one <system>/<benchmark> folder")
    s.add_argument("--json", action="store_true", help="one JSON object per result folder per line")
    s.add_argument("--round", metavar="R", help="the round (v1.0) where the path does not say it "
                   "(training_results_v1.0)")
    s.add_argument("--check", action="store_true", help="also run mlperf-logging's compliance checker per "
                   "result file and its RCP checker, on a temporary copy (pip install benchbook[mlperf])")
    s.set_defaults(func=cmd_score)
    r = msub.add_parser("run", help="reproduce a published result: submit a launch study (params/mlperf/) as "
                        "its implementation's README does", description="Submit the implementation of a "
                        "launch study (params/mlperf/<study>.yaml) with sbatch, as its README launches it, "
                        "and record the job ids; --dry-run prints the lines first; --score scores the job's "
                        "logs against the published score of the same system.")
    r.add_argument("study", metavar="STUDY", help="a launch study file (params/mlperf/<study>.yaml)")
    how = r.add_mutually_exclusive_group()
    how.add_argument("--dry-run", action="store_true", help="print the exact shell lines; submit nothing")
    how.add_argument("--score", action="store_true", help="score the jobs' logs in the study's logdir and "
                     "compare with the published score")
    r.add_argument("--json", action="store_true", help="with --score: one JSON object per job per line")
    r.set_defaults(func=cmd_run)


def strict_json(row: dict) -> str:
    """One line of strict JSON: a number that is not finite (a forged log's) is null, never `Infinity`."""
    from ..runfolder.records import clean

    return json.dumps(clean(row), allow_nan=False)


def _minutes(value) -> str:
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.4f}"


def _accelerator(row: dict) -> str:
    """'8 x NVIDIA A100 (40 GB)': how many, vendor, model and memory (the raw name is `accelerator` in --json)."""
    from .accelerators import label

    kind = label({"vendor": row["accelerator_vendor"], "model": row["accelerator_model"],
                  "memory": row["accelerator_memory"]})
    return f"{row['accelerators'] if row['accelerators'] is not None else '?'} x {kind}"


def _failed(row: dict) -> str:
    """Each run that did not converge, with why (its reason's first 60 characters; --json has it whole)."""
    return "; ".join(f"{d['file']}: {d['reason'][:60]}" for d in row["run_details"] if not d["converged"]) or "-"


def cmd_score(args, out: Console, err: Console) -> int:
    from . import runs

    found = runs.score(args.paths, args.round)
    rows = [f.as_dict() for f in found]
    if args.check:
        from . import checks

        for row in rows:
            row["checks"] = checks.run(row["folder"], row["round"], row["benchmark"], row)
    if args.json:
        for row in rows:
            print(strict_json(row))
        return 0
    t = Table(title=Text(f"{len(rows)} MLPerf Training result folders (minutes: olympic mean x scaling.json)"))
    for col in ("round", "submitter", "system", "benchmark", "accelerators", "framework", "minutes",
                "accelerator-minutes", "valid", "converged", "scaling", "failed runs"):
        t.add_column(col, overflow="fold")
    for r in rows:
        t.add_row(*(Text(str(c)) for c in (
            r["round"] or "-", r["submitter"] or "-", r["system"], r["benchmark"], _accelerator(r),
            r["framework"] or "-", _minutes(r["score_minutes"]), _minutes(r["accelerator_minutes"]),
            "yes" if r["valid"] else "no", f"{r['runs'] - r['runs_failed']}/{r['runs']}",
            "-" if r["scaling_factor"] is None else f"{r['scaling_factor']:.4f}", _failed(r))))
    out.print(t)
    for r in rows:
        where = f"{r['system']}/{r['benchmark']} ({r['round']})"
        if not r["valid"]:
            out.print(Text.assemble(("invalid", "red"), f": {where}: {r['reason']}"), highlight=False)
        if r.get("official"):
            said = r["official"]
            out.print(Text(f"official: {where}: {said['figure']}: {said['cause']} ({said['tool']})"), highlight=False)
        for name, verdict in (r.get("checks") or {}).items():
            out.print(Text(f"{name}: {where}: {verdict}"), highlight=False)
        for p in r["problems"]:
            err.print(Text.assemble(("benchbook:", "bold red"), f" {p}"), highlight=False)
    return 0


def cmd_run(args, out: Console, err: Console) -> int:
    from . import launch

    study = launch.load(args.study)
    if args.dry_run:
        print("\n".join(study.lines()))
        return 0
    if not args.score:
        jobs = launch.submit(study)
        out.print(Text(f"submitted {study.name}: job {', '.join(jobs)} ({study.repeats} runs); job ids in "
                       f"{study.logdir}/{launch.JOBS_FILE}; once done: benchbook mlperf run {args.study} --score"),
                  highlight=False)
        return 0
    rows = launch.score(study)
    if args.json:
        for row in rows:
            print(strict_json(row))
        return 0
    want = study.reproduces
    t = Table(title=Text(f"{study.name}: reproducing {want.submitter} {want.system} {want.benchmark} "
                         f"({want.round})"))
    for col in ("job logs", "runs", "minutes", "valid", "published", "ours / published"):
        t.add_column(col, overflow="fold")
    for r in rows:
        t.add_row(*(Text(str(c)) for c in (
            r["folder"], f"{r['runs'] - r['runs_failed']}/{r['runs']} converged", _minutes(r["score_minutes"]),
            "yes" if r["valid"] else f"no: {r['reason']}", _minutes(r["published_minutes"]),
            "-" if r["ratio"] is None else f"{r['ratio']:.3f}")))
    out.print(t)
    if rows and rows[0]["published_source"]:
        out.print(Text(f"published: {rows[0]['published_source']}"), highlight=False)
    for r in rows:
        for p in r["problems"]:
            err.print(Text.assemble(("benchbook:", "bold red"), f" {p}"), highlight=False)
    return 0
