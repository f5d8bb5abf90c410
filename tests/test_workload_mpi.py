"""Data-parallel training of the CPU TensorFlow ResNet-50 across MPI ranks (Open MPI + mpi4py).

The MPI plumbing of `workloads/_common_mpi.py` and `_common_loop.py` (launcher environment, the
one-process `World`, shards, the loop with several ranks) is tested here in benchbook's own
environment, several ranks played by threads. The real runs need `mpirun` (Debian's openmpi-bin)
and a Python with TensorFlow and mpi4py (the environment built from requirements/tensorflow.txt):

    BENCHBOOK_TEST_TF_PYTHON=/path/to/tfenv/bin/python python -m pytest tests/test_workload_mpi.py
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import threading
import time
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest

from benchbook import analyze, models, workloads
from benchbook.environment import envs
from benchbook.logs.parsers import dllogger
from benchbook.studies import runner, study
from benchbook.workloads import _common as common
from benchbook.workloads import _common_loop as common_loop
from conftest import framework_python

TF_ENV = "BENCHBOOK_TEST_TF_PYTHON"
SCRIPT = models.workload_script("tensorflow")
TS = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6}"
STEP_RE = re.compile(
    rf"^DLL {TS} - Epoch: (\d+) Iteration: (\d+)  train\.loss : (\S+)  train\.ips : (\S+) images/s  "
    r"train\.lr : (\S+)  train\.step_time : (\S+) s$"
)
MPIRUN = [
    "mpirun", "--allow-run-as-root", "--tag-output", "-np", "2", "-H", "localhost:2", "--bind-to", "none",
    "--oversubscribe", "--mca", "pml", "ob1", "--mca", "btl", "^openib",
]  # fmt: skip


# ---------------------------------------------------------------------------------------------
# the launcher's environment and the one-process World


@pytest.mark.parametrize(
    "environ, size",
    [
        ({}, 1),
        ({"OMPI_COMM_WORLD_SIZE": "2", "OMPI_COMM_WORLD_RANK": "1"}, 2),
        ({"OMPI_COMM_WORLD_SIZE": "1"}, 1),
        ({"PMI_SIZE": "4", "PMI_RANK": "3"}, 4),
        ({"MV2_COMM_WORLD_SIZE": "3"}, 3),
        ({"PMIX_RANK": "0", "SLURM_STEP_NUM_TASKS": "8"}, 8),
        ({"PMIX_RANK": "0"}, None),  # a rank, but the launcher does not say how many: ask MPI
        ({"SLURM_STEP_NUM_TASKS": "8"}, 1),  # a Slurm step without MPI is one process
    ],
)
def test_launched_size_reads_the_launchers_variables(environ, size):
    assert common.launched_size(environ) == size


def test_launched_size_rejects_garbage():
    with pytest.raises(ValueError, match="OMPI_COMM_WORLD_SIZE"):
        common.launched_size({"OMPI_COMM_WORLD_SIZE": "two"})


def _python_with_common(code: str, env: dict) -> subprocess.CompletedProcess:
    prelude = f"import sys; sys.path.insert(0, {str(workloads.HERE)!r}); import _common\n"
    return subprocess.run(
        [sys.executable, "-c", prelude + textwrap.dedent(code)], capture_output=True, text=True, env=env, timeout=60
    )


def test_one_process_never_imports_mpi4py():
    code = """
        world = _common.connect(_common.launched_size())
        assert type(world) is _common.World and (world.rank, world.size) == (0, 1), world
        assert "mpi4py" not in sys.modules
    """
    base = {k: v for k, v in os.environ.items() if not k.startswith(("OMPI_", "PMI", "MV2_"))}
    for extra in ({}, {"OMPI_COMM_WORLD_SIZE": "1", "OMPI_COMM_WORLD_RANK": "0"}):
        done = _python_with_common(code, {**base, **extra})
        assert done.returncode == 0, done.stderr


def test_several_ranks_without_mpi4py_is_a_clear_error():
    code = """
        sys.modules["mpi4py"] = None  # as if it were not installed
        try:
            _common.connect(2)
        except RuntimeError as e:
            print(e)
        else:
            raise SystemExit("no error")
    """
    done = _python_with_common(code, dict(os.environ))
    assert done.returncode == 0, done.stderr
    assert "one of 2 MPI ranks" in done.stdout and "mpi4py" in done.stdout and "openmpi-bin" in done.stdout


def test_one_process_world_is_the_identity():
    world = common.World()
    a = np.arange(5, dtype=np.float32)
    assert world.allreduce_sum(a) is a and world.bcast_array(a) is a
    assert world.bcast({"x": 1}) == {"x": 1} and world.allgather(3) == [3]
    world.check_same([a])  # one rank agrees with itself
    with world.guard():
        pass


def test_fingerprints_and_divergence():
    a, b = np.zeros((2, 3), np.float32), np.ones(4, np.float32)
    f = common.fingerprint([a, b])
    assert f == common.fingerprint([a.copy(), b.copy()])
    assert f != common.fingerprint([a, b + np.float32(1e-7)])  # one ulp-sized change shows
    assert f != common.fingerprint([a.reshape(3, 2), b])  # so does the shape
    assert common.diverged([f, f, f]) is None
    message = common.diverged([f, f, "0" * 64])
    assert "rank(s) 2" in message and f[:12] in message


def test_aligned_empty_starts_on_the_boundary():
    for n in (1, 7, 1000, 3_000_001):
        a = common.aligned_empty((n,), np.float32)
        assert a.shape == (n,) and a.dtype == np.float32 and a.flags.c_contiguous and a.flags.writeable
        assert a.ctypes.data % common.ALIGN == 0
    assert common.aligned_empty((3, 4), np.float64).shape == (3, 4)


def test_default_lr_follows_the_global_batch_and_the_parameter_line_names_the_processes():
    assert common.parse_args("tensorflow", ["--batch_size", "8"]).lr == pytest.approx(0.008)
    args = common.parse_args("tensorflow", ["--batch_size", "8"], processes=2)
    assert args.lr == pytest.approx(0.016)
    assert common.parse_args("tensorflow", ["--lr", "0.1"], processes=4).lr == 0.1
    line = common.format_line(
        datetime(2026, 1, 1),
        "PARAMETER",
        common.parameters(args, workload="resnet50_tf", framework="tensorflow", version="2.21.0", processes=2),
    )
    params = dllogger.parameters(dllogger.LINE.match(line).group(9))
    assert params["processes"] == "2" and params["batch_size"] == "8" and params["gpus"] == "0"
    one = common.parameters(args, workload="resnet50_tf", framework="tensorflow", version="2.21.0")
    assert ("processes", 1) in one


def test_a_logger_that_is_not_enabled_writes_nothing_but_keeps_time():
    out = io.StringIO()
    stamp = datetime(2026, 1, 1, 0, 0, 1)
    logger = common.DLLogger(out, clock=lambda: stamp, enabled=False)
    assert logger.log("PARAMETER", [("a", 1)]) == stamp
    assert out.getvalue() == ""


class _Rank(common.World):
    """Rank `rank` of `size`, without collectives (for the shard arithmetic)."""

    def __init__(self, rank, size):
        self.rank, self.size = rank, size


def test_shards_of_a_global_batch():
    idx = np.arange(12)
    parts = [common.shard(idx, _Rank(r, 3)) for r in range(3)]
    assert [list(p) for p in parts] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]
    # synthetic: with one process exactly the old single-process batch; with ranks, the global batch in parts
    x1, y1 = common.synthetic_shard(4, 8, 1000, 5, _Rank(0, 1))
    x, y = common.synthetic(4, 8, 1000, 5)
    assert np.array_equal(x1, x) and np.array_equal(y1, y)
    gx, gy = common.synthetic(8, 8, 1000, 5)
    shards = [common.synthetic_shard(4, 8, 1000, 5, _Rank(r, 2)) for r in range(2)]
    assert np.array_equal(np.concatenate([s[0] for s in shards]), gx)
    assert np.array_equal(np.concatenate([s[1] for s in shards]), gy)
    assert not np.array_equal(shards[0][0], shards[1][0])
    assert all(s[0].flags.c_contiguous and s[0].shape == (4, 8, 8, 3) for s in shards)


# ---------------------------------------------------------------------------------------------
# the loop with several ranks, played by threads


class ThreadWorld(common.World):
    """One of `size` ranks that are threads of this process; collectives meet at a barrier."""

    def __init__(self, rank, size, shared):
        self.rank, self.size, self.shared = rank, size, shared

    def _exchange(self, value):
        slots, barrier = self.shared["slots"], self.shared["barrier"]
        slots[self.rank] = value
        barrier.wait()
        everyone = list(slots)
        barrier.wait()
        return everyone

    def allreduce_sum(self, array):
        return np.sum(self._exchange(np.array(array)), axis=0)

    def bcast(self, obj):
        return self._exchange(obj)[0]

    def bcast_array(self, array):
        return np.array(self._exchange(np.array(array))[0])

    def allgather(self, obj):
        return self._exchange(obj)


def _worlds(size):
    shared = {"slots": [None] * size, "barrier": threading.Barrier(size, timeout=60)}
    return [ThreadWorld(r, size, shared) for r in range(size)]


class FakeRank:
    """A framework on one rank: remembers the labels it trained on and the learning rates; its
    predictions are right on `accuracy[rank][evaluation]` of each validation batch."""

    def __init__(self, accuracy):
        self.accuracy = accuracy
        self.labels, self.lrs, self.evals, self.syncs = [], [], 0, 0

    def hooks(self):
        def put(x, y):
            return ("dev", x, y), y

        def train_step(x, y, lr):
            time.sleep(0.005)  # long enough for the logged step time's six decimals
            self.labels.append(np.array(y))
            self.lrs.append(lr)
            return 1.0

        def predict(x):
            labels = x[2]
            n = len(labels)
            right = np.arange(n) < self.accuracy[min(self.evals - 1, len(self.accuracy) - 1)] * n
            logits = np.zeros((n, 10))
            logits[np.arange(n), np.where(right, labels, (labels + 1) % 10)] = 1.0
            return logits

        def sync():
            self.syncs += 1
            self.evals += 1

        return common.Hooks(put=put, train_step=train_step, predict=predict, sync=sync)


@pytest.fixture
def digits(monkeypatch):
    """Stand-in digits of the real split's sizes (1438 train, 359 validation), labels 0..9 in turn:
    the loop's sharding without scikit-learn."""

    def load(image_size, seed, layout="NHWC"):
        def part(n, offset):
            x = np.arange(n * 2 * 2 * 3, dtype=np.float32).reshape(n, 2, 2, 3) + offset
            return x, (np.arange(n) % 10).astype(np.int32)

        (xt, yt), (xv, yv) = part(1438, 0), part(359, 1e6)
        return common.Digits(xt, yt, xv, yv)

    monkeypatch.setattr(common_loop, "load_digits", load)  # the name the loop calls


