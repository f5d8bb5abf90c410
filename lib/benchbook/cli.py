"""The `benchbook` command line.

`analyze` prints one JSON object per run per line with `--json` (a contract other tools rely on)
or a table; `summarize` prints the published-report layout; `formats` lists the log formats and
their default rules. Problems go to stderr; the exit code is 1 only when nothing could be
analyzed, or with `--strict` when anything could not.
"""

from __future__ import annotations

import argparse
import errno
import fnmatch
import importlib
import json
import math
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table
from rich.text import Text

# What every command needs to parse its arguments; each command imports the rest (pydantic, pandas,
# the analysis, the runner...) itself, so that `benchbook --help` and `formats` start fast.
from . import __version__
from .core.numbers import finite
from .errors import BenchbookError, RuleError, UnknownNameError, shown
from .logs.rules import DEFAULT_TOLERANCE, METHODS  # standard library only: no pydantic, no numpy

if TYPE_CHECKING:
    from collections.abc import Iterator

    import pandas as pd

    from .logs.analysis import Analysis


# Commands whose arguments are declared beside their code, which costs an import (pydantic, the
# study loader): their module is imported only when the command line names them.
LAZY_COMMANDS = {"check": ("studies.checks", "add_check_parser"), "env": ("cli_env", "add_parsers"),
                 "mlperf": ("mlperf.cli", "add_parsers"), "explain": ("cli_explain", "add_parsers")}
LAZY_HELP = {"check": "check what a study needs (docker, image, GPUs, ssh, code, data) and say how to fix what "
                      "is missing",
             "env": "capture the environment: GPUs, driver, CUDA, framework, container, code",
             "mlperf": "score MLPerf Training result folders (result_N.txt) by the MLPerf rule, read-only",
             "explain": "which rules reproduce a published number from its log, and how far each named rule lands"}
LIFT_CAPS_ENV = "BENCHBOOK_ALLOW_LARGE_STUDY"  # study.LIFT_CAPS_ENV (tests/test_cli.py keeps them the same)


def run_lines(runs: pd.DataFrame, measures: pd.DataFrame | None = None) -> Iterator[str]:
    """The runs as the JSON lines of the CLI contract, one object per run: strict JSON, a value
    that is no finite number (a log's `inf`) is null, never `Infinity` or `NaN`. Made 1,000 runs
    at a time: every run's dict and line held at once cost 2 kB a run (bench/bench_reading.py)."""
    from .runfolder import records

    by_run = None if measures is None else records.measures_by_run(measures)
    for at in range(0, len(runs), 1000):
        for run in records.run_dicts(runs.iloc[at : at + 1000], by_run):
            yield json.dumps(finite(run), sort_keys=False, allow_nan=False)




def _rule_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("throughput rule (default: each format's `nvidia` rule; see `benchbook formats`)")
    g.add_argument("--rule", metavar="NAME", help="a format's named rule: nvidia (the arithmetic of NVIDIA's script "
                   "that printed the published number) or dlperf (Oneflow-Inc/DLPerf's extract scripts); "
                   "--skip-records/--window/--method override its parts")
    g.add_argument("--skip-records", "--warmup", dest="skip_records", type=int, metavar="N",
                   help="skip the first N records of each run as warm-up (--warmup is the same option)")
    g.add_argument("--tail", type=int, metavar="N", help="measure only the last N records (not with --skip-records)")
    g.add_argument("--window", type=int, metavar="N", help="use at most N records after the warm-up")
    g.add_argument("--rank", type=int, metavar="N", help="read rank N's records (default: the lowest rank's)")
    g.add_argument("--drop-repeats", action="store_const", const=True, help="of the records of one iteration in "
                   "a row (the loss scaler's overflows), read the last alone")
    g.add_argument("--method", choices=sorted(METHODS), help="how to average the measured records")
    g.add_argument("--tolerance", type=float, default=DEFAULT_TOLERANCE,
                   help="relative gap to the reported value that warns")
    p.add_argument("--format", dest="log_format", metavar="NAME", help="force a log format instead of detecting it")
    p.add_argument("--strict", action="store_true", help="exit non-zero if any file could not be analyzed")


