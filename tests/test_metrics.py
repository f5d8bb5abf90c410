"""Numbers across runs: statistics over repeats, speedup and efficiency, time to a target accuracy."""

from __future__ import annotations

import math
import statistics

import numpy as np
import pandas as pd
import pytest

from benchbook import analyze
from benchbook.core import config
from benchbook.reports.metrics import aggregate, time_to_target
from conftest import extended_catalog

FIXED = {"framework": "tensorflow", "model": "resnet50", "nodes": 1, "xla": True, "dali": False,
         "synthetic": False}


def _runs(rows):
    return pd.DataFrame([{**FIXED, "gpus": g, "batch_size": b, "precision": p, "recomputed_throughput": v,
                          "reported_throughput": v * 1.01, "status": s}
                         for g, b, p, v, s in rows])


ROWS = [
    (1, 128, "fp32", 400.0, "complete"), (1, 128, "fp32", 410.0, "complete"), (1, 128, "fp32", 390.0, "complete"),
    (1, 128, "fp32", 100.0, "incomplete"),
    (8, 128, "fp32", 3000.0, "complete"), (8, 128, "fp32", 3100.0, "complete"), (8, 128, "fp32", 2960.0, "complete"),
    (8, 128, "fp32", np.nan, "complete"),
    (1, 256, "amp", 1000.0, "complete"), (1, 256, "amp", 1020.0, "complete"),
    (8, 256, "amp", 7600.0, "complete"), (8, 256, "amp", 7700.0, "complete"), (8, 256, "amp", 8000.0, "complete"),
    (4, 128, "amp", 3500.0, "complete"),
]


def _row(stats, gpus, batch, precision):
    hit = stats[(stats["gpus"] == gpus) & (stats["batch_size"] == batch) & (stats["precision"] == precision)]
    assert len(hit) == 1
    return hit.iloc[0]


def test_statistics_over_repeats():
    stats = aggregate(_runs(ROWS))
    assert len(stats) == 5
    one = _row(stats, 1, 128, "fp32")
    assert one["runs"] == 3  # the incomplete repeat is left out
    assert one["mean"] == pytest.approx(400.0)
    assert one["median"] == pytest.approx(400.0)
    assert one["std"] == pytest.approx(statistics.stdev([400.0, 410.0, 390.0]))
    assert one["cv"] == pytest.approx(10.0 / 400.0)
    assert (one["min"], one["max"]) == (390.0, 410.0)
    eight = _row(stats, 8, 128, "fp32")
    assert eight["runs"] == 3  # the repeat without a value is left out
    assert eight["mean"] == pytest.approx((3000 + 3100 + 2960) / 3)
    assert eight["std"] == pytest.approx(statistics.stdev([3000.0, 3100.0, 2960.0]))


def test_speedup_is_against_the_1_gpu_median_of_the_same_batch_and_precision():
    stats = aggregate(_runs(ROWS))
    assert _row(stats, 1, 128, "fp32")["speedup"] == pytest.approx(1.0)
    assert _row(stats, 8, 128, "fp32")["speedup"] == pytest.approx(3000.0 / 400.0)
    assert _row(stats, 8, 128, "fp32")["efficiency"] == pytest.approx(3000.0 / 400.0 / 8)
    assert _row(stats, 8, 256, "amp")["speedup"] == pytest.approx(7700.0 / 1010.0)
    assert _row(stats, 8, 256, "amp")["efficiency"] == pytest.approx(7700.0 / 1010.0 / 8)
    # No 1-GPU AMP run of batch 128: no speedup rather than one against another configuration.
    assert math.isnan(_row(stats, 4, 128, "amp")["speedup"])
    assert math.isnan(_row(stats, 4, 128, "amp")["efficiency"])


def test_incomplete_runs_can_be_included():
    stats = aggregate(_runs(ROWS), complete_only=False)
    one = _row(stats, 1, 128, "fp32")
    assert one["runs"] == 4
    assert one["median"] == pytest.approx((390.0 + 400.0) / 2)
    assert one["min"] == 100.0
    assert _row(stats, 8, 128, "fp32")["speedup"] == pytest.approx(3000.0 / 395.0)


def test_another_value_column_can_be_aggregated():
    stats = aggregate(_runs(ROWS), value="reported_throughput")
    assert _row(stats, 1, 256, "amp")["median"] == pytest.approx(1010.0 * 1.01)


def test_no_complete_run_gives_an_empty_frame():
    stats = aggregate(_runs([(1, 64, "fp32", 100.0, "failed")]))
    assert stats.empty
    assert {"median", "speedup", "efficiency"} <= set(stats.columns)


