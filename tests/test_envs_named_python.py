"""A Python named by the study (`python:`) or BENCHBOOK_PYTHON_<FRAMEWORK> replaces the framework's
environment: checked to import the framework, used by the runs, and no environment is built."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

from benchbook.environment import envs
from benchbook.studies import runner, study

ROOT = Path(__file__).resolve().parents[1]


def _fake_framework(tmp_path: Path, monkeypatch, module: str = "torch") -> Path:
    """A folder with an importable stand-in for `module`, on this Python's path in subprocesses."""
    pkg = tmp_path / "site"
    pkg.mkdir()
    (pkg / f"{module}.py").write_text("__version__ = 'stand-in'\n")
    monkeypatch.setenv("PYTHONPATH", str(pkg))
    return pkg


def test_the_variable_names_the_python_and_nothing_is_built(tmp_path, monkeypatch):
    _fake_framework(tmp_path, monkeypatch)
    monkeypatch.setenv("BENCHBOOK_ENVS", str(tmp_path / "envs"))
    monkeypatch.setenv("BENCHBOOK_PYTHON_PYTORCH", sys.executable)
    assert envs.variable("pytorch") == "BENCHBOOK_PYTHON_PYTORCH"
    assert envs.ensure("pytorch", say=lambda _: pytest.fail("no environment is built")) == Path(sys.executable)
    assert envs.python("pytorch") == Path(sys.executable)
    assert not (tmp_path / "envs").exists()


def test_the_study_s_python_wins_over_the_variable(tmp_path, monkeypatch):
    monkeypatch.setenv("BENCHBOOK_PYTHON_PYTORCH", "/nowhere/python3")
    assert envs.named("pytorch", sys.executable) == (Path(sys.executable), "the study's `python`")
    assert envs.named("pytorch") == (Path("/nowhere/python3"), "BENCHBOOK_PYTHON_PYTORCH")
    monkeypatch.delenv("BENCHBOOK_PYTHON_PYTORCH")
    assert envs.named("pytorch") is None


def test_a_python_that_cannot_import_the_framework_is_refused_with_the_setting(tmp_path, monkeypatch):
    monkeypatch.setenv("BENCHBOOK_PYTHON_MXNET", sys.executable)  # benchbook's Python has no mxnet
    with pytest.raises(envs.NamedPythonError, match=r"BENCHBOOK_PYTHON_MXNET names .* cannot import mxnet"):
        envs.ensure("mxnet")
    with pytest.raises(envs.NamedPythonError, match=r"the study's `python` names /nowhere/python3, which is not"):
        envs.ensure("pytorch", study_python="/nowhere/python3")


def _study(tmp_path: Path, **extra) -> Path:
    doc = yaml.safe_load((ROOT / "params" / "resnet50_pytorch" / "cpu_smoke.yaml").read_text())
    doc.update(extra)
    path = tmp_path / "smoke.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def test_a_study_s_python_is_the_one_its_runs_start(tmp_path, monkeypatch):
    _fake_framework(tmp_path, monkeypatch)
    s = study.load(_study(tmp_path, python=sys.executable))
    assert s.python == sys.executable
    ((_rid, _dir, _cfg, cmd),) = runner.plan(s, tmp_path / "runs")
    assert cmd.argv[0] == sys.executable and cmd.argv[1].endswith("resnet50_pytorch.py")


def test_python_is_refused_on_ngc_studies(tmp_path):
    doc = yaml.safe_load((ROOT / "params" / "resnet50_pytorch" / "ngc.yaml").read_text())
    doc["python"] = "/usr/bin/python3"
    path = tmp_path / "ngc.yaml"
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(study.StudyError, match="NGC runs use the container's"):
        study.load(path)


def _answers(stdout: str, returncode: int = 0, stderr: str = ""):
    """A stand-in for subprocess.run that records the command and answers as told."""
    import subprocess

    seen = []

    def run(argv, **_):
        seen.append(argv)
        return subprocess.CompletedProcess(argv, returncode, stdout, stderr)
    return run, seen


def test_check_asks_the_named_python_for_the_framework_and_the_gpu():
    from benchbook.studies import checks

    s = study.load(ROOT / "params" / "resnet50_pytorch" / "gpu.yaml")
    run, seen = _answers("2.13.0\n1 NVIDIA H100 80GB HBM3\n")
    got = {c.name: c for c in checks.check(s, run=run, env={"BENCHBOOK_PYTHON_PYTORCH": "/usr/bin/python3"})}
    assert seen[0][:2] == ["/usr/bin/python3", "-c"] and "torch.cuda.device_count()" in seen[0][2]
    assert got["pytorch (named Python)"].ok and "torch 2.13.0" in got["pytorch (named Python)"].detail
    assert got["CUDA GPU"].ok and got["CUDA GPU"].detail == "1 CUDA device(s), the first: NVIDIA H100 80GB HBM3"
    run, _ = _answers("2.13.0+cpu\n0 \n")
    got = {c.name: c for c in checks.check(s, run=run, env={"BENCHBOOK_PYTHON_PYTORCH": "/usr/bin/python3"})}
    assert got["CUDA GPU"].ok is False and "no CUDA device" in got["CUDA GPU"].detail
    run, _ = _answers("", 1, "Traceback ...\nModuleNotFoundError: No module named 'torch'\n")
    (bad,) = checks.check(s, run=run, env={"BENCHBOOK_PYTHON_PYTORCH": "/usr/bin/python3"})
    assert bad.ok is False and bad.detail == ("/usr/bin/python3 (from BENCHBOOK_PYTHON_PYTORCH) cannot import torch: "
                                              "ModuleNotFoundError: No module named 'torch'")


def test_make_report_builds_the_studies_environments_ahead_and_says_which_failed(tmp_path, monkeypatch, capsys):
    """`python -m benchbook.studies.runner STUDY...` (what `make report` starts beside the published sets):
    each CPU study's environment is made ready; one that fails is named with its study, the others go on."""
    monkeypatch.setenv("BENCHBOOK_ENVS", str(tmp_path / "envs"))
    built = []

    def ensure(framework, say=print, study_python=None):
        if framework == "mxnet":
            raise envs.FrameworkEnvError("pip failed")
        built.append(framework)
        return Path(sys.executable)

    monkeypatch.setattr(envs, "ensure", ensure)
    studies = [str(ROOT / "params" / m / "cpu.yaml") for m in ("resnet50_tf", "resnet50_mxnet", "resnet50_pytorch")]
    assert runner.prepare_environments(studies) == 1
    assert built == ["tensorflow", "pytorch"]
    assert f"benchbook: {studies[1]}: pip failed" in capsys.readouterr().err
    assert runner.prepare_environments(studies[:1]) == 0