def _analysis(args) -> Analysis:
    from . import analyze  # through the package: the models declare their metrics first
    from .logs import parsers

    try:  # the one validation of a rule (logs/rules.py), the name checked against the formats' rules
        rule = parsers.choose(args.log_format, name=args.rule, skip_records=args.skip_records, window=args.window,
                              method=args.method, tolerance=args.tolerance, tail=args.tail, rank=args.rank,
                              drop_repeats=args.drop_repeats)
    except RuleError as exc:
        option = "rule" if exc.field == "name" else exc.field.replace("_", "-")
        raise BenchbookError(f"invalid throughput rule: --{option}: {exc}") from None
    return analyze(args.paths, rule, args.log_format)


def _report_problems(result: Analysis, err: Console) -> None:
    for p in result.problems:
        _error(err, shown(f"{p.source}: {p.reason}"))


def _error(err: Console, message: str) -> None:
    """`benchbook: <message>` in red, the message printed as it is: a path like `runs/[/x]` is text,
    never rich markup, and a name's terminal escapes are shown, never sent (`errors.shown`)."""
    err.print(Text.assemble(("benchbook:", "bold red"), " ", shown(message)), highlight=False)


def _exit_code(result: Analysis, strict: bool) -> int:
    if result.runs.empty:
        return 1
    return 1 if strict and result.problems else 0


def cmd_analyze(args, out: Console, err: Console) -> int:
    result = _analysis(args)
    if args.json:
        for line in run_lines(result.runs, result.measures):
            print(line)
    else:
        t = Table(title=f"{len(result.runs)} runs", show_lines=False)
        for col in ("source", "run", "format", "gpus", "batch", "precision", "xla", "reported", "recomputed",
                    "records", "status"):
            t.add_column(col, overflow="fold")
        short = _short_paths(result.runs["source"])
        for _, r in result.runs.iterrows():
            cells = (short[r["source"]], r["run"], r["format"], _fmt(r["gpus"]), _fmt(r["batch_size"]),
                     r["precision"], r["xla"], _fmt(r["reported_throughput"]), _fmt(r["recomputed_throughput"]),
                     r["iterations"], r["status"])
            t.add_row(*(Text(shown(str(c))) for c in cells))  # text from logs and paths is never rich markup
        out.print(t)
        for _, r in result.runs.iterrows():
            for w in r["warnings"]:
                out.print(Text.assemble(("warning", "yellow"), shown(f": {r['source']} run {r['run']} "
                                        f"(lines {r['line_start']}-{r['line_end']}): {w}")), highlight=False)
    _report_problems(result, err)
    return _exit_code(result, args.strict)


def _short_paths(sources: pd.Series) -> dict[str, str]:
    """Sources relative to their common folder, so that a table shows what tells them apart."""
    unique = list(dict.fromkeys(sources))
    if len(unique) < 2:
        return {s: os.path.basename(s) for s in unique}
    root = os.path.commonpath([os.path.dirname(s) or "." for s in unique])
    return {s: os.path.relpath(s, root) if root else s for s in unique}


def _fmt(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:.2f}" if isinstance(value, float) else str(value)


