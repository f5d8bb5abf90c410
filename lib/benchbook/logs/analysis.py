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
import sys
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
    EVAL_COLUMNS,
    ITERATION_COLUMNS,
    LOSS_COLUMNS,
    MEASURE_COLUMNS,
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

    if name in ("RUN_COLUMNS", "ROW_COLUMNS"):
        return getattr(frames, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _meta(draft: RunDraft, path: Path, fmt: LogFormat, record: dict, tables: dict[tuple, dict], catalog: Catalog):
    """A run's metadata from the log, its file name and run record; the warnings that gives."""
    from . import assemble

    meta = draft.meta  # the draft's own: a file may hold 10**6 runs, each copy costs
    warnings: list[str] = []
    for key, value in fmt.finish(meta, draft.ranks).items():
        meta.setdefault(key, value)
    warnings.extend(fmt.warn(meta))
    named, said = fmt.named_model(meta, catalog)  # where the log names its model (arch), through the models' names
    if named is not None:
        meta["model"] = named
    warnings += said + assemble.out_of_range(meta, catalog)  # (a file name's or run record's may fill it)
    origin: dict[str, str] = {}  # where a value came from, when not from the log
    for source, extra in (("the file name", from_path(path, draft.index)), ("the run record", record)):
        for key, value in extra.items():
            if meta.get(key) is None:
                meta[key], origin[key] = value, source
            elif meta[key] != value:
                first = origin.get(key, "the log")
                warnings.append(f"{key} is {assemble.said(meta[key])} in {first} but {assemble.said(value)} in "
                                f"{source}; {first} wins")
    warnings += assemble.out_of_range(meta, catalog)
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


def _evaluations(draft: RunDraft, source: str, t0: float | None, catalog: Catalog
                 ) -> tuple[list[dict], dict[str, float | None]]:
    """The run's evaluation rows (EVAL_COLUMNS: one per evaluation and quality metric it logged, a catalog metric
    in its unit, a metric a format names itself as logged) and the last value of each `final` metric."""
    from .parsers.scanning import seconds

    declared = catalog.metrics
    rows, last = [], {m.final_key: None for m in declared if m.final}
    for e in draft.evals:
        stamp = seconds(e.get("timestamp"))
        common = {"source": source, "run": draft.index, "line": e.get("line"), "epoch": e.get("epoch"),
                  "eval_throughput": e.get("eval_throughput"), "timestamp": stamp,
                  "elapsed": stamp - t0 if t0 is not None else math.nan}
        values = [(m, m.as_logged(e.get(m.key))) for m in declared]
        values = [(m, v) for m, v in values if v is not None]
        rows += [{**common, "metric": m.key, "value": v, "unit": m.unit} for m, v in values]
        if "metric" in e:  # a format's named metrics (MLLOG's accuracy, BBOX, SEGM), as logged
            rows.append({**common, "metric": e["metric"], "value": e["value"], "unit": ""})
        elif not values:  # an evaluation that logged its throughput alone: kept
            rows.append({**common, "metric": None, "value": None, "unit": ""})
        last.update({m.final_key: float(v) for m, v in values if m.final})
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
    described: str  # the applied rule in words, in samples (`words`: in a model's own unit's noun)
    read_warnings: list[str]
    catalog: Catalog
    row: type  # a namedtuple of row_columns(): every value named, in the frame's order
    _words: dict = field(default_factory=dict, compare=False)  # (model, framework) -> the rule in its words

    def words(self, model, framework) -> str:
        """The applied rule in words, in what the run's model counts (its unit's noun: images, sequences)."""
        if (model, framework) not in self._words:
            unit = self.catalog.unit_of(model, framework)
            noun = unit.split("/")[0] if unit else "samples"
            self._words[model, framework] = self.described if noun == "samples" else self.applied.describe(noun)
        return self._words[model, framework]


def _one_run(file: _File, draft: RunDraft, meta: dict, warnings: list[str], own: dict, t0: float | None,
             refused: list[str]):
    """One run's row (named values), evaluation rows and epoch rows, and its warm-up and measured
    records, the rule applied to its views of the file's columns (`own`); `refused`: its records whose
    logged rate was refused."""
    import numpy as np

    from . import assemble
    from .rules import Run, apply

    size = _sizes(meta)
    run = Run(own, meta)
    warm, use, got, wall, run_epochs = apply(run, file.applied, size.samples)
    records = len(own["line"]) > 0
    reported = _reported(draft, warnings)
    warnings += refused
    status, said = _status(draft, reported, records)
    warnings += said + assemble.metadata_warnings(draft, meta)
    warnings += assemble.rate_warnings(got, reported, wall, file.applied.method, file.rule.tolerance, records)
    iterations = int(np.count_nonzero(use))
    if not isinstance(run.own, slice) and iterations:
        warnings += assemble.rank_warnings(own["rank"], own["throughput"], int(run["rank"][0]), file.rule.tolerance)
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
        recomputed_throughput=got, elapsed_throughput=wall, rule=file.words(axes["model"], axes["framework"]),
        iterations=iterations,
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

    from . import assemble
    from .parsers.scanning import seconds_array
    from .rules import fill_steps

    applied = rule.resolve(fmt)  # the format's named rule with the user's parts: one frozen object
    file = _File(str(path), fmt, rule, applied, applied.describe(), assemble.read_warnings(stats), catalog,
                 _row_type(catalog))
    cols = drafts[0].store.release()  # the records of every run, in file order (assemble.fold)
    bounds = np.concatenate(([0], np.cumsum([d.count for d in drafts]))).astype(np.int64)  # where each begins
    n, edges = len(cols["line"]), bounds.tolist()
    run_of = np.repeat(np.arange(len(drafts)), np.diff(bounds))
    refused = assemble.refused_rates(cols["throughput"], cols["line"], run_of, len(drafts))
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


def _long_line_in(head: str) -> str:
    """What a log's head, which tells its format, is filled by when one line takes most of it (a pasted blob, a
    progress bar without line ends): that line, so that the reader knows the format may follow it."""
    from . import textio

    start = head.rfind("\n") + 1
    if len(head) < textio.SNIFF_BYTES or len(head) - start < textio.SNIFF_BYTES // 2:
        return ""
    line = head.count("\n", 0, start) + 1
    where = "fills them" if start == 0 else f"from byte {start} on, runs past them"
    return f"; line {line}, {where}: a format logged after it is told with --format NAME"


def analyze_file(path: str | os.PathLike, rule: Rule | None = None, log_format: str | None = None,
                 catalog: Catalog | None = None):
    """Analyze one log: (run rows, its records as columns, evaluation rows, loss components as
    columns, epoch rows), by the catalog's axes and metrics (None: the default one). Raises LogError if it
    cannot."""
    from ..runfolder import records
    from . import assemble, parsers, textio
    from .assemble import fold
    from .parsers import scanning

    rule = rule or Rule()
    path = path if isinstance(path, ArchivePath) else Path(path)
    stats = textio.ReadStats()
    chunks = textio.chunks(path, stats)
    with contextlib.closing(chunks):
        first = next(chunks, None)  # the format is told by the head of the first chunk: the file is read once
        head = first.text[: textio.SNIFF_BYTES] if first is not None else ""
        fmt = parsers.get(log_format) if log_format else parsers.detect(head)
        if fmt is None:
            raise LogError(str(path), "no known log format in its first 64 KiB "
                                      f"(known: {', '.join(sorted(parsers.FORMATS))})" + _long_line_in(head)
                                      + "".join(f"; {w}" for w in assemble.read_warnings(stats)
                                                if "left out unread" in w))
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


def _debug_traceback(path) -> None:
    """With BENCHBOOK_DEBUG set, the traceback of one file's error on standard error (the file stays a problem,
    the other files' results stand), as the CLI gives it for an error that ends a command."""
    if os.environ.get("BENCHBOOK_DEBUG"):
        import traceback

        print(f"benchbook: BENCHBOOK_DEBUG: the error reading {path}:", file=sys.stderr)
        traceback.print_exc(file=sys.stderr)


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
            _debug_traceback(path)
            problems.append(Problem(str(path), f"could not be parsed: {type(exc).__name__}: {exc}"))
            continue
        except Exception as exc:  # noqa: BLE001 - whatever one file does, the others' results stand
            _debug_traceback(path)
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
    evaluations = pd.DataFrame(evals, columns=list(EVAL_COLUMNS)) if evals else \
        pd.DataFrame().reindex(columns=list(EVAL_COLUMNS))
    epoch_frame = pd.DataFrame(epochs, columns=list(EPOCH_COLUMNS)).astype(EPOCH_TYPES)
    return Analysis(runs=runs, iterations=iterations, evaluations=evaluations, epochs=epoch_frame, problems=problems,
                    rule=rule, losses=loss_frame(losses), catalog=catalog,
                    measures=measures(runs, catalog, iterations, rule))


