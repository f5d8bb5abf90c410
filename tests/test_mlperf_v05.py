"""MLPerf Training v0.5 (issue 48 item 2): `:::MLPv0.5.0` lines and the layout v0.5.0/<submitter>/<entry>/results/
<system>/<benchmark>, with an entry.json per system and no systems/ folder, scored by the v0.5 rules
(training_0.5.yaml); written modelled on mlcommons/training_results_v0.5's NVIDIA and Google files."""

from __future__ import annotations

import json

import pytest

from benchbook.mlperf import mllog, results, rules
from test_mlperf_mllog import write

START = 1_541_720_386.718
ENTRY = {"division": "closed", "status": "on-prem", "hardware": "DGX-1V", "framework": "MXNet NGC 18.11",
         "nodes": [{"num_nodes": 1, "cpu": "2x Xeon", "accelerator": "Tesla V100-SXM2-16GB", "num_accelerators": 8}]}


def v05_line(seconds: float, key: str, value=None, benchmark: str = "resnet") -> str:
    tail = "" if value is None else f": {json.dumps(value)}"
    return f":::MLPv0.5.0 {benchmark} {seconds:.9f} (/workspace/mlperf_log_utils.py:49) {key}{tail}\n"


def v05_run(minutes: float, accuracies=(0.70, 0.7522), *, benchmark: str = "resnet", success=None,
            target: float | None = 0.749) -> str:
    """A v0.5 run: run_start, an evaluation per accuracy, run_stop (bare as NVIDIA's, or {"success": ...} as
    Google's), run_final; the launcher's own lines between."""
    out = ["Beginning trial 1 of 1\n", v05_line(START - 3, "run_clear_caches", benchmark=benchmark),
           v05_line(START, "run_start", benchmark=benchmark),
           v05_line(START + 0.01, "model_hp_batch_norm", {"momentum": 0.9}, benchmark)]
    if target is not None:
        out.append(v05_line(START + 0.02, "eval_target", target, benchmark))
    end = START + minutes * 60
    for i, acc in enumerate(accuracies):
        at = START + (end - START) * (i + 1) / (len(accuracies) + 1)
        out += [v05_line(at, "eval_start", benchmark=benchmark),
                v05_line(at + 1, "eval_accuracy", {"epoch": 4 * i + 2, "value": acc}, benchmark),
                v05_line(at + 2, "eval_stop", benchmark=benchmark), "INFO: epoch done\n"]
    out.append(v05_line(end, "run_stop", None if success is None else {"success": success}, benchmark))
    out.append(v05_line(end + 0.07, "run_final", benchmark=benchmark))
    return "".join(out)


def v05_folder(root, minutes=(130, 136, 135, 140, 138), **kw):
    submitter = root / "training_results_v0.5" / "v0.5.0" / "nvidia"
    folder = submitter / "submission" / "results" / "dgx1_ngc18.11_mxnet" / "resnet"
    for i, m in enumerate(minutes):
        write(folder / f"result_{i}.txt", v05_run(m, **kw))
    write(folder.parent / "entry.json", json.dumps(ENTRY, indent=4))
    write(submitter / "submission" / "submission.json", json.dumps({"org": "Nvidia"}))
    return folder


def test_a_v05_line_is_read_in_seconds(tmp_path):
    run = mllog.read(write(tmp_path / "result_0.txt", v05_run(136.0)))
    assert run.unit == "s" and run.minutes == pytest.approx(136.0)
    assert run.status == "success" and run.submission["benchmark"] == "resnet"
    assert [(e.epoch, e.metric, e.value) for e in run.evaluations] == [(2, "accuracy", 0.70), (6, "accuracy", 0.7522)]
    assert run.run_start_line == 3 and run.run_stop_line == 14


def test_a_v05_folder_scores_by_the_v05_rules_and_names_submitter_and_entry(tmp_path):
    (found,) = results.score([v05_folder(tmp_path)])
    assert found.valid and found.round == "v0.5" and found.score_minutes == pytest.approx((136 + 135 + 138) / 3)
    assert (found.submitter, found.entry, found.system, found.benchmark) == \
        ("nvidia", "submission", "dgx1_ngc18.11_mxnet", "resnet")
    assert (found.accelerators, found.accelerator, found.framework, found.division) == \
        (8, "Tesla V100-SXM2-16GB", "MXNet NGC 18.11", "closed")
    assert found.target == "accuracy >= 0.749" and "training_policies@v0.5" in found.target_source
    assert found.problems == [] and "no training 0.5.0 ruleset" in found.official["cause"]


