"""Reproducing a published MLPerf Training result: a study (`params/mlperf/<study>.yaml`) runs a
submitter's own implementation the way its README launches it, and `benchbook mlperf run` submits it.

NVIDIA's README for its v0.7 DGX A100 ResNet result, mlcommons/training_results_v0.7@c6640611
`NVIDIA/benchmarks/resnet/implementations/dgxa100_ngc20.06_mxnet/README.md`, launches it so:

    source config_DGXA100.sh
    CONT="<docker/registry>/mlperf-nvidia:image_classification" DATADIR=<path/to/data/dir> \\
        LOGDIR=<path/to/output/dir> sbatch -N $DGXNNODES -t $WALLTIME run.sub

A study gives the implementation folder, the config, the image, the data and log folders, the nodes
and the wall time (what the config's DGXNNODES and WALLTIME say), and the repeats: the result files
the round requires, passed as NEXP (run.sub's `: "${NEXP:=5}"`: one job runs NEXP experiments, each
written to `${LOGDIR}/<log base>_<n>.log`). `--dry-run` prints the lines above with the study's values,
quoted with shlex; without it, `sbatch` runs through `bash -c 'source "./$1"; shift; exec "$@"'` with
the config and the sbatch argv as arguments (never text of the study inside a shell string), the
variables through `env=`, from the implementation folder, and the job ids are recorded in LOGDIR.
`score` reads the job's logs from LOGDIR and scores them by `rules`, beside the published score of the
same system (`references`). Every value is checked on load: errors read `file:line: field = value: why`.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from ..core import yamlfile
from ..errors import BenchbookError
from ..runfolder import records
from ..studies.study_limits import Image
from . import rules

MAX_YAML_NODES = 2_000
# What run.sub writes per experiment: `${_logfile_base}_${_experiment_index}.log`.
JOB_LOG = re.compile(r"(?P<base>[A-Za-z0-9_.+-]+)_(?P<n>\d+)\.log")
JOBS_FILE = "benchbook-mlperf-jobs.json"  # what `run` records in LOGDIR: the jobs it submitted
SUBMITTED = re.compile(r"Submitted batch job (\d+)")
# The one shell text benchbook gives bash: it sources the config named by $1 and runs the rest of argv.
SOURCE_AND_RUN = 'source "./$1" && shift && exec "$@"'
_SAFE_PATH = re.compile(r"/[A-Za-z0-9_./+-]*")


class LaunchError(BenchbookError, ValueError):
    """A launch study that cannot be used as written, or a launch that cannot be done."""


class _FieldProblem(ValueError):
    """A check across fields, told at the line of the field to change (`yamlfile.describe`)."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.problems = [((field,), message)]


def _path(value: str) -> str:
    """An absolute path that can stand in a shell line and a job's environment as it is."""
    if not _SAFE_PATH.fullmatch(value) or "/../" in f"{value}/" or len(value) > 4096:
        raise ValueError(f"{value!r} is not an absolute path of letters, digits and _ . / + - (no spaces, "
                         "no shell characters, no newline, no '..')")
    return value


SafePath = Annotated[str, AfterValidator(_path)]


class Reproduces(BaseModel):
    """The published result the study reproduces (a row of `params/references/mlperf/`)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    round: str = Field(pattern=r"^v\d+\.\d+$")
    submitter: str = Field(pattern=r"^[A-Za-z0-9_.+-]{1,64}$")
    system: str = Field(pattern=r"^[A-Za-z0-9_.+-]{1,128}$")
    benchmark: Literal[tuple(sorted(rules.RUNS_REQUIRED))]


class Readme(BaseModel):
    """Where the implementation's README gives the launch line, and the line as it is there."""

    model_config = ConfigDict(extra="forbid", strict=True)

    repository: str = Field(pattern=r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
    path: str = Field(pattern=r"^[A-Za-z0-9_./-]+$")
    commit: str = Field(pattern=r"^[0-9a-f]{7,40}$")
    source: str = Field(pattern=r"^source config_[A-Za-z0-9_]+\.sh$")
    command: str = Field(min_length=1, max_length=1000)


class LaunchStudy(BaseModel):
    """One launch study: what to submit, and what it reproduces."""

    model_config = ConfigDict(extra="forbid", strict=True)

    schema_version: Literal[1]
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_.-]{0,63}$")
    implementation: SafePath = Field(description="the implementation folder (holds run.sub and the config)")
    config: str = Field(pattern=r"^config_[A-Za-z0-9_]+\.sh$", description="the system's config, sourced")
    image: Image = Field(description="the container image (CONT)")
    datadir: SafePath
    logdir: SafePath
    nodes: int = Field(ge=1, le=4096, description="sbatch -N (the config's DGXNNODES)")
    walltime: str = Field(pattern=r"^(\d{1,3}-)?\d{1,3}:[0-5]\d(:[0-5]\d)?$", description="sbatch -t (WALLTIME)")
    repeats: int = Field(ge=1, le=100, description="runs in the job (NEXP): the result files the round needs")
    reproduces: Reproduces
    readme: Readme
    path: Path = Field(exclude=True)

    @model_validator(mode="after")
    def _repeats_cover_the_round(self):
        need = rules.RUNS_REQUIRED[self.reproduces.benchmark]
        if self.repeats < need:
            raise _FieldProblem("repeats", f"{self.repeats} runs, but a {self.reproduces.benchmark} result "
                                f"needs {need} runs ({rules.RUNS_SOURCE})")
        return self

    def environment(self) -> dict[str, str]:
        """The variables the README sets before sbatch, and NEXP."""
        return {"CONT": self.image, "DATADIR": self.datadir, "LOGDIR": self.logdir, "NEXP": str(self.repeats)}

    def sbatch(self) -> list[str]:
        return ["sbatch", "-N", str(self.nodes), "-t", self.walltime, "run.sub"]

    def argv(self) -> list[str]:
        """What `run` executes, from the implementation folder."""
        return ["bash", "-c", SOURCE_AND_RUN, "benchbook-mlperf", self.config, *self.sbatch()]

    def lines(self) -> list[str]:
        """The README's lines with the study's values, each value quoted with shlex."""
        assignments = " ".join(f"{k}={shlex.quote(v)}" for k, v in self.environment().items())
        return [f"cd {shlex.quote(self.implementation)}", f"source {shlex.quote(self.config)}",
                f"{assignments} {shlex.join(self.sbatch())}"]