def test_repeats_analyzed_from_logs(write_tf1_log):
    # Each log: one warm-up record, then records at one rate: that rate is the run's throughput.
    per_run = {(1, 1): 300.0, (1, 2): 320.0, (1, 3): 310.0, (2, 1): 600.0, (2, 2): 590.0, (2, 3): 640.0}
    paths = [write_tf1_log(f"study/1n{g}g/r50_b64_fp32_{r}.log", gpus=g, batch=64, amp=False,
                           rates=[50.0, rate, rate, rate], warmup=1)
             for (g, r), rate in per_run.items()]
    result = analyze(paths)
    assert result.problems == []
    assert result.runs["repeat"].tolist() == [1, 2, 3, 1, 2, 3]

    stats = aggregate(result.runs)
    assert stats["gpus"].tolist() == [1, 2]
    assert stats["runs"].tolist() == [3, 3]
    assert stats["median"].tolist() == pytest.approx([310.0, 600.0])
    assert stats["speedup"].tolist() == pytest.approx([1.0, 600.0 / 310.0])
    assert stats["efficiency"].tolist() == pytest.approx([1.0, 600.0 / 310.0 / 2])


def _evaluations():
    # Two runs, rows out of line order; run "b" never reaches 76%.
    return pd.DataFrame([
        {"source": "a.log", "run": 0, "line": 30, "epoch": 2, "top1": 76.4, "elapsed": 3000.0},
        {"source": "a.log", "run": 0, "line": 10, "epoch": 0, "top1": 52.0, "elapsed": 1000.0},
        {"source": "a.log", "run": 0, "line": 20, "epoch": 1, "top1": 76.1, "elapsed": 2000.0},
        {"source": "a.log", "run": 0, "line": 40, "epoch": 3, "top1": 75.9, "elapsed": 4000.0},
        {"source": "b.log", "run": 0, "line": 5, "epoch": 0, "top1": 60.0, "elapsed": 500.0},
        {"source": "b.log", "run": 0, "line": 9, "epoch": 1, "top1": 75.5, "elapsed": 900.0},
    ])


def test_time_to_target_is_the_first_evaluation_at_or_above_it():
    out = time_to_target(_evaluations(), 76.1, "top1").set_index("source")
    a = out.loc["a.log"]
    assert bool(a["reached"])
    assert (a["seconds"], a["epoch"], a["line"], a["top1"]) == (2000.0, 1, 20, 76.1)
    assert a["final_top1"] == 75.9  # the last evaluation in line order, not the best one
    b = out.loc["b.log"]
    assert not bool(b["reached"])
    assert math.isnan(b["seconds"])
    assert b["final_top1"] == 75.5


def test_time_to_target_above_every_evaluation_is_never_reached():
    out = time_to_target(_evaluations(), 80.0, "top1")
    assert out["reached"].tolist() == [False, False]
    assert out["seconds"].isna().all()


def test_time_to_target_of_no_evaluations_is_empty():
    out = time_to_target(pd.DataFrame(), 76.1, "top1")
    assert out.empty
    assert {"source", "run", "reached", "seconds"} <= set(out.columns)


LOSS = config.Metric("mlm_loss", "MLM loss", "", direction="lower", final=True)


def _losses():
    return pd.DataFrame([{"source": "a.log", "run": 0, "line": 10 * (k + 1), "epoch": 0, "mlm_loss": loss,
                          "elapsed": 100.0 * (k + 1)} for k, loss in enumerate([7.0, 5.5, 4.0, 4.5])])


def test_time_to_target_of_a_metric_where_lower_is_better_is_the_first_at_or_below_it(monkeypatch):
    first = time_to_target(_losses(), 5.0, LOSS).iloc[0]
    assert (bool(first["reached"]), first["seconds"], first["mlm_loss"], first["final_mlm_loss"]) == (
        True, 300.0, 4.0, 4.5)
    assert not time_to_target(_losses(), 3.0, LOSS).iloc[0]["reached"]
    # named by its key, a declared metric's direction is its own
    with extended_catalog(metrics=(LOSS,)):
        assert time_to_target(_losses(), 5.0, "mlm_loss").iloc[0]["seconds"] == 300.0


def test_time_to_target_from_a_train_and_evaluate_log(fixtures):
    result = analyze([fixtures / "ngc_tf1" / "train_and_evaluate_gpu1_amp_bs256.log"])
    # Evaluations at 12:10, 12:20, 12:30, 12:31 of a run that started at 12:00 (top-1 52.10, 71.05,
    # 76.55, 76.81).
    first = time_to_target(result.evaluations, 76.1, "top1").iloc[0]
    assert bool(first["reached"])
    assert first["seconds"] == pytest.approx(30 * 60)
    assert first["epoch"] == 2
    later = time_to_target(result.evaluations, 76.7, "top1").iloc[0]
    assert later["seconds"] == pytest.approx(31 * 60)
    never = time_to_target(result.evaluations, 77.0, "top1").iloc[0]
    assert not bool(never["reached"])
    assert never["final_top1"] == pytest.approx(76.81)


