"""Result folders of an MLPerf Training results repository, found and scored without writing a byte.

The layout of `mlcommons/training_results_v<X.Y>`: `<Submitter>/results/<system>/<benchmark>/result_N.txt`
(+ `scaling.json`, committed by the review from v2.1 on) beside `<Submitter>/systems/<system>.json`.
A path may be a clone, a submitter folder, a `results/` folder or one `<system>/<benchmark>` folder,
or an archive holding one (read where it lies: `logs.archives`).
"""

from __future__ import annotations

import ast
import json
import math
import os
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePosixPath

from ..core import userfiles
from ..errors import BenchbookError, LogError
from ..logs import archives
from ..logs.archives import ArchivePath
from ..runfolder import MLLOG
from . import consistency, mllog, official, power, rules, v05
from .accelerators import normalise

# A result file is what mlperf-logging globs: `result_*.txt` (package_checker.py:98, result_summarizer.py:361
# of 4.1.68): `result_3.txt`, and as some submitters name them `result_<id>_3.txt`, `result_run3.txt`.
RESULT_FILE = re.compile(r"result_[^/]*\.txt", re.DOTALL)
_DIGITS = re.compile(r"(\d+)")
# The names submitters give them: result_<n>.txt, result_<id>_<n>.txt, result_run<n>.txt, n a plain number.
# (zero-padded too: result_01.txt, as 22 folders name theirs)
PLAIN_NAME = re.compile(r"result_(?:[A-Za-z0-9.+-]+_|run)?\d{1,6}\.txt")
ROUND_IN_PATH = re.compile(r"^training_results_v(\d+\.\d+)$|^v(0\.5)\.0$")  # (v0.5's layout: v0.5.0/<submitter>/...)
RECORD = "run.json"  # runfolder.records.RECORD, named here so that scoring needs no pandas (records does)


@dataclass
class Folder:
    """One scored result folder: the JSON line of `benchbook mlperf score --json`."""

    folder: str
    round: str | None
    benchmark: str
    submitter: str | None
    system: str
    score_minutes: float | None
    valid: bool
    reason: str
    runs: int
    runs_failed: int
    runs_required: int | None
    scaling_factor: float | None
    accelerators: int | None
    accelerator: str | None
    framework: str | None
    accelerator_minutes: float | None
    division: str | None
    target: str | None
    target_source: str | None
    problems: list[str] = field(default_factory=list)
    run_details: list[dict] = field(default_factory=list)
    accelerator_vendor: str | None = None  # `accelerators.normalise` of `accelerator` (the raw name)
    accelerator_model: str | None = None
    accelerator_memory: str | None = None
    frameworks_listed: str | None = None  # the systems file's `framework` where it lists several (`framework`: ours)
    energy_joules: float | None = None  # where the folder has power/ logs (`power.energy`)
    # where the official tool's score differs: its figure and the cause (`official.differences`)
    official: dict | None = None
    entry: str | None = None  # v0.5: the submitter's entry folder (v0.5.0/<submitter>/<entry>/results/...)

    def as_dict(self) -> dict:
        return asdict(self)


def is_result_file(name: str) -> bool:
    return RESULT_FILE.fullmatch(name) is not None


def _natural(name: str) -> list:
    """result_2 before result_10: digit runs compared by length then digits (no int of a 5,000-digit name)."""
    return [(len(t.lstrip("0")), t) if i % 2 else (0, t) for i, t in enumerate(_DIGITS.split(name))]


