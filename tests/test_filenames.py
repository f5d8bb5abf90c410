"""Run metadata from file names and run records, and its precedence: log > file name > run record."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from benchbook import analyze
from benchbook.logs.logfiles import from_path
from benchbook.runfolder import records


@pytest.mark.parametrize("path, expected", [
    ("logs/tf_gpu8_amp_bs256.txt", {"gpus": 8, "precision": "amp", "batch_size": 256}),
    ("logs/tf_gpu1_fp32_bs2.txt", {"gpus": 1, "precision": "fp32", "batch_size": 2}),
    ("rn50/1n8g/r50_b128_fp32_3.log",
     {"nodes": 1, "gpus": 8, "batch_size": 128, "precision": "fp32", "repeat": 3}),
    ("rn50/2n8g/r50_b256_fp16_1.log",
     {"nodes": 2, "gpus": 16, "batch_size": 256, "precision": "amp", "repeat": 1}),
    ("runs/bert_4gpus_bs32_xla.log", {"gpus": 4, "batch_size": 32, "xla": True}),
    ("runs/r50_g2_b64_noxla_dali_syn.log",
     {"gpus": 2, "batch_size": 64, "xla": False, "dali": True, "synthetic": True}),
    ("runs/notes.log", {}),
])
def test_from_path(path, expected):
    assert from_path(path) == expected


def test_a_file_of_several_runs_names_one_gpu_count_per_run():
    name = "logs/mxnet_gpu1_gpu8_fp32_bs128.txt"
    assert from_path(name, 0) == {"gpus": 1, "precision": "fp32", "batch_size": 128}
    assert from_path(name, 1)["gpus"] == 8


def test_file_name_fills_what_the_log_does_not_say(fixtures):
    # The log gives precision and XLA but neither GPU count nor batch size.
    result = analyze([fixtures / "metadata" / "tf_gpu8_amp_bs256.txt"])
    run = result.runs.iloc[0]
    assert (run["gpus"], run["batch_size"], run["global_batch_size"]) == (8, 256, 2048)
    assert run["precision"] == "amp"
    assert list(run["warnings"]) == []


def test_nodes_and_repeat_from_the_folder_and_file_name(fixtures):
    run = analyze([fixtures / "metadata" / "1n8g" / "r50_b128_fp32_3.log"]).runs.iloc[0]
    assert (run["nodes"], run["gpus"], run["batch_size"], run["repeat"]) == (1, 8, 128, 3)
    assert run["precision"] == "fp32"
    assert list(run["warnings"]) == []


def test_log_wins_over_file_name_and_says_so(fixtures):
    # tf_gpu4_fp32_bs64.txt holds a log of 2 GPUs x 32 images with AMP.
    run = analyze([fixtures / "metadata" / "conflict" / "tf_gpu4_fp32_bs64.txt"]).runs.iloc[0]
    assert (run["gpus"], run["batch_size"], run["precision"]) == (2, 32, "amp")
    warnings = list(run["warnings"])
    for key, log_value, name_value in (("gpus", "2", "4"), ("batch_size", "32", "64"),
                                       ("precision", "amp", "fp32")):
        hits = [w for w in warnings if w.startswith(key)]
        assert len(hits) == 1, warnings
        assert log_value in hits[0] and name_value in hits[0]
        assert "file name" in hits[0]


def test_run_record_fills_what_log_and_name_do_not_say(fixtures):
    # plain_run.log.run.json: gpus 2, nodes 1, batch 96, repeat 5, precision fp32; the log says amp.
    run = analyze([fixtures / "metadata" / "sidecar" / "plain_run.log"]).runs.iloc[0]
    assert (run["gpus"], run["nodes"], run["batch_size"], run["repeat"]) == (2, 1, 96, 5)
    assert run["global_batch_size"] == 192
    assert run["precision"] == "amp"
    [warning] = [w for w in run["warnings"] if "precision" in w]
    assert "amp" in warning and "fp32" in warning and "run record" in warning


def test_file_name_wins_over_run_record(fixtures):
    # tf_gpu4_bs48.log.run.json says 2 GPUs, batch 48 (as the name), repeat 1.
    run = analyze([fixtures / "metadata" / "sidecar" / "tf_gpu4_bs48.log"]).runs.iloc[0]
    assert (run["gpus"], run["batch_size"], run["repeat"]) == (4, 48, 1)
    [warning] = [w for w in run["warnings"] if w.startswith("gpus")]
    assert "4" in warning and "2" in warning
    assert not any(w.startswith("batch_size") for w in run["warnings"])  # the sources agree


def test_file_name_against_run_record_warning_names_the_file_name(fixtures):
    run = analyze([fixtures / "metadata" / "sidecar" / "tf_gpu4_bs48.log"]).runs.iloc[0]
    [warning] = [w for w in run["warnings"] if w.startswith("gpus")]
    assert "file name" in warning
    assert "in the log" not in warning


def test_unreadable_run_record_is_ignored(tmp_path, copy_fixture):
    log = copy_fixture("metadata/sidecar/plain_run.log", "broken/plain_run.log")
    (tmp_path / "broken" / "plain_run.log.run.json").write_text("{not json")
    result = analyze([log.parent])
    assert result.problems == []
    run = result.runs.iloc[0]
    assert run["status"] == "complete"
    assert pd.isna(run["gpus"])
    assert any(w.startswith("gpus unknown") for w in run["warnings"])


def test_run_record_is_not_analyzed_as_a_log(tmp_path, copy_fixture):
    log = copy_fixture("metadata/sidecar/plain_run.log", "rec/plain_run.log")
    (tmp_path / "rec" / "plain_run.log.run.json").write_text(json.dumps({"config": {"gpus": 3}}))
    result = analyze([tmp_path / "rec"])
    assert result.problems == []
    assert result.runs["source"].tolist() == [str(log)]
    assert result.runs.iloc[0]["gpus"] == 3


def test_a_run_json_beside_the_log_is_the_run_record_too(tmp_path, copy_fixture):
    log = copy_fixture("metadata/sidecar/plain_run.log", "one_run/plain_run.log")
    (tmp_path / "one_run" / "run.json").write_text(json.dumps({"config": {"gpus": 4, "batch_size": 32}}))
    result = analyze([tmp_path / "one_run"])
    assert result.problems == []
    assert result.runs["source"].tolist() == [str(log)]
    run = result.runs.iloc[0]
    assert (run["gpus"], run["batch_size"], run["global_batch_size"]) == (4, 32, 128)


def test_run_record_values_of_the_wrong_type_are_left_out(tmp_path, copy_fixture):
    log = copy_fixture("metadata/sidecar/plain_run.log", "typed/plain_run.log")
    (tmp_path / "typed" / "plain_run.log.run.json").write_text(json.dumps(
        {"config": {"gpus": "2", "batch_size": "abc", "repeat": True, "nodes": -1, "precision": 16, "xla": "yes"}}))
    assert records.config_beside(log) == {"gpus": 2}
    result = analyze([log])
    assert result.problems == []
    run = result.runs.iloc[0]
    assert run["gpus"] == 2 and pd.isna(run["batch_size"]) and pd.isna(run["global_batch_size"])
    assert any(w.startswith("batch_size unknown") for w in run["warnings"])