def test_cpu_ranks_are_configurations_of_their_own_with_speedup_over_one_process():
    rows = []
    for processes, values in ((1, [10.0, 12.0]), (2, [19.0, 21.0])):
        for v in values:
            rows.append({"framework": "tensorflow", "model": "resnet50", "gpus": 0, "nodes": 1, "processes": processes,
                         "batch_size": 8, "precision": "fp32", "xla": False, "dali": False, "synthetic": True,
                         "status": "complete", "recomputed_throughput": v})
    stats = aggregate(pd.DataFrame(rows)).set_index("processes")
    assert list(stats["runs"]) == [2, 2] and stats.loc[2, "median"] == 20.0
    assert stats.loc[1, "speedup"] == 1.0 and stats.loc[2, "speedup"] == pytest.approx(20.0 / 11.0)
    assert stats.loc[2, "efficiency"] == pytest.approx(10.0 / 11.0)
    from benchbook.reports import plots
    assert plots.config_label(stats.reset_index().iloc[1]) == "CPU, 2 processes · fp32 · bs8 · no xla"
    assert plots.config_label(stats.reset_index().iloc[0]) == "CPU · fp32 · bs8 · no xla"
    from benchbook.reports import tables
    layout = tables.published_layout(stats.reset_index())
    assert list(layout.index) == [(1, 0, 1), (1, 0, 2)] and layout.iloc[1][("FP32 bs8", "median")] == 20.0


def test_incomplete_runs_are_counted_where_they_are_kept():
    stats = aggregate(_runs(ROWS), complete_only=False)
    assert _row(stats, 1, 128, "fp32")["incomplete"] == 1
    assert _row(stats, 8, 128, "fp32")["incomplete"] == 0
    assert aggregate(_runs(ROWS))["incomplete"].sum() == 0  # complete runs only, by default


def test_speedup_against_the_one_1_gpu_baseline_that_differs_only_where_a_side_is_unknown():
    rows = _runs([(1, 128, "fp32", 400.0, "complete"), (8, 128, "fp32", 3000.0, "complete")])
    rows["dali"] = [None, True]  # the 1-GPU log does not say whether DALI read its data
    stats = aggregate(rows)
    assert _row(stats, 8, 128, "fp32")["speedup"] == pytest.approx(3000.0 / 400.0)
    # Two such baselines: none is taken.
    rows = _runs([(1, 128, "fp32", 400.0, "complete"), (1, 128, "fp32", 300.0, "complete"),
                  (8, 128, "fp32", 3000.0, "complete")])
    rows["dali"] = [False, True, None]
    assert math.isnan(_row(aggregate(rows), 8, 128, "fp32")["speedup"])
    # A baseline that is known to differ (XLA off against on) is never taken.
    rows = _runs([(1, 128, "fp32", 400.0, "complete"), (8, 128, "fp32", 3000.0, "complete")])
    rows["xla"] = [False, True]
    assert math.isnan(_row(aggregate(rows), 8, 128, "fp32")["speedup"])


def test_no_speedup_where_there_is_no_other_run_to_compare_with():
    # A 1-GPU configuration alone (no 8-GPU run of its batch and precision) is no baseline of anything:
    # a speedup of 1.0 would say it scaled perfectly. DLPerf's 1.0 stays where a multi-GPU run uses it.
    stats = aggregate(_runs([(1, 128, "fp32", 400.0, "complete"), (8, 128, "fp32", 3000.0, "complete"),
                             (1, 256, "amp", 1000.0, "complete")]))
    assert _row(stats, 1, 128, "fp32")["speedup"] == 1.0
    assert math.isnan(_row(stats, 1, 256, "amp")["speedup"])
    assert math.isnan(_row(stats, 1, 256, "amp")["efficiency"])
    # A CPU run of one process alone has no speedup either.
    cpu = _runs([(0, 8, "fp32", 60.0, "complete")]).assign(processes=1)
    assert math.isnan(aggregate(cpu)["speedup"].iloc[0])


def test_a_cpu_run_is_never_the_baseline_of_a_gpu_run():
    runs = _runs([(0, 128, "fp32", 50.0, "complete"), (8, 128, "fp32", 3000.0, "complete")])
    runs["processes"] = [1, 8]
    stats = aggregate(runs)
    assert stats["speedup"].isna().all()
