"""Logs in, tidy tables out: one row per run, one row per logged iteration, one per evaluation,
one per loss component, one per epoch of a per-epoch rule (the frames and their columns: `frames`).

`analyze(paths, rule)` is the entry point of the library, the CLI and the notebooks. Files that
cannot be analyzed are reported as problems next to the results of the others; nothing raises
for a bad log.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import BenchbookError, LogError
from .archives import ArchivePath
from .frames import (  # noqa: F401 -- the frames' documented columns, read here by many
    EPOCH_COLUMNS,
    EPOCH_TYPES,
    EVAL_COLUMNS,
    EVAL_NAMED_COLUMNS,
    ITERATION_COLUMNS,
    LOSS_COLUMNS,
    ROW_COLUMNS,
    RUN_COLUMNS,
)
from .logfiles import Problem, from_path, log_files
from .rules import Rule

# numpy, pandas, the formats and the rules' arithmetic are imported by the functions that use them: importing
# benchbook (as every command of the CLI does) costs none of them.
if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from . import textio
    from .assemble import RunDraft
    from .parsers import LogFormat

@dataclass
class Analysis:
    """The tidy result of analyzing logs: DataFrames with the documented columns, and problems."""

    runs: pd.DataFrame
    iterations: pd.DataFrame
    evaluations: pd.DataFrame
    epochs: pd.DataFrame  # columns EPOCH_COLUMNS: the epochs of the runs whose rule is per epoch
    problems: list[Problem] = field(default_factory=list)
    rule: Rule = field(default_factory=Rule)
    losses: pd.DataFrame = field(default_factory=lambda: _loss_frame([]))  # columns LOSS_COLUMNS


def _pct(value: float | None) -> float | None:
    import numpy as np

    if value is None or np.isnan(value):
        return None
    return value * 100 if value <= 1.0 else value


def _meta(draft: RunDraft, path: Path, fmt: LogFormat, record: dict, tables: dict[tuple, dict]):
    """A run's metadata from the log, its file name and run record; the warnings that gives."""
    meta = draft.meta  # the draft's own: a file may hold 10**6 runs, each copy costs
    warnings: list[str] = []
    for key, value in fmt.finish(meta, draft.ranks).items():
        meta.setdefault(key, value)
    warnings.extend(fmt.warn(meta))
    origin: dict[str, str] = {}  # where a value came from, when not from the log
    for source, extra in (("the file name", from_path(path, draft.index)), ("the run record", record)):
        for key, value in extra.items():
            if meta.get(key) is None:
                meta[key], origin[key] = value, source
            elif meta[key] != value:
                first = origin.get(key, "the log")
                warnings.append(f"{key} is {meta[key]!r} in {first} but {value!r} in {source}; {first} wins")
    if draft.restarted:  # a run with no start line of its own: the file name may describe another run
        named = [k for k in ("gpus", "batch_size", "precision", "xla") if origin.get(k) == "the file name"]
        warnings.append(draft.restarted + (f"; its {', '.join(named)} come from the file name alone, which may "
                                           "name another run of the file: check them" if named else ""))
    for metric, value in tables.get((meta.get("gpus"), meta.get("batch_size")), {}).items():
        draft.reported.setdefault(metric, value)
    return meta, warnings