def result_files(folder: Path | ArchivePath, skipped: list[str] | None = None) -> list[Path | ArchivePath]:
    """The folder's result files, in natural order: regular files on a disk file system, a link judged
    by what it names; the others (a FIFO, a device, a link to /proc/kmsg) are never read, each named
    in `skipped`. OSError when the folder cannot be listed."""
    named = sorted((p for p in folder.iterdir() if is_result_file(p.name)), key=lambda p: _natural(p.name))
    if isinstance(folder, ArchivePath):  # (an archive lists its regular members only)
        return [p for p in named if p.is_file()]
    found, pseudo = [], userfiles.pseudo_devices()
    for p in named:
        try:
            why = userfiles.refusal(p.stat(), pseudo)
        except FileNotFoundError:  # a link to nothing
            continue
        except OSError as exc:
            why = f"cannot be read ({exc.strerror or exc})"
        if why is None:
            found.append(p)
        elif skipped is not None:
            skipped.append(f"{p}: {why}{userfiles.linked(p)}")
    return found


def _open(path: Path | ArchivePath):
    """A small file of a result folder opened in binary: a regular file only (`userfiles.open_regular`)."""
    return path.open("rb") if isinstance(path, ArchivePath) else userfiles.open_regular(path)


def find(paths: list[str | Path]) -> list[Path | ArchivePath]:
    """Every folder holding result_N.txt files under `paths` (each a folder or an archive; archives in
    folders too), in a stable order."""
    return find_all(paths)[0]


def find_all(paths: list[str | Path]) -> tuple[list[Path | ArchivePath], list[Path]]:
    """(the result folders under `paths`, as `find`; the benchbook study folders under them: a folder
    whose run folders hold run.json and mllog.txt, `runs.score_study`)."""
    found: dict[Path | ArchivePath, None] = {}
    studies: dict[Path, None] = {}
    for path in map(Path, paths):
        if archives.kind(path.name) and path.is_file():
            found.update(dict.fromkeys(_archived(path, named=True)))
            continue
        if not path.is_dir():
            raise BenchbookError(f"{path}: no such folder (give a results repository, a submitter folder, a "
                                 "results/ folder or one <system>/<benchmark> folder, or an archive of one)")
        unlisted: list[OSError] = []  # a folder that cannot be listed: scored as one, which names why
        for root, dirs, files in userfiles.walk(path, onerror=unlisted.append):
            dirs.sort()
            found.update((Path(e.filename), None) for e in unlisted)
            unlisted.clear()
            if any(map(is_result_file, files)):
                found[Path(root)] = None
            elif MLLOG in files and RECORD in files:  # a run folder of a benchbook study
                studies[Path(root).parent] = None
            for f in sorted(f for f in files if archives.kind(f)):
                found.update(dict.fromkeys(_archived(Path(root, f), named=False)))
        found.update((Path(e.filename), None) for e in unlisted)
    return list(found), list(studies)


def _archived(path: Path, named: bool) -> list[ArchivePath]:
    """The result folders in an archive (and in the archives it holds). An archive named that holds
    none and could not be read whole is an error saying why."""
    listing = archives.listing(path)
    folders: dict[ArchivePath, None] = {}
    for each in (listing, *listing.nested.values()):
        named_files = sorted(PurePosixPath(n) for n in each.files if is_result_file(PurePosixPath(n).name))
        folders.update((ArchivePath(each, archives.folder_of(str(n))), None) for n in named_files)
    if named and not folders and listing.problems:
        raise BenchbookError("; ".join(f"{p.source}: {p.reason}" for p in listing.problems))
    return list(folders)


def round_of(folder: Path, given: str | None) -> str | None:
    """--round when given, else the path's `training_results_vX.Y` component."""
    if given:
        return rules.round_key(given)
    for part in reversed(folder.resolve().parts):
        m = ROUND_IN_PATH.match(part)
        if m:
            return m.group(1) or m.group(2)
    return None