def _run_ranks(argv, accuracies):
    """common.run on len(accuracies) thread ranks; (results, logs, fakes)."""
    size = len(accuracies)
    args = [common.parse_args("tensorflow", argv, processes=size) for _ in range(size)]
    worlds = _worlds(size)
    fakes = [FakeRank(a) for a in accuracies]
    outs = [io.StringIO() for _ in range(size)]
    results, errors = [None] * size, []

    def rank(r):
        try:
            logger = common.DLLogger(outs[r], enabled=r == 0)
            results[r] = common.run(args[r], logger, fakes[r].hooks(), datetime.now(), worlds[r])
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)
            worlds[r].shared["barrier"].abort()

    threads = [threading.Thread(target=rank, args=(r,)) for r in range(size)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    return results, [o.getvalue().splitlines() for o in outs], fakes


def test_ranks_train_on_disjoint_shards_and_rank_0_logs_global_images_per_second(digits):
    argv = ["--data", "digits", "--batch_size", "16", "--image_size", "8", "--num_iter", "5", "--warmup_steps", "1"]
    results, logs, fakes = _run_ranks(argv, [[1.0], [1.0]])
    assert logs[1] == []  # only rank 0 prints
    steps = [STEP_RE.match(line) for line in logs[0] if " Iteration: " in line]
    assert len(steps) == 5 and all(steps)
    for m in steps:  # images/s of the whole job: 2 ranks x 16 images per step
        assert float(m.group(4)) == pytest.approx(32 / float(m.group(6)), rel=0.01, abs=0.01)
    assert all(r.images == 32 for r in results[0].records)
    assert " train.images : 128 " in logs[0][-1]  # 4 measured steps x 32
    # every rank its own 16 images of each global batch of 32: the ranks' labels together are the
    # labels of a one-process run with batch 32 (the same shuffled order)
    one, _, single = _run_ranks([*argv[:3], "32", *argv[4:]], [[1.0]])
    for step in range(5):
        both = np.concatenate([fakes[0].labels[step], fakes[1].labels[step]])
        assert np.array_equal(both, single[0].labels[step])
    assert fakes[0].lrs == fakes[1].lrs == single[0].lrs  # default lr: 0.256 x global batch / 256
    assert fakes[0].syncs == fakes[1].syncs == 1  # once before the Summary


def test_sharded_evaluation_sums_the_ranks_and_all_ranks_stop_together(digits):
    argv = ["--mode", "train_and_evaluate", "--batch_size", "256", "--image_size", "8", "--warmup_steps", "1"]
    argv += ["--max_epochs", "5", "--target_accuracy", "75"]
    # Each rank scores its half of the 359 validation images (180 and 179, one padded batch of 256
    # each; the fake is right on the first share x 256 of a batch): 30% and 30% first, 43% together;
    # then 100% and 40%, 180 + 103 hits = 78.8% together, over the target: both ranks stop there.
    results, logs, fakes = _run_ranks(argv, [[0.3, 1.0], [0.3, 0.4]])
    vals = [line for line in logs[0] if re.search(r" - Epoch: \d+  val\.top1", line)]
    assert len(vals) == 2 and logs[1] == []
    assert "val.top1 : 42.90" in vals[0]  # (77 + 77) / 359
    expected = 100.0 * (180 + 103) / 359
    assert f"val.top1 : {expected:.2f}" in vals[1]
    assert all(r.target_reached for r in results) and [len(r.evaluations) for r in results] == [2, 2]
    assert results[0].evaluations[-1]["top1"] == results[1].evaluations[-1]["top1"] == pytest.approx(expected)
    assert len(fakes[0].labels) == len(fakes[1].labels) == 2 * (1438 // 512)
    assert "target_reached : True" in logs[0][-1]


# ---------------------------------------------------------------------------------------------
# real runs: mpirun, TensorFlow and mpi4py


def _tf_python() -> str:
    python = framework_python(TF_ENV, "the TensorFlow environment's Python (with mpi4py) to run MPI workloads")
    if not shutil.which("mpirun"):
        why = "mpirun is not installed (Debian: apt-get install openmpi-bin)"
        if os.environ.get("BENCHBOOK_REQUIRE_MPI"):  # CI: a missing engine is a failure, not a skip
            pytest.fail(f"BENCHBOOK_REQUIRE_MPI is set but {why}")
        pytest.skip(why)
    return python


def _env() -> dict:
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}


def _mpirun(python, argv, cwd) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*MPIRUN, python, str(SCRIPT), *argv], capture_output=True, text=True, cwd=cwd, env=_env(), timeout=900
    )


