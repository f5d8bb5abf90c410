"""The first screen of a report: the published grid (a row per GPU count, a column per precision x batch,
published | measured | Δ %, the published numbers as their publication printed them), speedup only where
a measured run was compared with a measured 1-GPU baseline, the verdict with its size."""

from __future__ import annotations

import pandas as pd
import pytest

from benchbook.reports import configs, display, grid, headline, metrics, references

# A made-up reference in the form of wanghuancoder/PerformanceReport 15b5df84 (ResNet50V1.5/OtherReports/
# TensorFlow/README.md), whose table prints every throughput with 3 decimals, trailing zeros included.
REFERENCE = """\
schema_version: 1
title: made-up throughput table printed with 3 decimals
model: resnet50_tf
statistic: one run
source: {title: test fixture, url: "https://example.org/report"}
hardware: {gpu: V100-SXM2-32GB, gpus_per_node: 8}
software: {container: "nvcr.io/nvidia/tensorflow:20.06-tf1-py3"}
rows:
  - {gpus: 1, batch_size: 128, precision: fp32, xla: true, throughput: 398.300}
  - {gpus: 8, batch_size: 128, precision: fp32, xla: true, throughput: 3038.730, speedup: 7.60}
  - {gpus: 1, batch_size: 256, precision: amp, xla: true, throughput: 1012}
"""
FIXED = {"framework": "tensorflow", "model": "resnet50", "nodes": 1, "status": "complete", "xla": True,
         "dali": False, "synthetic": False}


@pytest.fixture
def ref(tmp_path):
    path = tmp_path / "printed.yaml"
    path.write_text(REFERENCE)
    return references.load(path)


def _stats(rows):
    return metrics.aggregate(pd.DataFrame([{**FIXED, "gpus": g, "batch_size": b, "precision": p,
                                            "recomputed_throughput": v} for g, b, p, v in rows]))


def test_the_reference_keeps_each_number_as_printed(ref):
    assert [r.as_printed("throughput") for r in ref.rows] == ["398.300", "3038.730", "1012"]
    assert ref.rows[1].as_printed("speedup") == "7.60" and ref.rows[0].as_printed("speedup") is None
    assert list(ref.frame()["throughput_printed"]) == ["398.300", "3038.730", "1012"]
    comparison = references.compare(_stats([(8, 128, "fp32", 3000.0)]), ref)
    assert list(comparison["published_printed"]) == ["398.300", "3038.730", "1012"]
    assert comparison["published_speedup_printed"].iloc[1] == "7.60"


def test_a_printed_text_that_is_not_the_number_is_refused(tmp_path):
    path = tmp_path / "wrong.yaml"
    path.write_text(REFERENCE.replace("throughput: 1012}", "throughput: 1012, printed: {throughput: '1013'}}"))
    with pytest.raises(references.ReferenceError, match=r"wrong.yaml:11: rows\[2\].*'1013' is not the number 1012"):
        references.load(path)


def _grid(stats, ref=None):
    comparison = references.compare(stats, ref) if ref is not None else None
    return grid.render_all(grid.grids(stats, comparison, ref), "images/s")


def test_the_grid_shows_the_published_digits_and_the_measured_number_alike(ref):
    stats = _stats([(1, 128, "fp32", 400.0), (8, 128, "fp32", 3000.0), (1, 256, "amp", 1000.0)])
    table = _grid(stats, ref)
    assert "3038.730" in table.markup and "3038.73<" not in table.markup
    assert "398.300" in table.markup and "3000.000" in table.markup and "400.000" in table.markup
    assert ">1012<" in table.markup and ">1000<" in table.markup


def test_the_grid_is_a_row_per_gpu_count_and_a_column_per_precision_and_batch_in_the_reference_order(ref):
    # 4 columns x 3 sub-columns: the published form, never a row per configuration (MAX_COLUMNS is gone)
    stats = _stats([(g, b, p, 100.0 * g) for g in (1, 8) for b in (128, 256) for p in ("fp32", "amp")])
    plain = _grid(stats, ref).plain.splitlines()
    assert plain[1] == "GPUs | FP32 bs128 | AMP bs256 | FP32 bs256 | AMP bs128"  # the reference's columns first
    assert [line.split(" | ")[0] for line in plain[2:]] == ["1", "8", "speedup 1 → 8 GPUs",
                                                          "speedup FP32 → mixed, 1 GPU",
                                                          "speedup FP32 → mixed, 8 GPUs"]
    assert plain[2].split(" | ")[1:4] == ["398.300", "100.000", "-74.89"]