def _system(submitter_dir: Path | None, system: str, problems: list[str]) -> dict:
    if submitter_dir is None:
        problems.append(f"no systems/{system}.json: the folder is not under <Submitter>/results/")
        return {}
    path = submitter_dir / "systems" / f"{system}.json"
    try:
        with _open(path) as f:
            data = f.read(MAX_SMALL_JSON + 1)
        text = data.decode("utf-8")
    except FileNotFoundError:
        problems.append(f"{path}: missing (accelerators, accelerator and framework unknown)")
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        problems.append(f"{path}: cannot be read ({exc})")
        return {}
    try:
        if len(data) > MAX_SMALL_JSON:
            raise ValueError(f"larger than {MAX_SMALL_JSON} bytes")
        described = _strict_json(text) if text.lstrip().startswith("{") else _system_v06(text)
    except (ValueError, SyntaxError, TypeError, KeyError, RecursionError, MemoryError) as exc:
        why = "nested too deep" if isinstance(exc, (RecursionError, MemoryError)) else repr(exc)[:200]
        problems.append(f"{path}: neither a JSON object nor v0.6's 'key: {{json}}' lines ({why})")
        return {}
    if not isinstance(described, dict):
        problems.append(f"{path}: expected a JSON object")
        return {}
    return described


def _entry_system(path: Path | ArchivePath, problems: list[str]) -> dict:
    """v0.5's `<system>/entry.json` as a systems file's fields (`v05.system`), or {} with the problem."""
    try:
        with _open(path) as f:
            data = f.read(MAX_SMALL_JSON + 1)
        if len(data) > MAX_SMALL_JSON:
            raise ValueError(f"larger than {MAX_SMALL_JSON} bytes")
        return v05.system(data.decode("utf-8"))
    except (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError, RecursionError) as exc:
        problems.append(f"{path}: not v0.5's entry.json (a JSON object with nodes: [{{num_accelerators, num_nodes, "
                        f"accelerator}}]): {repr(exc)[:200]}")
        return {}


def _system_v06(text: str) -> dict:
    """v0.6's systems file: `key: {"value": ...}` lines, whose `entry` value is a Python literal (its
    `nodes` another one) naming the framework, accelerator, accelerators per node and nodes."""
    lines = dict(line.split(": ", 1) for line in text.splitlines() if line.strip())
    entry = ast.literal_eval(json.loads(lines["entry"])["value"])
    nodes = ast.literal_eval(entry["nodes"]) if isinstance(entry["nodes"], str) else entry["nodes"]
    nodes = nodes[0] if isinstance(nodes, list) else nodes
    return {"accelerators_per_node": nodes["num_accelerators"], "number_of_nodes": nodes["num_nodes"],
            "accelerator_model_name": nodes["accelerator"], "framework": entry["framework"],
            "division": json.loads(lines["division"])["value"] if "division" in lines else None}


# The most a committed scaling.json may multiply a score by. RCP normalisation is the one scaling the
# review applies: the RCP mean over the submission's mean epochs, never below 1 (mlperf-logging 4.1.68,
# rcp_checker.py:460-462), and only where the submission is within the record's "Max Speedup" (:487):
# the largest of its 539 training records is 1.37 (llama31_405b, 5.0.0, with :479-480's offset), one
# degenerate gpt3 4.1.0 record of identical runs aside. 2.0 leaves room above that and refuses forgeries.
MAX_SCALING = 2.0
MAX_ACCELERATORS = 10**7  # accelerators_per_node x number_of_nodes: above any system submitted (thousands)
MAX_SMALL_JSON = 1 << 20  # a scaling.json or systems file: a few hundred bytes


def _accelerators(system: dict, path: str, problems: list[str]) -> int | None:
    """accelerators_per_node x number_of_nodes, each a whole number (int or digits), at most MAX_ACCELERATORS."""
    if not system:
        return None
    counts = []
    for name in ("accelerators_per_node", "number_of_nodes"):
        value = system.get(name)
        if isinstance(value, str) and value.strip().isdecimal() and len(value.strip()) <= 8:
            value = int(value.strip())
        if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= MAX_ACCELERATORS:
            problems.append(f"{path}: {name} = {str(value)[:40]!r}: expected a whole number from 0 to "
                            f"{MAX_ACCELERATORS} (accelerators unknown)")
            return None
        counts.append(value)
    if counts[0] * counts[1] > MAX_ACCELERATORS:
        problems.append(f"{path}: accelerators_per_node x number_of_nodes = {counts[0] * counts[1]}: above "
                        f"{MAX_ACCELERATORS} (accelerators unknown)")
        return None
    if why := consistency.implausible_counts(system, *counts):
        problems.append(f"{path}: {why} (accelerators unknown)")
        return None
    return counts[0] * counts[1]


