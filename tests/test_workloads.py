"""The CPU training workloads: `_common` (command line, DLLogger lines, data, timing, the loop) and the
TensorFlow and MXNet ResNet-50 scripts.

The scripts themselves run only where an environment variable names a Python that has the
framework (benchbook's own environment has neither):

    BENCHBOOK_TEST_TF_PYTHON=/path/to/tfenv/bin/python BENCHBOOK_TEST_MXNET_PYTHON=/path/to/mxenv/bin/python \
        python -m pytest tests/test_workloads.py
"""

from __future__ import annotations

import ast
import io
import json
import math
import os
import platform
import re
import shutil
import subprocess
import sys
from datetime import datetime, timedelta

import numpy as np
import pytest

from benchbook import models, workloads
from benchbook.logs.parsers import dllogger
from benchbook.workloads import _common as common
from conftest import framework_python

TS = r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6})"
PARAMETER_RE = re.compile(rf"^DLL {TS} - PARAMETER (\S.*)$")
STEP_RE = re.compile(
    rf"^DLL {TS} - Epoch: (\d+) Iteration: (\d+)  train\.loss : (-?\d+\.\d{{4}})  "
    r"train\.ips : (\d+\.\d\d) images/s  train\.lr : (\S+)  train\.step_time : (\d+\.\d{6}) s$"
)
VAL_RE = re.compile(
    rf"^DLL {TS} - Epoch: (\d+)  val\.top1 : (\d+\.\d\d)  val\.top5 : (\d+\.\d\d)  "
    r"val\.ips : (\d+\.\d) images/s  val\.loss : (\d+\.\d{4})$"
)
SUMMARY_RE = re.compile(
    rf"^DLL {TS} - Summary: train\.ips : (\d+\.\d\d) images/s  train\.images : (\d+)  train\.time : (\d+\.\d\d) s  "
    r"train\.iterations : (\d+)  train\.warmup_steps : (\d+)(.*)$"
)
SUMMARY_EVAL_RE = re.compile(
    r"^  val\.top1 : (\d+\.\d\d)  train\.epochs : (\d+)  target_reached : (True|False)"
    r"(?:  time_to_target : (\d+\.\d) s)?$"
)


def _stamp(text: str) -> datetime:
    return datetime.strptime(text, common.TIMESTAMP)


# ---------------------------------------------------------------------------------------------
# the package helpers and requirements files


def test_scripts_and_requirements_exist():
    assert workloads.FRAMEWORKS == ("tensorflow", "mxnet", "pytorch")
    assert models.workload_script("tensorflow").name == "resnet50_tf.py"
    assert models.workload_script("mxnet").name == "resnet50_mxnet.py"
    assert models.workload_script("pytorch").name == "resnet50_pytorch.py"
    for fw in workloads.FRAMEWORKS:
        assert models.workload_script(fw).is_file()
        assert workloads.requirements(fw).is_file()
        assert (models.workload_script(fw).parent / "_common.py").is_file()
    with pytest.raises(ValueError, match="unknown framework"):
        models.workload_script("torch")
    with pytest.raises(ValueError, match="unknown framework"):
        workloads.requirements("tf")


@pytest.mark.parametrize(
    "framework, must_have",
    [
        ("tensorflow", {"tensorflow-cpu": "2.21.0", "scikit-learn": None, "numpy": None}),
        ("mxnet", {"mxnet": "1.9.1", "numpy": "1.23.5", "scikit-learn": None}),
        ("pytorch", {"torch": "2.13.0", "numpy": None, "scikit-learn": None}),
    ],
)
def test_requirements_are_exact_pins_with_a_header(framework, must_have):
    lines = workloads.requirements(framework).read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith("#"), "the file starts with a comment saying why it is pinned"
    assert any("pinned" in line for line in lines if line.startswith("#"))
    pins = {}
    for line in lines:
        if not line.strip() or line.startswith("#"):
            continue
        m = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)==([0-9][0-9A-Za-z.+!-]*)", line.strip())
        assert m, f"not an exact pin: {line!r}"
        pins[re.sub(r"[-_.]+", "-", m.group(1)).lower()] = m.group(2)
    for name, version in must_have.items():
        assert name in pins, f"{name} is not pinned"
        if version:
            assert pins[name] == version