def _runs(drafts: list[RunDraft], path: Path, fmt: LogFormat, rule: Rule, stats: textio.ReadStats,
          tables: dict[tuple, dict], record: dict
          ) -> tuple[list[tuple], dict[str, np.ndarray], list[dict], list[tuple]]:
    """The rows of a file's runs, all its records as columns (with run, elapsed, warmup and
    measured), its evaluations and its epochs (rows of EPOCH_COLUMNS): the rule is applied to
    one run at a time (`rules.apply`)."""
    import numpy as np

    from .parsers.scanning import seconds, seconds_array
    from .rules import Run, apply, fill_steps

    applied = rule.resolve(fmt)  # the format's named rule with the user's parts: one frozen object
    described, method = applied.describe(), applied.method
    cols = drafts[0].store.release()  # the records of every run, in file order (assemble.fold)
    bounds = np.concatenate(([0], np.cumsum([d.count for d in drafts]))).astype(np.int64)  # where each begins
    n, edges = len(cols["line"]), bounds.tolist()
    run_of = np.repeat(np.arange(len(drafts)), np.diff(bounds))
    refused = _refused_rates(cols["throughput"], cols["line"], run_of, len(drafts))
    warmup, measured = np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
    metas = [_meta(draft, path, fmt, record, tables) for draft in drafts]
    t0s = seconds_array([meta.get("start_time") for meta, _ in metas])  # the runs' starts, read at once
    rows: list[tuple] = []
    evals: list[dict] = []
    epochs: list[tuple] = []
    source = str(path)  # one string for all the file's rows
    read_warnings = _read_warnings(stats)  # the file's, said in each of its runs
    for i, draft in enumerate(drafts):
        a, b = edges[i], edges[i + 1]
        meta, warnings = metas[i]
        gpus, batch = meta.get("gpus"), meta.get("batch_size")
        processes = meta.get("processes") or gpus  # NGC runs: one process per GPU
        global_batch = meta.get("global_batch_size") or (processes * batch if processes and batch else None)
        images = global_batch if isinstance(global_batch, (int, float)) and not isinstance(global_batch, bool) \
            and global_batch > 0 else math.nan  # images a step (all GPUs), for the elapsed throughput
        own = {name: column[a:b] for name, column in cols.items()}  # views: the run's part of the file's columns
        if b > a:
            if math.isnan(t0s[i]):
                t0s[i] = np.fmin.reduce(own["timestamp"])
            own["steps"][:] = fill_steps(own)
        run = Run(own, meta)
        warm, use, got, wall, run_epochs = apply(run, applied, images)
        epochs += [(source, draft.index, *e) for e in run_epochs]
        warmup[a:b], measured[a:b] = warm, use
        t0 = None if math.isnan(t0s[i]) else float(t0s[i])
        reported = draft.reported.get("throughput")
        if reported is not None and not (isinstance(reported, (int, float)) and 0 <= reported < math.inf):
            warnings.append(f"the reported throughput {reported!r} is no rate (negative, infinite or NaN): "
                            "refused, the run reports none")
            draft.reported["throughput"] = reported = None
        warnings.extend(refused.get(i, ()))
        failed_cause = draft.failures[0][1] if draft.failures else None
        if draft.ended or reported is not None or (draft.reported and not draft.keyed):  # an end-of-run summary
            status = "complete"
        elif failed_cause:
            status = "failed"
        else:
            status = "incomplete"
        if status == "incomplete" and draft.keyed:
            warnings.append("no run_stop: the log stops before the run finished")
        elif status == "incomplete":
            warnings.append("no end-of-run summary: the log stops before the run finished" if b > a
                            else "no iteration was logged and no summary: the run did not start training")
        if status == "failed":
            warnings.append(f"failed at line {draft.failures[0][0]}: {failed_cause}")
        warnings.extend(f"conflicting {c}" for c in draft.conflicts)
        warnings.extend(draft.notes)  # (assemble: values left out or suspect, with their lines)
        for key in ("gpus", "batch_size", "precision") if not draft.keyed else ():  # (MLLOG logs none of them)
            if meta.get(key) is None:
                warnings.append(_UNKNOWN[key])
        if b > a and got is None:
            warnings.append("no record left after the warm-up to recompute the throughput from")
        if got and reported and abs(got - reported) / reported > rule.tolerance:
            warnings.append(f"recomputed throughput {got:.2f} differs from the reported {reported:.2f} "
                            f"by {100 * (got - reported) / reported:+.1f}%")
        if got and wall and method != "elapsed" and abs(wall - got) / got > 0.10:
            warnings.append(f"wall-clock throughput {wall:.2f} is {100 * (wall - got) / got:+.1f}% "
                            f"from the {method} of logged rates: time passes between logged steps")
        iterations = int(np.count_nonzero(use))
        if not isinstance(run.own, slice) and iterations:
            warnings.extend(_rank_warnings(own["rank"], own["throughput"], int(run["rank"][0]), rule.tolerance))
        warnings.extend(read_warnings)

        top1 = None
        for e in draft.evals:
            stamp = seconds(e.get("timestamp"))
            evals.append({"source": source, "run": draft.index, "line": e.get("line"), "epoch": e.get("epoch"),
                          "top1": _pct(e.get("top1")), "top5": _pct(e.get("top5")),
                          "eval_throughput": e.get("eval_throughput"), "timestamp": stamp,
                          "elapsed": stamp - t0 if t0 is not None else np.nan})
            if "metric" in e:  # a format's named metrics (MLLOG): EVAL_NAMED_COLUMNS
                evals[-1].update(metric=e["metric"], value=e["value"])
            top1 = evals[-1]["top1"] if evals[-1]["top1"] is not None else top1

        rows.append(tuple({  # a row's values in ROW_COLUMNS order: a tuple costs a third of the dict
            "source": source, "run": draft.index, "format": fmt.name,
            "framework": meta.get("framework") or fmt.framework, "model": meta.get("model") or fmt.model,
            "gpus": meta.get("gpus"), "nodes": meta.get("nodes"), "processes": processes,
            "batch_size": meta.get("batch_size"), "global_batch_size": global_batch,
            "precision": meta.get("precision"), "xla": meta.get("xla"), "dali": meta.get("dali"),
            "synthetic": meta.get("synthetic"), "repeat": meta.get("repeat"),
            "line_start": draft.first_line, "line_end": draft.last_line,
            "reported_throughput": reported, "recomputed_throughput": got, "elapsed_throughput": wall,
            "rule": described, "iterations": iterations, "warmup_records": int(np.count_nonzero(warm)),
            "ranks": len(draft.ranks), "status": status, "failure": failed_cause if status == "failed" else None,
            "final_top1": float(top1) if top1 is not None else None,
            "start_time": t0, "warnings": warnings, "reported": draft.reported, "meta": meta,
        }.values()))
    cols["run"] = run_of  # drafts are numbered in file order from 0 (assemble.fold)
    cols["elapsed"] = cols["timestamp"] - t0s[run_of]
    cols["warmup"] = warmup
    cols["measured"] = measured
    return rows, cols, evals, epochs


