"""Logs in, tidy tables out: one row per run, one row per logged iteration, one per evaluation.

`analyze(paths, rule)` is the entry point of the library, the CLI and the notebooks. Files that
cannot be analyzed are reported as problems next to the results of the others; nothing raises
for a bad log.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from . import filenames, parsers, rules, textio
from .assemble import RunDraft, fold
from .errors import BenchbookError, LogError
from .parsers import LogFormat, scanning
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


def _steps(cols: dict[str, np.ndarray]) -> np.ndarray:
    """Iterations each record covers: as logged, else the gap to the rank's previous record."""
    steps = cols["steps"].copy()
    missing = np.isnan(steps)
    if missing.any():
        it, rank = cols["iteration"].astype(float), cols["rank"]
        gaps = np.full(len(it), np.nan)
        for r in np.unique(rank):
            idx = np.flatnonzero(rank == r)
            gaps[idx[1:]] = np.diff(it[idx])
        gaps[(gaps <= 0) | (it < 0)] = np.nan
        fill = np.nanmedian(gaps) if np.isfinite(gaps).any() else 1.0
        steps[missing] = np.where(np.isnan(gaps), fill, gaps)[missing]
    return steps


def _run(draft: RunDraft, path: Path, fmt: LogFormat, rule: Rule, stats: textio.ReadStats,
         tables: list[tuple[dict, dict]]) -> tuple[dict, dict[str, np.ndarray], pd.DataFrame | None]:
    meta = dict(draft.meta)
    warnings: list[str] = []
    for key, value in fmt.finish(meta, draft.ranks).items():
        meta.setdefault(key, value)
    origin = {key: "the log" for key, value in meta.items() if value is not None}
    for source, extra in (("the file name", filenames.from_path(path, draft.index)),
                          ("the run record", filenames.sidecar(path))):
        for key, value in extra.items():
            if meta.get(key) is None:
                meta[key], origin[key] = value, source
            elif meta[key] != value:
                warnings.append(f"{key} is {meta[key]!r} in {origin[key]} but {value!r} in {source}; "
                                f"{origin[key]} wins")
    gpus, batch = meta.get("gpus"), meta.get("batch_size")
    global_batch = meta.get("global_batch_size") or (gpus * batch if gpus and batch else None)
    for key, row in tables:
        if key.get("gpus") == gpus and key.get("batch_size") == batch:
            for metric, value in row.items():
                draft.reported.setdefault(metric, value)
                if metric in ("train.total_ips", "train.ips"):
                    draft.reported.setdefault("throughput", value)

    cols = dict(draft.records.columns())
    n = len(cols["line"])
    cols["steps"] = _steps(cols) if n else cols["steps"]
    t0 = _first_time(meta.get("start_time"), cols["timestamp"])
    lowest = int(cols["rank"].min()) if n else -1
    own_idx = np.flatnonzero(cols["rank"] == lowest)
    own = {k: v[own_idx] for k, v in cols.items()}
    has_rate = ~np.isnan(own["throughput"])
    if rule.warmup is not None:
        warm = np.arange(len(own_idx)) < rule.warmup
    else:
        warm = np.asarray(fmt.mark_warmup(own, meta), dtype=bool) if len(own_idx) else np.zeros(0, bool)
    use = np.flatnonzero(~warm & has_rate)
    if rule.window:
        use = use[: rule.window]
    used = {k: v[use] for k, v in own.items()}
    method = rule.method or fmt.method
    recomputed = rules.throughput(used, method, global_batch)
    elapsed = rules.throughput(used, "elapsed", global_batch)
    reported = draft.reported.get("throughput")

    cols["elapsed"] = cols["timestamp"] - t0 if t0 is not None else np.full(n, np.nan)
    cols["warmup"] = np.zeros(n, dtype=bool)
    cols["warmup"][own_idx[warm & has_rate]] = True
    cols["measured"] = np.zeros(n, dtype=bool)
    cols["measured"][own_idx[use]] = True

    failed_cause = draft.failures[0][1] if draft.failures else None
    if draft.ended or reported is not None:
        status = "complete"
    elif failed_cause:
        status = "failed"
    else:
        status = "incomplete"
    if status == "incomplete":
        warnings.append("no end-of-run summary: the log stops before the run finished" if n
                        else "no iteration was logged and no summary: the run did not start training")
    if status == "failed":
        warnings.append(f"failed at line {draft.failures[0][0]}: {failed_cause}")
    warnings.extend(f"conflicting {c}" for c in draft.conflicts)
    for key in ("gpus", "batch_size", "precision"):
        if meta.get(key) is None:
            warnings.append(f"{key} unknown: neither the log, the file name nor a run record gives it")
    if len(own_idx) and recomputed is None:
        warnings.append("no record left after the warm-up to recompute the throughput from")
    if recomputed and reported and abs(recomputed - reported) / reported > rule.tolerance:
        warnings.append(f"recomputed throughput {recomputed:.2f} differs from the reported {reported:.2f} "
                        f"by {100 * (recomputed - reported) / reported:+.1f}%")
    if recomputed and elapsed and method != "elapsed" and abs(elapsed - recomputed) / recomputed > 0.10:
        warnings.append(f"wall-clock throughput {elapsed:.2f} is {100 * (elapsed - recomputed) / recomputed:+.1f}% "
                        f"from the {method} of logged rates: time passes between logged steps")
    others = np.flatnonzero((cols["rank"] != lowest) & ~np.isnan(cols["throughput"]))
    if len(others) and len(use):
        # Every rank prints the same global rate; a rank that saw another rate is worth a look.
        own_mean = float(np.nanmean(own["throughput"]))
        off = sorted({int(r) for r in np.unique(cols["rank"][others])
                      if abs(np.nanmean(cols["throughput"][others][cols["rank"][others] == r]) - own_mean)
                      > rule.tolerance * own_mean})
        if off:
            warnings.append(f"ranks {', '.join(map(str, off))} logged rates more than "
                            f"{rule.tolerance:.0%} away from rank {lowest}'s, whose records the rule uses")
    warnings.extend(_read_warnings(stats))

    evals = pd.DataFrame(draft.evals, columns=["line", "epoch", "top1", "top5", "eval_throughput", "timestamp"]) \
        if draft.evals else None
    if evals is not None:
        evals["top1"] = evals["top1"].map(_pct)
        evals["top5"] = evals["top5"].map(_pct)
        evals["timestamp"] = evals["timestamp"].map(_seconds)
        evals["elapsed"] = evals["timestamp"] - t0 if t0 is not None else np.nan
    top1 = evals["top1"].dropna() if evals is not None else pd.Series(dtype=float)

    row = {
        "source": str(path), "run": draft.index, "format": fmt.name,
        "framework": meta.get("framework") or fmt.framework, "model": meta.get("model") or fmt.model,
        "gpus": gpus, "nodes": meta.get("nodes"), "batch_size": batch, "global_batch_size": global_batch,
        "precision": meta.get("precision"), "xla": meta.get("xla"), "dali": meta.get("dali"),
        "synthetic": meta.get("synthetic"), "repeat": meta.get("repeat"),
        "line_start": draft.first_line, "line_end": draft.last_line,
        "reported_throughput": reported, "recomputed_throughput": recomputed, "elapsed_throughput": elapsed,
        "rule": rule.describe(fmt.method, fmt.warmup), "iterations": int(len(use)),
        "warmup_records": int(cols["warmup"].sum()), "ranks": len(draft.ranks),
        "status": status, "failure": failed_cause if status == "failed" else None,
        "final_top1": float(top1.iloc[-1]) if len(top1) else None,
        "start_time": t0, "warnings": warnings, "reported": dict(draft.reported), "meta": meta,
    }
    return row, cols, evals