def test_common_imports_with_numpy_only():
    """The scripts' shared module must not pull in the frameworks or scikit-learn at import time."""
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); import _common; "
        "bad = [m for m in ('sklearn', 'tensorflow', 'mxnet', 'benchbook') if m in sys.modules]; "
        "assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code, str(workloads.HERE)], check=True, timeout=60)


COMMON_PARTS = sorted(workloads.HERE.glob("_common*.py"))


def test_common_parts_import_only_numpy_and_each_other():
    """In a framework's environment there is no benchbook: the shared parts import the standard library,
    numpy and their siblings at the top, scikit-learn, mpi4py and mlperf_logging only inside the functions that
    need them."""
    siblings = {p.stem for p in COMMON_PARTS}
    assert {"_common", "_common_cli", "_common_dllogger", "_common_loop", "_common_mpi"} <= siblings
    for path in COMMON_PARTS:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        top = [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
        top += [n for t in tree.body if isinstance(t, ast.Try) for n in t.body + t.handlers[0].body]
        for node in ast.walk(tree):
            if not isinstance(node, ast.Import | ast.ImportFrom) or getattr(node, "level", 0):
                continue
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module]
            for name in (n.split(".")[0] for n in names):
                lazy = name in ("sklearn", "mpi4py", "mlperf_logging") and node not in top
                assert name in sys.stdlib_module_names or name in siblings | {"numpy"} or lazy, (path.name, name)


def test_common_imports_as_sibling_files_with_every_shared_name(tmp_path):
    """A script's `import _common` from a folder holding only the shared files gives every name the
    package gives (the scripts use them as `common.<name>`)."""
    for path in COMMON_PARTS:
        shutil.copyfile(path, tmp_path / path.name)
    code = "import sys, _common; print(' '.join(sorted(n for n in _common.__all__ if hasattr(_common, n))))"
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True,
                          timeout=60)
    assert done.stdout.split() == sorted(common.__all__)
    assert {"parse_args", "DLLogger", "run", "World", "keras_resnet50_stages"} <= set(common.__all__)


# ---------------------------------------------------------------------------------------------
# DLLogger lines


def test_format_line_pairs_units_and_spacing():
    stamp = datetime(2026, 11, 21, 10, 0, 0, 123456)
    line = common.format_line(
        stamp,
        (0, 7),
        [("train.loss", 6.93121, None, 4), ("train.ips", 45.1234, "images/s", 2), ("train.lr", 0.1, None, ".6g")],
    )
    assert line == (
        "DLL 2026-11-21 10:00:00.123456 - Epoch: 0 Iteration: 7  train.loss : 6.9312  "
        "train.ips : 45.12 images/s  train.lr : 0.1"
    )
    assert common.format_line(stamp, 3, [("val.top1", 87.5, None, 2)]) == (
        "DLL 2026-11-21 10:00:00.123456 - Epoch: 3  val.top1 : 87.50"
    )
    assert common.format_line(stamp, "Summary:", [("train.time", 7.19, "s", 2), ("ok", True)]) == (
        "DLL 2026-11-21 10:00:00.123456 - Summary: train.time : 7.19 s  ok : True"
    )
    assert common.format_line(stamp, "PARAMETER", [("xla", False), ("target_accuracy", 90.0), ("gpus", 0)]) == (
        "DLL 2026-11-21 10:00:00.123456 - PARAMETER xla : False  target_accuracy : 90.0  gpus : 0"
    )


def test_format_rejects_what_would_break_a_line():
    with pytest.raises(ValueError):
        common.format_value("two  spaces")
    with pytest.raises(ValueError):
        common.format_value("new\nline")
    with pytest.raises(ValueError):
        common.format_pairs([("bad key", 1)])
    with pytest.raises(ValueError):
        common.format_step("Epoch")


def test_lines_read_back_with_benchbooks_dllogger_parser():
    stamp = datetime(2026, 11, 21, 10, 0, 0, 5)
    record = common.StepRecord(iteration=12, epoch=1, seconds=0.25, images=16, loss=2.5, lr=0.016)
    line = common.format_line(stamp, (1, 12), common.step_pairs(record))
    m = dllogger.LINE.match(line)
    assert m and dllogger.step_of(m) == ("step", 1, 12)
    assert dllogger.values(m.group(9)) == {
        "train.loss": "2.5000",
        "train.ips": "64.00",
        "train.lr": "0.016",
        "train.step_time": "0.250000",
    }
    args = common.parse_args("tensorflow", [])
    params = common.parameters(args, workload="resnet50_tf", framework="tensorflow", version="2.21.0")
    m = dllogger.LINE.match(common.format_line(stamp, "PARAMETER", params))
    assert m and dllogger.step_of(m)[0] == "parameter"
    parsed = dllogger.parameters(m.group(9))
    assert parsed["workload"] == "resnet50_tf" and parsed["batch_size"] == "16" and parsed["xla"] == "False"
    assert list(parsed)[:5] == ["workload", "framework", "framework_version", "model", "mode"]
    m = dllogger.LINE.match(common.format_line(stamp, "Summary:", common.summarize([record], 0).pairs(0)))
    assert m and dllogger.step_of(m)[0] == "summary"
    assert dllogger.values(m.group(9))["train.ips"] == "64.00"


