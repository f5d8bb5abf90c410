"""The Mask R-CNN CPU workload, `lib/benchbook/workloads/maskrcnn_tf.py`.

Its numpy parts (command line, synthetic shapes, anchors) are tested here in benchbook's own
environment. The training itself runs only where an environment variable names a Python that has
TensorFlow (benchbook's environment has none):

    BENCHBOOK_TEST_TF_PYTHON=/path/to/tfenv/bin/python python -m pytest tests/test_workload_maskrcnn.py
"""

from __future__ import annotations

import ast
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from benchbook import analyze, workloads
from benchbook.logs.parsers import dllogger
from benchbook.workloads import maskrcnn_tf as mrcnn
from conftest import framework_python

SCRIPT = workloads.HERE / "maskrcnn_tf.py"
TF_ENV = "BENCHBOOK_TEST_TF_PYTHON"
COMPONENTS = ("rpn_cls", "rpn_box", "cls", "box", "mask")

TS = r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6})"
PARAMETER_RE = re.compile(rf"^DLL {TS} - PARAMETER (\S.*)$")
NUM = r"(-?\d+\.\d{4})"
STEP_RE = re.compile(
    rf"^DLL {TS} - Epoch: 0 Iteration: (\d+)  train\.loss : {NUM}  train\.ips : (\d+\.\d\d) images/s  "
    r"train\.lr : (\S+)  train\.step_time : (\d+\.\d{6}) s"
    + "".join(rf"  train\.loss_{k} : {NUM}" for k in COMPONENTS)
    + "$"
)
SUMMARY_RE = re.compile(
    rf"^DLL {TS} - Summary: train\.ips : (\d+\.\d\d) images/s  train\.images : (\d+)  train\.time : (\d+\.\d\d) s  "
    r"train\.iterations : (\d+)  train\.warmup_steps : (\d+)$"
)


def _run(python: str, argv: list[str], cwd: Path, timeout: int = 600) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    return subprocess.run(
        [python, str(SCRIPT), *argv], capture_output=True, text=True, cwd=cwd, env=env, timeout=timeout
    )


def _tf_python() -> str:
    return framework_python(TF_ENV, "a Python that has TensorFlow to run the Mask R-CNN workload")


# ---------------------------------------------------------------------------------------------
# without TensorFlow: the script's imports, command line, data and anchors


def test_script_imports_only_tensorflow_numpy_and_its_sibling():
    tree = ast.parse(SCRIPT.read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names.add(node.module.split(".")[0])
    third_party = names - set(sys.stdlib_module_names) - {"__future__"}
    assert third_party == {"numpy", "tensorflow", "_common"}, third_party


def test_train_and_evaluate_is_refused_with_exit_2(tmp_path):
    # The command line is checked before TensorFlow is imported: benchbook's Python (numpy, no TF) will do.
    done = _run(sys.executable, ["--mode", "train_and_evaluate"], tmp_path, timeout=120)
    assert done.returncode == 2
    assert "train_and_evaluate" in done.stderr and "training_benchmark" in done.stderr
    assert done.stdout == ""


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--image_size", "100"], "multiple of 32"),
        (["--image_size", "32"], "at least 64"),
        (["--data", "digits"], "invalid choice"),
        (["--num_iter", "4", "--warmup_steps", "4"], "warmup_steps"),
        (["--batch_size", "0"], "batch_size"),
    ],
)
def test_bad_settings_exit_2(argv, message, capsys):
    with pytest.raises(SystemExit) as exc:
        mrcnn.parse_args(argv)
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_defaults():
    args = mrcnn.parse_args([])
    expected = dict(mode="training_benchmark", batch_size=1, image_size=128, num_iter=12, warmup_steps=4)
    expected.update(precision="fp32", xla=False, data="synthetic", threads=0, seed=0, display_every=1)
    assert {k: getattr(args, k) for k in expected} == expected
    assert args.lr == pytest.approx(0.01)
    assert mrcnn.parse_args(["--batch_size", "2"]).lr == pytest.approx(0.02)


def test_synthetic_shapes_are_deterministic_with_tight_boxes():
    pool = mrcnn.synthetic_pool(2, 64, seed=3)
    again = mrcnn.synthetic_pool(2, 64, seed=3)
    assert len(pool) == mrcnn.POOL_BATCHES
    for batch, same in zip(pool, again, strict=True):
        images, boxes, classes, masks = batch
        assert images.shape == (2, 64, 64, 3) and images.dtype == np.float32
        assert boxes.shape == (2, mrcnn.MAX_INSTANCES, 4) and classes.shape == (2, mrcnn.MAX_INSTANCES)
        assert masks.shape == (2, mrcnn.MAX_INSTANCES, 64, 64)
        for a, b in zip(batch, same, strict=True):
            np.testing.assert_array_equal(a, b)
        for b in range(2):
            real = classes[b] > 0
            assert 1 <= real.sum() <= mrcnn.MAX_INSTANCES
            assert list(real) == sorted(real, reverse=True), "instances first, padding last"
            assert set(classes[b][real]) <= set(range(1, mrcnn.NUM_CLASSES))
            for k in np.flatnonzero(real):
                rows = np.flatnonzero(masks[b, k].any(axis=1))
                cols = np.flatnonzero(masks[b, k].any(axis=0))
                assert tuple(boxes[b, k]) == (rows[0], cols[0], rows[-1] + 1, cols[-1] + 1)
                assert masks[b, k].sum() >= mrcnn.MIN_PIXELS
            for k in np.flatnonzero(~real):
                assert masks[b, k].sum() == 0 and tuple(boxes[b, k]) == (0, 0, 1, 1)
    other = mrcnn.synthetic_pool(2, 64, seed=4)
    assert not np.array_equal(other[0][0], pool[0][0])