def _seconds(value):
    from .assemble import seconds

    return seconds(value)


def _first_time(start, stamps: np.ndarray) -> float | None:
    t = _seconds(start) if start is not None else np.nan
    if np.isnan(t) and np.isfinite(stamps).any():
        t = float(np.nanmin(stamps))
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
    _find_failures(path, drafts)
    rows, blocks, evals = [], [], []
    for draft in drafts:
        row, cols, ev = _run(draft, path, fmt, rule, stats, tables)
        rows.append(row)
        blocks.append((draft.index, cols))
        if ev is not None:
            evals.append(ev.assign(source=str(path), run=draft.index))
    iterations = pd.DataFrame({k: np.concatenate([c[k] for _, c in blocks]) for k in blocks[0][1]})
    iterations.insert(0, "run", np.repeat([i for i, _ in blocks], [len(c["line"]) for _, c in blocks]))
    iterations.insert(0, "source", str(path))
    return rows, [iterations], evals


def _find_failures(path: Path, drafts: list[RunDraft]) -> None:
    """Read again the lines of runs that did not finish, looking for why (out of memory, crash)."""
    # A run's lines reach up to where the next run starts; only unfinished runs are searched.
    ends = [d.first_line for d in drafts[1:]] + [float("inf")]
    spans = [(d.first_line, end, d) for d, end in zip(drafts, ends, strict=True)
             if not d.ended and d.reported.get("throughput") is None]
    if not spans:
        return
    first = spans[0][0]
    for chunk in textio.chunks(path):
        if chunk.first_line + chunk.text.count("\n") < first:
            continue
        for line, cause in scanning.failures(chunk.text, chunk.first_line):
            for start, end, d in spans:
                if start <= line < end:
                    d.failures.append((line, cause))
                    d.last_line = max(d.last_line, line)


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
