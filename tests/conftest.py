"""Shared paths and small log builders for the benchbook tests.

Fixture files under `tests/fixtures/` are short logs written for this project with made-up
numbers, named by the behaviour they show. Logs whose bytes matter (CRLF, invalid UTF-8, NUL
bytes, a cut last line) are built in a temporary folder by the tests themselves, so that no
editor or git setting can change them.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
from datetime import datetime, timedelta
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent

# Tests started in the background of a script (`make test &`, nohup) inherit SIGINT ignored; the
# tests of Ctrl-C need it to mean KeyboardInterrupt, here and in the processes they start.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
FIXTURES = Path(__file__).parent / "fixtures"

# The test tiers. `make test` runs the fast tier, every test without one of these markers (minutes on two
# cores); `.ci/run` runs every tier. A tier names what its tests need or what makes them slow. A whole
# module is marked here; so is a test of another module, by name; a test using the `cluster` fixture is `slurm`.
TIERS = {
    "notebook": "starts a Jupyter kernel: papermill, nbclient, `benchbook publish`",
    "browser": "drives Chromium through Playwright",
    "workload": "runs a framework's CPU workload (its environment) or MPI ranks",
    "slurm": "submits jobs to a Slurm cluster",
    "process": "runs a study through real processes: the runner, its launchers, signals",
    "bench": "a benchmark or a time, size or memory bound: run alone, after the other tiers",
    "shipped": "a whole tool over real-size inputs: the shipped logs and MLPerf folders, mlperf-logging's checkers",
}
TIER_OF = {
    "test_notebooks.py": "notebook",
    "test_publish_hostile.py": "notebook",
    "test_report_links.py": "notebook",
    "test_publish_interrupt.py": "notebook",
    "test_kernel_config.py": "notebook",
    "test_mlperf_report.py::test_notebook_executes": "notebook",
    "test_mlperf_report.py::test_notebook_sets_each_score_beside_the_published_one": "notebook",
    "test_packaging.py::test_an_installed_benchbook_publishes_a_set_from_an_empty_folder": "notebook",
    "test_packaging.py::test_the_wheel_carries_the_project_files": "process",  # builds the wheel (pip, setuptools)
    "test_browser.py": "browser",
    "test_jupyterlab.py": "browser",
    "test_notebook_paths.py::test_papermill_fails_with_the_one_line_and_the_notebook_keeps_it": "notebook",
    "test_workloads.py": "workload",
    "test_workload_mpi.py": "workload",
    "test_workload_pytorch.py": "workload",
    "test_workload_bert.py": "workload",
    "test_workload_maskrcnn.py": "workload",
    "test_workload_mllog.py": "workload",
    "test_runner.py": "process",
    "test_runner_folders.py": "process",
    "test_runner_hostile.py": "process",
    "test_runner_output.py": "process",
    "test_bench.py": "bench",
    "test_mlperf_bench.py": "bench",
    "test_mlperf_checks.py": "shipped",
    "test_check_reference_logs.py": "shipped",
    # the reference tools over every shipped set, through the CLI (`make reference` runs them too)
    "test_published_examples.py::test_each_bert_set_gives_each_cell_by_its_rule_or_says_none_does": "shipped",
    "test_published_examples.py::test_each_log_set_reproduces_its_published_numbers": "shipped",
    "test_published_examples.py::test_the_mlperf_folders_score_as_published": "shipped",
    "test_ranks.py::test_rank_pieces_that_never_close_are_read_in_linear_time": "bench",
    "test_mllog_format.py::test_the_results_check_cross_checks_analyze_against_score": "shipped",
    "test_mlperf_cli.py::test_check_tool_compares_with_the_published_scores_not_expected_yaml": "shipped",
    "test_parsers_ngc_pytorch.py::test_reference_log_nvidia_rule_and_the_published_table": "shipped",
}
FAST_TIER = "not (" + " or ".join(TIERS) + ")"  # the Makefile's `make test` selects the same


def pytest_configure(config):
    for name, what in TIERS.items():
        config.addinivalue_line("markers", f"{name}: {what}")


def pytest_itemcollected(item):
    """Each test's tier, as it is collected."""
    module = item.path.name
    tier = TIER_OF.get(f"{module}::{item.originalname}") or TIER_OF.get(module)
    if tier is None and "cluster" in item.fixturenames:
        tier = "slurm"
    if tier:
        item.add_marker(getattr(pytest.mark, tier))


@pytest.fixture
def fixtures() -> Path:
    """The folder of fixture logs."""
    return FIXTURES


@pytest.fixture
def repo_root() -> Path:
    """The repository root (tools/, examples/, pyproject.toml)."""
    return ROOT


@pytest.fixture
def copy_fixture(tmp_path):
    """Copy a fixture log to `tmp_path / dest` (folders created) and return the new path."""

    def copy(src: str, dest: str) -> Path:
        target = tmp_path / dest
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(FIXTURES / src, target)
        return target

    return copy


