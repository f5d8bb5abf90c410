"""The model registry (benchbook.models): what each spec holds is used, and no other library module
names a model."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from benchbook import models, workloads
from benchbook.errors import UnknownNameError
from benchbook.models.reference_schema import LOG_NAMES
from benchbook.reports import references
from benchbook.studies import study
from benchbook.studies.launchers.base import processes

ROOT = Path(__file__).resolve().parents[1]
LIB = ROOT / "lib" / "benchbook"
# Where a model may be named: the registry and each model's own CPU workload (its script, the shared
# _common.py its scripts import, its pinned requirements). Each model's notebook is notebooks/<model>.py.
ALLOWED = [LIB / "models", LIB / "workloads" / "requirements", LIB / "workloads" / "_common.py"]
ALLOWED += [LIB / "workloads" / spec.cpu_script for spec in models.specs() if spec.cpu_script]


def _sources() -> list[Path]:
    files = [p for top in (LIB, ROOT / "tools") for p in top.rglob("*")
             if p.is_file() and "__pycache__" not in p.parts and p.suffix in (".py", ".txt", ".sh", ".md", ".yaml")]
    return [p for p in files if not any(p == a or a in p.parents for a in ALLOWED)]


def test_no_library_module_outside_the_registry_names_a_model():
    # whole names: the log format ngc_bert_pytorch names no model bert_pytorch
    pattern = re.compile("|".join(rf"\b{re.escape(n)}\b" for n in models.names()))
    named = [f"{p.relative_to(ROOT)}:{i}: {line.strip()}" for p in _sources()
             for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if pattern.search(line)]
    assert named == []


def test_the_scan_sees_the_library_and_would_catch_a_name(tmp_path):
    scanned = {p.relative_to(ROOT).as_posix() for p in _sources()}
    assert {"lib/benchbook/studies/study.py", "lib/benchbook/studies/commands.py",
            "lib/benchbook/studies/checks/data.py",
            "lib/benchbook/workloads/__init__.py", "tools/check_reference_reports.py"} <= scanned
    assert not any(s.startswith("lib/benchbook/models/") for s in scanned)
    # whole names: the log format ngc_bert_pytorch names no model bert_pytorch
    pattern = re.compile("|".join(rf"\b{re.escape(n)}\b" for n in models.names()))
    assert pattern.search('if study.model == "maskrcnn_tf2":')


def test_the_registry_holds_every_model_module_in_name_order():
    """A model is found by its module alone (models/__init__.py lists none), in name order."""
    found = sorted(p.stem for p in Path(models.__file__).parent.glob("*.py")
                   if p.stem not in {"__init__", "spec", "reference_schema", "reference_messages"})
    assert list(models.names()) == found and {"resnet50_tf", "maskrcnn_tf2"} <= set(found)
    assert study.MODELS == {s.name: s.framework for s in models.specs()}
    assert set(LOG_NAMES) == set(models.names())


def test_unknown_model_lists_the_known_ones():
    with pytest.raises(UnknownNameError, match=r"unknown model .resnet101.; known: (\w+, )*maskrcnn_tf2, resnet50_"):
        models.get("resnet101")


def test_a_name_registers_once():
    with pytest.raises(ValueError, match="registered twice"):
        models.register(models.get("resnet50_tf"))


@pytest.mark.parametrize("spec", models.specs(), ids=lambda s: s.name)
def test_each_spec_points_at_what_exists(spec):
    assert (ROOT / "params" / spec.name).is_dir()
    assert spec.framework in workloads.FRAMEWORKS
    if spec.cpu_script:  # (a model may have no CPU workload: TF BERT; its studies are NGC ones)
        assert models.workload_script(spec.framework, spec.name) == workloads.HERE / spec.cpu_script
        assert models.workload_script(spec.framework, spec.name).is_file()
    else:
        with pytest.raises(ValueError, match=f"model '{spec.name}' has no CPU workload"):
            models.workload_script(spec.framework, spec.name)
    for report in spec.reference_reports:
        assert references.load(report.reference).model == spec.name
    assert callable(spec.ngc_command)
    if spec.notebook is not None:  # (an analysis-only model may have no report notebook yet: LLM pre-training)
        assert all((ROOT / "notebooks" / f"{spec.notebook}{ext}").is_file() for ext in (".py", ".ipynb"))
    else:
        assert spec.analysis_only
    from benchbook.logs import parsers  # the log names a spec gives are those a log format gives its runs
    assert spec.log_names in {(f.framework, f.model) for f in parsers.FORMATS.values()}
    assert models.of_logs(spec.log_names[1]).unit == spec.unit  # one unit for the logs of one model name


def test_a_model_s_unit_notebook_and_log_names_live_in_its_spec():
    from benchbook.reports.plot_base import rate_unit
    from benchbook.reports.publish import for_logs

    maskrcnn = models.get("maskrcnn_tf2")
    assert (maskrcnn.unit, maskrcnn.notebook) == ("samples/s", "maskrcnn_tf2")
    assert maskrcnn.log_names == ("tensorflow2", "maskrcnn")
    assert models.of_logs("maskrcnn") is maskrcnn and models.of_logs("gpt") is None
    # one model name in the logs of two frameworks: the framework tells them apart
    assert models.of_logs("bert", "tensorflow").name == "bert_tf"
    assert models.of_logs("bert", "pytorch").name == "bert_pytorch"
    assert rate_unit(pd.DataFrame({"model": ["maskrcnn", "maskrcnn"]})) == "samples/s"
    assert rate_unit(pd.DataFrame({"model": ["maskrcnn", "resnet50"]})) == "samples/s"  # no model's own word
    assert for_logs(ROOT / "tests" / "fixtures" / "ngc_maskrcnn", "maskrcnn_tf2").notebook.name == "maskrcnn_tf2.ipynb"


def test_each_framework_has_one_own_workload():
    for framework in workloads.FRAMEWORKS:
        owners = [s.name for s in models.specs() if s.framework_workload and s.framework == framework]
        assert len(owners) == 1, (framework, owners)
        assert models.framework_workload(framework).name == owners[0]
    with pytest.raises(UnknownNameError, match="unknown framework 'jax'"):
        models.framework_workload("jax")


def test_reference_reports_have_distinct_names_and_folders():
    reports = [r for s in models.specs() for r in s.reference_reports]
    assert len({r.report for r in reports}) == len(reports)
    assert len({r.log_folder for r in reports}) == len(reports)


def _study(model: str, runtime: str = "ngc") -> study.Study:
    doc = {"schema_version": 1, "model": model, "runtime": runtime, "iterations": 10,
           "sweep": {"batch_size": 8, "xla": models.get(model).ngc_xla == "always" and runtime == "ngc"}}
    if runtime == "ngc":
        doc.update(code={"repository": "https://example.invalid/x.git", "commit": "abcdef0"},
                   container={"image": "nvcr.io/nvidia/x:1"})
        if not models.get(model).ngc_synthetic:
            doc["data"] = {"path": "/data"}
        else:
            doc["sweep"]["data"] = "synthetic"
    return study.Study.model_validate(doc)


#: The models a study launches (an analysis-only model's study is refused at load: test_references_llm.py).
LAUNCHED = [spec for spec in models.specs() if not spec.analysis_only]


@pytest.mark.parametrize("spec", LAUNCHED, ids=lambda s: s.name)
def test_spawns_own_workers_sets_one_process_per_node(spec):
    s = _study(spec.name)
    cfg = {"gpus": 16, "nodes": 2}
    assert processes(cfg, s) == (2 if spec.spawns_own_workers else 16)


def test_gpu_counts_in_one_run_merge_the_sweep_points():
    for spec in LAUNCHED:
        s = _study(spec.name).model_copy(update={"sweep": [study.SweepBlock(batch_size=8, gpus=[1, 8],
                                                                            xla=spec.ngc_xla == "always",
                                                                            data="real" if not spec.ngc_synthetic
                                                                            else "synthetic")]})
        runs = study.expand(s)
        assert len(runs) == (1 if spec.ngc_gpu_counts_in_one_run else 2), spec.name
