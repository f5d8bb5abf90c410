"""The PyTorch ResNet-50 v1.5 workload: its network against torchvision's v1.5 shapes, its precisions,
and real short runs on the CPU where BENCHBOOK_TEST_PYTORCH_PYTHON names a Python with torch."""

from __future__ import annotations

import os
import subprocess

import pytest

from benchbook import analyze, models
from conftest import framework_python
from test_workloads import TINY, _check_log

VAR = "BENCHBOOK_TEST_PYTORCH_PYTHON"
SCRIPT = models.workload_script("pytorch")


def _run(python, code_or_argv, tmp_path, script=True):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    argv = [python, str(SCRIPT), *code_or_argv] if script else [python, "-c", code_or_argv]
    return subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=900)


@pytest.fixture
def python():
    return framework_python(VAR, "a Python that has torch to run this test")


def test_network_is_resnet50_v1_5(python, tmp_path):
    # torchvision's resnet50: 25,557,032 parameters with 1000 classes; v1.5 strides the 3x3 conv.
    code = f"""
import sys; sys.path.insert(0, {str(SCRIPT.parent)!r})
import torch, resnet50_pytorch as w
m = w.build_model(torch, 1000)
print(sum(p.numel() for p in m.parameters()))
first = m[7]  # stem (4 modules), stage 1 (3 blocks), then the first bottleneck of stage 2
print(first.conv1.stride, first.conv2.stride, first.downsample[0].stride)
print(tuple(m(torch.zeros(2, 3, 64, 64)).shape))
"""
    done = _run(python, code, tmp_path, script=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split("\n")[:3] == ["25557032", "(1, 1) (2, 2) (2, 2)", "(2, 1000)"]


@pytest.mark.parametrize("extra", [[], ["--precision", "bf16", "--channels_last"], ["--data", "digits"]],
                         ids=["fp32", "bf16-channels-last", "digits"])
def test_script_training_benchmark(python, extra, tmp_path):
    done = _run(python, [*TINY, *extra], tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    expected = {"workload": "resnet50_pytorch", "framework": "pytorch", "device": "cpu", "gpus": "0",
                "precision": "bf16" if "bf16" in extra else "fp32", "batch_size": "2",
                "channels_last": str("--channels_last" in extra), "compile": "False"}
    _check_log(done.stdout, num_iter=4, warmup=2, batch=2, parameters=expected)
    log = tmp_path / "run.log"
    log.write_text(done.stdout)
    run = analyze([log]).runs.iloc[0]
    assert (run["format"], run["framework"], run["precision"]) == ("benchbook_cpu", "pytorch", expected["precision"])


@pytest.mark.parametrize(("argv", "message"), [
    (["--precision", "amp"], "GPU precision"),
    (["--precision", "tf32"], "GPU precision"),
    (["--device", "cuda"], None),  # no CUDA device here: rejected; with one it would run
])
def test_gpu_settings_are_rejected_cleanly_on_the_cpu(python, argv, message, tmp_path):
    done = _run(python, [*TINY, *argv], tmp_path)
    if argv == ["--device", "cuda"] and done.returncode == 0:
        pytest.skip("this machine has a CUDA device")
    assert done.returncode == 2 and done.stdout == ""
    assert (message or "sees no CUDA device") in done.stderr


def test_help_shows_the_gpu_options_without_torch(tmp_path):
    import sys

    done = _run(sys.executable, ["--help"], tmp_path)
    assert done.returncode == 0 and "--channels_last" in done.stdout and "--target_accuracy" in done.stdout