def _small_json(path: Path | ArchivePath) -> object:
    """A small JSON file, strictly: NaN and Infinity refused, at most MAX_SMALL_JSON bytes; ValueError
    (RecursionError for deep nesting) says why not."""
    with _open(path) as f:
        data = f.read(MAX_SMALL_JSON + 1)
    if len(data) > MAX_SMALL_JSON:
        raise ValueError(f"larger than {MAX_SMALL_JSON} bytes")
    return _strict_json(data.decode("utf-8"))


def _strict_json(text: str) -> object:
    """JSON with NaN and Infinity refused (ValueError): not JSON numbers."""

    def refuse(constant: str):
        raise ValueError(f"{constant} is not a JSON number")

    return json.loads(text, parse_constant=refuse)


def _scaling(folder: Path | ArchivePath, problems: list[str]) -> float | None:
    """The committed scaling.json's factor (1.0 without one): a JSON number from 1 to MAX_SCALING;
    None, with the problem, otherwise."""
    path = folder / "scaling.json"
    expected = f'expected {{"scaling_factor": <a JSON number from 1 to {MAX_SCALING}>}}'
    try:
        doc = _small_json(path)
    except FileNotFoundError:
        return 1.0
    except (OSError, ValueError, RecursionError) as exc:
        why = "nested too deep" if isinstance(exc, RecursionError) else str(exc)[:200]
        problems.append(f"{path}: {expected} ({why}): the folder is not scored")
        return None
    factor = doc.get("scaling_factor") if isinstance(doc, dict) else None
    if isinstance(factor, (int, float)) and not isinstance(factor, bool):
        try:
            value = float(factor)
        except OverflowError:
            value = math.inf
        if 1.0 <= value <= MAX_SCALING:
            return value
    shown = json.dumps(factor)[:40] if isinstance(doc, dict) else type(doc).__name__
    problems.append(f"{path}: scaling_factor = {shown}: {expected} (rcp_checker.py:460-462, :487 of "
                    "mlperf-logging 4.1.68): the folder is not scored")
    return None


def score_folder(folder: Path | ArchivePath, round_: str | None = None) -> Folder:
    """Read every result file of one folder and score it by the round's rule; a folder that cannot be
    listed is an invalid result saying so."""
    problems: list[str] = []
    if isinstance(folder, ArchivePath):  # what its archive refused there, or refused whole
        problems += [f"{p.source}: {p.reason}" for p in folder.listing.problems
                     if p.source == folder.listing.label or p.source.startswith(f"{folder}/")]
    try:
        files = result_files(folder, problems)
    except OSError as exc:
        return _unlisted(folder, round_, f"{folder}: cannot be listed ({exc.strerror or exc}): not scored")
    odd = [p.name for p in files if not PLAIN_NAME.fullmatch(p.name)]
    if odd:
        problems.append(f"{folder}: {', '.join(ascii(n) for n in odd[:10])}{' and more' if len(odd) > 10 else ''}: "
                        "read as result files (mlperf-logging counts every result_*.txt), but not named "
                        "result_<n>.txt, result_<id>_<n>.txt or result_run<n>.txt")
    system_name = folder.parent.name
    submitter_dir = folder.parent.parent.parent if folder.parent.parent.name == "results" else None
    entry = None
    if submitter_dir is not None and (folder.parent / "entry.json").is_file():  # v0.5: <submitter>/<entry>/results
        entry, submitter_dir = submitter_dir.name, submitter_dir.parent
        systems_path = str(folder.parent / "entry.json")
        system = _entry_system(folder.parent / "entry.json", problems)
    else:
        system = _system(submitter_dir, system_name, problems)
        systems_path = str(submitter_dir / "systems" / f"{system_name}.json") if submitter_dir else ""
    listed = system.get("framework")
    if isinstance(listed, str) and _FRAMEWORKS_SPLIT.search(listed):
        implementations = submitter_dir / "benchmarks" / folder.name / "implementations" if submitter_dir else None
        names = [system_name, *_names_in(implementations)]
        system = {**system, "framework": _framework(listed, names), "frameworks_listed": listed}
    found = score_files(str(folder), files, round_of(folder, round_),
                        benchmark=rules.BENCHMARK_ALIASES.get(folder.name, folder.name),
                        submitter=submitter_dir.name if submitter_dir else None, system_name=system_name,
                        system=system, systems_path=systems_path, factor=_scaling(folder, problems),
                        problems=problems)
    found.entry = entry
    if found.valid and (folder / "power").is_dir():
        if isinstance(folder, ArchivePath):  # (power.energy globs a folder on disk)
            found.problems.append(f"{folder / 'power'}: power logs inside an archive are not read: no energy for "
                                  "the result")
        else:
            found.energy_joules = power.energy(folder, found.run_details, found.scaling_factor, found.problems)
    return found