def test_speedup_only_where_a_1_gpu_baseline_is_compared_with_another_run():
    # AMP bs256 was measured on 1 GPU only: no speedup (a dash), never 1.00.
    stats = _stats([(1, 128, "fp32", 400.0), (8, 128, "fp32", 3000.0), (1, 256, "amp", 1000.0)])
    rows = [line.split(" | ") for line in _grid(stats).plain.splitlines()[2:]]
    assert rows == [["1", "400.00", "1", "1.00", "1000.00", "1", display.DASH],
                    ["8", "3000.00", "1", "7.50", display.DASH, display.DASH, display.DASH]]


def test_cpu_runs_of_one_and_two_processes_are_rows_of_their_own():
    # params/resnet50_tf/cpu_mpi.yaml runs 1 and 2 MPI processes: both medians are in the table (the
    # 2-process row used to replace the 1-process one, both being "0 GPUs").
    runs = pd.DataFrame([{**FIXED, "gpus": 0, "processes": n, "batch_size": 8, "precision": "fp32",
                          "recomputed_throughput": v} for n, v in ((1, 21.85), (1, 21.85), (2, 12.14))])
    table = _grid(metrics.aggregate(runs))
    assert table.plain.splitlines()[1].startswith("ran on | ")
    assert table.plain.splitlines()[2:] == ["CPU | 21.85 | 2 | 1.00", "CPU, 2 processes | 12.14 | 1 | 0.56"]


def test_a_reference_of_several_tables_gives_a_grid_each_labelled(tmp_path):
    text = REFERENCE.replace("rows:\n", "tables: {plain: without XLA, xla: with XLA}\nrows:\n").replace(
        "  - {gpus: 1, batch_size: 128", "  - {table: xla, gpus: 1, batch_size: 128").replace(
        "  - {gpus: 8, batch_size: 128", "  - {table: xla, gpus: 8, batch_size: 128").replace(
        "  - {gpus: 1, batch_size: 256", "  - {table: plain, gpus: 1, batch_size: 256")
    path = tmp_path / "tables.yaml"
    path.write_text(text)
    two = references.load(path)
    stats = _stats([(1, 128, "fp32", 400.0), (8, 128, "fp32", 3000.0), (1, 256, "amp", 1000.0)])
    grids = grid.grids(stats, references.compare(stats, two), two)
    assert [g.caption for g in grids] == ["with XLA", "without XLA"]
    assert "<caption>with XLA (images/s)</caption>" in grid.render(grids[0], "images/s").markup


def test_the_verdict_says_by_how_much_and_consistent_on_logs_re_read(ref):
    stats = _stats([(1, 128, "fp32", 398.0), (8, 128, "fp32", 3040.0), (1, 256, "amp", 1012.0)])
    comparison = references.compare(stats, ref)
    assert headline.size(comparison) == "ratios 0.9992–1.0004, largest deviation -0.08%"
    summary = references.verdict_summary(comparison)
    words = headline.Words(own_runs=False)
    line = headline.sentence("3 runs", "1 and 8 GPUs", ref, comparison, summary, stats, "images/s", words).plain
    assert line.startswith("Consistent: the published numbers follow from these logs by NVIDIA's rule: 3 of 3")
    own = headline.sentence("3 runs", "1 and 8 GPUs", ref, comparison, summary, stats, "images/s",
                            headline.Words(own_runs=True)).plain
    assert own.startswith("Reproduced: 3 of 3 published configurations within ±5%; ratios 0.9992–1.0004")


def test_a_cell_no_rule_gives_is_counted_apart_from_the_slower_ones(tmp_path):
    path = tmp_path / "inexact.yaml"
    path.write_text(REFERENCE.replace("throughput: 3038.730, speedup: 7.60}",
                                      "throughput: 3038.730, speedup: 7.60, exact_rule: false}"))
    ref = references.load(path)
    stats = _stats([(1, 128, "fp32", 360.0), (8, 128, "fp32", 2700.0), (1, 256, "amp", 1012.0)])
    comparison = references.compare(stats, ref)
    summary = references.verdict_summary(comparison)
    line = headline.sentence("3 runs", "1 and 8 GPUs", ref, comparison, summary, stats, "images/s",
                             headline.Words(own_runs=False)).plain
    assert "1 of 3 published configurations within ±5% (1 slower, 1 follows no exact rule, each rule's " in line


@pytest.mark.parametrize("gpus, processes, precision, batch, xla, label", [
    (8, 8, "amp", 4, False, "8 GPUs, AMP, batch 4"),
    (1, 1, "fp32", 256, True, "1 GPU, FP32, batch 256, XLA"),
    (0, 1, "fp32", 8, None, "CPU, FP32, batch 8"),
    (0, 2, "fp32", 8, False, "CPU, 2 processes, FP32, batch 8"),
])
def test_a_configuration_in_words(gpus, processes, precision, batch, xla, label):
    assert configs.describe(gpus, processes, precision, batch, xla) == label