def _untagged(stdout: str, rank: int) -> list[str]:
    tag = f"[1,{rank}]<stdout>:"
    return [line[len(tag) :] for line in stdout.splitlines() if line.startswith(tag)]


def _load(path: Path) -> list[np.ndarray]:
    """Every array of a --save_weights file: the variables (`NNN.<path>`, in model.weights order), then
    the momentum (`momentum.NNN`)."""
    with np.load(path) as z:
        return [z[k] for k in sorted(z.files)]


def _load_variables(path: Path) -> list[np.ndarray]:
    """The model's variables of a --save_weights file, in model.weights order."""
    with np.load(path) as z:
        return [z[k] for k in sorted(k for k in z.files if not k.startswith("momentum."))]


TINY_STUDY = """\
schema_version: 1
description: two MPI ranks, a few steps
model: resnet50_tf
runtime: cpu
launcher: mpirun
cpu:
  image_size: 32
  threads: 1
sweep:
  batch_size: 2
  data: synthetic
  processes: 2
repeats: 1
iterations: 3
warmup_steps: 1
timeout: 10m
no_progress: 5m
options:
  save_weights: {weights}
"""


@pytest.fixture(scope="module")
def two_rank_study(tmp_path_factory):
    """A two-rank study run through benchbook's runner (mpirun launcher), once for the module."""
    python = _tf_python()
    tmp = tmp_path_factory.mktemp("mpi_study")
    path = tmp / "mpi.yaml"
    path.write_text(TINY_STUDY.format(weights=tmp / "weights_{rank}.npz"))
    s = study.load(path)
    mp = pytest.MonkeyPatch()
    mp.setattr(envs, "ensure", lambda framework, say=print, study_python=None: Path(python))
    try:
        results = runner.run_study(s, tmp / "runs", progress=False, say=lambda line: None)
    finally:
        mp.undo()
    return s, tmp, results


