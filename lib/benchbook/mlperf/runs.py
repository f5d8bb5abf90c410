"""Our own runs as MLPerf results: a benchbook study folder (`runs/<study>/`, `runs-smoke/<study>/`)
whose workload wrote MLLOG lines (`mlperf_logging.mllog`) into `runfolder.MLLOG` (mllog.txt) in each
run folder. Each sweep point is one result and its repeats are the runs: the run folders
`<point>_r<repeat>` (the runner's layout, `studies.study._run_id`), each with its `run.json`.

The result is named as MLCommons would: submitter "benchbook", the system the machine the runs ran
on (the record's launcher host; else the study name), the benchmark the log's `submission_benchmark`.
The round is `--round`, else the newest round whose rules know the benchmark's target (said among the
problems). A point with fewer runs than the round requires is invalid, with the reason; its runs are
still listed. Nothing in the folder is written.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from ..errors import BenchbookError, LogError
from ..runfolder import MLLOG
from . import mllog, results, rules

SUBMITTER = "benchbook"
_REPEAT = re.compile(r"_r\d+$")


def _latest_round(benchmark: str) -> str | None:
    rounds = rules.rounds_with_target(benchmark)
    return max(rounds, key=lambda r: tuple(map(int, r.split("."))), default=None)


def _host(record: dict) -> str | None:
    launcher = record.get("launcher")
    host = launcher.get("hostname") if isinstance(launcher, dict) else None
    return host if isinstance(host, str) and host else None


def score_study(study_dir: Path, round_: str | None = None) -> list[results.Folder]:
    """One result per sweep point of the study folder, its repeats the runs, in point order."""
    from ..runfolder import records  # pandas: only where a study folder is read

    found, wrong = records.scan(study_dir)
    notes = [f"{study_dir / name}: {why}" for name, why in wrong]
    points: dict[str, list[tuple[int, str, dict]]] = {}
    for run_id, record in found.items():
        if not (study_dir / run_id / MLLOG).is_file():
            notes.append(f"{study_dir / run_id / MLLOG}: missing (the run wrote no MLPerf log): left out")
            continue
        repeat = (record.get("config") or {}).get("repeat")
        points.setdefault(_REPEAT.sub("", run_id), []).append(
            (repeat if isinstance(repeat, int) else 0, run_id, record))
    study = study_dir.name
    out = []
    for point, members in sorted(points.items()):
        members.sort(key=lambda m: (m[0], m[1]))
        files = [study_dir / run_id / MLLOG for _, run_id, _ in members]
        problems = list(notes)
        benchmark = _logged_benchmark(files)
        key = rules.round_key(round_) if round_ else _latest_round(benchmark or "")
        if not round_ and key:
            problems.append(f"the round is not logged: scored by the v{key} rule, the newest with a target for "
                            f"{benchmark} (give --round)")
        host = next((h for _, _, r in members if (h := _host(r))), None)
        folder = results.score_files(os.fspath(study_dir / point), files, key, benchmark=benchmark,
                                     submitter=SUBMITTER, system_name=host or study, problems=problems)
        for detail, (_, run_id, _) in zip(folder.run_details, members, strict=True):
            detail["file"] = f"{run_id}/{MLLOG}"
        out.append(folder)
    return out


def score(paths: list[str | Path], round_: str | None = None) -> list[results.Folder]:
    """Every result under `paths`: the result folders (`results`), then each sweep point of the benchbook
    study folders, in a stable order."""
    folders, studies = results.find_all(paths)
    if not folders and not studies:
        raise BenchbookError(f"no result_N.txt, and no run folder with {results.RECORD} and {MLLOG}, under "
                             f"{', '.join(map(str, paths))}")
    return [*(results.score_folder(f, round_) for f in folders),
            *(point for study in studies for point in score_study(study, round_))]


def _logged_benchmark(files: list[Path]) -> str | None:
    """The first `submission_benchmark` the runs' logs give."""
    for path in files:
        try:
            name = mllog.read(path).submission.get("benchmark")
        except LogError:
            continue
        if isinstance(name, str) and name:
            return rules.BENCHMARK_ALIASES.get(name, name)
    return None