def test_anchors_follow_the_rpn_outputs():
    for size in (64, 128):
        anchors = mrcnn.make_anchors(size)
        sizes = mrcnn.level_sizes(size)
        assert anchors.shape == (sum(sizes), 4)
        start = 0
        for level, n in zip(mrcnn.LEVELS, sizes, strict=True):
            part = anchors[start : start + n]
            start += n
            h, w = part[:, 2] - part[:, 0], part[:, 3] - part[:, 1]
            side = mrcnn.ANCHOR_SCALE * 2**level
            np.testing.assert_allclose(np.sqrt(h * w), side, rtol=1e-5)  # the same area at every ratio
            np.testing.assert_allclose(sorted(set(np.round(h / w, 4))), sorted(mrcnn.ASPECT_RATIOS), rtol=1e-3)
            # (y, x, ratio) order: the first ratio's centres walk along x first
            centres = (part[:: len(mrcnn.ASPECT_RATIOS), :2] + part[:: len(mrcnn.ASPECT_RATIOS), 2:]) / 2
            cells = int(math.isqrt(n // len(mrcnn.ASPECT_RATIOS)))
            assert centres[0].tolist() == pytest.approx([2**level / 2] * 2)
            if cells > 1:
                assert centres[1].tolist() == pytest.approx([2**level / 2, 1.5 * 2**level])


# ---------------------------------------------------------------------------------------------
# with TensorFlow: a real training run

TINY = ["--batch_size", "1", "--image_size", "64", "--num_iter", "6", "--warmup_steps", "2", "--threads", "2"]


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    python = _tf_python()
    folder = tmp_path_factory.mktemp("maskrcnn")
    done = _run(python, TINY, folder)
    log = folder / "maskrcnn_tf_tiny.log"
    log.write_text(done.stdout, encoding="utf-8")
    return done, log


def test_tiny_run_logs_every_step_and_a_summary(tiny_run):
    done, _ = tiny_run
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert all(line.startswith("DLL ") for line in lines), done.stdout
    params = [PARAMETER_RE.match(line) for line in lines if " - PARAMETER " in line]
    assert len(params) == 1 and params[0] and lines[0] == params[0].string
    p = dllogger.parameters(params[0].group(2))
    expected = {
        "workload": "maskrcnn_tf",
        "framework": "tensorflow",
        "model": "maskrcnn",
        "mode": "training_benchmark",
        "device": "cpu",
        "gpus": "0",
        "batch_size": "1",
        "image_size": "64",
        "num_iter": "6",
        "warmup_steps": "2",
        "precision": "fp32",
        "xla": "False",
        "data": "synthetic",
        "threads": "2",
    }
    assert {k: p.get(k) for k in expected} == expected
    assert re.fullmatch(r"\d+\.\d+\.\d+\S*", p["framework_version"])

    steps = [STEP_RE.match(line) for line in lines if " Iteration: " in line]
    assert len(steps) == 6 and all(steps), [line for line in lines if " Iteration: " in line]
    assert [int(m.group(2)) for m in steps] == list(range(6))
    losses = [float(m.group(3)) for m in steps]
    for m in steps:
        parts = [float(m.group(7 + i)) for i in range(len(COMPONENTS))]
        assert all(math.isfinite(v) and v >= 0 for v in parts)
        assert float(m.group(3)) == pytest.approx(sum(parts), abs=5e-4)  # total = the five terms (4 decimals)
        assert float(m.group(4)) == pytest.approx(1 / float(m.group(6)), rel=0.01, abs=0.01)
        assert float(m.group(5)) > 0
    assert len(set(losses)) > 1, "the loss should change as the weights do"

    summary = SUMMARY_RE.match(lines[-1])
    assert summary, lines[-1]
    measured = [float(m.group(4)) for m in steps[2:]]
    assert float(summary.group(2)) == pytest.approx(np.mean(measured), abs=0.011)  # both rounded to 0.01
    assert int(summary.group(3)) == len(measured)
    assert float(summary.group(4)) == pytest.approx(sum(float(m.group(6)) for m in steps[2:]), abs=0.011)
    assert (int(summary.group(5)), int(summary.group(6))) == (6, 2)


def test_tiny_run_is_analyzed_as_one_complete_run(tiny_run):
    done, log = tiny_run
    assert done.returncode == 0, done.stderr[-3000:]
    result = analyze([log])
    assert not result.problems, result.problems
    assert len(result.runs) == 1
    run = result.runs.iloc[0]
    assert run["status"] == "complete"
    assert run["recomputed_throughput"] > 0
    reported = float(SUMMARY_RE.match(done.stdout.splitlines()[-1]).group(2))
    assert run["recomputed_throughput"] == pytest.approx(reported, abs=0.011)
    assert len(result.iterations) == 6


def test_xla_runs_or_is_refused_before_the_log_starts(tmp_path):
    """TensorFlow 2.21 has no XLA kernel for CropAndResize (ROI Align): exit 2 and say so, nothing logged."""
    done = _run(_tf_python(), [*TINY, "--num_iter", "3", "--warmup_steps", "1", "--xla"], tmp_path)
    if done.returncode == 2:
        assert "XLA" in done.stderr and "without --xla" in done.stderr
        assert done.stdout == ""
    else:
        assert done.returncode == 0, done.stderr[-3000:]
        assert "xla : True" in done.stdout
        assert sum(bool(STEP_RE.match(line)) for line in done.stdout.splitlines()) == 3
