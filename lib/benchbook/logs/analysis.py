"""Logs in, tidy tables out: one row per run, one row per logged iteration, one per evaluation,
one per loss component, one per epoch of a per-epoch rule (the frames and their columns: `frames`).

`analyze(paths, rule)` is the entry point of the library, the CLI and the notebooks. Files that
cannot be analyzed are reported as problems next to the results of the others; nothing raises
for a bad log.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import itertools
import math
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.catalog import Catalog
from ..core.catalog import default as default_catalog
from ..errors import BenchbookError, LogError
from .archives import ArchivePath
from .frames import (  # noqa: F401 -- the frames' documented columns, read here by many
    EPOCH_COLUMNS,
    EPOCH_TYPES,
    EVAL_NAMED_COLUMNS,
    ITERATION_COLUMNS,
    LOSS_COLUMNS,
    MEASURE_COLUMNS,
    eval_columns,
    file_losses,
    loss_frame,
    measures,
    row_columns,
)
from .frames import iterations as iteration_frame
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
    losses: pd.DataFrame = field(default_factory=lambda: loss_frame([]))  # columns LOSS_COLUMNS
    catalog: Catalog = field(default_factory=default_catalog)  # the axes and metrics its frames' columns follow
    measures: pd.DataFrame | None = None  # columns frames.MEASURE_COLUMNS: a row per run and measure


def __getattr__(name: str):
    """The frames' columns of the default catalog (`frames.RUN_COLUMNS`...), as this module always offered."""
    from . import frames

    if name in ("RUN_COLUMNS", "ROW_COLUMNS", "EVAL_COLUMNS"):
        return getattr(frames, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _meta(draft: RunDraft, path: Path, fmt: LogFormat, record: dict, tables: dict[tuple, dict], catalog: Catalog):
    """A run's metadata from the log, its file name and run record; the warnings that gives."""
    meta = draft.meta  # the draft's own: a file may hold 10**6 runs, each copy costs
    warnings: list[str] = []
    for key, value in fmt.finish(meta, draft.ranks).items():
        meta.setdefault(key, value)
    warnings.extend(fmt.warn(meta))
    named, said = fmt.named_model(meta, catalog)  # where the log names its model (arch), through the models' names
    if named is not None:
        meta["model"] = named
    warnings += said
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


@dataclass(frozen=True)
class _Sizes:
    """What a run's configuration says of its size: processes (one per GPU on NGC), the global batch, and
    the samples a step (all GPUs; NaN where unknown: the volume of the throughput measure, `core.measures`) from
    which the elapsed throughput is computed."""

    processes: int | None
    global_batch: int | float | None
    samples: float


def _sizes(meta: dict) -> _Sizes:
    gpus, batch = meta.get("gpus"), meta.get("batch_size")
    processes = meta.get("processes") or gpus  # NGC runs: one process per GPU
    global_batch = meta.get("global_batch_size") or (processes * batch if processes and batch else None)
    samples = global_batch if isinstance(global_batch, (int, float)) and not isinstance(global_batch, bool) \
        and global_batch > 0 else math.nan
    return _Sizes(processes, global_batch, samples)


def _reported(draft: RunDraft, warnings: list[str]):
    """The throughput the run reported, refused (with a warning) where it is no rate."""
    reported = draft.reported.get("throughput")
    if reported is not None and not (isinstance(reported, (int, float)) and 0 <= reported < math.inf):
        warnings.append(f"the reported throughput {reported!r} is no rate (negative, infinite or NaN): "
                        "refused, the run reports none")
        draft.reported["throughput"] = reported = None
    return reported


def _status(draft: RunDraft, reported, measured_records: bool) -> tuple[str, list[str]]:
    """complete (an end-of-run summary), failed (a failure sign) or incomplete, and what that status says."""
    cause = draft.failures[0][1] if draft.failures else None
    if draft.ended or reported is not None or (draft.reported and not draft.keyed):
        return "complete", []
    if cause:
        return "failed", [f"failed at line {draft.failures[0][0]}: {cause}"]
    if draft.keyed:
        return "incomplete", ["no run_stop: the log stops before the run finished"]
    return "incomplete", ["no end-of-run summary: the log stops before the run finished" if measured_records
                          else "no iteration was logged and no summary: the run did not start training"]


def _rate_warnings(got, reported, wall, method: str, tolerance: float, records: bool) -> list[str]:
    """What the recomputed, reported and wall-clock throughputs say against one another."""
    out = []
    if records and got is None:
        out.append("no record left after the warm-up to recompute the throughput from")
    if got and reported and abs(got - reported) / reported > tolerance:
        out.append(f"recomputed throughput {got:.2f} differs from the reported {reported:.2f} "
                   f"by {100 * (got - reported) / reported:+.1f}%")
    if got and wall and method != "elapsed" and abs(wall - got) / got > 0.10:
        out.append(f"wall-clock throughput {wall:.2f} is {100 * (wall - got) / got:+.1f}% "
                   f"from the {method} of logged rates: time passes between logged steps")
    return out


def _metadata_warnings(draft: RunDraft, meta: dict) -> list[str]:
    """Conflicting metadata, values the folding left out or found suspect, and what none of the log, the file
    name and a run record gives (MLLOG logs none of them)."""
    out = [f"conflicting {c}" for c in draft.conflicts]
    out += draft.notes  # (assemble: values left out or suspect, with their lines)
    return out + [_UNKNOWN[key] for key in (() if draft.keyed else _UNKNOWN) if meta.get(key) is None]


def _evaluations(draft: RunDraft, source: str, t0: float | None, catalog: Catalog
                 ) -> tuple[list[dict], dict[str, float | None]]:
    """The run's evaluation rows (eval_columns(): a column per quality metric of the catalog, and
    EVAL_NAMED_COLUMNS where the format names its metrics) and the last value of each `final` metric."""
    from .parsers.scanning import seconds

    declared = catalog.metrics
    rows, last = [], {m.final_key: None for m in declared if m.final}
    for e in draft.evals:
        stamp = seconds(e.get("timestamp"))
        rows.append({"source": source, "run": draft.index, "line": e.get("line"), "epoch": e.get("epoch"),
                     **{m.key: m.as_logged(e.get(m.key)) for m in declared},
                     "eval_throughput": e.get("eval_throughput"), "timestamp": stamp,
                     "elapsed": stamp - t0 if t0 is not None else math.nan})
        if "metric" in e:  # a format's named metrics (MLLOG): EVAL_NAMED_COLUMNS
            rows[-1].update(metric=e["metric"], value=e["value"])
        last.update({m.final_key: float(rows[-1][m.key]) for m in declared if m.final and rows[-1][m.key] is not None})
    return rows, last


@dataclass(frozen=True)
class _File:
    """What every run of one file shares: its source, format, the user's rule and the rule applied (the
    format's named rule with the user's parts), its words, the file's read warnings, the catalog and the Row
    type."""

    source: str
    fmt: LogFormat
    rule: Rule
    applied: object  # rules.NamedRule
    described: str
    read_warnings: list[str]
    catalog: Catalog
    row: type  # a namedtuple of row_columns(): every value named, in the frame's order


def _one_run(file: _File, draft: RunDraft, meta: dict, warnings: list[str], own: dict, t0: float | None,
             refused: list[str]):
    """One run's row (named values), evaluation rows and epoch rows, and its warm-up and measured
    records, the rule applied to its views of the file's columns (`own`); `refused`: its records whose
    logged rate was refused."""
    import numpy as np

    from .rules import Run, apply

    size = _sizes(meta)
    run = Run(own, meta)
    warm, use, got, wall, run_epochs = apply(run, file.applied, size.samples)
    records = len(own["line"]) > 0
    reported = _reported(draft, warnings)
    warnings += refused
    status, said = _status(draft, reported, records)
    warnings += said + _metadata_warnings(draft, meta)
    warnings += _rate_warnings(got, reported, wall, file.applied.method, file.rule.tolerance, records)
    iterations = int(np.count_nonzero(use))
    if not isinstance(run.own, slice) and iterations:
        warnings += _rank_warnings(own["rank"], own["throughput"], int(run["rank"][0]), file.rule.tolerance)
    warnings += file.read_warnings
    if file.applied.verdict is not None:  # the run's status as the rule's script defines it (a format's axis)
        meta["rule_status"], why = file.applied.verdict(run)
        warnings += [why] if why else []
    evals, finals = _evaluations(draft, file.source, t0, file.catalog)
    axes = {key: meta.get(key) for key in file.catalog.run_keys()}  # the configuration, in the axes' order
    axes.update(framework=meta.get("framework") or file.fmt.framework, model=meta.get("model") or file.fmt.model,
                processes=size.processes, global_batch_size=size.global_batch)
    row = file.row(
        source=file.source, run=draft.index, format=file.fmt.name, **axes,
        line_start=draft.first_line, line_end=draft.last_line, reported_throughput=reported,
        recomputed_throughput=got, elapsed_throughput=wall, rule=file.described, iterations=iterations,
        warmup_records=int(np.count_nonzero(warm)), ranks=len(draft.ranks), status=status,
        failure=draft.failures[0][1] if status == "failed" else None, **finals, start_time=t0,
        warnings=warnings, reported=draft.reported, meta=meta)
    epochs = [(file.source, draft.index, *e) for e in run_epochs]
    return row, evals, epochs, warm, use


def _runs(drafts: list[RunDraft], path: Path, fmt: LogFormat, rule: Rule, stats: textio.ReadStats,
          tables: dict[tuple, dict], record: dict, catalog: Catalog
          ) -> tuple[list[tuple], dict[str, np.ndarray], list[dict], list[tuple]]:
    """The rows of a file's runs, all its records as columns (with run, elapsed, warmup and
    measured), its evaluations and its epochs (rows of EPOCH_COLUMNS): the rule is applied to
    one run at a time (`_one_run`)."""
    import numpy as np

    from .parsers.scanning import seconds_array
    from .rules import fill_steps

    applied = rule.resolve(fmt)  # the format's named rule with the user's parts: one frozen object
    file = _File(str(path), fmt, rule, applied, applied.describe(), _read_warnings(stats), catalog,
                 _row_type(catalog))
    cols = drafts[0].store.release()  # the records of every run, in file order (assemble.fold)
    bounds = np.concatenate(([0], np.cumsum([d.count for d in drafts]))).astype(np.int64)  # where each begins
    n, edges = len(cols["line"]), bounds.tolist()
    run_of = np.repeat(np.arange(len(drafts)), np.diff(bounds))
    refused = _refused_rates(cols["throughput"], cols["line"], run_of, len(drafts))
    warmup, measured = np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
    metas = [_meta(draft, path, fmt, record, tables, catalog) for draft in drafts]
    t0s = seconds_array([meta.get("start_time") for meta, _ in metas])  # the runs' starts, read at once
    rows, evals, epochs = [], [], []
    for i, draft in enumerate(drafts):
        a, b = edges[i], edges[i + 1]
        own = {name: column[a:b] for name, column in cols.items()}  # views: the run's part of the file's columns
        if b > a:
            if math.isnan(t0s[i]):
                t0s[i] = np.fmin.reduce(own["timestamp"])
            own["steps"][:] = fill_steps(own)
        meta, warnings = metas[i]
        if b > a and fmt.rate_scale is not None:  # a rate logged per device in tokens (torchtitan's): samples/s
            own["throughput"][:] *= fmt.rate_scale(meta)
        row, run_evals, run_epochs, warmup[a:b], measured[a:b] = _one_run(
            file, draft, meta, warnings, own, None if math.isnan(t0s[i]) else float(t0s[i]), refused.get(i, []))
        rows.append(row)
        evals += run_evals
        epochs += run_epochs
    cols["run"] = run_of  # drafts are numbered in file order from 0 (assemble.fold)
    cols["elapsed"] = cols["timestamp"] - t0s[run_of]
    cols["warmup"] = warmup
    cols["measured"] = measured
    return rows, cols, evals, epochs


@functools.lru_cache(maxsize=4)
def _named_row(columns: tuple[str, ...]) -> type:
    return collections.namedtuple("Row", columns)


def _row_type(catalog: Catalog) -> type:
    """The row of `runs` as a namedtuple of row_columns() (a model's own axis among them): every value is
    given by name, none by its place, and a tuple costs a third of a dict."""
    return _named_row(tuple(row_columns(catalog)))


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


def analyze_file(path: str | os.PathLike, rule: Rule | None = None, log_format: str | None = None,
                 catalog: Catalog | None = None):
    """Analyze one log: (run rows, its records as columns, evaluation rows, loss components as
    columns, epoch rows), by the catalog's axes and metrics (None: the default one). Raises LogError if it
    cannot."""
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
                parsers.scan(c, fmt, others=log_format is None) for c in read), fmt.rates_per_step)
            for draft in drafts if fmt.conclude else ():
                fmt.conclude(draft)
        except scanning.Refused as exc:
            raise LogError(str(path), str(exc)) from None
    if not drafts:
        raise LogError(str(path), f"recognised as {fmt.name} but no run was found in it")
    _find_failures(path, drafts)
    record = records.config_beside(path) if isinstance(path, Path) else {}  # (none in an archive)
    rows, cols, evals, epochs = _runs(drafts, path, fmt, rule, stats, _table_values(tables), record,
                                      catalog or default_catalog())
    return rows, cols, evals, file_losses(losses, drafts, cols), epochs


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


