"""Study files (`params/**/*.yaml`): one sweep of configurations, validated before anything runs.

A study names the model, the runtime (`ngc`: NVIDIA's code in an NGC container; `cpu`: the
project's own CPU workloads), where the code and data come from, the sweep, repeats, iterations,
warm-up, limits and the published reference. `load` turns a file into a `Study` or raises a
`StudyError` that names the file, the line, the field, the value and what is allowed; `expand`
turns a study into the list of runs to launch, in a stable order with stable ids.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictInt,
    ValidationError,
    field_validator,
    model_validator,
)

from .. import models
from ..core import values, yamlfile
from ..core.fields import Operand
from ..core.problems import raise_any as _raise
from ..errors import BenchbookError
from .study_limits import (  # noqa: F401
    IMAGE,
    LIFT_CAPS_ENV,
    MAX_PROCESSES,
    MAX_RUNS,
    MAX_YAML_NODES,
    ContainerName,
    Count,
    EnvName,
    Host,
    Image,
    Line,
    cap_errors,
    caps_lifted,
    clean_problem,
)
from .sweep_points import CUDA_PRECISIONS, PRECISIONS, parse_gpus, point_errors  # noqa: F401

SCHEMA_VERSION = 1
# Renamed keys: old -> (new, what it holds). Issue 18: `warmup` also named the records the analysis skips.
RENAMED = {"warmup": ("warmup_steps", "iterations the training script skips, its --warmup_steps")}
# Read from the model registry (benchbook.models): model -> framework, and the models with a CPU workload.
MODELS = {spec.name: spec.framework for spec in models.specs()}
RUNTIMES = ("ngc", "cpu")
CUDA_MODELS = tuple(spec.name for spec in models.specs() if spec.cuda_workload)
CPU_MODELS = tuple(spec.name for spec in models.specs() if spec.cpu_script)
ModelName = Literal[models.names()]  # a Literal, so that a wrong name lists the known ones


class StudyError(BenchbookError, ValueError):
    """A study file that cannot be run as written; the message says where and what is allowed."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def seconds(value: int | float | str) -> float:
    """`90`, `"90s"`, `"30m"`, `"2h"` or `"1h30m"` as seconds."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        if value <= 0:
            raise ValueError("must be positive")
        return float(value)
    text = str(value).strip().lower()
    parts = re.fullmatch(r"(?:(\d+(?:\.\d+)?)h)?\s*(?:(\d+(?:\.\d+)?)m)?\s*(?:(\d+(?:\.\d+)?)s?)?", text)
    if not text or not parts or not any(parts.groups()):
        raise ValueError("expected seconds or a duration such as 90s, 30m, 2h, 1h30m")
    h, m, s = (float(g) if g else 0.0 for g in parts.groups())
    total = h * 3600 + m * 60 + s
    if total <= 0:
        raise ValueError("must be positive")
    return total


def clone_folder(repository: str) -> str:
    """The folder `git clone <repository>` makes: the repository's last part, less `.git`."""
    return repository.rstrip("/").rsplit("/", 1)[-1].removesuffix(".git")


class Code(_Strict):
    """The model code: a repository at a commit, a subfolder, patches applied on top (recorded per run)."""

    repository: Operand
    commit: str = Field(pattern=r"^[0-9a-f]{7,40}$")
    subfolder: Operand = ""
    patches: list[Operand] = []
    workdir: Operand = Field("/workspace", description="where the subfolder is inside the container")

    @field_validator("repository")
    @classmethod
    def _clone_folder_no_option(cls, value: str) -> str:
        """The folder `git clone` makes (the repository's last part) is an operand of `cd`, `docker build`."""
        values.operand(clone_folder(value))
        return value


class Container(_Strict):
    """How commands reach the NGC container: `run` a new one, `exec` into a running one, or `inside` it."""

    image: Image
    mode: Literal["run", "exec", "inside"] = "run"
    name: ContainerName | None = Field(None, description="container name for mode exec")
    options: list[Line] = ["--shm-size=16g", "--ulimit", "memlock=-1", "--ulimit", "stack=67108864"]
    mounts: dict[Operand, Operand] = Field({}, description="extra host path -> container path mounts")

    @model_validator(mode="after")
    def _exec_needs_name(self):
        if self.mode == "exec" and not self.name:
            _raise([(("mode",), "container.mode exec needs container.name (the running container to exec into)")])
        return self