def test_a_v05_run_short_of_the_target_or_failed_does_not_converge(tmp_path):
    folder = v05_folder(tmp_path)
    write(folder / "result_1.txt", v05_run(120, accuracies=(0.70, 0.748)))
    write(folder / "result_2.txt", v05_run(125, success=False))
    (found,) = results.score([folder])
    assert not found.valid and "2 runs did not converge, at most 1 may fail" in found.reason
    assert "target accuracy >= 0.749 not reached (2 evaluations, epoch 2: accuracy 0.7; epoch 6: accuracy 0.748" \
        in found.run_details[1]["reason"]
    assert found.run_details[2]["reason"].startswith("run_stop status 'aborted'")


@pytest.mark.parametrize(("benchmark", "value", "reached"), [
    ("gnmt", 22.4, True), ("gnmt", 21.7, False), ("ncf", 0.6356, True), ("minigo", 0.39, False),
    ("transformer", 25.13, True), ("ssd", 0.2194, True), ("ssd", 0.2119, False),
    ("maskrcnn", {"BBOX": 0.381, "SEGM": 0.345}, True), ("maskrcnn", {"BBOX": 0.381, "SEGM": 0.338}, False)])
def test_each_v05_benchmark_has_its_target(tmp_path, benchmark, value, reached):
    run = mllog.read(write(tmp_path / "result_0.txt", v05_run(60, accuracies=(value,), benchmark=benchmark,
                                                              success=True, target=None)))
    assert rules.judge(run, benchmark, "0.5").converged is reached


def test_a_logged_eval_target_other_than_the_rules_is_named(tmp_path):
    (found,) = results.score([v05_folder(tmp_path, target=0.70)])
    assert found.valid and len(found.problems) == 5
    assert "logs eval_target 0.7, the round's rule is accuracy >= 0.749" in found.problems[0]


def test_a_file_that_cannot_be_read_is_not_said_not_to_converge(tmp_path):
    folder = v05_folder(tmp_path)
    for i in (1, 2):
        write(folder / f"result_{i}.txt", ":::MLPv0.5.0 resnet 1541720386.7 (x.py:1) eval_accuracy: {oops\n")
    (found,) = results.score([folder])
    assert not found.valid and found.reason.startswith("2 result files cannot be read, at most 1 may fail: ")
    assert "did not converge" not in found.reason and "line 1: the value of 'eval_accuracy' does not parse" in \
        found.reason


@pytest.mark.parametrize(("node", "want"), [
    ({"num_nodes": 32, "accelerator": "tpuv3-512", "num_accelerators": 512}, (16, 32)),  # Google: the pod's
    ({"num_nodes": 36, "accelerator": "Tesla V100-SXM3-H-32GB", "num_accelerators": 16}, (16, 36)),  # NVIDIA
    ({"num_nodes": 1, "accelerator": "tpuv3-8", "num_accelerators": 8}, (8, 1))])
def test_entry_json_counts_accelerators_as_each_submitter_wrote_them(node, want):
    from benchbook.mlperf import v05

    found = v05.system(json.dumps({**ENTRY, "nodes": [node]}))
    assert (found["accelerators_per_node"], found["number_of_nodes"]) == want


@pytest.mark.parametrize(("success", "status"), [(True, "success"), ("true", "success"), (False, "aborted"),
                                                 ("false", "aborted"), (None, "success")])
def test_run_stop_success_as_each_submitter_logged_it(tmp_path, success, status):
    """NVIDIA logs a bare run_stop, Google `{"success": "true"}` (a string), others `{"success": true}`."""
    assert mllog.read(write(tmp_path / "result_0.txt", v05_run(60, success=success))).status == status


def test_check_says_the_official_tools_do_not_read_v05(tmp_path):
    from benchbook.mlperf import checks

    if not checks.available():
        pytest.skip("mlperf-logging is not installed")
    assert checks.run(v05_folder(tmp_path), "v0.5", "resnet")["checks"].startswith(
        "not run: mlperf-logging has no training 0.5.0 ruleset")