def test_two_ranks_through_the_runner_complete_as_one_tagged_run(two_rank_study):
    s, tmp, results = two_rank_study
    ((run_id, rec),) = results.items()
    assert run_id == "cpu_np2_fp32_bs2_syn_r1"
    assert rec["status"] == "complete", rec
    assert rec["command"][0] == "mpirun" and rec["command"][rec["command"].index("-np") + 1] == "2"
    log = tmp / "runs" / s.name / run_id / f"{run_id}.log"
    text = log.read_text()
    assert "[1,0]<stdout>:DLL " in text
    rank0 = _untagged(text, 0)
    assert not [line for line in _untagged(text, 1) if line.startswith("DLL ")]  # rank 1 prints no DLL line
    param = dllogger.parameters(dllogger.LINE.match(rank0[0]).group(9))
    assert (param["processes"], param["batch_size"], param["lr"]) == ("2", "2", repr(0.256 * 2 * 2 / 256))
    steps = [STEP_RE.match(line) for line in rank0 if " Iteration: " in line]
    assert len(steps) == 3 and all(steps)
    for m in steps:
        assert float(m.group(4)) == pytest.approx(4 / float(m.group(6)), rel=0.01, abs=0.01)  # 2 ranks x 2
    assert rank0[-1].split(" - ")[1].startswith("Summary: train.ips : ")
    # the analysis: one complete run of the whole job, from the log the runner wrote
    result = analyze([log])
    assert not result.problems, result.problems
    assert len(result.runs) == 1
    run = result.runs.iloc[0]
    assert run["status"] == "complete" and run["batch_size"] == 2 and run["iterations"] == 2
    reported = float(re.search(r"train\.ips : (\S+)", rank0[-1]).group(1))
    assert run["recomputed_throughput"] == pytest.approx(reported, abs=0.011)


