"""What a study file may ask of the machine it runs on, checked when it is loaded.

Every value that reaches a shell or a job script is one printable line, and every environment
variable name a name; `clean:` removes only the run's own files; a study plans at most MAX_RUNS
runs of at most MAX_PROCESSES processes unless the user lifts the caps (`--allow-large-study`).
README, "What a study file can do", says the same for users.
"""

from __future__ import annotations

import math
import os
import posixpath
from typing import Any

from ..core.fields import ContainerName, Count, EnvName, Host, Image, Line  # noqa: F401 -- the study's fields
from ..core.values import CONTAINER_NAME, HOST, IMAGE, PYXIS_IMAGE  # noqa: F401
from ..runfolder import RESULTS
from .sweep_points import parse_gpus

# What these checks are given: a `studies.study.Study`, which imports this module (naming the type
# here would be an import back up to it).
Study = Any

#: Caps that stop a typo (or a hostile file) from planning a million runs or a million processes;
#: the shipped studies stay far below them (the largest, dlperf_scaling, plans 105 runs of at most
#: 32 processes).
#: `benchbook run --allow-large-study`, or BENCHBOOK_ALLOW_LARGE_STUDY=1, lifts them.
MAX_RUNS = 1000
#: What benchbook keeps in a run folder (records.RECORD, earlier attempts), never a `clean:` path.
RUN_OWN = ("run.json", "attempts")
MAX_PROCESSES = 1024
LIFT_CAPS_ENV = "BENCHBOOK_ALLOW_LARGE_STUDY"
#: YAML nodes a study file may build (aliases included): a 1 kB file of nested aliases otherwise
#: expands to gigabytes (the "billion laughs"); the shipped studies build fewer than 200.
MAX_YAML_NODES = 20000


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def clean_problem(study: Study, path: str) -> str | None:
    """Why a `clean:` path may not be removed, or None. A run removes only what belongs to it: a
    path inside its run folder (relative paths; `/results/...` in a container), inside the code
    checkout in the container (`code.workdir`), or in the throwaway file system of a `docker run
    --rm` container (never a mounted host folder, nor a folder above one)."""
    norm = posixpath.normpath(path)
    if ".." in path.split("/") or not path.strip():
        return f"clean: {path!r} leaves the run folder (`..`); clean removes only the run's own files"
    if norm != path:  # the command removes the path as written: `data/` would empty a linked folder
        return f"clean: {path!r} is not in its plain form; write {norm!r}"
    if norm == ".":
        return f"clean: {path!r} is the whole folder, the run's record and log with it; name what to remove"
    if study.runtime == "cpu":
        if posixpath.isabs(norm):
            return (f"clean: {path!r} is outside the run folder; a CPU run cleans only inside its own run folder: "
                    "write a path relative to it")
        top = norm.split("/")[0]
        if top in RUN_OWN or top.endswith(".log"):
            return f"clean: {path!r} is benchbook's own record of the run (run.json, the log, attempts/); not removed"
        return None
    if not posixpath.isabs(norm):
        return None  # relative to the code checkout, the run's working directory
    roots = [RESULTS] + ([study.code.workdir] if study.code and study.code.workdir not in ("", "/") else [])
    if any(_inside(norm, r) and norm != r for r in roots):
        return None
    c = study.container
    if c and c.mode == "run" and study.launcher.name != "slurm":
        mounts = [RESULTS, *c.mounts.values()] + ([study.data.mount] if study.data.path else [])
        if norm != "/" and not any(_inside(norm, m) or _inside(m, norm) for m in mounts):
            return None  # the container's own file system, gone with `docker run --rm`
        return (f"clean: {path!r} is, or holds, a host folder mounted in the container ({', '.join(mounts)}); "
                "clean removes only the run's own files")
    return (f"clean: {path!r} is outside the run folder ({RESULTS}) and the code checkout "
            f"({study.code.workdir if study.code else 'none'}); clean removes only the run's own files")


def caps_lifted() -> bool:
    """Whether the caps on runs per study and processes per run are lifted (--allow-large-study)."""
    return os.environ.get(LIFT_CAPS_ENV, "") not in ("", "0")


def _planned_runs(study: Study) -> int:
    """How many runs the sweep plans, counted without building them (an upper bound for MXNet, whose
    GPU counts share a run)."""
    total = 0
    for block in study.sweep:
        values = block.model_dump()
        if study.spec.ngc_gpu_counts_in_one_run and study.runtime == "ngc":
            values.pop("gpus")
        total += math.prod(len(v) if isinstance(v, list) else 1 for v in values.values())
    return total * study.repeats


def cap_errors(study: Study) -> list[tuple[tuple, str]]:
    """Where the study asks past the caps: (the field to point at, what is too large)."""
    lift = f"; if you mean it, run with --allow-large-study (or {LIFT_CAPS_ENV}=1)"
    runs = _planned_runs(study)
    if runs > MAX_RUNS:
        return [(("sweep",), f"the sweep plans {runs} runs (sweep points x repeats: {study.repeats}), more than "
                             f"the {MAX_RUNS} a study may hold{lift}")]
    errors = []
    for b, block in enumerate(study.sweep):
        for point in block.points(study.runtime):
            try:
                nodes, per_node = parse_gpus(point["gpus"], study.gpus_per_node)
            except ValueError:
                continue  # reported by _point_errors
            n = point["processes"] if study.runtime == "cpu" else nodes * per_node
            if n > MAX_PROCESSES:
                what = "processes" if study.runtime == "cpu" else "gpus"
                errors.append((("sweep", b, what), f"{what}: {point[what]!r} starts {n} processes in one run, "
                                                   f"more than the {MAX_PROCESSES} a run may start{lift}"))
    return list(dict.fromkeys(errors))