def test_logger_writes_flushed_lines_and_returns_its_timestamp():
    times = iter([datetime(2026, 1, 2, 3, 4, 5, 6), datetime(2026, 1, 2, 3, 4, 6, 0)])
    out = io.StringIO()
    logger = common.DLLogger(out, clock=lambda: next(times))
    first = logger.log("PARAMETER", [("a", 1)])
    second = logger.log((0, 0), [("train.loss", 1.0, None, 4)])
    assert (second - first).total_seconds() == pytest.approx(0.999994)
    assert out.getvalue().splitlines() == [
        "DLL 2026-01-02 03:04:05.000006 - PARAMETER a : 1",
        "DLL 2026-01-02 03:04:06.000000 - Epoch: 0 Iteration: 0  train.loss : 1.0000",
    ]


# ---------------------------------------------------------------------------------------------
# command line


def test_defaults():
    args = common.parse_args("tensorflow", [])
    assert (args.mode, args.batch_size, args.image_size, args.num_iter, args.warmup_steps) == (
        "training_benchmark",
        16,
        64,
        30,
        10,
    )
    assert (args.precision, args.xla, args.data, args.num_classes) == ("fp32", False, "synthetic", 1000)
    assert (args.target_accuracy, args.max_epochs, args.eval_every, args.threads, args.display_every) == (
        90.0,
        30,
        1,
        0,
        1,
    )
    assert args.lr == pytest.approx(0.016) and args.momentum == 0.875
    args = common.parse_args("mxnet", ["--mode", "train_and_evaluate", "--batch_size", "32"])
    assert (args.data, args.num_classes, args.lr) == ("digits", 10, pytest.approx(0.032))
    assert common.parse_args("mxnet", ["--data", "digits"]).num_classes == 10


@pytest.mark.parametrize(
    "framework, argv, message",
    [
        ("mxnet", ["--xla"], "no XLA"),
        ("tensorflow", ["--num_iter", "10", "--warmup_steps", "10"], "less than --num_iter"),
        ("tensorflow", ["--batch_size", "0"], "--batch_size"),
        ("tensorflow", ["--image_size", "4"], "--image_size"),
        ("tensorflow", ["--mode", "train_and_evaluate", "--data", "synthetic"], "digits"),
        ("tensorflow", ["--data", "digits", "--num_classes", "5"], "at least 10"),
        ("tensorflow", ["--target_accuracy", "120"], "target_accuracy"),
        ("tensorflow", ["--threads", "-1"], "--threads"),
        ("tensorflow", ["--precision", "fp16"], "invalid choice"),
        ("tensorflow", ["--label_smoothing", "1"], "label_smoothing"),
        ("tensorflow", ["--mllog", "mllog.txt"], "--mllog logs a time-to-train run"),
        ("mxnet", ["--mode", "train_and_evaluate", "--mllog", "mllog.txt"], "unrecognized arguments: --mllog"),
    ],
)
def test_bad_arguments_exit_2(framework, argv, message, capsys):
    with pytest.raises(SystemExit) as exc:
        common.parse_args(framework, argv)
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_tf_accepts_xla_and_warmup_may_exceed_iterations_when_training_to_a_target():
    assert common.parse_args("tensorflow", ["--xla", "--precision", "bf16"]).xla
    args = common.parse_args("tensorflow", ["--mode", "train_and_evaluate", "--num_iter", "1", "--warmup_steps", "5"])
    assert args.warmup_steps == 5


