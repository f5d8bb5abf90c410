"""MLLOG and systems-file plausibility (issue 49 cause 15): a negative initialisation time, no node or 0
accelerators per node beside a named accelerator, and a systems file naming another system or submitter.
(An evaluation before run_start: test_mlperf_targets.)"""

from __future__ import annotations

import pytest

from benchbook.mlperf import consistency, results
from test_mlperf_mllog import START_MS, mllog_line, result_text
from test_mlperf_score import SYSTEM, repository


def test_a_negative_initialisation_time_fails_the_run(tmp_path):
    folder = repository(tmp_path, (10, 11, 12, 13, 14))
    text = result_text(13).replace(mllog_line(START_MS - 5000.0, "init_stop"),
                                  mllog_line(START_MS - 90_000.0, "init_stop"))
    (folder / "result_3.txt").write_text(text)
    (found,) = results.score([folder])
    assert found.valid and found.runs_failed == 1
    assert found.run_details[3]["reason"] == ("init_stop is before the first init_start (-40.000 seconds): a negative "
                                              "initialisation time, the log's clock is not one")


@pytest.mark.parametrize(("fields", "why"), [
    ({"accelerators_per_node": "0"}, "accelerators_per_node = 0 beside accelerator_model_name 'Widget W1'"),
    ({"number_of_nodes": 0}, "number_of_nodes = 0: a system has at least one node")])
def test_implausible_counts_are_named_and_give_no_accelerators(tmp_path, fields, why):
    (found,) = results.score([repository(tmp_path, system={**SYSTEM, **fields})])
    assert found.valid and found.accelerators is None and found.accelerator_minutes is None
    assert any(why in p and "box8.json" in p for p in found.problems)


def test_a_cpu_system_has_no_accelerator_per_node(tmp_path):
    system = {**SYSTEM, "accelerators_per_node": 0, "accelerator_model_name": "N/A"}
    (found,) = results.score([repository(tmp_path, system=system)])
    assert found.accelerators == 0 and found.problems == []


def test_a_systems_file_of_another_system_is_named(tmp_path):
    (found,) = results.score([repository(tmp_path, system={**SYSTEM, "system_name": "dgx2", "submitter": "Other"})])
    assert found.valid
    assert sum("a systems file of another system?" in p for p in found.problems) == 2
    assert any("system_name 'dgx2' is not the folder's system 'box8'" in p for p in found.problems)


@pytest.mark.parametrize(("said", "folder"), [("tpu-v3", "tpu-v3-32"), ("SMC-H100", "8xSMC-H100-SXM-80GB"),
                                              ("Sustainable Metal Cloud", "smc"), ("tinybox green", "tinybox_green"),
                                              ("NVIDIA", "NVIDIA")])
def test_names_as_submitters_write_them_agree(said, folder):
    """The published folders' own pairs (systems file's name, folder's name) are one system."""
    assert consistency.names_differ({"system_name": said}, "s.json", folder, None) == []
