"""What benchbook knows about one model, in one frozen record (`ModelSpec`), and the registry of them.

Each module of this package describes one model and registers its spec; studies, references,
commands, launchers, checks, workloads, publishing and the tools look a model up here instead of
naming it. `flags` turns a study's `options` into script flags, for the NGC command builders.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from .. import workloads
from ..core.config import Axis, Metric
from ..core.measures import Measure
from ..errors import UnknownNameError

# What a command builder is given: a `studies.study.Study`. Models sit below the studies that use
# them and never import them (tests/test_package_layout.py), so its type is named here only.
Study = Any

#: A study, one run's configuration and its run folder -> the training script's argv.
CommandBuilder = Callable[[Study, dict, Path], list[str]]
#: How the data folder of an NGC study is laid out (checks/data.py checks it, checks/data_preparation.py
#: prints its preparation).
DataLayout = Literal["imagenet_tfrecords", "imagenet_recordio", "imagenet_folders", "coco_tfrecords", "bert_parquet",
                     "bert_tfrecords", "megatron_indexed"]


@dataclass(frozen=True)
class ReferenceReport:
    """An analysis-only report of published reference logs (tools/check_reference_reports.py): the
    report's name, the log folder under the reference logs, and the reference file it is checked against."""

    report: str
    log_folder: str
    reference: str


@dataclass(frozen=True)
class ModelSpec:
    """One model: its framework, how its logs name it, its NGC command, its CPU workload, its data and the
    sweep settings its scripts accept. Fields hold the reasons shown to users where a setting is refused."""

    name: str
    framework: str  # the CPU workload's environment (benchbook.environment.envs) and the study's `framework`
    title: str  # in messages: "ResNet-50", "Mask R-CNN"
    log_names: tuple[str, str]  # the `framework` and `model` columns the parsers give its logs
    notebook: str | None  # its report's notebook: notebooks/<notebook>.py, paired with its .ipynb; None: none yet
    unit: str  # the throughput unit its logs and published tables use (samples a second of its kind)
    ngc_command: CommandBuilder  # the NGC script's argv (DeepLearningExamples), golden-tested
    ngc_script: str  # the script that command runs, named in messages
    dataset: str  # what the NGC script trains on: "ImageNet", "COCO"
    data_layout: DataLayout
    data_name: str  # the data check's name: "ImageNet TFRecords" ...
    spawns_own_workers: bool = False  # the NGC script starts its own workers: one launcher process per node
    ngc_gpu_counts_in_one_run: bool = False  # one invocation measures several GPU counts (`-n 1,8`)
    ngc_xla: Literal["optional", "never", "always"] = "optional"
    ngc_dali: bool = True  # the NGC pipeline can read through DALI
    ngc_synthetic: bool = True  # the NGC script has a synthetic-data mode
    dali_index: bool = False  # DALI over its data needs an index folder (data.dali_index)
    pretrained_checkpoint: bool = False  # training starts from a checkpoint mounted at /model
    cpu_script: str | None = None  # the project's workload under workloads/, None: no CPU runtime
    cpu_command: CommandBuilder | None = None  # the workload's flags where they are its own (None: the ResNet-50 line)
    framework_workload: bool = False  # `workload_script(framework)` without a model means this one
    cuda_workload: bool = False  # the workload also runs on one GPU (cpu.device: cuda)
    cpu_processes: bool = False  # the workload trains data-parallel on several MPI processes
    cpu_xla: bool = False  # the workload can compile with XLA on the CPU
    cpu_mllog: bool = False  # train_and_evaluate also writes MLPerf's MLLOG records (`--mllog`, runfolder.MLLOG)
    cpu_modes: tuple[str, ...] = ("training_benchmark", "train_and_evaluate")
    cpu_generated_data: str | None = None  # why the workload always trains on generated data, if it does
    reference_reports: tuple[ReferenceReport, ...] = ()
    quality: tuple[Metric, ...] = ()  # what its evaluations measure, the first its headline (top-1, box AP)
    axes: tuple[Axis, ...] = ()  # configuration axes only this model has (a sequence length), after the common ones
    measures: tuple[Measure, ...] = ()  # what its runs measure beyond its formats' (the catalog joins them)
    log_arches: tuple[str, ...] = ()  # what its logs call it (`--arch`): a log naming another model is not this one
    # The other frameworks whose logs carry the same model name (`log_names[1]`): the LLM formats' nemo, torchtitan...
    also_logged_by: tuple[str, ...] = ()
    # Why no study launches it yet (its logs are analyzed only), or None: the NGC command refuses with this.
    analysis_only: str | None = None
    # Its report page: the model in the page's title ("ResNet-50 v1.5 on TensorFlow 1 (NGC
    # DeepLearningExamples)"), and the sections its page shows after `repeats` (reports.sections: time to train,
    # and its own records of `sections/own/`), in order.
    page_title: str = ""
    page_sections: tuple[str, ...] = ()

    def logged_by(self, framework: str | None) -> bool:
        """Whether runs of `framework` (None: any) logging its model name are this model's."""
        return framework in (None, self.log_names[0], *self.also_logged_by)


_REGISTRY: dict[str, ModelSpec] = {}


def register(spec: ModelSpec) -> ModelSpec:
    """Add a model; a second spec under the same name is a programming error."""
    if spec.name in _REGISTRY:
        raise ValueError(f"model {spec.name!r} is registered twice")
    _REGISTRY[spec.name] = spec
    return spec


def get(name: str) -> ModelSpec:
    """The spec of `name`; UnknownNameError lists the known models otherwise."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise UnknownNameError("model", name, list(_REGISTRY)) from None


def names() -> tuple[str, ...]:
    """Every model, in registration order (the order of error messages and choices)."""
    return tuple(_REGISTRY)


def specs() -> tuple[ModelSpec, ...]:
    return tuple(_REGISTRY.values())


def framework_workload(framework: str) -> ModelSpec:
    """The model whose CPU workload is `framework`'s own (its ResNet-50)."""
    for spec in _REGISTRY.values():
        if spec.framework_workload and spec.framework == framework:
            return spec
    raise UnknownNameError("framework", framework,
                           [s.framework for s in _REGISTRY.values() if s.framework_workload])


def workload_script(framework: str, model: str | None = None) -> Path:
    """The CPU training script of `model` (its `cpu_script`, run in `framework`'s environment), else
    `framework`'s ResNet-50 (the framework's `framework_workload`)."""
    workloads.check(framework)
    spec = get(model) if model else framework_workload(framework)
    if not spec.cpu_script:
        raise ValueError(f"model {spec.name!r} has no CPU workload")
    return workloads.HERE / spec.cpu_script


def of_logs(model: str, framework: str | None = None) -> ModelSpec | None:
    """The spec whose logs carry `model` (and `framework`, when given) in the analysis's `model` and `framework`
    columns, or None; without a framework, the first registered of the specs that share the model (BERT's logs
    say `bert` on PyTorch and on TensorFlow)."""
    return next((spec for spec in _REGISTRY.values() if spec.log_names[1] == model and spec.logged_by(framework)),
                None)


def flags(options: dict) -> list[str]:
    """Study `options` as flags, in file order: `key: v` -> `--key=v`, `key: true` -> `--key`,
    `key: false`/null -> nothing; a key written with its dashes (`-e`, `--num-examples`) is passed
    as `-e 3`, the way scripts with short options are documented."""
    out: list[str] = []
    for key, value in options.items():
        if value is None or value is False:
            continue
        if key.startswith("-"):
            out += [key] if value is True else [key, str(value)]
        else:
            out += [f"--{key}"] if value is True else [f"--{key}={value}"]
    return out