@pytest.mark.parametrize("name", ["resnet50_tf.py", "resnet50_mxnet.py", "resnet50_pytorch.py"])
def test_scripts_parse_their_command_line_before_importing_the_framework(name, tmp_path):
    """--help and argument errors need no framework: benchbook's own Python runs them."""
    path = workloads.HERE / name
    done = subprocess.run([sys.executable, str(path), "--help"], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0 and "--target_accuracy" in done.stdout
    done = subprocess.run(
        [sys.executable, str(path), "--batch_size", "0"], capture_output=True, text=True, cwd=tmp_path
    )
    assert done.returncode == 2 and "--batch_size" in done.stderr and not done.stdout


def test_mxnet_script_rejects_xla_with_exit_2(tmp_path):
    done = subprocess.run(
        [sys.executable, str(models.workload_script("mxnet")), "--xla"], capture_output=True, text=True, cwd=tmp_path
    )
    assert done.returncode == 2
    assert "--xla" in done.stderr and "no XLA" in done.stderr
    assert done.stdout == ""


# ---------------------------------------------------------------------------------------------
# timing and schedule


def _records(seconds, images=16):
    return [
        common.StepRecord(iteration=i, epoch=0, seconds=s, images=images, loss=1.0, lr=0.1)
        for i, s in enumerate(seconds)
    ]


def test_summary_is_the_mean_of_post_warmup_ips():
    records = _records([10.0, 5.0, 1.0, 2.0, 4.0])
    s = common.summarize(records, warmup_steps=2)
    assert s.ips == pytest.approx((16 / 1 + 16 / 2 + 16 / 4) / 3)  # mean of rates, not images / time
    assert s.ips != pytest.approx(48 / 7)
    assert (s.images, s.seconds, s.iterations, s.measured) == (48, pytest.approx(7.0), 5, 3)
    assert s.pairs(2) == [
        ("train.ips", s.ips, "images/s", 2),
        ("train.images", 48),
        ("train.time", s.seconds, "s", 2),
        ("train.iterations", 5),
        ("train.warmup_steps", 2),
    ]
    none = common.summarize(records, warmup_steps=5)
    assert math.isnan(none.ips) and none.images == 0 and none.measured == 0


def test_summary_uses_global_iterations_across_epochs():
    records = [
        common.StepRecord(iteration=i, epoch=i // 3, seconds=1.0 if i < 4 else 0.5, images=8, loss=1.0, lr=0.1)
        for i in range(6)
    ]
    s = common.summarize(records, warmup_steps=4)
    assert s.measured == 2 and s.ips == pytest.approx(16.0) and s.images == 16


def test_lr_warms_up_linearly_then_decays_by_cosine():
    lr = [common.lr_at(i, base_lr=1.0, warmup=4, total=14) for i in range(14)]
    assert lr[:4] == pytest.approx([0.25, 0.5, 0.75, 1.0])
    assert lr[4] == pytest.approx(1.0)
    assert lr[9] == pytest.approx(0.5)
    assert all(a >= b for a, b in zip(lr[4:], lr[5:], strict=False))
    assert common.lr_at(14, base_lr=1.0, warmup=4, total=14) == pytest.approx(0.0)
    assert common.lr_at(0, base_lr=0.5, warmup=0, total=10) == pytest.approx(0.5)


# ---------------------------------------------------------------------------------------------
# data


def test_synthetic_batch_is_seeded_and_laid_out():
    x, y = common.synthetic(4, 16, 1000, seed=3)
    assert x.shape == (4, 16, 16, 3) and x.dtype == np.float32 and x.flags.c_contiguous
    assert y.shape == (4,) and y.dtype == np.int32 and 0 <= y.min() and y.max() < 1000
    x2, y2 = common.synthetic(4, 16, 1000, seed=3, layout="NCHW")
    assert x2.shape == (4, 3, 16, 16) and np.array_equal(x2, x.transpose(0, 3, 1, 2)) and np.array_equal(y, y2)
    assert not np.array_equal(common.synthetic(4, 16, 1000, seed=4)[0], x)
    with pytest.raises(ValueError):
        common.to_layout(x, "HWCN")


def test_upsample_shapes_and_values():
    img = np.arange(64, dtype=np.float32).reshape(1, 8, 8)
    up = common.upsample(img, 32)
    assert up.shape == (1, 32, 32) and up.dtype == np.float32
    assert common.upsample(np.full((2, 8, 8), 3.0), 20) == pytest.approx(np.full((2, 20, 20), 3.0))
    assert common.upsample(img, 8) == pytest.approx(img)  # same size: unchanged
    assert up.min() >= img.min() and up.max() <= img.max()
    assert np.all(np.diff(up[0], axis=1) >= -1e-6)  # a ramp stays a ramp


def test_split_is_stratified_disjoint_and_seeded():
    labels = np.repeat(np.arange(10), 20)
    train, val = common.split_indices(labels, seed=0)
    assert len(val) == 40 and len(train) == 160
    assert not set(train) & set(val) and set(train) | set(val) == set(range(200))
    assert np.all(np.bincount(labels[val]) == 4)
    again, _ = common.split_indices(labels, seed=0)
    other, _ = common.split_indices(labels, seed=1)
    assert np.array_equal(train, again) and not np.array_equal(train, other)


def test_batches():
    batches = common.epoch_order(10, 4, np.random.RandomState(0))
    assert [len(b) for b in batches] == [4, 4]
    assert len(set(np.concatenate(batches))) == 8
    ev = common.eval_batches(10, 4)
    assert [valid for _, valid in ev] == [4, 4, 2]
    assert all(len(idx) == 4 for idx, _ in ev)
    assert list(np.concatenate([idx[:valid] for idx, valid in ev])) == list(range(10))


def test_topk_loss():
    logits = np.array([[5.0, 1, 0, 0, 0, 0, 0], [0, 1, 2, 3, 4, 5, 6], [1, 1, 1, 1, 1, 1, 1]])
    labels = np.array([0, 1, 3])
    top1, top5, loss = common.topk_loss(logits, labels)
    # row 0: right; row 1: label ranked 6th (5 above it); row 2: all tied, which counts as a miss
    assert (top1, top5) == (1, 1)
    expected = -sum(row[label] - np.log(np.exp(row).sum()) for row, label in zip(logits, labels, strict=True))
    assert loss == pytest.approx(expected)
    assert common.topk_loss(logits[:, :3], np.array([0, 1, 2]))[1] == 3  # k capped at the class count


def test_digits_are_upsampled_to_3_channel_images():
    pytest.importorskip("sklearn")
    data = common.load_digits(16, seed=0)
    assert data.x_train.shape == (len(data.y_train), 16, 16, 3) and data.x_train.dtype == np.float32
    assert data.x_val.shape == (len(data.y_val), 16, 16, 3)
    assert (len(data.y_train), len(data.y_val)) == (1438, 359)  # per class, round(20%) to val
    assert len(data.y_val) == pytest.approx(0.2 * 1797, abs=10)
    assert set(np.unique(data.y_val)) == set(range(10))
    assert abs(float(data.x_train.mean())) < 1e-3 and float(data.x_train.std()) == pytest.approx(1.0, abs=1e-3)
    assert np.array_equal(data.x_train[..., 0], data.x_train[..., 2])
    nchw = common.load_digits(16, seed=0, layout="NCHW")
    assert nchw.x_val.shape == (len(data.y_val), 3, 16, 16)


# ---------------------------------------------------------------------------------------------
# the loop, with a fake framework


class FakeFramework:
    """Steps that take no time to speak of; each evaluation right on a given share of the images."""

    def __init__(self, accuracy_by_eval=(1.0,)):
        self.accuracy = list(accuracy_by_eval)
        self.steps = []
        self.evals = 0
        self._steps_at_last_predict = 0

    def hooks(self, layout="NHWC"):
        def put(x, y):
            return ("dev", x, y), y  # "device tensors": the labels ride along for predict

        def train_step(x, y, lr):
            assert x[0] == "dev"
            self.steps.append(lr)
            return 1.0 / len(self.steps)

        def predict(x):
            if len(self.steps) != self._steps_at_last_predict:  # training since: a new evaluation
                self._steps_at_last_predict = len(self.steps)
                self.evals += 1
            _, _, labels = x
            n = len(labels)
            share = self.accuracy[min(self.evals - 1, len(self.accuracy) - 1)]
            right = np.arange(n) < share * n
            logits = np.zeros((n, 10))
            logits[np.arange(n), np.where(right, labels, (labels + 1) % 10)] = 1.0
            return logits

        return common.Hooks(put=put, train_step=train_step, predict=predict, layout=layout)


def _log_lines(out):
    return out.getvalue().splitlines()


def test_benchmark_loop_logs_every_iteration_and_a_summary():
    args = common.parse_args("tensorflow", ["--num_iter", "6", "--warmup_steps", "2", "--image_size", "8"])
    fake, out = FakeFramework(), io.StringIO()
    logger = common.DLLogger(out)
    start = logger.log("PARAMETER", [("a", 1)])
    result = common.run(args, logger, fake.hooks(), start)
    lines = _log_lines(out)
    steps = [STEP_RE.match(line) for line in lines[1:-1]]
    assert all(steps) and [int(m.group(3)) for m in steps] == list(range(6))
    assert {int(m.group(2)) for m in steps} == {0}
    assert SUMMARY_RE.match(lines[-1]).group(7) == ""
    assert len(fake.steps) == 6 and result.summary.measured == 4


def test_display_every_thins_the_lines_not_the_records():
    args = common.parse_args("tensorflow", ["--num_iter", "7", "--warmup_steps", "1", "--display_every", "3"])
    out = io.StringIO()
    result = common.run(args, common.DLLogger(out), FakeFramework().hooks(), datetime.now())
    iterations = [int(STEP_RE.match(line).group(3)) for line in _log_lines(out) if STEP_RE.match(line)]
    assert iterations == [0, 3, 6] and len(result.records) == 7
    assert SUMMARY_RE.match(_log_lines(out)[-1]).group(5) == "7"


def test_train_and_evaluate_stops_at_the_target():
    pytest.importorskip("sklearn")
    argv = ["--mode", "train_and_evaluate", "--image_size", "8", "--batch_size", "256", "--warmup_steps", "3"]
    args = common.parse_args("mxnet", [*argv, "--target_accuracy", "80", "--max_epochs", "10"])
    fake, out = FakeFramework([0.5, 0.7, 0.85, 0.99]), io.StringIO()
    times = (datetime(2026, 1, 1) + timedelta(seconds=i) for i in range(10_000))
    logger = common.DLLogger(out, clock=lambda: next(times))
    start = logger.log("PARAMETER", [("a", 1)])
    result = common.run(args, logger, fake.hooks(layout="NCHW"), start)
    lines = _log_lines(out)
    vals = [VAL_RE.match(line) for line in lines if VAL_RE.match(line)]
    assert [int(m.group(2)) for m in vals] == [0, 1, 2]
    assert float(vals[-1].group(3)) >= 80.0
    steps = [STEP_RE.match(line) for line in lines if STEP_RE.match(line)]
    steps_per_epoch = 1438 // 256
    assert [int(m.group(3)) for m in steps] == list(range(3 * steps_per_epoch))
    assert int(steps[-1].group(2)) == 2
    summary = SUMMARY_RE.match(lines[-1])
    extra = SUMMARY_EVAL_RE.match(summary.group(7))
    assert extra.group(2) == "3" and extra.group(3) == "True"
    # seconds from the PARAMETER line to the evaluation line that reached the target
    assert float(extra.group(4)) == pytest.approx((_stamp(vals[-1].group(1)) - start).total_seconds(), abs=0.05)
    assert result.target_reached and len(result.evaluations) == 3


def test_train_and_evaluate_without_reaching_the_target():
    pytest.importorskip("sklearn")
    argv = ["--mode", "train_and_evaluate", "--image_size", "8", "--batch_size", "512", "--max_epochs", "3"]
    args = common.parse_args(
        "tensorflow", [*argv, "--eval_every", "2", "--target_accuracy", "100", "--warmup_steps", "1"]
    )
    fake, out = FakeFramework([0.5]), io.StringIO()
    result = common.run(args, common.DLLogger(out), fake.hooks(), datetime.now())
    lines = _log_lines(out)
    vals = [int(VAL_RE.match(line).group(2)) for line in lines if VAL_RE.match(line)]
    assert vals == [1, 2]  # every 2nd epoch, and the last one
    extra = SUMMARY_EVAL_RE.match(SUMMARY_RE.match(lines[-1]).group(7))
    assert extra.group(2) == "3" and extra.group(3) == "False" and extra.group(4) is None
    assert not result.target_reached and result.time_to_target is None


# ---------------------------------------------------------------------------------------------
# the real scripts, where a framework's Python is named


def _python(var):
    return framework_python(var, "a Python that has the framework to run this test")


FRAMEWORK_ENV = {"tensorflow": "BENCHBOOK_TEST_TF_PYTHON", "mxnet": "BENCHBOOK_TEST_MXNET_PYTHON"}


def _run_script(framework, argv, tmp_path):
    python = _python(FRAMEWORK_ENV[framework])
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    return subprocess.run(
        [python, str(models.workload_script(framework)), *argv],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=900,
    )


def _check_log(stdout, *, num_iter, warmup, batch, parameters):
    lines = stdout.splitlines()
    assert all(line.startswith("DLL ") for line in lines), stdout
    param = PARAMETER_RE.match(lines[0])
    assert param, lines[0]
    params = dllogger.parameters(param.group(2))
    for key, value in parameters.items():
        assert params[key] == value, (key, params[key])
    steps = [STEP_RE.match(line) for line in lines if " Iteration: " in line]
    assert all(steps), [line for line in lines if " Iteration: " in line]
    assert len(steps) == num_iter
    assert [int(m.group(3)) for m in steps] == list(range(num_iter))
    for m in steps:
        assert math.isfinite(float(m.group(4)))
        assert float(m.group(5)) == pytest.approx(batch / float(m.group(7)), rel=0.01, abs=0.01)
    summary = SUMMARY_RE.match(lines[-1])
    assert summary, lines[-1]
    measured = [float(m.group(5)) for m in steps if int(m.group(3)) >= warmup]
    # per-line ips are rounded to 0.01, the Summary too
    assert float(summary.group(2)) == pytest.approx(np.mean(measured), abs=0.011)
    assert int(summary.group(3)) == batch * len(measured)
    assert float(summary.group(4)) == pytest.approx(sum(float(m.group(7)) for m in steps[warmup:]), abs=0.011)
    assert (int(summary.group(5)), int(summary.group(6))) == (num_iter, warmup)
    stamps = [_stamp(line[4:30]) for line in lines]
    assert stamps == sorted(stamps)
    return lines, params, summary


TINY = ["--batch_size", "2", "--image_size", "32", "--num_iter", "4", "--warmup_steps", "2", "--threads", "2"]


@pytest.mark.parametrize(
    "framework, extra",
    [  # (each framework's plain fp32 synthetic run is make smoke's, and its log is read by the report there)
        ("tensorflow", ["--xla", "--precision", "bf16"]),
        ("mxnet", ["--data", "digits", "--display_every", "1"]),
    ],
    ids=["tf-xla-bf16", "mxnet-digits"],
)
def test_script_training_benchmark(framework, extra, tmp_path):
    done = _run_script(framework, [*TINY, *extra], tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    expected = {
        "workload": "resnet50_tf" if framework == "tensorflow" else "resnet50_mxnet",
        "framework": framework,
        "model": "resnet50_v1.5",
        "mode": "training_benchmark",
        "device": "cpu",
        "gpus": "0",
        "batch_size": "2",
        "image_size": "32",
        "num_iter": "4",
        "warmup_steps": "2",
        "precision": "bf16" if "bf16" in extra else "fp32",
        "xla": str("--xla" in extra),
        "data": "digits" if "digits" in extra else "synthetic",
        "num_classes": "10" if "digits" in extra else "1000",
        "threads": "2",
    }
    _, params, _ = _check_log(done.stdout, num_iter=4, warmup=2, batch=2, parameters=expected)
    assert re.fullmatch(r"\d+\.\d+\.\d+\S*", params["framework_version"])


TRAIN_AND_EVALUATE = ["--mode", "train_and_evaluate", "--batch_size", "128", "--image_size", "8", "--warmup_steps",
                      "2", "--max_epochs", "2", "--target_accuracy", "0.1", "--threads", "2", "--lr", "0.1"]


@pytest.fixture(scope="module")
def tf_train_and_evaluate(tmp_path_factory):
    """One TensorFlow train_and_evaluate run with `--mllog`, for the test of its log and the test of its MLLOG
    file: each run imports TensorFlow and builds the model, most of a minute of CI; the MLLOG file held a line
    of an earlier run before. The completed process and the file."""
    folder = tmp_path_factory.mktemp("tf_train_and_evaluate")
    mllog = folder / "mllog.txt"
    mllog.write_text("a line of an earlier run\n")
    return _run_script("tensorflow", [*TRAIN_AND_EVALUATE, "--mllog", str(mllog)], folder), mllog


@pytest.mark.parametrize("framework", ["tensorflow", "mxnet"])
def test_script_train_and_evaluate(framework, tmp_path, request):
    if framework == "tensorflow":  # its MLLOG file aside: the log is the same with or without one
        done, _ = request.getfixturevalue("tf_train_and_evaluate")
    else:
        done = _run_script(framework, TRAIN_AND_EVALUATE, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    steps_per_epoch = 1438 // 128  # 1438 of the 1797 digits train (about 80% of each class); last batch dropped
    lines, _, summary = _check_log(
        done.stdout,
        num_iter=steps_per_epoch,
        warmup=2,
        batch=128,
        parameters={"mode": "train_and_evaluate", "data": "digits", "num_classes": "10"},
    )
    vals = [VAL_RE.match(line) for line in lines if VAL_RE.match(line)]
    assert len(vals) == 1 and vals[0].group(2) == "0"  # any accuracy reaches 0.1%: stops after epoch 0
    top1, top5 = float(vals[0].group(3)), float(vals[0].group(4))
    assert 0.1 <= top1 <= top5 <= 100.0
    extra = SUMMARY_EVAL_RE.match(summary.group(7))
    assert extra, summary.group(7)
    assert extra.group(1) == vals[0].group(3) and extra.group(2) == "1" and extra.group(3) == "True"
    start = _stamp(PARAMETER_RE.match(lines[0]).group(1))
    assert float(extra.group(4)) == pytest.approx((_stamp(vals[0].group(1)) - start).total_seconds(), abs=0.06)


MLLOG_KEYS = ["cache_clear", "init_start", "submission_benchmark", "submission_org", "submission_division",
              "submission_status", "submission_platform", "seed", "global_batch_size", "opt_name",
              "opt_base_learning_rate", "opt_learning_rate_warmup_epochs", "opt_weight_decay", "init_stop",
              "run_start", "train_samples", "eval_samples", "epoch_start", "epoch_stop", "eval_start", "eval_stop",
              "eval_accuracy", "run_stop"]


def test_script_train_and_evaluate_writes_mllog(tf_train_and_evaluate):
    """`--mllog FILE`: MLPerf's MLLOG records of the run in FILE (json after `:::MLLOG `, in the order the
    reference implementations log them), none on stdout; eval_accuracy is the logged top-1 as a fraction."""
    done, mllog = tf_train_and_evaluate
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert all(line.startswith("DLL ") for line in lines)  # the DLLogger log alone: MLLOG goes to the file
    text = mllog.read_text(encoding="utf-8")
    assert text.endswith("\n") and all(line.startswith(":::MLLOG {") for line in text.splitlines())
    records = [json.loads(line.removeprefix(":::MLLOG ")) for line in text.splitlines()]
    assert [r["key"] for r in records] == MLLOG_KEYS  # one epoch reaches 0.1% top-1: one epoch, one evaluation
    by_key = {r["key"]: r for r in records}
    assert [r["value"] for r in records[2:7]] == ["resnet", "benchbook", "open", "research",
                                                  f"{platform.machine()} CPU (2 threads)"]
    assert (by_key["global_batch_size"]["value"], by_key["train_samples"]["value"]) == (128, 1438)
    assert by_key["eval_samples"]["value"] == 359
    assert by_key["run_stop"]["metadata"]["status"] == "success"
    assert by_key["eval_accuracy"]["metadata"]["epoch_num"] == 1
    val = next(VAL_RE.match(line) for line in lines if VAL_RE.match(line))
    assert round(100 * by_key["eval_accuracy"]["value"], 2) == float(val.group(3))
    times = [r["time_ms"] for r in records]
    assert times == sorted(times) and by_key["run_stop"]["time_ms"] > by_key["run_start"]["time_ms"]
    # MLPerf's clock starts at run_start, after the model is built: under the DLLogger time to target
    summary = SUMMARY_EVAL_RE.match(SUMMARY_RE.match(lines[-1]).group(7))
    assert (by_key["run_stop"]["time_ms"] - by_key["run_start"]["time_ms"]) / 1000 <= float(summary.group(4)) + 0.05


def test_script_mxnet_bf16_runs_or_is_rejected_cleanly(tmp_path):
    """MXNet 1.9.1 has bf16 kernels only where oneDNN finds AVX-512: elsewhere exit 2 and say why."""
    done = _run_script("mxnet", [*TINY, "--precision", "bf16"], tmp_path)
    if done.returncode == 2:
        assert "bf16" in done.stderr and "fp32" in done.stderr
        assert done.stdout == ""
    else:
        assert done.returncode == 0, done.stderr[-3000:]
        _check_log(done.stdout, num_iter=4, warmup=2, batch=2, parameters={"precision": "bf16"})


def test_script_mxnet_rejects_xla_in_its_own_environment(tmp_path):
    done = _run_script("mxnet", [*TINY, "--xla"], tmp_path)
    assert done.returncode == 2 and "no XLA" in done.stderr and done.stdout == ""
