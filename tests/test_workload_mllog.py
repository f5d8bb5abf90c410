"""`--mllog`: the MLPerf MLLOG records the training loop writes through mlperf-logging (`_common_mllog`),
read back by benchbook's own MLLOG reader (what `benchbook mlperf score` reads), with a fake framework
whose evaluations are right on a given share of the images. The real TensorFlow script's file is
checked in test_workloads.py (where BENCHBOOK_TEST_TF_PYTHON names its Python)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from benchbook.mlperf import mllog as reader
from benchbook.workloads import _common as common
from benchbook.workloads import _common_loop

pytest.importorskip("mlperf_logging")


@pytest.fixture(autouse=True)
def small_data(monkeypatch):
    """1000 training and 200 validation images of 8x8 (benchbook's environment has no scikit-learn's digits)."""
    rng = np.random.RandomState(0)
    data = common.Digits(rng.rand(1000, 8, 8, 3).astype(np.float32), rng.randint(0, 10, 1000).astype(np.int32),
                         rng.rand(200, 8, 8, 3).astype(np.float32), rng.randint(0, 10, 200).astype(np.int32))
    monkeypatch.setattr(_common_loop, "load_digits", lambda image_size, seed, layout: data)


def hooks(accuracy_by_eval, fail_at_step=None):
    """Hooks whose n-th evaluation is right on `accuracy_by_eval[n]` of the images (the last one after)."""
    state = {"steps": 0, "evals": 0, "at_last_eval": -1}

    def train_step(x, y, lr):
        state["steps"] += 1
        if state["steps"] == fail_at_step:
            return float("nan")
        return 1.0

    def predict(x):
        labels = x
        if state["steps"] != state["at_last_eval"]:
            state["at_last_eval"], state["evals"] = state["steps"], state["evals"] + 1
        share = accuracy_by_eval[min(state["evals"], len(accuracy_by_eval)) - 1]
        right = np.arange(len(labels)) % 100 < share * 100  # of every 100 rows (a batch is padded)
        logits = np.zeros((len(labels), 10))
        logits[np.arange(len(labels)), np.where(right, labels, (labels + 1) % 10)] = 1.0
        return logits

    return common.Hooks(put=lambda x, y: (y, y), train_step=train_step, predict=predict)


def train(tmp_path, accuracy_by_eval, target, epochs, fail_at_step=None):
    path = tmp_path / "mllog.txt"
    argv = ["--mode", "train_and_evaluate", "--image_size", "8", "--batch_size", "512", "--target_accuracy",
            str(target), "--max_epochs", str(epochs), "--mllog", str(path)]
    args = common.parse_args("tensorflow", argv)
    mlperf = common.MLPerfLog(args.mllog)
    mlperf.init(args, processes=1)
    logger = common.DLLogger(open(tmp_path / "stdout.txt", "w"))
    result = common.run(args, logger, hooks(accuracy_by_eval, fail_at_step), logger.log("PARAMETER", []),
                        mlperf=mlperf)
    return result, path


def records(path):
    return [json.loads(line.removeprefix(":::MLLOG ")) for line in path.read_text().splitlines()]


def test_a_run_that_reaches_its_target_stops_with_success(tmp_path):
    result, path = train(tmp_path, [0.3, 0.6, 0.9], target=50, epochs=5)
    assert result.target_reached and len(result.evaluations) == 2
    keys = [r["key"] for r in records(path)]
    assert keys[keys.index("run_start"):] == ["run_start", "train_samples", "eval_samples",
                                              *["epoch_start", "epoch_stop", "eval_start", "eval_stop",
                                                "eval_accuracy"] * 2, "run_stop"]
    run = reader.read(path)
    assert run.status == "success" and run.run_stop_line == len(keys)
    assert [(e.epoch, e.metric) for e in run.evaluations] == [(1.0, "accuracy"), (2.0, "accuracy")]
    assert [e.value for e in run.evaluations] == pytest.approx([ev["top1"] / 100 for ev in result.evaluations])
    assert run.global_batch_size == 512 and run.submission["benchmark"] == "resnet"
    assert [r["value"] for r in records(path) if r["key"] in ("train_samples", "eval_samples")] == [1000, 200]
    assert run.minutes is not None and run.minutes * 60 < 60  # run_start..run_stop, in the log's ms


def test_a_run_that_misses_its_target_stops_aborted_with_every_evaluation(tmp_path):
    result, path = train(tmp_path, [0.2, 0.3], target=90, epochs=2)
    assert not result.target_reached
    run = reader.read(path)
    assert run.status == "aborted" and [e.epoch for e in run.evaluations] == [1.0, 2.0]
    assert [r["metadata"]["epoch_num"] for r in records(path) if r["key"] == "epoch_stop"] == [1, 2]


def test_a_run_that_fails_stops_aborted_and_the_error_goes_on(tmp_path):
    with pytest.raises(FloatingPointError):
        train(tmp_path, [0.5], target=90, epochs=2, fail_at_step=2)
    run = reader.read(path=tmp_path / "mllog.txt")
    assert run.status == "aborted" and [e.value for e in run.evaluations] == [0.5]  # epoch 1 evaluated, not 2


def test_a_second_run_into_the_same_file_starts_it_anew(tmp_path):
    train(tmp_path, [0.9], target=50, epochs=1)
    train(tmp_path, [0.9], target=50, epochs=1)
    keys = [r["key"] for r in records(tmp_path / "mllog.txt")]
    assert keys.count("run_start") == 1 and keys[0] == "cache_clear"


def test_without_mlperf_logging_only_a_run_that_asks_for_mllog_stops(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "mlperf_logging", None)  # `import mlperf_logging` raises ImportError
    quiet = common.MLPerfLog(None)
    quiet.init(common.parse_args("tensorflow", []), processes=1)
    quiet.run_start()
    quiet.run_stop(True)  # nothing asked, nothing written, nothing imported
    with pytest.raises(SystemExit) as stopped:
        common.MLPerfLog(str(tmp_path / "mllog.txt"))
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert "--mllog" in err and "needs mlperf-logging" in err and "requirements/tensorflow.txt" in err
    assert not (tmp_path / "mllog.txt").exists()


def test_a_rank_other_than_0_writes_nothing(tmp_path):
    log = common.MLPerfLog(str(tmp_path / "mllog.txt"), enabled=False)
    log.run_start()
    log.run_stop(True)
    assert not (tmp_path / "mllog.txt").exists()


def test_a_file_that_cannot_be_written_says_so(tmp_path, capsys):
    with pytest.raises(SystemExit) as stopped:
        common.MLPerfLog(str(tmp_path / "no-folder" / "mllog.txt"))
    assert stopped.value.code == 2 and "cannot write MLLOG" in capsys.readouterr().err


def test_a_link_at_the_path_is_not_followed(tmp_path, capsys):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    (tmp_path / "mllog.txt").symlink_to(victim)
    with pytest.raises(SystemExit) as stopped:
        common.MLPerfLog(str(tmp_path / "mllog.txt"))
    assert stopped.value.code == 2 and "cannot write MLLOG" in capsys.readouterr().err
    assert victim.read_text() == "keep me\n"


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full (a device whose writes fail: ENOSPC)")
def test_a_record_that_cannot_be_written_ends_the_run(capsys):
    log = common.MLPerfLog("/dev/full")  # as a full disk: every write fails with ENOSPC
    with pytest.raises(SystemExit) as stopped:
        log.init(common.parse_args("tensorflow", []), processes=1)
    err = capsys.readouterr().err
    assert stopped.value.code == 2 and "--mllog /dev/full: cannot write MLLOG (No space left on device)" in err
    assert "Logging error" not in err