class Data(_Strict):
    """The data set: a host folder mounted in the container, and the DALI index folder if any."""

    path: Operand | None = Field(None, description="host folder of the data (TFRecords, RecordIO, COCO)")
    mount: Operand = Field("/data", description="where the data folder appears inside the container")
    dali_index: Operand | None = Field(None, description="DALI index folder, as seen inside the container")


class Cpu(_Strict):
    """Options of the project's own workloads (on the CPU, or on one GPU where `device` is cuda)."""

    image_size: Count = Field(64, ge=16, le=512)
    threads: Count = Field(0, ge=0, description="intra/inter-op threads; 0 = the framework's default")
    dataset: Literal["digits"] = "digits"
    device: Literal["cpu", "cuda"] = Field("cpu", description="cuda: the PyTorch workload on one GPU (gpus: 1)")


class Slurm(_Strict):
    """How the `slurm` launcher submits a run: one `sbatch` job per run, `srun` inside it."""

    partition: Line | None = None
    account: Line | None = None
    exclusive: bool = Field(True, description="whole nodes for each run (--exclusive): no neighbours in a benchmark")
    time: float | None = Field(None, description="job time limit (seconds or 30m, 2h); default: the run timeout")
    mpi: Line | None = Field(None, description="srun --mpi plugin (pmix on NGC clusters); default: Slurm's")
    container_image: Image | None = Field(None, description="pyxis image; default: container.image on ngc")
    container_mounts: dict[Operand, Operand] = Field({}, description="extra host path -> container path mounts")
    sbatch: list[Line] = Field([], description="extra sbatch options, e.g. --exclusive, --qos=high")
    srun: list[Line] = Field([], description="extra srun options")

    @field_validator("time", mode="before")
    @classmethod
    def _duration(cls, v):
        return None if v is None else seconds(v)


class Launcher(_Strict):
    """What starts a run's processes: one of the registered launchers, and its options."""

    name: Literal["local", "mpirun", "horovodrun", "slurm"] = "local"
    bind_to: Line = Field("none", description="mpirun --bind-to")
    map_by: Line = Field("slot", description="mpirun --map-by")
    export: list[EnvName] = Field(["NCCL_DEBUG", "LD_LIBRARY_PATH", "PATH"],
                              description="variables passed to every rank (-x); the study's env is added")
    mca: dict[Line, Line] = Field({"pml": "ob1", "btl": "^openib"}, description="mpirun --mca parameters")
    ssh_agent: Line | None = Field(None, description="the ssh command mpirun uses, e.g. 'ssh -o BatchMode=yes'")
    args: list[Line] = Field([], description="extra launcher arguments, before the program")
    slurm: Slurm = Slurm()

    @model_validator(mode="before")
    @classmethod
    def _by_name(cls, v):
        return {"name": v} if isinstance(v, str) else v


Scalar = StrictInt | float | Line | bool | None
GpuSpec = Count | Line


class SweepBlock(_Strict):
    """One block of the sweep: the cartesian product of its lists (a scalar is a list of one)."""

    gpus: GpuSpec | list[GpuSpec] | None = Field(None, description="8 (one node) or 2x8; default 0 on cpu, 1 on ngc")
    batch_size: Count | list[Count]
    precision: Line | list[Line] = "fp32"
    xla: bool | list[bool] = False
    dali: bool | list[bool] = False
    data: Literal["real", "synthetic"] | list[Literal["real", "synthetic"]] = "real"
    processes: Count | list[Count] = Field(1, description="data-parallel processes of a CPU run (MPI ranks)")

    def points(self, runtime: str = "ngc") -> list[dict]:
        values = self.model_dump()
        if values["gpus"] is None:
            values["gpus"] = 0 if runtime == "cpu" else 1
        axes = {k: v if isinstance(v, list) else [v] for k, v in values.items()}
        return [dict(zip(axes, values, strict=True)) for values in itertools.product(*axes.values())]


