"""Reading one MLPerf Training result file (`result_N.txt`): the run it holds, as the MLLOG lines say.

The file is read as `analyze` reads it (`logs.textio`: bounded chunks of whole lines). What a line is,
and what a run keeps of it, is the engine's MLLOG format's (`logs/parsers/mllog.py`: the one reader of
the line forms, which `benchbook analyze` uses too); this module is the scorer's fast loop over a file,
with its errors (file and line). An `eval_accuracy` record whose metadata names its `metric` (Stable
Diffusion's FID and CLIP, each its own record) is kept as a `Named` evaluation, with its metadata's numbers,
for a target the rules build from such records (`rules.Target.aggregate`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import LogError
from ..logs import textio
from ..logs.archives import ArchivePath
from ..logs.parsers.mllog import (
    TOKEN,
    TOKEN_V06,
    TOKEN_V07,
    UNIT_SECONDS,
    Evaluation,
    LineError,
    Run,
    needed,
    parse_v06,
    parse_v07,
    take,
    unneeded,
)
from . import v05

__all__ = ["UNIT_SECONDS", "Evaluation", "Named", "Result", "Run", "read"]


@dataclass(frozen=True)
class Named(Evaluation):
    """An evaluation record whose metadata names its metric (`metadata.metric`): one metric of an
    evaluation whose metrics are logged one record each; `meta` its metadata's numbers (samples_count,
    step_num), which say which evaluation it belongs to."""

    meta: tuple[tuple[str, float], ...] = ()

    def group(self, field: str) -> float | None:
        return next((v for k, v in self.meta if k == field), None)


@dataclass
class Result(Run):
    """A result file's run, with what the scorer reads beside the engine's run: the tensors its
    weights_initialization records name (None for a record naming none), for the v1.1 difference with the
    official tool (`official.differences`)."""

    tensors: list[str | None] = field(default_factory=list)


_WEIGHTS = '"key": "weights_initialization"'


def _weights(run: Result, body: str) -> None:
    """A weights_initialization record's tensor (metadata.tensor), the line one (its key near the start)."""
    try:
        _, _, _, metadata = parse_v07(body)
    except LineError:
        return
    tensor = metadata.get("tensor") if isinstance(metadata, dict) else None
    run.tensors.append(str(tensor) if tensor is not None else None)


def _named(run: Run, number: int, time: float, value, metadata: dict) -> bool:
    """Keep an eval_accuracy whose metadata names its metric as a Named evaluation (True), as the
    compliance checker's BEGIN block reads it (`'metric' in metadata`); its value a finite number."""
    if not isinstance(metadata, dict) or "metric" not in metadata or run.run_stop is not None:
        return False
    meta = tuple((str(k), float(v)) for k, v in metadata.items()
                 if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v))
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        numbers = dict(meta)
        run.evaluations.append(Named(number, time, numbers.get("epoch_num"), numbers.get("samples_count"),
                                     str(metadata["metric"]), float(value), "eval_accuracy", meta))
    return True


def read(path: str | Path | ArchivePath) -> Result:
    """The run of one result file. Raises LogError (file and line) for a file that is no MLLOG result
    (missing, no MLLOG line, JSON that does not parse, forms of two rounds); v0.5's `:::MLPv0.5.0` lines are
    read by `v05` (times in seconds); a run without run_start or run_stop is
    returned with its problems (a truncated file ends before run_stop). The file is read as `analyze`
    reads it (`textio.chunks`: bounded chunks of whole lines, a line past 8 MiB left out and named); a
    line's number is looked up only for a record kept or refused (most are neither)."""
    name = str(path)
    run: Run | None = None
    form = None  # the line form: ':::MLLOG ', ':::MLL ' or ':::MLPv0.5.0'
    stats = textio.ReadStats()
    lines = 0
    for chunk in textio.chunks(path, stats):
        text = chunk.text
        lines = chunk.first_line + len(chunk.ends) - 2
        at = text.find(TOKEN)
        while at >= 0:  # each line that holds the token (most lines do not: the launcher's, the framework's)
            end = text.find("\n", at)  # a chunk's text ends with a newline
            if text.startswith(TOKEN_V07, at):
                token, unit, parse = TOKEN_V07, "ms", parse_v07
            elif text.startswith(TOKEN_V06, at):
                token, unit, parse = TOKEN_V06, "s", parse_v06
            elif text.startswith(v05.TOKEN, at):
                token, unit, parse = v05.TOKEN, "s", v05.parse
            else:
                at = text.find(TOKEN, end)
                continue
            body = text[at + len(token):end]
            if run is None:
                run, form = Result(name, unit), token
            elif form != token:
                raise LogError(name, f"line {_number(chunk, at)}: mixes {form.strip()!r} and {token.strip()!r} "
                                     "lines (two rounds' log formats: ':::MLPv0.5.0' v0.5, ':::MLL' v0.6 in "
                                     "seconds, ':::MLLOG' v0.7 on in milliseconds)")
            if token is v05.TOKEN:
                if v05.key_of(body) in v05.KEPT:
                    _take(run, chunk, at, parse, body, stats.cut_last_line, v05.fold)
            elif not unneeded(body, unit):
                _take(run, chunk, at, parse, body, stats.cut_last_line)
            elif token is TOKEN_V07 and body.find(_WEIGHTS, 0, 160) >= 0:
                _weights(run, body)
            at = text.find(TOKEN, end)
    if run is None:
        raise LogError(name, "no MLLOG line (':::MLLOG', ':::MLL' or ':::MLPv0.5.0'): not an MLPerf Training "
                             "result file")
    run.lines = lines
    if count := stats.long_count:  # worded as analyze words it: the first lines, ", ..." where there are more
        more = ", ..." if count > len(stats.long_lines) else ""
        run.problems.append(f"{name}: {count} line{'s' if count > 1 else ''} of {textio.LINE_BYTES >> 20} MiB or "
                            f"more left out (line {', '.join(map(str, stats.long_lines))}{more}), as analyze "
                            "leaves them out")
    if stats.fault:
        run.problems.append(f"{name}: {stats.fault}")
    if run.run_start is None:
        run.problems.append(f"{name}: no run_start in its {lines} lines")
    elif run.run_stop is None:
        run.problems.append(f"{name}: no run_stop after run_start (line {run.run_start_line}); the file ends "
                            f"at line {lines}: a truncated or aborted run")
    return run


def _number(chunk: textio.Chunk, at: int) -> int:
    """The file line number of the text at `at` in the chunk."""
    return chunk.first_line + int(chunk.ends.searchsorted(at))


def _take(run: Run, chunk: textio.Chunk, at: int, parse, body: str, file_cut: bool, fold=None) -> None:
    """Parse one line's record and take it into the run when it is kept; LogError (file and line) when
    it does not parse (a file cut short in its last line says so)."""
    number = _number(chunk, at)
    try:
        record = parse(body)
    except LineError as exc:
        if file_cut and number == chunk.first_line + len(chunk.ends) - 2:
            raise LogError(run.path, f"line {number}: the file is truncated: its last MLLOG line is cut "
                                     "short") from None
        raise LogError(run.path, f"line {number}: {exc}") from None
    if fold is not None:  # a v0.5 record (`v05.fold`)
        fold(run, number, record)
        return
    time, key, value, metadata = record
    if needed(key) and not (key == "eval_accuracy" and _named(run, number, time, value, metadata)):
        take(run, number, *record)
