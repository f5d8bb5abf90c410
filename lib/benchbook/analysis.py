"""Logs in, tidy tables out: one row per run, one row per logged iteration, one per evaluation.

`analyze(paths, rule)` is the entry point of the library, the CLI and the notebooks. Files that
cannot be analyzed are reported as problems next to the results of the others; nothing raises
for a bad log.
"""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

import numpy as np
import pandas as pd

from . import filenames, parsers, rules, textio
from .assemble import RunDraft, fold
from .errors import BenchbookError, LogError
from .parsers import LogFormat
from .rules import Rule

RUN_COLUMNS = {
    "source": "path of the log file",
    "run": "0-based index of the run in its file, in file order",
    "format": "log format (registry name)",
    "framework": "framework that ran",
    "model": "model that was trained",
    "gpus": "GPUs in the run, all nodes",
    "nodes": "nodes, when known",
    "batch_size": "per-GPU batch size",
    "global_batch_size": "batch size over all GPUs",
    "precision": "fp32, amp, fp16, tf32 or bf16",
    "xla": "XLA on",
    "dali": "DALI data loading on",
    "synthetic": "synthetic input data",
    "repeat": "repeat number, when the file name or run record gives one",
    "line_start": "first line of the run in its file",
    "line_end": "last line of the run in its file",
    "reported_throughput": "images/s the script reported in its summary",
    "recomputed_throughput": "images/s recomputed from the records by the rule",
    "elapsed_throughput": "images/s from wall-clock timestamps of the measured records",
    "rule": "the recompute rule in words",
    "iterations": "records used by the rule",
    "warmup_records": "records skipped as warm-up",
    "ranks": "ranks that logged records",
    "status": "complete, incomplete or failed",
    "failure": "cause of failure, when failed",
    "final_top1": "last evaluated top-1 accuracy, percent",
    "start_time": "first timestamp of the run, seconds since the epoch",
    "warnings": "what looked wrong, as sentences",
}
ITERATION_COLUMNS = {
    "source": "path of the log file",
    "run": "run index in the file",
    "line": "line of the record",
    "rank": "mpirun rank that logged it (-1 when untagged)",
    "epoch": "epoch as logged (-1 when not logged)",
    "iteration": "iteration as logged (-1 when not logged)",
    "timestamp": "seconds since the epoch",
    "elapsed": "seconds since the run's first timestamp",
    "throughput": "images/s as logged (all GPUs)",
    "loss": "loss as logged",
    "lr": "learning rate as logged",
    "steps": "iterations the record covers",
    "warmup": "skipped as warm-up by the rule",
    "measured": "used by the rule",
}
EVAL_COLUMNS = {
    "source": "path of the log file", "run": "run index in the file", "line": "line of the evaluation",
    "epoch": "epoch evaluated", "top1": "top-1 accuracy, percent", "top5": "top-5 accuracy, percent",
    "eval_throughput": "evaluation images/s", "timestamp": "seconds since the epoch",
    "elapsed": "seconds since the run's first timestamp",
}


@dataclass
class Problem:
    """A file that could not be analyzed, and why."""

    source: str
    reason: str


@dataclass
class Analysis:
    """The tidy result of analyzing logs: DataFrames with the documented columns, and problems."""

    runs: pd.DataFrame
    iterations: pd.DataFrame
    evaluations: pd.DataFrame
    problems: list[Problem] = field(default_factory=list)
    rule: Rule = field(default_factory=Rule)


def log_files(paths: Iterable[str | os.PathLike]) -> tuple[list[Path], list[Problem]]:
    """Files named and files found under folders (recursively, sorted), and paths that do not exist."""
    files: list[Path] = []
    problems: list[Problem] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            files.extend(
                sorted(q for q in p.rglob("*") if q.is_file() and not q.name.startswith(".")
                       and not q.name.endswith((".run.json", ".json", ".yaml", ".yml", ".ipynb", ".html")))
            )
        elif p.is_file():
            files.append(p)
        else:
            problems.append(Problem(str(p), "no such file or folder"))
    return files, problems


def _pct(value: float | None) -> float | None:
    if value is None or np.isnan(value):
        return None
    return value * 100 if value <= 1.0 else value


def _records_frame(draft: RunDraft) -> pd.DataFrame:
    df = pd.DataFrame({name: np.frombuffer(col, dtype=col.typecode if col.typecode == "d" else np.int64)
                       if len(col) else np.array([], dtype=float if col.typecode == "d" else np.int64)
                       for name, col in draft.records.columns.items()})
    if len(df) and df["steps"].isna().any():
        # Formats that do not log how many iterations a record covers: the gap to the previous one.
        gaps = df.groupby("rank")["iteration"].diff()
        gaps = gaps.where(gaps > 0)
        fill = gaps.fillna(gaps.median() if gaps.notna().any() else 1.0)
        df["steps"] = df["steps"].fillna(fill.where(df["iteration"] >= 0, 1.0))
    return df