_FRAMEWORKS_SPLIT = re.compile(r"\s*[,;]\s*|\s+and\s+")


def _names_in(folder) -> list[str]:
    """The names in a folder (the implementations of a benchmark); none where it cannot be listed."""
    try:
        return [p.name for p in folder.iterdir()] if folder is not None and folder.is_dir() else []
    except OSError:
        return []


def _framework(listed: str, names: list[str]) -> str:
    """Of a systems file's several frameworks, the one the result ran on: the one whose name the system
    (dgxa100_ngc20.06_pytorch) or the benchmark's implementation folder names; else the list as it is."""
    parts = [p for p in _FRAMEWORKS_SPLIT.split(listed) if p.strip()]
    words = " ".join(names).lower()
    found = [p for p in parts if p.split()[0].lower() in words]
    return found[0] if len(found) == 1 else listed


def _unlisted(folder: Path | ArchivePath, round_: str | None, why: str) -> Folder:
    """A folder that cannot be listed: a system folder (`results/<system>`) or a benchmark folder."""
    is_system = folder.parent.name == "results"
    key = round_of(folder, round_)
    entry = folder.parent.parent if is_system and key == "0.5" else None  # v0.5: <submitter>/<entry>/results
    return Folder(folder=str(folder), round=f"v{key}" if key else None,
                  benchmark="unknown" if is_system else folder.name,
                  submitter=(entry.parent.name if entry else folder.parent.parent.name) if is_system else None,
                  entry=entry.name if entry else None,
                  system=folder.name if is_system else folder.parent.name, score_minutes=None, valid=False,
                  reason=why, runs=0, runs_failed=0, runs_required=None, scaling_factor=None, accelerators=None,
                  accelerator=None, framework=None, accelerator_minutes=None, division=None, target=None,
                  target_source=None, problems=[why])