def cmd_summarize(args, out: Console, err: Console) -> int:
    from .reports import metrics, tables

    result = _analysis(args)
    runs = result.runs[result.runs["status"] != "failed"]  # a run cut before its summary keeps its number
    stats = metrics.aggregate(runs, value=args.value, complete_only=False)
    if args.json:
        print(stats.to_json(orient="records"))
    else:
        for (framework, model), group in stats.groupby(["framework", "model"], sort=True):
            table = tables.published_layout(group)
            unit = result.catalog.unit_of(model, framework) or "samples/s"  # the model's own (ModelSpec.unit)
            out.print(Text.assemble((shown(f"{model} ({framework})"), "bold"),
                                    f", {args.value.replace('_', ' ')} in {unit} over repeats"))
            print(shown(table.round(2).to_string(na_rep="-")))
            cut = group[group["incomplete"] > 0]
            for _, row in cut.iterrows():
                print(shown(f"  incomplete: {row['incomplete']} of the {row['runs']} runs of {row['gpus']} GPUs, "
                             f"{str(row['precision']).upper()} bs{row['batch_size']} have no end-of-run summary "
                             "(their number comes from their logged records)"))
            print()
    _report_problems(result, err)
    return _exit_code(result, args.strict)


def cmd_formats(args, out: Console, err: Console) -> int:
    from .logs import parsers

    if args.json:  # one object per format, its rules in order (the first is the default)
        print(json.dumps([{"format": f.name, "framework": f.framework, "model": f.model,
                           "rules": [{"name": r.name, "method": r.method, "warmup": r.warmup, "window": r.window,
                                      "source": r.source} for r in f.rules]}
                          for f in sorted(parsers.FORMATS.values(), key=lambda f: f.name)], indent=1))
        return 0
    t = Table(title="log formats and their named rules (--rule NAME; the first is the default)", show_lines=True)
    for col in ("format", "framework", "model", "rule", "method", "warm-up"):
        t.add_column(col, overflow="fold")
    sources = []
    for f in sorted(parsers.FORMATS.values(), key=lambda f: f.name):
        for i, preset in enumerate(f.rules):
            warmup = preset.warmup + (f"; then at most {preset.window} records" if preset.window else "")
            t.add_row(f.name if i == 0 else "", f.framework if i == 0 else "", f.model if i == 0 else "",
                      preset.name, preset.method, warmup)
            sources.append(f"{f.name} {preset.name}: {preset.source}")
    out.print(t)
    print("sources (repository path@commit) whose arithmetic each rule repeats:")
    for line in sources:  # whole lines: a path and commit must not be folded
        print(f"  {line}")
    return 0


def _lift_caps(args) -> None:
    """--allow-large-study: for this command and the notebooks and processes it starts."""
    if getattr(args, "allow_large_study", False):
        os.environ[LIFT_CAPS_ENV] = "1"


def cmd_run(args, out: Console, err: Console) -> int:
    from .core import project
    from .studies import checks, commands, runner, study

    _lift_caps(args)
    spec = study.load(project.locate(args.study))  # from here, else the project's params/ (an installed one's)
    if args.dry_run:
        plan = runner.plan(spec, args.out)
        print(f"# study {spec.name} ({spec.path}): {len(plan)} runs, {spec.model} on {spec.runtime}")
        for step in commands.setup_steps(spec):
            print(f"# set-up: {step}")
        for run_id, run_dir, _cfg, cmd in plan:
            print(f"# {run_id} -> {run_dir}")
            print(cmd.shell())
        return 0
    only = (lambda run_id: any(fnmatch.fnmatch(run_id, g) for g in args.only)) if args.only else None
    if not args.no_check:  # what the study needs, before anything is launched
        selected = [r for r in study.expand(spec) if only is None or only(r.run_id)]
        found = checks.check(spec, runs=selected)
        if checks.failed(found):
            out.print(checks.render(found))
            err.print(f"benchbook: not launching: {len(checks.failed(found))} missing (see the fixes above); "
                      "--no-check launches anyway", highlight=False)
            return 1
    try:
        results = runner.run_study(spec, args.out, resume=args.resume, only=only,
                                   echo=None if args.quiet else True,
                                   say=lambda m: err.print(m, highlight=False, markup=False))
    except runner.StudyInterrupted as exc:
        err.print(f"benchbook: interrupted during run {exc}; its record says interrupted. "
                  f"Continue with: benchbook run {args.study} --resume", highlight=False, markup=False)
        return 130
    _print_runs(out, runner.study_dir(spec, args.out))
    return 0 if all(r.get("status") == "complete" for r in results.values()) else 1