def _run(draft: RunDraft, path: Path, fmt: LogFormat, rule: Rule, stats: textio.ReadStats,
         tables: list[tuple[dict, dict]]) -> tuple[dict, pd.DataFrame, pd.DataFrame]:
    meta = dict(draft.meta)
    warnings: list[str] = []
    for key, value in fmt.finish(meta, {r for r in draft.ranks if r is not None} or draft.ranks).items():
        meta.setdefault(key, value)
    for source, extra in (("the file name", filenames.from_path(path, draft.index)),
                          ("the run record", filenames.sidecar(path))):
        for key, value in extra.items():
            if meta.get(key) is None:
                meta[key] = value
            elif meta[key] != value:
                warnings.append(f"{key} is {meta[key]!r} in the log but {value!r} in {source}; the log wins")
    gpus, batch = meta.get("gpus"), meta.get("batch_size")
    global_batch = meta.get("global_batch_size") or (gpus * batch if gpus and batch else None)
    for key, row in tables:
        if key.get("gpus") == gpus and key.get("batch_size") == batch:
            for metric, value in row.items():
                draft.reported.setdefault(metric, value)
                if metric in ("train.total_ips", "train.ips"):
                    draft.reported.setdefault("throughput", value)

    records = _records_frame(draft)
    start = meta.get("start_time")
    t0 = _first_time(start, records)
    lowest = records["rank"].min() if len(records) else -1
    own = records[records["rank"] == lowest] if len(records) else records
    warm = fmt.mark_warmup(own, meta) if len(own) else pd.Series(dtype=bool)
    used = rules.measured(own, warm, rule) if len(own) else own
    method = rule.method or fmt.method
    recomputed = rules.throughput(used, method, global_batch)
    elapsed = rules.throughput(used, "elapsed", global_batch)
    reported = draft.reported.get("throughput")

    records["elapsed"] = records["timestamp"] - t0 if t0 is not None else np.nan
    records["warmup"] = False
    records["measured"] = False
    if len(own):
        skipped = own.index.difference(used.index)
        records.loc[skipped.intersection(own.index[own["throughput"].notna()]), "warmup"] = True
        records.loc[used.index, "measured"] = True

    failed_cause = draft.failures[0][1] if draft.failures else None
    if draft.ended or reported is not None:
        status = "complete"
    elif failed_cause:
        status = "failed"
    else:
        status = "incomplete"
    if status == "incomplete":
        warnings.append("no end-of-run summary: the log stops before the run finished" if len(records)
                        else "no iteration was logged and no summary: the run did not start training")
    if status == "complete" and failed_cause:
        warnings.append(f"the log mentions a failure ({failed_cause}, line {draft.failures[0][0]}) "
                        "but the run finished")
    if status == "failed":
        warnings.append(f"failed at line {draft.failures[0][0]}: {failed_cause}")
    warnings.extend(f"conflicting {c}" for c in draft.conflicts)
    for key in ("gpus", "batch_size", "precision"):
        if meta.get(key) is None:
            warnings.append(f"{key} unknown: neither the log, the file name nor a run record gives it")
    if len(own) and recomputed is None:
        warnings.append("no record left after the warm-up to recompute the throughput from")
    if recomputed and reported and abs(recomputed - reported) / reported > rule.tolerance:
        warnings.append(f"recomputed throughput {recomputed:.2f} differs from the reported {reported:.2f} "
                        f"by {100 * (recomputed - reported) / reported:+.1f}%")
    if recomputed and elapsed and method != "elapsed" and abs(elapsed - recomputed) / recomputed > 0.10:
        warnings.append(f"wall-clock throughput {elapsed:.2f} is {100 * (elapsed - recomputed) / recomputed:+.1f}% "
                        f"from the {method} of logged rates: time passes between logged steps")
    if len(draft.ranks - {None}) > 1 and len(used):
        # Every rank prints the same global rate; a rank that saw another rate is worth a look.
        means = records[records["rank"] != lowest].groupby("rank")["throughput"].mean()
        own_mean = float(own["throughput"].mean())
        off = means[(means - own_mean).abs() > rule.tolerance * own_mean]
        if len(off):
            warnings.append(f"ranks {', '.join(map(str, off.index))} logged rates more than "
                            f"{rule.tolerance:.0%} away from rank {lowest}'s, whose records the rule uses")
    warnings.extend(_read_warnings(stats))

    evals = pd.DataFrame(draft.evals, columns=["line", "epoch", "top1", "top5", "eval_throughput", "timestamp"])
    if len(evals):
        evals["top1"] = evals["top1"].map(_pct)
        evals["top5"] = evals["top5"].map(_pct)
        evals["timestamp"] = evals["timestamp"].map(_seconds)
        evals["elapsed"] = evals["timestamp"] - t0 if t0 is not None else np.nan
    top1 = evals["top1"].dropna() if len(evals) else pd.Series(dtype=float)

    row = {
        "source": str(path), "run": draft.index, "format": fmt.name,
        "framework": meta.get("framework") or fmt.framework, "model": meta.get("model") or fmt.model,
        "gpus": gpus, "nodes": meta.get("nodes"), "batch_size": batch, "global_batch_size": global_batch,
        "precision": meta.get("precision"), "xla": meta.get("xla"), "dali": meta.get("dali"),
        "synthetic": meta.get("synthetic"), "repeat": meta.get("repeat"),
        "line_start": draft.first_line, "line_end": draft.last_line,
        "reported_throughput": reported, "recomputed_throughput": recomputed, "elapsed_throughput": elapsed,
        "rule": rule.describe(fmt.method, fmt.warmup), "iterations": int(len(used)),
        "warmup_records": int(records["warmup"].sum()), "ranks": len(draft.ranks),
        "status": status, "failure": failed_cause if status == "failed" else None,
        "final_top1": float(top1.iloc[-1]) if len(top1) else None,
        "start_time": t0, "warnings": warnings, "reported": dict(draft.reported), "meta": meta,
    }
    return row, records, evals


