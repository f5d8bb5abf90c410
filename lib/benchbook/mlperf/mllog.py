"""Reading one MLPerf Training result file (`result_N.txt`): the run it holds, as the MLLOG lines say.

The file is read line by line (bounded memory). What a line is, and what a run keeps of it, is the
engine's MLLOG format's (`logs/parsers/mllog.py`: the one reader of the line forms, which `benchbook
analyze` uses too); this module is the scorer's fast loop over a file, with its errors (file and line).
"""

from __future__ import annotations

from pathlib import Path

from ..errors import LogError
from ..logs.archives import ArchivePath
from ..logs.parsers.mllog import (
    TOKEN,
    TOKEN_V05,
    TOKEN_V06,
    TOKEN_V07,
    UNIT_SECONDS,
    V05_REFUSED,
    Evaluation,
    LineError,
    Run,
    needed,
    parse_v06,
    parse_v07,
    take,
    unneeded,
)

__all__ = ["UNIT_SECONDS", "Evaluation", "Run", "read"]


def read(path: str | Path | ArchivePath) -> Run:
    """The run of one result file. Raises LogError (file and line) for a file that is no MLLOG result
    (missing, v0.5, no MLLOG line, JSON that does not parse); a run without run_start or run_stop is
    returned with its problems (a truncated file ends before run_stop)."""
    name = str(path)
    run: Run | None = None
    number = 0
    last_was_cut = False
    try:
        opened = path.open(encoding="utf-8", errors="replace") if isinstance(path, ArchivePath) else \
            open(path, encoding="utf-8", errors="replace")
        with opened as f:
            for number, text in enumerate(f, 1):
                if TOKEN not in text:  # most lines: the launcher's and the framework's
                    continue
                at = text.find(TOKEN)
                if text.startswith(TOKEN_V07, at):
                    unit, parse, body = "ms", parse_v07, text[at + len(TOKEN_V07):]
                elif text.startswith(TOKEN_V06, at):
                    unit, parse, body = "s", parse_v06, text[at + len(TOKEN_V06):]
                elif text.startswith(TOKEN_V05, at):
                    raise LogError(name, f"line {number}: {V05_REFUSED}")
                else:
                    continue
                last_was_cut = not text.endswith("\n")
                if run is None:
                    run = Run(name, unit)
                elif run.unit != unit:
                    raise LogError(name, f"line {number}: mixes ':::MLL' (v0.6, seconds) and ':::MLLOG' "
                                         "(v0.7 on, milliseconds) lines")
                if unneeded(body, unit):
                    continue
                try:
                    record = parse(body)
                except LineError as exc:
                    if last_was_cut:
                        raise LogError(name, f"line {number}: the file is truncated: its last MLLOG line "
                                             "is cut short") from None
                    raise LogError(name, f"line {number}: {exc}") from None
                if needed(record[1]):
                    take(run, number, *record)
    except OSError as exc:
        raise LogError(name, f"cannot read: {exc.strerror or exc}") from None
    if run is None:
        raise LogError(name, "no MLLOG line (':::MLLOG' or ':::MLL'): not an MLPerf Training result file")
    run.lines = number
    if run.run_start is None:
        run.problems.append(f"{name}: no run_start in its {number} lines")
    elif run.run_stop is None:
        run.problems.append(f"{name}: no run_stop after run_start (line {run.run_start_line}); the file ends "
                            f"at line {number}: a truncated or aborted run")
    return run