def score_files(where: str, files: list, key: str | None, *, benchmark: str | None, submitter: str | None,
                system_name: str, system: dict | None = None, systems_path: str = "", factor: float | None = 1.0,
                problems: list[str] | None = None) -> Folder:
    """Score the runs of `files` (one result: a result folder's result_N.txt, a job's logs, a sweep
    point's mllog.txt) by the rule of round `key`. A benchmark the rule does not know, and a missing
    submitter, are taken from the logs' submission_* keys."""
    problems = [] if problems is None else problems
    system = system or {}
    runs: list[mllog.Run | LogError] = []
    for path in files:
        try:
            run = mllog.read(path)
            problems.extend(run.problems)
        except LogError as exc:
            run = exc
            problems.append(str(exc))
        runs.append(run)
    read = [r for r in runs if isinstance(r, mllog.Run)]
    logged = next((r.submission for r in read if r.submission), {})
    if (benchmark not in rules.RUNS_REQUIRED) and logged.get("benchmark"):  # a folder renamed: the logs say
        benchmark = str(logged["benchmark"])
    benchmark = benchmark or "unknown"
    submitter = submitter or logged.get("org")
    goal = rules.target(benchmark, key) if key else None
    required = rules.runs_required(benchmark, key)
    division = consistency.division(system, systems_path, read, problems)
    verdicts = []
    for path, run in zip(files, runs, strict=True):
        if isinstance(run, LogError):
            verdicts.append(rules.RunVerdict(str(path), None, None, False, run.reason, unread=True))
        else:
            verdicts.append(rules.judge(run, benchmark, key or "0.0", division))
    if key is None:
        result = rules.Score(None, False, "round unknown: no training_results_vX.Y in the path (give --round)",
                             required, 1, [])
    elif factor is None:
        why = next((p for p in problems if "scaling.json" in p), "scaling.json refused")
        result = rules.Score(None, False, why, required, 1, [])
    else:
        result = rules.score(verdicts, benchmark, factor, required)
    if key == "0.5":
        problems.extend(v05.target_problems(runs, goal))
    twins = consistency.identical(files)
    differs = official.differences(key, benchmark, verdicts, runs, twins, result, factor, required, division)
    if twins:
        copies = official.copies_reason(twins, required)
        problems.append(f"{where}: {copies}")
        if result.valid:
            result = rules.Score(None, False, copies, required, 1, [])
    if required is not None and len(files) > required:
        problems.append(f"{where}: {len(files)} result files, {benchmark} needs {required}: mlperf-logging's "
                        "package checker refuses another count (package_checker.py:131-139); all are scored, as "
                        "its result_summarizer scores them")
    if key and goal is None and benchmark in rules.RUNS_REQUIRED:
        why = rules.unread_target(benchmark, key) or f"none in {rules.RULES}"
        problems.append(f"no quality target known for {benchmark} in v{key} ({why}): run_stop's status alone "
                        "decides")
    accelerators = _accelerators(system, systems_path, problems)
    problems.extend(consistency.names_differ(system, systems_path, system_name, submitter))
    kind = normalise(system.get("accelerator_model_name"), system.get("accelerator_memory_capacity"))
    return Folder(
        folder=where, round=f"v{key}" if key else None, benchmark=benchmark, submitter=submitter,
        system=system_name, score_minutes=result.minutes, valid=result.valid, reason=result.reason,
        runs=len(files), runs_failed=sum(not v.converged for v in verdicts), runs_required=result.runs_required,
        scaling_factor=factor, accelerators=accelerators,
        accelerator=system.get("accelerator_model_name"), framework=system.get("framework"),
        accelerator_minutes=result.minutes * accelerators if result.minutes is not None and accelerators else None,
        division=division,
        target=goal.describe() if goal else None, target_source=goal.source if goal else None,
        problems=problems, run_details=[_detail(v, r, role) for v, r, role in
                                        zip(verdicts, runs, rules.roles(verdicts, benchmark), strict=True)],
        accelerator_vendor=kind["vendor"], accelerator_model=kind["model"], accelerator_memory=kind["memory"],
        frameworks_listed=system.get("frameworks_listed"), official=differs)


def _detail(verdict: rules.RunVerdict, run, role: str) -> dict:
    read = isinstance(run, mllog.Run)
    return {"file": os.path.basename(verdict.path), "minutes": verdict.minutes, "status": verdict.status,
            "converged": verdict.converged, "reason": verdict.reason, "role": role, "epochs": verdict.epochs,
            "samples": verdict.samples, "global_batch_size": run.global_batch_size if read else None,
            "init_seconds": run.init_seconds if read else None}


def score(paths: list[str | Path], round_: str | None = None) -> list[Folder]:
    """Every result folder under `paths` (`runs.score` adds benchbook study folders)."""
    folders = find(paths)
    if not folders:
        raise BenchbookError(f"no result_N.txt under {', '.join(map(str, paths))}")
    return [score_folder(f, round_) for f in folders]