def tf1_log_text(*, gpus: int, batch: int, amp: bool, rates: list[float], warmup: int = 0,
                 reported: float | None = None, start: datetime = datetime(2021, 1, 4, 8, 0, 0),
                 summary_unit: str = " images/s", ended: bool = True) -> str:
    """An NGC TF1 ConvNets benchmark log: one `total_ips` record per step, timestamps consistent with
    the rates (so that wall-clock and logged rates agree), and the script's summary unless not `ended`."""
    lines = [f"DLL {start:%Y-%m-%d %H:%M:%S.%f} - PARAMETER arch : resnet50  mode : training_benchmark  "
             f"data_dir : /data/tfrecords  batch_size : {batch}  num_iter : {len(rates)}  iter_unit : batch  "
             f"warmup_steps : {warmup}  display_every : 1  use_xla : True  use_dali : False  use_tf_amp : {amp} ",
             f"Num GPUs {gpus}", f"Per-GPU Batch Size {batch}", "Starting Model Training..."]
    t = start + timedelta(seconds=30)
    for step, rate in enumerate(rates):
        t += timedelta(seconds=gpus * batch / rate)
        lines.append(f"DLL {t:%Y-%m-%d %H:%M:%S.%f} - (0, {step}) total_ips : {rate} ")
    if ended:
        measured = rates[warmup:]
        value = reported if reported is not None else sum(measured) / len(measured)
        lines += ["Ending Model Training ...",
                  f"DLL {t:%Y-%m-%d %H:%M:%S.%f} - () train_throughput : {value}{summary_unit} "]
    return "\n".join(lines) + "\n"


@pytest.fixture
def write_tf1_log(tmp_path):
    """Write `tf1_log_text(**kwargs)` to `tmp_path / name` and return the path."""

    def write(name: str, **kwargs) -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(tf1_log_text(**kwargs), encoding="utf-8")
        return path

    return write


@pytest.fixture
def fake(monkeypatch) -> Path:
    """CPU studies run `fixtures/runner/fake_workload.py` with this Python instead of a framework's
    workload, so that the runner and launchers are tested for real without one; the script's path."""
    from benchbook.environment import envs
    from benchbook.studies import commands

    script = FIXTURES / "runner" / "fake_workload.py"
    monkeypatch.setattr(commands.models, "workload_script", lambda framework, model=None: script)
    monkeypatch.setattr(envs, "ensure", lambda framework, say=print, study_python=None: Path(sys.executable))
    return script


def framework_python(var: str, wanted: str) -> str:
    """The Python that environment variable `var` names (a framework's environment, `wanted` says
    which): unset skips the test, a path that is not there fails it."""
    python = os.environ.get(var)
    if not python:
        pytest.skip(f"set {var} to {wanted}")
    if not Path(python).exists():
        pytest.fail(f"{var}={python} does not exist")
    return python


# A CPU study and the log of one of its runs, for tests of study folders (reports, views).
CPU_STUDY = "schema_version: 1\nname: s\nmodel: resnet50_tf\nruntime: cpu\nsweep: {batch_size: 8, data: synthetic}\n" \
        "repeats: 2\niterations: 6\nwarmup_steps: 2\n"


def cpu_log_text(rate: float) -> str:
    """A run in the benchbook_cpu DLLogger format (parsers/benchbook_cpu.py): parameters, 6 steps, summary."""
    lines = ["DLL 2026-01-01 00:00:00.000000 - PARAMETER workload : resnet50_tf  framework : tensorflow  "
             "model : resnet50_v1.5  mode : training_benchmark  gpus : 0  batch_size : 8  warmup_steps : 2  "
             "precision : fp32  xla : False  data : synthetic"]
    for i in range(6):
        lines.append(f"DLL 2026-01-01 00:00:0{i + 1}.000000 - Epoch: 0 Iteration: {i}  train.loss : 1.0  "
                     f"train.ips : {rate:.2f} images/s  train.lr : 0.1")
    lines.append(f"DLL 2026-01-01 00:00:09.000000 - Summary: train.ips : {rate:.2f} images/s")
    return "\n".join(lines) + "\n"


@contextlib.contextmanager
def extended_catalog(*axes, metrics=(), measures=()):
    """The default catalog with a test's own axes, metrics and measures, as a model module of its own would give
    them: a plugin module (`core.catalog.PLUGINS_VAR`) made for the `with` block; the catalog is built again on
    entry and after it (its cache cleared), so that no test leaves its axis to the next."""
    import types

    from benchbook.core import catalog

    name = f"_benchbook_test_plugin_{id(axes)}"
    module = types.ModuleType(name)
    module.catalog_part = lambda: catalog.Part(axes=tuple(axes), metrics=tuple(metrics), measures=tuple(measures))
    sys.modules[name] = module
    before = os.environ.get(catalog.PLUGINS_VAR)
    os.environ[catalog.PLUGINS_VAR] = name
    catalog.default.cache_clear()
    try:
        yield catalog.default()
    finally:
        del sys.modules[name]
        if before is None:
            os.environ.pop(catalog.PLUGINS_VAR, None)
        else:
            os.environ[catalog.PLUGINS_VAR] = before
        catalog.default.cache_clear()