def _print_runs(out: Console, folder) -> None:
    from .runfolder import records

    frame = records.table(folder)
    t = Table(title=Text(shown(f"{folder}: {len(frame)} runs")))
    for col in ("run_id", "status", "cause", "duration_s", f"throughput {_unit_of(records.find(folder))}", "problem"):
        t.add_column(col, overflow="fold")
    for _, r in frame.iterrows():  # a value a row lacks is NaN in the frame when another row has it: "-"
        t.add_row(*(Text(shown(str(v))) for v in (r["run_id"], r["status"], _fmt(r["cause"]), _fmt(r["duration_s"]),
                                            _fmt(r["throughput"]), r["problem"] if isinstance(r["problem"], str)
                                            else "")))
    out.print(t)


def _unit_of(runs: dict[str, dict]) -> str:
    """The throughput unit of a study's runs (its model's, ModelSpec.unit, from the run records' config):
    a number in a terminal table says what it counts; "/s" where the records name no one model."""
    from . import models

    named = {(r.get("config") or {}).get("model") for r in runs.values()}
    if len(named) == 1 and (name := named.pop()) in models.names():
        return models.get(name).unit
    return "/s"


def cmd_status(args, out: Console, err: Console) -> int:
    from .runfolder import records

    troubled = 0
    for folder in args.folders:
        try:
            problem = None if folder.is_dir() else "no such study folder"
            if folder.is_symlink():
                problem = f"a link (to {os.readlink(folder)}), not a study folder: give the folder itself"
        except OSError as exc:  # a folder inside one that cannot be read: said, the other folders go on
            problem = f"cannot be read ({exc.strerror or exc})"
        if problem:
            _error(err, f"{folder}: {problem}")
            troubled += 1
            continue
        if args.json:  # a JSON object per run per line, as `analyze --json`, with its study folder and unit
            unit = _unit_of(records.find(folder))
            for row in records.table(folder).to_dict("records"):
                cells = {k: records.clean(v) for k, v in row.items()}  # NaN and infinities as null, numpy as Python
                print(json.dumps({"study_folder": str(folder), **cells, "unit": unit}, allow_nan=False))
        else:
            _print_runs(out, folder)
        troubled += len(records.problems(folder))
    return 1 if troubled else 0


def cmd_publish(args, out: Console, err: Console) -> int:
    from . import models
    from .reports import publish

    _lift_caps(args)
    if args.model is not None and args.model not in models.names():
        raise UnknownNameError("model", args.model, sorted(models.names()))
    from .studies import published

    given = [published.locate(p) for p in args.studies]  # a path, or a published set's name
    targets = [publish.for_published(p) if publish.is_published_set(p)  # params/published/<set>.yaml
               else publish.for_study(p, args.runs, launch=args.launch) for p in given]
    if args.logs:
        if not args.model:
            raise BenchbookError(f"--logs needs --model ({', '.join(models.names())}): it picks the notebook")
        targets.append(publish.for_logs(args.logs, args.model, args.name, args.reference, args.rule))
    if args.labels and not args.compare:
        raise BenchbookError("--labels names the --compare folders: give --compare DIR DIR... with it")
    if args.compare:
        targets.append(publish.for_comparison(args.compare, args.labels, args.name))
    if not targets:
        targets = publish.default_targets(runs_dir=args.runs)
        if not targets:
            raise BenchbookError(f"nothing to publish: no study folder under {args.runs}; give study files, "
                                 "or --logs DIR --model MODEL")
    slurm = {"partition": args.slurm_partition, "account": args.slurm_account, "time": args.slurm_time}
    entries = publish.publish(targets, args.reports, jobs=args.jobs, force=args.force, progress=not args.quiet,
                              executor=args.executor, slurm=slurm)
    t = Table(title=Text(shown(f"{args.reports}/index.html")))
    for col in ("report", "status", "verdict", "runs", "note"):
        t.add_column(col, overflow="fold")
    for e in entries:
        s = e.get("summary") or {}
        t.add_row(*(Text(shown(str(v))) for v in (e["name"], e.get("status", "?"), s.get("verdict", "-"),
                                            f"{s.get('complete', '-')}/{s.get('runs', '-')}",
                                            UNCHANGED if e.get("skipped")
                                            else (e.get("error") or ""))))
    out.print(t)
    return 0 if all(e.get("status") == "ok" for e in entries) else 1