def analyze(paths: Iterable[str | os.PathLike], rule: Rule | None = None, log_format: str | None = None,
            catalog: Catalog | None = None) -> Analysis:
    """Analyze logs and folders of logs; bad files become problems, good ones results. The frames' axes and
    metrics are the catalog's (None: `core.catalog.default()`, every model's and format's, whatever was
    imported before)."""
    import pandas as pd

    rule = rule or Rule()
    catalog = catalog or default_catalog()
    files, problems = log_files(paths)
    rows, iters, evals, losses, epochs = [], [], [], [], []
    for path in files:
        try:
            r, i, e, lo, ep = analyze_file(path, rule, log_format, catalog)
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
    runs = pd.DataFrame(rows, columns=row_columns(catalog))
    for col in catalog.of_kind(int):
        runs[col] = pd.to_numeric(runs[col], errors="coerce").astype("Int64")
    iterations = iteration_frame(iters)
    named = [*eval_columns(catalog), *EVAL_NAMED_COLUMNS] if any("metric" in e for e in evals) \
        else list(eval_columns(catalog))
    evaluations = pd.DataFrame(evals, columns=named) if evals else pd.DataFrame().reindex(columns=named)
    epoch_frame = pd.DataFrame(epochs, columns=list(EPOCH_COLUMNS)).astype(EPOCH_TYPES)
    return Analysis(runs=runs, iterations=iterations, evaluations=evaluations, epochs=epoch_frame, problems=problems,
                    rule=rule, losses=loss_frame(losses), catalog=catalog,
                    measures=measures(runs, catalog, iterations, rule))