def test_two_ranks_hold_identical_weights(two_rank_study):
    _, tmp, _ = two_rank_study
    w0, w1 = _load(tmp / "weights_0.npz"), _load(tmp / "weights_1.npz")
    assert len(w0) == len(w1) > 300  # ResNet-50's variables and the momentum of the trainable ones
    assert all(np.array_equal(a, b) for a, b in zip(w0, w1, strict=True))
    assert common.fingerprint(w0) == common.fingerprint(w1)


def test_the_analysis_counts_the_processes_and_the_global_batch(two_rank_study):
    s, tmp, results = two_rank_study
    (run_id,) = results
    result = analyze([tmp / "runs" / s.name / run_id / f"{run_id}.log"])
    run = result.runs.iloc[0]
    assert run["processes"] == 2
    assert run["global_batch_size"] == 2 * run["batch_size"] == 4


# The single-process reference of one data-parallel step: rank r's shard is rows r*b..(r+1)*b-1 of
# the global synthetic batch; each shard's gradients and BatchNorm statistics are computed alone
# (from the same initial model), then averaged, then one momentum-SGD step from zero momentum:
# w1 = w0 - lr * mean(g). Also written: the model that rank 0 would hold had it not averaged.
ORACLE = """\
import os, sys
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"
sys.path.insert(0, sys.argv[1])
import numpy as np
import tensorflow as tf
from tensorflow import keras
import _common, resnet50_tf

seed, batch, size, lr, classes, image = 3, 2, 2, 0.1, 10, 32
tf.config.threading.set_intra_op_parallelism_threads(1)
tf.config.threading.set_inter_op_parallelism_threads(1)
keras.utils.set_random_seed(seed)
model = resnet50_tf.build_model(keras, classes, image)
weights, state = model.trainable_variables, model.non_trainable_variables
w0 = [w.numpy() for w in weights]
s0 = [s.numpy() for s in state]
grads, stats = [], []
for rank in range(size):
    world = _common.World()
    world.rank, world.size = rank, size
    x, y = _common.synthetic_shard(batch, image, classes, seed, world)
    for s, v in zip(state, s0):
        s.assign(v)
    with tf.GradientTape() as tape:
        logits = model(tf.constant(x), training=True)
        loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(tf.one_hot(y, classes), logits))
    grads.append([g.numpy() for g in tape.gradient(loss, weights)])
    stats.append([s.numpy() for s in state])
mean = [(a + b) / np.float32(2) for a, b in zip(*grads)]
expected = [w - np.float32(lr) * g for w, g in zip(w0, mean)] + [(a + b) / np.float32(2) for a, b in zip(*stats)]
alone = [w - np.float32(lr) * g for w, g in zip(w0, grads[0])] + stats[0]
# model.weights order: trainable and non-trainable interleaved by layer; map by variable identity
order = {id(v): i for i, v in enumerate(list(weights) + list(state))}
index = [order[id(v)] for v in model.weights]
np.savez(sys.argv[2], *[expected[i] for i in index])
np.savez(sys.argv[3], *[alone[i] for i in index])
"""