def load(path: str | Path) -> LaunchStudy:
    """Read and validate a launch study; every problem at once, each with its file and line."""
    path = Path(path)
    doc = yamlfile.read_mapping(path, LaunchError, "launch study", "schema_version, name, implementation, config, "
                                "image, datadir, logdir, nodes, walltime, repeats, reproduces, readme", MAX_YAML_NODES)
    return yamlfile.validated(doc, path, LaunchStudy, LaunchError)


def submit(study: LaunchStudy) -> list[str]:
    """Run sbatch as the README does; the job ids, recorded in LOGDIR's benchbook-mlperf-jobs.json (read
    first, through no link, and written to a temporary file renamed over it)."""
    if shutil.which("sbatch") is None:
        raise LaunchError("sbatch is not on PATH: `benchbook mlperf run` submits to Slurm (with pyxis for CONT); "
                          "run it on the cluster's login node, or give --dry-run to see the lines")
    folder = Path(study.implementation)
    if not (folder / "run.sub").is_file() or not (folder / study.config).is_file():
        raise LaunchError(f"{study.path}: implementation = {study.implementation!r}: needs run.sub and "
                          f"{study.config} in it")
    logdir = Path(study.logdir)
    logdir.mkdir(parents=True, exist_ok=True)
    record = logdir / JOBS_FILE
    known = _known_jobs(record)  # before sbatch: a list that cannot be recorded into submits nothing
    done = subprocess.run(study.argv(), cwd=folder, env={**os.environ, **study.environment()},
                          capture_output=True, text=True, timeout=300, check=False)
    jobs = SUBMITTED.findall(done.stdout)
    if done.returncode != 0 or not jobs:
        tail = (done.stderr.strip() or done.stdout.strip() or "no output").splitlines()[-1]
        raise LaunchError(f"sbatch failed (exit {done.returncode}): {tail}")
    stamp = datetime.now(UTC).isoformat(timespec="seconds")
    known += [{"job": j, "study": study.name, "submitted": stamp, "argv": study.argv()} for j in jobs]
    try:  # a temporary file renamed over it: a link planted there is replaced, never written through
        records.write(record, known)
    except OSError as exc:
        raise LaunchError(f"{record}: cannot be written ({exc}); submitted job {', '.join(jobs)}") from None
    return jobs


def _known_jobs(record: Path) -> list:
    """The jobs LOGDIR's list already holds; a link in its place, or anything but that list, refused."""
    if record.is_symlink() or (record.exists() and not record.is_file()):
        raise LaunchError(f"{record}: a link or not a plain file, refused (benchbook writes its job list there "
                          f"itself); nothing submitted")
    try:
        fd = os.open(record, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, encoding="utf-8") as f:
            known = json.load(f)
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        known = exc
    if not isinstance(known, list):
        raise LaunchError(f"{record}: not the list of jobs benchbook writes ({known!r:.80}); nothing submitted")
    return known


def job_logs(logdir: Path) -> dict[str, list[Path]]:
    """The experiments' logs in LOGDIR, by job (run.sub's log base), each job's in experiment order."""
    if not logdir.is_dir():
        raise LaunchError(f"{logdir}: no such folder (the study's logdir: where run.sub writes the logs)")
    jobs: dict[str, list[Path]] = {}
    for p in sorted(logdir.iterdir()):
        m = JOB_LOG.fullmatch(p.name)
        if m and p.is_file():
            jobs.setdefault(m.group("base"), []).append(p)
    for files in jobs.values():
        files.sort(key=lambda p: int(JOB_LOG.fullmatch(p.name).group("n")))
    return jobs


def score(study: LaunchStudy) -> list[dict]:
    """Each job's logs in LOGDIR scored by the round's rule, beside the published score of the system
    the study reproduces: one dict per job (`results.Folder`'s fields, `published_minutes`,
    `published_source`, `ratio` = ours / published)."""
    from . import published, results

    want = study.reproduces
    jobs = job_logs(Path(study.logdir))
    if not jobs:
        raise LaunchError(f"{study.logdir}: no <log base>_<n>.log file (run.sub's logs): has the job run?")
    found = published.lookup(want.round, want.submitter, want.system, want.benchmark)
    out = []
    for base, files in sorted(jobs.items()):
        folder = results.score_files(str(Path(study.logdir) / base), files, rules.round_key(want.round),
                                     benchmark=want.benchmark, submitter=None, system_name=want.system)
        row = folder.as_dict()
        minutes = found[0].minutes if found else None
        row |= {"published_minutes": minutes, "published_source": found[1].where(found[0]) if found else None,
                "ratio": row["score_minutes"] / minutes if minutes and row["score_minutes"] is not None else None}
        out.append(row)
    return out