_UNKNOWN = {key: f"{key} unknown: neither the log, the file name nor a run record gives it"
            for key in ("gpus", "batch_size", "precision")}  # one string each, however many runs


def _refused_rates(rate: np.ndarray, line: np.ndarray, run: np.ndarray, runs: int) -> dict[int, list[str]]:
    """Records whose logged rate is negative or infinite get none (NaN: neither warm-up nor
    measured); the warning of each run that had some, with their lines."""
    import numpy as np

    bad = np.flatnonzero(np.isinf(rate) | (rate < 0))
    if not len(bad):
        return {}
    rate[bad] = np.nan
    out = {}
    for r in np.unique(run[bad]).tolist():
        at = bad[run[bad] == r]
        shown = ", ".join(map(str, line[at[:5]].tolist())) + (", ..." if len(at) > 5 else "")
        out[r] = [f"{len(at)} records log a throughput that is negative or infinite: refused (line {shown})"]
    return out


def _rank_warnings(rank: np.ndarray, rate: np.ndarray, low: int, tolerance: float) -> list[str]:
    """Every rank prints the same global rate; a rank that saw another rate is worth a look."""
    import numpy as np

    rated = ~np.isnan(rate)
    present, codes = np.unique(rank[rated], return_inverse=True)  # one code per rank logged, lowest first
    counts = np.bincount(codes)
    means = np.bincount(codes, weights=rate[rated]) / np.maximum(counts, 1)
    if not (len(counts) > 1 and present[0] == low):
        return []
    far = np.abs(means - means[0]) > tolerance * means[0]
    far[0] = False
    off = present[far].tolist()
    if not off:
        return []
    return [f"ranks {', '.join(map(str, off))} logged rates more than "
            f"{tolerance:.0%} away from rank {low}'s, whose records the rule uses"]


def _table_values(tables: list[tuple[dict, dict]]) -> dict[tuple, dict]:
    """The values of a file's summary tables by (gpus, per-GPU batch), the first row of a key
    first; `throughput` is its first `train.total_ips` or `train.ips`."""
    out: dict[tuple, dict] = {}
    for key, row in tables:
        values = out.setdefault((key.get("gpus"), key.get("batch_size")), {})
        for metric, value in row.items():
            values.setdefault(metric, value)
            if metric in ("train.total_ips", "train.ips"):
                values.setdefault("throughput", value)
    return out


def _read_warnings(stats: textio.ReadStats) -> list[str]:
    from . import textio

    out = []
    if stats.invalid_utf8:
        out.append("bytes that are not UTF-8 were replaced")
    if stats.cut_last_line:
        out.append("the file ends in the middle of a line")
    if stats.nul_bytes:
        more = ", ..." if len(stats.nul_lines) >= textio.NUL_LINES_KEPT else ""
        out.append(f"{stats.nul_bytes} NUL bytes were left out of the text (line "
                   f"{', '.join(map(str, stats.nul_lines))}{more}): the records around them are read without them")
    if stats.long_count:
        out.append(f"{stats.long_count} lines of {textio.LINE_BYTES >> 20} MiB or more were left out unread "
                   f"(line {_lines(stats.long_lines, stats.long_count)})")
    if stats.wild_rank_count:
        shown = _lines(stats.wild_rank_lines, stats.wild_rank_count)
        out.append(f"{stats.wild_rank_count} lines were left out: their rank tag names a rank above "
                   f"{textio.MAX_RANK}, no rank of a real run (line {shown})")
    if stats.fault:
        out.append(stats.fault)
    return out