class Study(_Strict):
    """A study file, validated. `path` and `name` are filled in by `load`."""

    schema_version: Literal[1]
    name: str | None = Field(None, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    description: str = ""
    model: ModelName  # type: ignore[valid-type]
    runtime: Literal["ngc", "cpu"]
    mode: Literal["training_benchmark", "train_and_evaluate"] = "training_benchmark"
    code: Code | None = None
    container: Container | None = None
    data: Data = Data()
    cpu: Cpu = Cpu()
    sweep: list[SweepBlock]
    repeats: Count = Field(1, ge=1, le=1000)
    iterations: Count = Field(ge=1, description="iterations per run (epochs in train_and_evaluate on NGC)")
    warmup_steps: Count = Field(0, ge=0, description="iterations the training script skips in its own summary "
                                "(its --warmup_steps)")
    timeout: float = Field(3600.0, description="per-run wall-clock limit (seconds or 30m, 2h)")
    no_progress: float | None = Field(None, description="kill a run whose log is silent this long")
    env: dict[EnvName, Line] = {}
    options: dict[Line, Scalar] = Field({}, description="extra script flags, in order")
    clean: list[Line] = Field([], description="paths removed before each run: inside the run folder (relative "
                              "paths) or the code checkout; see README, what a study file can do")
    launcher: Launcher = Launcher()
    hosts: list[Host] = Field([], description="hosts of multi-node runs, the launching host first")
    gpus_per_node: Count = Field(8, ge=1, le=16)
    ssh_port: Count | None = Field(None, ge=1, le=65535)
    target_accuracy: float | None = Field(None, gt=0, le=100, description="top-1 % that ends time to train")
    reference: str | None = Field(None, description="name of a file in params/references/")
    python: Line | None = Field(None, description="the Python of the runs (one that has the framework) instead of "
                                "building its environment; BENCHBOOK_PYTHON_<FRAMEWORK> does the same")
    path: Path | None = Field(None, exclude=True)

    @field_validator("sweep", mode="before")
    @classmethod
    def _one_block(cls, v):
        return [v] if isinstance(v, dict) else v

    @field_validator("timeout", "no_progress", mode="before")
    @classmethod
    def _duration(cls, v):
        return None if v is None else seconds(v)

    @field_validator("env", mode="before")
    @classmethod
    def _env_strings(cls, v):
        if isinstance(v, dict):
            return {k: (str(x).lower() if isinstance(x, bool) else str(x)) for k, x in v.items()}
        return v

    @model_validator(mode="after")
    def _coherent(self):
        _raise(self._cross_field_problems())
        return self

    def _cross_field_problems(self) -> list[tuple[tuple, str]]:
        """What the fields say together that cannot run, each at the field to change."""
        if self.spec.analysis_only:  # its logs are read (benchbook analyze, publish --logs); no study runs it
            return [(("model",), f"{self.model}: {self.spec.analysis_only}")]
        if self.runtime == "ngc":
            if self.code is None or self.container is None:
                return [(("runtime",), "runtime ngc needs `code` (repository, commit) and `container` (image)")]
            if self.python:
                return [(("python",), "python names the Python of the project's workloads (runtime cpu); NGC runs "
                                      "use the container's")]
        elif self.model not in CPU_MODELS:
            return [(("runtime",), f"runtime cpu has workloads for {', '.join(CPU_MODELS)}, not {self.model}")]
        out: list[tuple[tuple, str]] = []
        if self.runtime == "cpu" and self.cpu.device == "cuda" and self.model not in CUDA_MODELS:
            out.append((("cpu", "device"), f"cpu.device cuda: only {', '.join(CUDA_MODELS)} has a GPU workload, "
                                           f"not {self.model}"))
        if self.runtime == "cpu" and self.mode not in self.spec.cpu_modes:
            out.append((("mode",), f"the CPU {self.spec.title} workload measures throughput only: mode "
                                   f"{' or '.join(self.spec.cpu_modes)}"))
        if self.mode == "train_and_evaluate" and self.target_accuracy is None and self.runtime == "cpu":
            out.append((("mode",), "mode train_and_evaluate on the CPU needs target_accuracy (top-1 %, e.g. 90)"))
        if self.launcher.name == "slurm" and self.container and self.container.mode != "run":
            out.append((("container", "mode"), f"launcher slurm starts its own containers (pyxis); container.mode "
                        f"{self.container.mode!r} is for runs started on this machine: write mode: run"))
        if self.launcher.name != "slurm" and self.container and not IMAGE.fullmatch(self.container.image):
            out.append((("container", "image"), f"{self.container.image!r} is pyxis's form (launcher slurm); "
                        "docker needs [registry[:port]/]name[:tag]"))
        if self.warmup_steps >= self.iterations and self.mode == "training_benchmark":
            out.append((("warmup_steps",), f"warmup_steps ({self.warmup_steps}) must be below iterations "
                                           f"({self.iterations})"))
        return out

    @model_validator(mode="after")
    def _clean_stays_inside(self):
        _raise([(("clean", i), p) for i, path in enumerate(self.clean) if (p := clean_problem(self, path))])
        return self

    @property
    def spec(self) -> models.ModelSpec:
        """What the registry knows about the study's model."""
        return models.get(self.model)

    @property
    def framework(self) -> str:
        return self.spec.framework


class RunSpec(BaseModel):
    """One run to launch: the resolved configuration of one sweep point and repeat."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    config: dict[str, Any]


def _run_id(study: Study, cfg: dict) -> str:
    if study.runtime == "cpu":
        head = study.cpu.device if cfg.get("processes", 1) == 1 else f"cpu_np{cfg['processes']}"
    elif "gpu_counts" in cfg:
        head = "_".join(f"gpu{g}" for g in cfg["gpu_counts"])
    else:
        head = f"{cfg['nodes']}n{cfg['gpus_per_node']}g"
    parts = [head, cfg["precision"], f"bs{cfg['batch_size']}"]
    parts += ["xla"] if cfg["xla"] and study.spec.ngc_xla != "always" else []  # no choice, no name
    parts += ["dali"] if cfg["dali"] else []
    parts += ["syn"] if cfg["synthetic"] else []
    return "_".join(parts) + f"_r{cfg['repeat']}"


def expand(study: Study) -> list[RunSpec]:
    """Every run of the study: sweep points in file order, each repeated; duplicates removed.

    MXNet's `benchmark.py` measures several GPU counts in one invocation (`-n 1,8`), as the
    published study did, so its points that differ only in GPU count become one run.
    """
    runs: list[RunSpec] = []
    seen: set[str] = set()
    points = []
    for block in study.sweep:
        for point in block.points(study.runtime):
            nodes, per_node = parse_gpus(point["gpus"], study.gpus_per_node)
            points.append((nodes, per_node, point))
    combine = study.spec.ngc_gpu_counts_in_one_run and study.runtime == "ngc"
    groups: dict[tuple, list] = {}
    for nodes, per_node, point in points:
        key = tuple(v for k, v in point.items() if k != "gpus") if combine else (nodes, per_node, *point.values())
        groups.setdefault(key, []).append((nodes, per_node, point))
    for members in groups.values():
        nodes, per_node, point = members[0]
        cfg = {
            "study": study.name, "model": study.model, "framework": study.framework, "runtime": study.runtime,
            "mode": study.mode, "batch_size": point["batch_size"], "precision": point["precision"],
            "xla": point["xla"], "dali": point["dali"], "synthetic": point["data"] == "synthetic",
            "iterations": study.iterations, "warmup_steps": study.warmup_steps,
        }
        if combine:
            cfg["gpu_counts"] = sorted({n * g for n, g, _ in members})
        elif study.runtime == "cpu":
            gpus = 1 if study.cpu.device == "cuda" else 0
            cfg.update(gpus=gpus, nodes=1, gpus_per_node=gpus, processes=point["processes"])
        else:
            cfg.update(gpus=nodes * per_node, nodes=nodes, gpus_per_node=per_node)
        for repeat in range(1, study.repeats + 1):
            run = dict(cfg, repeat=repeat)
            run_id = _run_id(study, run)
            if run_id not in seen:
                seen.add(run_id)
                runs.append(RunSpec(run_id=run_id, config=dict(run, run_id=run_id)))
    # Repeats outermost: a study cut short still has every configuration measured at least once.
    runs.sort(key=lambda r: r.config["repeat"])
    return runs


# --- loading, with errors that point at the file and line --------------------------------------------------


def load(path: str | Path, limits: bool | None = None) -> Study:
    """Read and validate a study file; every problem is reported at once, with file and line.

    `limits` (default: unless BENCHBOOK_ALLOW_LARGE_STUDY is set) caps the runs of the study and the
    processes of a run (MAX_RUNS, MAX_PROCESSES)."""
    path = Path(path)
    doc = yamlfile.read_mapping(path, StudyError, "study file", "schema_version, model, runtime, sweep, ...",
                                MAX_YAML_NODES)
    if "schema_version" not in doc:
        raise StudyError(f"{path}: schema_version is missing; this benchbook reads schema_version: {SCHEMA_VERSION}")
    if doc["schema_version"] != SCHEMA_VERSION:
        raise StudyError(f"{path}:{doc.lines.get('schema_version')}: schema_version {doc['schema_version']!r} "
                         f"is not supported; this benchbook reads schema_version: {SCHEMA_VERSION}")
    if renamed := [f"{path}:{doc.lines[old]}: `{old}` was renamed to `{new}` ({what}); write {new}: {doc[old]!r}"
                   for old, (new, what) in RENAMED.items() if old in doc]:
        raise StudyError("\n".join(renamed))
    data = yamlfile.plain(doc)
    data.setdefault("name", default_name(path))
    try:
        study = Study.model_validate({**data, "path": path})
    except ValidationError as exc:
        raise StudyError("\n".join(yamlfile.describe(e, doc, path, Study) for e in exc.errors())) from None
    if (caps_lifted() is False) if limits is None else limits:
        if too_large := cap_errors(study):
            raise StudyError("\n".join(f"{path}:{yamlfile.line_of(doc, loc)}: {msg}" for loc, msg in too_large))
    problems = []
    for b, block in enumerate(study.sweep):
        for point in block.points(study.runtime):
            for problem in point_errors(study, point):
                field = problem.split(":", 1)[0]
                line = yamlfile.line_of(doc, ("sweep", b, field)) if isinstance(doc.get("sweep"), list) else \
                    yamlfile.line_of(doc, ("sweep", field))
                shown = ", ".join(f"{k}={v}" for k, v in point.items())
                problems.append(f"{path}:{line}: sweep[{b}].{problem} (in the point {shown})")
    if problems:
        raise StudyError("\n".join(dict.fromkeys(problems)))
    if study.reference:
        _check_reference(study, doc, path)
    return study


def _check_reference(study: Study, doc, path: Path) -> None:
    """The study's `reference:` names a file of the references folder that loads, as its report will read
    it (models.reference_schema, which reports.references re-exports); found here, not when the report
    is published. Imported here: only a study that names one needs it (and pandas)."""
    from ..models import reference_schema

    try:
        reference_schema.load(study.reference)
    except BenchbookError as exc:
        raise StudyError(f"{path}:{doc.lines.get('reference')}: reference = {study.reference!r}: {exc}") from None


def default_name(path: Path) -> str:
    """`params/MODEL/cpu.yaml` -> `MODEL-cpu`: unique per file within `params/`, and the
    same whatever the current directory (`cpu.yaml` from inside `params/MODEL/` too). Below
    `params/`, the folders and the file name joined by `-`; elsewhere, the folder and the file name."""
    path = Path(path).resolve()
    parts = path.with_suffix("").parts
    if "params" in parts[:-1]:
        below = parts[len(parts) - parts[::-1].index("params"):]
        return "-".join(below)
    return f"{path.parent.name}-{path.stem}" if path.parent.name else path.stem


def digest(path: Path) -> str:
    """A short hash of the study file, recorded with every run (what was asked, exactly)."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]
