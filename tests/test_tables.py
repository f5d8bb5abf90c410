"""The layout of the published reports: a row per GPU count, a column per precision x batch size."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from benchbook.reports.metrics import aggregate
from benchbook.reports.tables import published_layout

BASE = {"framework": "tensorflow", "nodes": 1, "dali": False, "synthetic": False, "status": "complete"}


def _stats(rows, model="resnet50"):
    runs = pd.DataFrame([{**BASE, "model": m, "gpus": g, "batch_size": b, "precision": p, "xla": x,
                          "recomputed_throughput": v} for m, g, b, p, x, v in rows])
    return aggregate(runs)


ROWS = [
    ("resnet50", 1, 128, "fp32", True, 400.0), ("resnet50", 1, 128, "fp32", True, 420.0),
    ("resnet50", 8, 128, "fp32", True, 3000.0),
    ("resnet50", 1, 256, "amp", True, 1000.0),
    ("resnet50", 8, 256, "amp", True, 7500.0), ("resnet50", 8, 256, "amp", True, 7700.0),
]


def test_a_row_per_gpu_count_and_a_column_per_precision_and_batch():
    table = published_layout(_stats(ROWS))
    assert list(table.index) == [(1, 1), (1, 8)]
    assert list(table.index.names) == ["nodes", "gpus"]
    configs = list(dict.fromkeys(c for c, _ in table.columns))
    assert configs == ["FP32 bs128", "AMP bs256"]  # FP32 first, as in the reports
    assert list(table.columns) == [(c, v) for c in configs for v in ("median", "mean", "speedup")]
    assert table.loc[(1, 1), ("FP32 bs128", "median")] == pytest.approx(410.0)
    assert table.loc[(1, 8), ("FP32 bs128", "speedup")] == pytest.approx(3000.0 / 410.0)
    assert table.loc[(1, 8), ("AMP bs256", "mean")] == pytest.approx(7600.0)
    assert table.loc[(1, 8), ("AMP bs256", "speedup")] == pytest.approx(7600.0 / 1000.0)


def test_batch_sizes_are_ordered_as_numbers():
    rows = [("resnet50", 1, b, "fp32", True, 100.0 + b) for b in (256, 32, 128)]
    table = published_layout(_stats(rows))
    assert list(dict.fromkeys(c for c, _ in table.columns)) == ["FP32 bs32", "FP32 bs128", "FP32 bs256"]


def test_a_study_mixing_xla_on_and_off_says_which():
    rows = [("resnet50", 1, 128, "fp32", True, 450.0), ("resnet50", 1, 128, "fp32", False, 400.0)]
    table = published_layout(_stats(rows), values=("median",))
    labels = set(c for c, _ in table.columns)
    assert labels == {"FP32 bs128 XLA", "FP32 bs128 no XLA"}
    assert table.loc[(1, 1), ("FP32 bs128 XLA", "median")] == 450.0
    assert table.loc[(1, 1), ("FP32 bs128 no XLA", "median")] == 400.0


def test_several_models_get_a_model_level():
    rows = ROWS + [("maskrcnn", 1, 2, "amp", True, 9.0), ("maskrcnn", 8, 2, "amp", True, 60.0)]
    table = published_layout(_stats(rows))
    assert list(table.index.names) == ["model", "nodes", "gpus"]
    assert table.loc[("maskrcnn", 1, 8), ("AMP bs2", "median")] == 60.0
    assert math.isnan(table.loc[("maskrcnn", 1, 8), ("FP32 bs128", "median")])


def test_no_statistics_give_an_empty_table():
    assert published_layout(aggregate(pd.DataFrame(columns=[*BASE, "model", "gpus", "batch_size", "precision",
                                                            "xla", "recomputed_throughput"]))).empty


def test_unknown_xla_is_shown_as_unknown_never_as_no_xla():
    rows = [("resnet50", 1, 128, "fp32", False, 400.0), ("resnet50", 1, 128, "fp32", None, 430.0)]
    table = published_layout(_stats(rows), values=("median",))
    assert set(c for c, _ in table.columns) == {"FP32 bs128 no XLA", "FP32 bs128 XLA unknown"}
    assert table.loc[(1, 1), ("FP32 bs128 no XLA", "median")] == 400.0
    assert table.loc[(1, 1), ("FP32 bs128 XLA unknown", "median")] == 430.0
    # Only unknown: still said.
    table = published_layout(_stats([("resnet50", 1, 128, "fp32", None, 430.0)]), values=("median",))
    assert [c for c, _ in table.columns] == ["FP32 bs128 XLA unknown"]


def _runs(rows):
    """Runs of 8 GPUs, AMP, batch 256, no XLA that differ in (dali, synthetic, framework), a value each."""
    return pd.DataFrame([{**BASE, "framework": fw, "model": "resnet50", "gpus": 8, "batch_size": 256,
                          "precision": "amp", "xla": False, "dali": dali, "synthetic": synthetic,
                          "recomputed_throughput": value} for dali, synthetic, fw, value in rows])


def test_configurations_differing_in_dali_or_data_get_a_column_each_never_one_cell():
    runs = _runs([(True, False, "tensorflow", 6700.0), (True, False, "tensorflow", 6716.0),
                  (False, True, "tensorflow", 6327.5)])
    table = published_layout(aggregate(runs), values=("median", "mean"))
    assert set(c for c, _ in table.columns) == {"AMP bs256 DALI real data", "AMP bs256 no DALI synthetic data"}
    assert table.loc[(1, 8), ("AMP bs256 DALI real data", "median")] == pytest.approx(6708.0)
    assert table.loc[(1, 8), ("AMP bs256 no DALI synthetic data", "median")] == 6327.5


def test_only_dali_varying_names_only_dali():
    runs = _runs([(True, False, "tensorflow", 6700.0), (False, False, "tensorflow", 6100.0)])
    labels = set(c for c, _ in published_layout(aggregate(runs), values=("median",)).columns)
    assert labels == {"AMP bs256 DALI", "AMP bs256 no DALI"}


def test_frameworks_side_by_side_are_named_in_the_label():
    runs = _runs([(True, False, "tensorflow", 6700.0), (True, False, "mxnet", 7100.0)])
    table = published_layout(aggregate(runs), values=("median",))
    assert table.loc[(1, 8), ("AMP bs256 (mxnet)", "median")] == 7100.0
    assert table.loc[(1, 8), ("AMP bs256 (tensorflow)", "median")] == 6700.0


def test_processes_get_a_row_level_whenever_a_gpu_count_has_several():
    rows = [{**BASE, "model": "resnet50", "gpus": g, "processes": p, "batch_size": 32, "precision": "fp32",
             "xla": False, "recomputed_throughput": v} for g, p, v in ((1, 1, 10.0), (1, 2, 18.0), (2, 1, 19.0))]
    table = published_layout(aggregate(pd.DataFrame(rows)), values=("median",))
    assert list(table.index.names) == ["nodes", "gpus", "processes"]
    assert table[("FP32 bs32", "median")].tolist() == [10.0, 18.0, 19.0]