def _lines(kept: list[int], count: int) -> str:
    return ", ".join(map(str, kept)) + (", ..." if count > len(kept) else "")


def analyze_file(path: str | os.PathLike, rule: Rule | None = None, log_format: str | None = None):
    """Analyze one log: (run rows, its records as columns, evaluation rows, loss components as
    columns, epoch rows). Raises LogError if it cannot."""
    from ..runfolder import records
    from . import parsers, textio
    from .assemble import fold
    from .parsers import scanning

    rule = rule or Rule()
    path = path if isinstance(path, ArchivePath) else Path(path)
    stats = textio.ReadStats()
    chunks = textio.chunks(path, stats)
    with contextlib.closing(chunks):
        first = next(chunks, None)  # the format is told by the head of the first chunk: the file is read once
        fmt = parsers.get(log_format) if log_format else \
            parsers.detect(first.text[: textio.SNIFF_BYTES] if first is not None else "")
        if fmt is None:
            raise LogError(str(path), "no known log format in its first 64 KiB "
                                      f"(known: {', '.join(sorted(parsers.FORMATS))})"
                                      + "".join(f"; {w}" for w in _read_warnings(stats) if "left out unread" in w))
        read = itertools.chain([first] if first is not None else [], chunks)
        del first  # held by the chain until it is scanned, and no longer
        try:
            drafts, tables, losses = fold(itertools.chain.from_iterable(
                parsers.scan(c, fmt, others=log_format is None) for c in read))
            for draft in drafts if fmt.conclude else ():
                fmt.conclude(draft)
        except scanning.Refused as exc:
            raise LogError(str(path), str(exc)) from None
    if not drafts:
        raise LogError(str(path), f"recognised as {fmt.name} but no run was found in it")
    _find_failures(path, drafts)
    record = records.config_beside(path) if isinstance(path, Path) else {}  # (none in an archive)
    rows, cols, evals, epochs = _runs(drafts, path, fmt, rule, stats, _table_values(tables), record)
    return rows, cols, evals, _file_losses(losses, drafts, cols), epochs


def _iterations(files: list[tuple[str, dict[str, np.ndarray]]]) -> pd.DataFrame:
    """One frame of the records of every run of every file, built once."""
    import numpy as np
    import pandas as pd
    if not files:
        return pd.DataFrame().reindex(columns=list(ITERATION_COLUMNS))
    sizes = [len(cols["line"]) for _, cols in files]
    sources = np.repeat(np.array([source for source, _ in files], dtype=object), sizes)
    text = pd.Series(["text"]).dtype  # how this pandas stores a column of strings
    data = {"source": pd.array(sources, dtype=text)}  # typed here: cheaper than pandas guessing it
    for name in ITERATION_COLUMNS:
        if name not in data:
            data[name] = np.concatenate([cols[name] for _, cols in files]) if len(files) > 1 else files[0][1][name]
    return pd.DataFrame(data, columns=list(ITERATION_COLUMNS), copy=False)  # the arrays are the frame's own


def _find_failures(path: Path, drafts: list[RunDraft]) -> None:
    """Read again the lines of runs that did not finish, looking for why (out of memory, crash)."""
    from . import textio
    from .parsers import scanning

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
        for line, cause in scanning.failures(chunk):
            for start, end, d in spans:
                if start <= line < end:
                    d.failures.append((line, cause))
                    d.last_line = max(d.last_line, line)