def _seconds(value):
    from .assemble import seconds

    return seconds(value)


def _first_time(start, records: pd.DataFrame) -> float | None:
    t = _seconds(start) if start is not None else np.nan
    if np.isnan(t) and len(records) and records["timestamp"].notna().any():
        t = float(records["timestamp"].min())
    return None if np.isnan(t) else float(t)


def _read_warnings(stats: textio.ReadStats) -> list[str]:
    out = []
    if stats.invalid_utf8:
        out.append("bytes that are not UTF-8 were replaced")
    if stats.cut_last_line:
        out.append("the file ends in the middle of a line")
    return out


def analyze_file(path: str | os.PathLike, rule: Rule | None = None, log_format: str | None = None):
    """Analyze one log: (run rows, iteration frames, evaluation frames). Raises LogError if it cannot."""
    rule = rule or Rule()
    path = Path(path)
    textio.check_readable(path)
    fmt = parsers.get(log_format) if log_format else parsers.detect(textio.head(path))
    if fmt is None:
        raise LogError(str(path), "no known log format in its first 64 KiB "
                                  f"(known: {', '.join(sorted(parsers.FORMATS))})")
    stats = textio.ReadStats()
    events = itertools.chain.from_iterable(fmt.scan(c.text, c.first_line) for c in textio.chunks(path, stats))
    drafts, tables = fold(events)
    if not drafts:
        raise LogError(str(path), f"recognised as {fmt.name} but no run was found in it")
    rows, iters, evals = [], [], []
    for draft in drafts:
        row, rec, ev = _run(draft, path, fmt, rule, stats, tables)
        rows.append(row)
        iters.append(rec.assign(source=str(path), run=draft.index))
        evals.append(ev.assign(source=str(path), run=draft.index))
    return rows, iters, evals


def analyze(paths: Iterable[str | os.PathLike], rule: Rule | None = None, log_format: str | None = None) -> Analysis:
    """Analyze logs and folders of logs; bad files become problems, good ones results."""
    rule = rule or Rule()
    files, problems = log_files(paths)
    rows, iters, evals = [], [], []
    for path in files:
        try:
            r, i, e = analyze_file(path, rule, log_format)
        except BenchbookError as exc:
            problems.append(Problem(str(path), getattr(exc, "reason", str(exc))))
            continue
        except (OSError, UnicodeError, ValueError) as exc:  # a log that breaks a parser is a problem, not a crash
            problems.append(Problem(str(path), f"could not be parsed: {type(exc).__name__}: {exc}"))
            continue
        rows += r
        iters += i
        evals += e
    runs = pd.DataFrame(rows, columns=[*RUN_COLUMNS, "reported", "meta"])
    for col in ("gpus", "nodes", "batch_size", "global_batch_size", "repeat"):
        runs[col] = pd.to_numeric(runs[col], errors="coerce").astype("Int64")
    iterations = (pd.concat(iters, ignore_index=True) if iters else pd.DataFrame())
    iterations = iterations.reindex(columns=list(ITERATION_COLUMNS))
    evaluations = (pd.concat([e for e in evals if len(e)], ignore_index=True)
                   if any(len(e) for e in evals) else pd.DataFrame())
    evaluations = evaluations.reindex(columns=list(EVAL_COLUMNS))
    return Analysis(runs=runs, iterations=iterations, evaluations=evaluations, problems=problems, rule=rule)