UNCHANGED = "unchanged, not executed again (--force executes it anyway)"  # a skipped report, in publish's table


def _duration(text: str) -> float:
    """An option's duration (90s, 30m, 2h) in seconds; a usage error when it is not one."""
    from .studies import study

    try:
        return study.seconds(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{text!r}: {exc}") from None


_LIFT_HELP = f"lift the caps on runs per study and processes per run (or set {LIFT_CAPS_ENV}=1)"


def _named_command(argv: list[str]) -> str | None:
    """The subcommand a command line names: its first word that is no option."""
    return next((word for word in argv if not word.startswith("-")), None)


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser of `argv` (default: this process's): every subcommand, those of LAZY_COMMANDS
    declared in full only when `argv` names them (else listed by their help line)."""
    named = _named_command(sys.argv[1:] if argv is None else argv)
    p = argparse.ArgumentParser(prog="benchbook", description=__doc__.splitlines()[0])
    p.add_argument("--version", action="version", version=f"benchbook {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    a = sub.add_parser("analyze", help="parse logs and recompute each run's throughput")
    a.add_argument("paths", nargs="+", help="log files and folders (searched recursively)")
    a.add_argument("--json", action="store_true", help="one JSON object per run per line")
    _rule_args(a)
    a.set_defaults(func=cmd_analyze)
    s = sub.add_parser("summarize", help="aggregate repeats in the layout of the published reports")
    s.add_argument("paths", nargs="+", help="log files and folders (searched recursively)")
    s.add_argument("--json", action="store_true", help="the aggregated rows as a JSON array")
    s.add_argument("--value", default="recomputed_throughput",
                   choices=["recomputed_throughput", "reported_throughput", "elapsed_throughput"])
    _rule_args(s)
    s.set_defaults(func=cmd_summarize)
    f = sub.add_parser("formats", help="list the log formats and their default throughput rules")
    f.add_argument("--json", action="store_true", help="the formats and their rules as a JSON array")
    f.set_defaults(func=cmd_formats)
    for name, (module, add) in LAZY_COMMANDS.items():
        if name == named:
            getattr(importlib.import_module(f"{__package__}.{module}"), add)(sub)
        else:
            sub.add_parser(name, help=LAZY_HELP[name])
    r = sub.add_parser("run", help="run every configuration and repeat of a study (params/*.yaml)")
    r.add_argument("study", help="study file, e.g. params/MODEL/cpu.yaml")
    r.add_argument("--dry-run", action="store_true", help="print the exact commands; launch nothing")
    r.add_argument("--resume", action="store_true", help="finish a study folder: redo only runs not complete")
    r.add_argument("--out", default="runs", type=Path, help="folder of study folders (default: runs)")
    r.add_argument("--only", action="append", metavar="GLOB", help="run only the run ids matching (repeatable)")
    r.add_argument("--quiet", action="store_true", help="do not echo the runs' output (it is still logged)")
    r.add_argument("--no-check", action="store_true", help="launch without the set-up checks (benchbook check)")
    r.add_argument("--allow-large-study", action="store_true", help=_LIFT_HELP)
    r.set_defaults(func=cmd_run)
    pb = sub.add_parser("publish", help="execute the notebooks of studies and publish HTML reports with an index")
    pb.add_argument("studies", nargs="*", help="study files, or published sets, by name (ngc-tf1-resnet50: a wrong "
                    "name lists them) or file (params/published/<set>.yaml): their shipped logs' reproduction "
                    "reports; default: every study with a folder under --runs")
    pb.add_argument("--logs", metavar="DIR", help="analysis-only report of the logs in DIR (needs --model)")
    pb.add_argument("--model", metavar="NAME", help="the model whose notebook reads --logs (a wrong name lists them)")
    pb.add_argument("--reference", help="published reference for --logs (params/references/NAME.yaml)")
    pb.add_argument("--rule", help="named throughput rule for --logs (nvidia, dlperf, perf...; default: nvidia)")
    pb.add_argument("--compare", nargs="+", metavar="DIR", help="a comparison report of these folders")
    pb.add_argument("--labels", nargs="+", help="labels of the --compare folders")
    pb.add_argument("--name", help="report name for --logs or --compare (default: the folder name)")
    pb.add_argument("--runs", type=Path, default=Path("runs"), help="folder of study folders (default: runs)")
    pb.add_argument("--reports", type=Path, default=Path("reports"), help="output folder (default: reports)")
    pb.add_argument("--jobs", type=int, default=2,
                    help="notebooks executed in parallel by the local executor (default: 2)")
    pb.add_argument("--launch", action="store_true", help="let the notebooks launch (resume) their studies")
    pb.add_argument("--force", action="store_true", help="execute even the reports whose inputs did not change")
    pb.add_argument("--quiet", action="store_true", help="no progress bar")
    pb.add_argument("--allow-large-study", action="store_true", help=_LIFT_HELP)
    pb.add_argument("--executor", choices=["local", "slurm"], default="local",
                    help="where the notebooks run: local (a pool of --jobs processes here, default) or slurm (one "
                         "sbatch job per notebook, all submitted at once and followed to their end; the index is "
                         "written here. This Python, the repository, the runs and --reports must be on a file "
                         "system the nodes share; the job scripts, outputs and results are kept in "
                         "REPORTS/NAME/job/)")
    pb.add_argument("--slurm-partition", help="with --executor slurm: partition of the jobs (default: the "
                                              "cluster's default partition)")
    pb.add_argument("--slurm-account", help="with --executor slurm: account the jobs are charged to")
    pb.add_argument("--slurm-time", type=_duration, help="with --executor slurm: time limit of each job, e.g. "
                                                         "30m or 2h (default: 1h)")
    pb.set_defaults(func=cmd_publish)
    st = sub.add_parser("status", help="the runs of study folders: status, cause, duration, throughput")
    st.add_argument("folders", nargs="+", type=Path, help="study folders (runs/<study name>)")
    st.add_argument("--json", action="store_true", help="one JSON object per run per line (problems on stderr)")
    st.set_defaults(func=cmd_status)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser(argv).parse_args(argv)
    # Wide enough for the tables when output goes to a file or a pipe.
    out = Console(width=None if sys.stdout.isatty() else 160)
    err = Console(stderr=True, width=None if sys.stderr.isatty() else 160)
    try:
        return args.func(args, out, err)
    except BenchbookError as exc:
        _error(err, str(exc))
        return 2
    except KeyboardInterrupt:
        err.print("benchbook: interrupted", markup=False)
        return 130
    except BrokenPipeError:  # `benchbook analyze --json ... | head`: the reader left, not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as exc:  # a full disk, a folder without write permission: the path, not a traceback
        where = exc.filename or "a file"
        _error(err, f"cannot use {where}: {exc.strerror or exc}" +
               (" (the disk or the quota is full)" if exc.errno in (errno.ENOSPC, errno.EDQUOT) else ""))
        return 2
    except Exception as exc:  # a bug: one line for the user, the traceback on request
        if os.environ.get("BENCHBOOK_DEBUG"):
            raise
        err.print(f"benchbook: internal error: {type(exc).__name__}: {exc} "
                  "(set BENCHBOOK_DEBUG=1 for the traceback, and please report it)", highlight=False, markup=False)
        return 3


if __name__ == "__main__":
    sys.exit(main())
