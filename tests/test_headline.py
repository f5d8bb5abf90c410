"""The top of a report: published numbers shown as their publication printed them, and speedup only where
a measured run was compared with a measured 1-GPU baseline."""

from __future__ import annotations

import pandas as pd
import pytest

from benchbook.reports import display, headline, metrics, references

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


def test_the_headline_shows_the_published_digits_and_the_measured_number_alike(ref):
    stats = _stats([(1, 128, "fp32", 400.0), (8, 128, "fp32", 3000.0), (1, 256, "amp", 1000.0)])
    table = headline.published_form(stats, references.compare(stats, ref))
    assert "3038.730" in table.markup and "3038.73<" not in table.markup
    assert "398.300" in table.markup and "3000.000" in table.markup and "400.000" in table.markup
    assert ">1012<" in table.markup and ">1000<" in table.markup


def test_speedup_only_where_a_1_gpu_baseline_is_compared_with_another_run(ref):
    # AMP bs256 was measured on 1 GPU only: no speedup (a dash), never 1.00.
    stats = _stats([(1, 128, "fp32", 400.0), (8, 128, "fp32", 3000.0), (1, 256, "amp", 1000.0)])
    table = headline.published_form(stats, None)
    rows = [line.split(" | ") for line in table.plain.splitlines()[1:]]
    assert rows == [["1", "400.00", "1", "1.00", "1000.00", "1", display.DASH],
                    ["8", "3000.00", "1", "7.50", display.DASH, display.DASH, display.DASH]]


def test_cpu_runs_of_one_and_two_processes_are_rows_of_their_own():
    # params/resnet50_tf/cpu_mpi.yaml runs 1 and 2 MPI processes: both medians are in the table (the
    # 2-process row used to replace the 1-process one, both being "0 GPUs").
    runs = pd.DataFrame([{**FIXED, "gpus": 0, "processes": n, "batch_size": 8, "precision": "fp32",
                          "recomputed_throughput": v} for n, v in ((1, 21.85), (1, 21.85), (2, 12.14))])
    table = headline.published_form(metrics.aggregate(runs), None)
    assert table.plain.splitlines()[0].startswith("ran on | ")
    assert table.plain.splitlines()[1:] == ["CPU | 21.85 | 2", "CPU, 2 processes | 12.14 | 1"]


@pytest.mark.parametrize("gpus, processes, precision, batch, xla, label", [
    (8, 8, "amp", 4, False, "8 GPUs, AMP, batch 4"),
    (1, 1, "fp32", 256, True, "1 GPU, FP32, batch 256, XLA"),
    (0, 1, "fp32", 8, None, "CPU, FP32, batch 8"),
    (0, 2, "fp32", 8, False, "CPU, 2 processes, FP32, batch 8"),
])
def test_a_configuration_in_words(gpus, processes, precision, batch, xla, label):
    assert headline.configuration_label(gpus, processes, precision, batch, xla) == label