def analyze(paths: Iterable[str | os.PathLike], rule: Rule | None = None, log_format: str | None = None) -> Analysis:
    """Analyze logs and folders of logs; bad files become problems, good ones results."""
    import pandas as pd

    rule = rule or Rule()
    files, problems = log_files(paths)
    rows, iters, evals, losses, epochs = [], [], [], [], []
    for path in files:
        try:
            r, i, e, lo, ep = analyze_file(path, rule, log_format)
        except BenchbookError as exc:
            problems.append(Problem(str(path), getattr(exc, "reason", str(exc))))
            continue
        except (OSError, UnicodeError, ValueError) as exc:  # a log that breaks a parser is a problem, not a crash
            problems.append(Problem(str(path), f"could not be parsed: {type(exc).__name__}: {exc}"))
            continue
        except Exception as exc:  # noqa: BLE001 - whatever one file does, the others' results stand
            problems.append(Problem(str(path), f"could not be analyzed (an internal error, please report it with "
                                               f"the file): {type(exc).__name__}: {exc}"))
            continue
        rows += r
        iters.append((str(path), i))
        evals += e
        losses.append((str(path), lo))
        epochs += ep
    runs = pd.DataFrame(rows, columns=ROW_COLUMNS)
    for col in ("gpus", "nodes", "processes", "batch_size", "global_batch_size", "repeat"):
        runs[col] = pd.to_numeric(runs[col], errors="coerce").astype("Int64")
    iterations = _iterations(iters)
    named = [*EVAL_COLUMNS, *EVAL_NAMED_COLUMNS] if any("metric" in e for e in evals) else list(EVAL_COLUMNS)
    evaluations = pd.DataFrame(evals, columns=named) if evals else pd.DataFrame().reindex(columns=named)
    epoch_frame = pd.DataFrame(epochs, columns=list(EPOCH_COLUMNS)).astype(EPOCH_TYPES)
    return Analysis(runs=runs, iterations=iterations, evaluations=evaluations, epochs=epoch_frame, problems=problems,
                    rule=rule, losses=_loss_frame(losses))


def _file_losses(chunks: list[dict], drafts: list[RunDraft], records: dict[str, np.ndarray]) -> dict:
    """The loss components of a file as columns run, line, iteration, value, and component (codes
    into `names`). `records` are the file's record columns with their `run`.

    NGC TF2 Mask R-CNN prints, after each logged block's throughput, `FastRCNN box loss: 0.52801`,
    `Mask loss`, `RPN total loss`... (NVIDIA/DeepLearningExamples TensorFlow2/Segmentation/MaskRCNN
    mask_rcnn/hooks/logging_hook.py: one line a metric of the block). The parser gives them as
    columns a chunk (`scanning.LOSSES`); here each gets its run (the run whose lines hold it) and its
    iteration (that of the run's last record at or before its line). Formats that log no component
    give an empty frame with the same columns."""
    import numpy as np

    names = sorted({name for c in chunks for name in c["names"]})
    if not chunks:
        return {"run": np.empty(0, np.int64), "line": np.empty(0, np.int64), "iteration": np.empty(0, np.int64),
                "component": np.empty(0, np.int32), "value": np.empty(0, float), "names": names}
    line = np.concatenate([c["line"] for c in chunks])
    value = np.concatenate([c["value"] for c in chunks])
    code = {name: i for i, name in enumerate(names)}
    component = np.concatenate([np.array([code[n] for n in c["names"]], dtype=np.int32)[c["component"]]
                                for c in chunks])
    # A run's lines reach up to where the next run starts (a component before the first run is the first's).
    run = np.maximum(np.searchsorted([d.first_line for d in drafts], line, side="right") - 1, 0)
    last = np.searchsorted(records["line"], line, side="right") - 1  # the file's records are in line order
    own = (last >= 0) & (records["run"][np.maximum(last, 0)] == run)
    iteration = np.where(own, records["iteration"][np.maximum(last, 0)], -1)
    return {"run": run.astype(np.int64), "line": line, "iteration": iteration.astype(np.int64),
            "component": component, "value": value, "names": names}


def _loss_frame(files: list[tuple[str, dict]]) -> pd.DataFrame:
    """One frame of the loss components of every file, LOSS_COLUMNS in order. `source` and
    `component` are categorical: millions of rows repeat a few names."""
    import numpy as np
    import pandas as pd

    files = [(source, cols) for source, cols in files if len(cols["line"])]
    names = sorted({name for _, cols in files for name in cols["names"]})
    code = {name: i for i, name in enumerate(names)}
    sizes = [len(cols["line"]) for _, cols in files]
    data = {"source": pd.Categorical.from_codes(np.repeat(np.arange(len(files)), sizes),
                                                categories=pd.Index([source for source, _ in files], dtype=object))}
    for name in ("run", "line", "iteration", "value"):
        data[name] = np.concatenate([cols[name] for _, cols in files]) if files else \
            np.empty(0, float if name == "value" else np.int64)
    own = [np.array([code[n] for n in cols["names"]], dtype=np.int32)[cols["component"]] for _, cols in files]
    data["component"] = pd.Categorical.from_codes(np.concatenate(own) if own else np.empty(0, np.int32),
                                                  categories=pd.Index(names, dtype=object))
    return pd.DataFrame(data, columns=list(LOSS_COLUMNS))
