"""MLPerf Training across rounds (issue 37): list-valued accuracies, every benchmark's quality target and run
count read from the compliance rules mlperf-logging ships, the 30-minute setup limit, and the real result
folders of ../shared/mlperf-results scored as their expected.yaml says (skipped where ../shared is absent)."""

from __future__ import annotations

import json

import pytest

from benchbook.mlperf import mllog, results
from test_mlperf_mllog import mll_line, write
from test_mlperf_score import SYSTEM


def v06_mask_list(minutes: float, last=(0.381, 0.343), start: float = 1_558_421_526.0) -> str:
    """A v0.6 Google TPU Mask R-CNN result: eval_accuracy a list [BBOX, SEGM], epoch_num from 0."""
    out = [mll_line(0.0, "submission_benchmark", "mask"), mll_line(0.0, "submission_division", "closed"),
           mll_line(0.0, "submission_org", "google"), mll_line(start - 440, "init_start"),
           mll_line(start - 440, "global_batch_size", 128), mll_line(start - 1, "init_stop"),
           mll_line(start, "run_start")]
    end = start + minutes * 60
    for epoch, value in enumerate([[0.128, 0.134], [0.30, 0.28], list(last)]):
        out.append(mll_line(start + (end - start) * (epoch + 1) / 3 - 1, "eval_accuracy", value, epoch_num=epoch))
    out.append(mll_line(end, "run_stop", status="success"))
    return "".join(out)


def test_a_list_valued_accuracy_is_bbox_and_segm(tmp_path):
    run = mllog.read(write(tmp_path / "result_0.txt", v06_mask_list(100)))
    assert [(e.epoch, e.metric, e.value) for e in run.evaluations][-2:] == [(2, "BBOX", 0.381), (2, "SEGM", 0.343)]


def test_v06_google_mask_rcnn_scores_by_its_lists(tmp_path):
    folder = tmp_path / "training_results_v0.6" / "Google" / "results" / "tpu-v3-32" / "mask"
    for i, minutes in enumerate((100, 105, 107, 109, 120)):
        write(folder / f"result_{i}.txt", v06_mask_list(minutes, last=(0.376, 0.35) if i == 4 else (0.381, 0.343)))
    write(folder.parents[2] / "systems" / "tpu-v3-32.json", json.dumps(SYSTEM))
    (found,) = results.score([folder])
    assert found.benchmark == "maskrcnn" and found.valid and found.runs_failed == 1
    assert found.score_minutes == pytest.approx(107.0)  # 100 fastest, result_4 (BBOX 0.376 < 0.377) slowest
    assert "target BBOX >= 0.377 and SEGM >= 0.339 not reached" in found.run_details[4]["reason"]


def test_a_list_of_an_unknown_benchmark_is_named_by_position(tmp_path):
    text = mll_line(0.0, "submission_benchmark", "other") + mll_line(1.0, "run_start") + \
        mll_line(2.0, "eval_accuracy", [0.5, 0.6], epoch_num=1) + mll_line(3.0, "run_stop", status="success")
    run = mllog.read(write(tmp_path / "r.txt", text))
    assert [(e.metric, e.value) for e in run.evaluations] == [("accuracy[0]", 0.5), ("accuracy[1]", 0.6)]