def test_a_two_rank_step_is_the_average_of_the_ranks_gradients(tmp_path):
    """After one step, both ranks hold w0 - lr * (g0 + g1) / 2, as computed in one process from the
    two shards: the gradients were averaged (ranks training alone would each hold w0 - lr * g_r)."""
    python = _tf_python()
    argv = ["--batch_size", "2", "--image_size", "32", "--num_classes", "10", "--num_iter", "1"]
    argv += ["--warmup_steps", "0", "--lr", "0.1", "--seed", "3", "--threads", "1"]
    done = _mpirun(python, [*argv, "--save_weights", str(tmp_path / "mpi_{rank}.npz")], tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    oracle = tmp_path / "oracle.py"
    oracle.write_text(ORACLE)
    ref = subprocess.run(
        [python, str(oracle), str(workloads.HERE), str(tmp_path / "expected.npz"), str(tmp_path / "alone.npz")],
        capture_output=True, text=True, cwd=tmp_path, env=_env(), timeout=600,
    )  # fmt: skip
    assert ref.returncode == 0, ref.stderr[-3000:]

    got = _load_variables(tmp_path / "mpi_0.npz")
    assert common.fingerprint(got) == common.fingerprint(_load_variables(tmp_path / "mpi_1.npz"))
    with np.load(tmp_path / "expected.npz") as z:
        expected = [z[f"arr_{i}"] for i in range(len(z.files))]
    with np.load(tmp_path / "alone.npz") as z:
        alone = [z[f"arr_{i}"] for i in range(len(z.files))]
    assert len(got) == len(expected) == len(alone)
    off = max(float(np.max(np.abs(a - b))) for a, b in zip(got, expected, strict=True))
    apart = max(float(np.max(np.abs(a - b))) for a, b in zip(alone, expected, strict=True))
    assert apart > 1e-3, "the two shards should give clearly different gradients"
    assert off < 1e-3 * apart, (off, apart)
    for a, b in zip(got, expected, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


def test_train_and_evaluate_on_two_ranks_stops_together(tmp_path):
    python = _tf_python()
    argv = ["--mode", "train_and_evaluate", "--batch_size", "128", "--image_size", "8", "--warmup_steps", "1"]
    argv += ["--max_epochs", "2", "--target_accuracy", "0.1", "--threads", "1", "--lr", "0.1"]
    done = _mpirun(python, argv, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = _untagged(done.stdout, 0)
    assert not [line for line in _untagged(done.stdout, 1) if line.startswith("DLL ")]
    params = dllogger.parameters(dllogger.LINE.match(lines[0]).group(9))
    assert (params["processes"], params["mode"], params["lr"]) == ("2", "train_and_evaluate", "0.1")
    steps = [STEP_RE.match(line) for line in lines if " Iteration: " in line]
    assert len(steps) == 1438 // 256 and all(steps)  # one epoch of global batches of 2 x 128
    vals = [line for line in lines if re.search(r" - Epoch: 0  val\.top1 : ", line)]
    assert len(vals) == 1  # any accuracy reaches 0.1%: both ranks stop after epoch 0
    summary = lines[-1]
    assert "Summary: " in summary and "target_reached : True" in summary and "train.epochs : 1" in summary
    top1 = float(re.search(r"val\.top1 : (\S+)", vals[0]).group(1))
    assert 0.1 <= top1 <= 100.0


def test_the_study_file_runs_one_and_two_ranks_with_mpirun():
    path = Path(__file__).resolve().parents[1] / "params" / "resnet50_tf" / "cpu_mpi.yaml"
    s = study.load(path)
    assert (s.model, s.runtime, s.launcher.name) == ("resnet50_tf", "cpu", "mpirun")
    assert path.read_text().startswith("#")
    runs = runner.plan(s, Path("/tmp/runs"), "/env/bin/python")
    ids = [r[0] for r in runs]
    assert sorted({r[2]["processes"] for r in runs}) == [1, 2] and len(runs) == 4
    assert len({r[2]["batch_size"] for r in runs}) == 1 and all(r[2]["synthetic"] for r in runs)
    for run_id, _, cfg, cmd in runs:
        argv = cmd.argv
        if cfg["processes"] == 2:
            assert run_id.startswith("cpu_np2_") and argv[0] == "mpirun" and argv[argv.index("-np") + 1] == "2"
            assert "--tag-output" in argv
        else:
            assert argv[0] == "/env/bin/python"
    assert len(set(ids)) == 4
    json.dumps([r[2] for r in runs])  # plain configuration values
