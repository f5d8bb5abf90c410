"""mlperf.rules and mlperf.results: the targets, the olympic mean, failed runs, result folders found in
a repository layout, systems files, scaling.json, and never a byte written into the folders read."""

from __future__ import annotations

import hashlib
import json

import pytest

from benchbook.errors import BenchbookError
from benchbook.mlperf import mllog, results, rules
from test_mlperf_mllog import result_text, write

SYSTEM = {"submitter": "Acme", "division": "closed", "system_name": "box8", "number_of_nodes": "2",
          "accelerators_per_node": "8", "accelerator_model_name": "Widget W1", "framework": "PyTorch 2.0"}


def repository(root, minutes=(10, 11, 12, 13, 14), *, version="v0.7", benchmark="resnet", system=SYSTEM,
               scaling=None, overrides=None, **common):
    """training_results_<version>/Acme/{results/box8/<benchmark>/result_N.txt, systems/box8.json}."""
    submitter = root / f"training_results_{version}" / "Acme"
    folder = submitter / "results" / "box8" / benchmark
    for i, m in enumerate(minutes):
        text = result_text(m, version=version, benchmark=benchmark, **{**common, **(overrides or {}).get(i, {})})
        write(folder / f"result_{i}.txt", text)
    if system is not None:
        write(submitter / "systems" / "box8.json", json.dumps(system))
    if scaling is not None:
        write(folder / "scaling.json", json.dumps({"scaling_factor": scaling}))
    return folder


def digests(root):
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*")) if p.is_file()}


def test_targets_name_their_source():
    assert rules.target("resnet", "v0.7").thresholds == (("accuracy", 0.759),)
    assert rules.target("resnet", "0.6").thresholds == (("accuracy", 0.759),)
    assert rules.target("maskrcnn", "training_results_v2.1").thresholds == (("BBOX", 0.377), ("SEGM", 0.339))
    assert "closed_maskrcnn.yaml:94" in rules.target("maskrcnn", "v2.1").source
    assert rules.target("maskrcnn", "v4.0") is None  # Mask R-CNN ended with v3.1
    assert all(t.source for found in rules.loaded().targets.values() for t in found.values())


def test_round_key():
    assert rules.round_key("training_results_v1.0") == "1.0" == rules.round_key("1.0.0")
    with pytest.raises(BenchbookError, match="round 'latest'"):
        rules.round_key("latest")


def test_score_is_the_olympic_mean(tmp_path):
    (found,) = results.score([repository(tmp_path, (10, 30, 12, 11, 13))])
    assert found.valid and found.score_minutes == pytest.approx(12.0)  # 10 and 30 dropped
    assert (found.round, found.benchmark, found.submitter, found.system) == ("v0.7", "resnet", "Acme", "box8")
    assert found.accelerators == 16 and found.accelerator == "Widget W1" and found.framework == "PyTorch 2.0"
    assert found.accelerator_minutes == pytest.approx(12.0 * 16)
    assert found.runs == 5 and found.runs_failed == 0 and found.problems == []
    assert [r["role"] for r in found.run_details] == ["dropped: fastest", "dropped: slowest", "counted", "counted",
                                                      "counted"]


def test_v06_minutes_are_seconds_in_the_log(tmp_path):
    (found,) = results.score([repository(tmp_path, (100, 101, 102, 103, 104), version="v0.6")])
    assert found.score_minutes == pytest.approx(102.0)


def test_one_failed_run_takes_the_slowest_slot(tmp_path):
    folder = repository(tmp_path, (10, 11, 12, 13, 5), overrides={4: {"status": "aborted"}})
    (found,) = results.score([folder])
    assert found.valid and found.runs_failed == 1
    assert found.score_minutes == pytest.approx(12.0)  # 10 dropped as fastest; the aborted run as slowest
    assert "run_stop status 'aborted'" in found.run_details[4]["reason"]
    assert [r["role"] for r in found.run_details] == ["dropped: fastest", "counted", "counted", "counted",
                                                      "dropped: did not converge (a slowest slot)"]


def test_target_not_reached_is_a_failed_run(tmp_path):
    folder = repository(tmp_path, (10, 11, 12, 13, 14), overrides={0: {"accuracies": (0.5, 0.7589)}})
    (found,) = results.score([folder])
    assert found.runs_failed == 1 and found.score_minutes == pytest.approx(13.0)
    assert "target accuracy >= 0.759 not reached" in found.run_details[0]["reason"]


def test_two_failures_make_the_result_invalid(tmp_path):
    folder = repository(tmp_path, (10, 11, 12, 13, 14), overrides={0: {"status": "aborted"}, 3: {"stop": False}})
    (found,) = results.score([folder])
    assert not found.valid and found.score_minutes is None
    assert "2 runs did not converge, at most 1 may" in found.reason
    assert "result_3.txt: no run_stop after run_start" in found.reason


def test_maskrcnn_needs_bbox_and_segm(tmp_path):
    # SEGM is 0.9 x BBOX in the fixture: BBOX 0.38 gives SEGM 0.342 (reached), 0.376 misses BBOX
    folder = repository(tmp_path, (60, 61, 62, 63, 64), benchmark="maskrcnn", accuracies=(0.2, 0.38),
                        overrides={2: {"accuracies": (0.2, 0.376)}})
    (found,) = results.score([folder])
    assert found.runs_failed == 1 and found.run_details[2]["converged"] is False
    assert found.run_details[0]["epochs"] == 2


def test_four_of_five_runs_is_invalid(tmp_path):
    (found,) = results.score([repository(tmp_path, (10, 11, 12, 13))])
    assert not found.valid and found.reason == "4 of the 5 result files resnet needs"


def test_scaling_json_multiplies(tmp_path):
    (found,) = results.score([repository(tmp_path, scaling=1.25)])
    assert found.scaling_factor == 1.25 and found.score_minutes == pytest.approx(12.0 * 1.25)


def test_missing_systems_file_is_a_problem(tmp_path):
    (found,) = results.score([repository(tmp_path, system=None)])
    assert found.valid and found.accelerators is None
    assert found.problems == [f"{tmp_path}/training_results_v0.7/Acme/systems/box8.json: missing (accelerators, "
                              "accelerator and framework unknown)"]


def test_v06_systems_file_lines(tmp_path):
    folder = repository(tmp_path, system=None, version="v0.6")
    nodes = {"num_accelerators": "8", "num_nodes": "1", "accelerator": "Tesla V100"}
    entry = str({"framework": "MXNet 19.05", "nodes": str(nodes)})
    text = f'org: {json.dumps({"value": "Acme"})}\nentry: {json.dumps({"value": entry})}\n'
    write(tmp_path / "training_results_v0.6" / "Acme" / "systems" / "box8.json", text)
    (found,) = results.score([folder])
    assert (found.accelerators, found.accelerator, found.framework) == (8, "Tesla V100", "MXNet 19.05")


def test_unreadable_result_file_is_a_failed_run(tmp_path):
    folder = repository(tmp_path)
    write(folder / "result_4.txt", ':::MLLOG {"time_ms": 5, "key": \n')
    (found,) = results.score([folder])
    assert found.runs_failed == 1 and any("line 1: the MLLOG JSON does not parse" in p for p in found.problems)


def test_round_unknown_without_the_repository_name(tmp_path):
    folder = repository(tmp_path)
    moved = tmp_path / "elsewhere"  # the benchmark comes from the logs' submission_benchmark
    folder.rename(moved)
    (found,) = results.score([moved])
    assert not found.valid and "give --round" in found.reason
    (given,) = results.score([moved], round_="v0.7")
    assert given.valid and given.round == "v0.7" and given.benchmark == "resnet"


@pytest.mark.parametrize("level", [0, 1, 2, 3, 5])
def test_every_level_of_the_layout_finds_the_folder(tmp_path, level):
    folder = repository(tmp_path)
    start = folder.parents[level - 1] if level else folder
    assert [f.folder for f in results.score([start])] == [str(folder)]


def test_no_result_files_is_an_error(tmp_path):
    with pytest.raises(BenchbookError, match="no result_N.txt"):
        results.score([tmp_path])
    with pytest.raises(BenchbookError, match="no such folder"):
        results.score([tmp_path / "absent"])


def test_nothing_is_written_into_the_folders_read(tmp_path):
    repository(tmp_path, scaling=1.1)
    repository(tmp_path, benchmark="maskrcnn", version="v2.1", accuracies=(0.3, 0.4))
    before = digests(tmp_path)
    names = sorted(p.name for p in tmp_path.rglob("*"))
    results.score([tmp_path])
    assert digests(tmp_path) == before and sorted(p.name for p in tmp_path.rglob("*")) == names


def test_judge_reports_epochs_to_converge(tmp_path):
    run = mllog.read(write(tmp_path / "r.txt", result_text(10, accuracies=(0.5, 0.76, 0.77))))
    verdict = rules.judge(run, "resnet", "v1.0")
    assert verdict.converged and verdict.epochs == 2


def test_unet3d_drops_four_at_each_end():
    verdicts = [rules.RunVerdict(f"result_{i}.txt", float(i), "success", True, "") for i in range(40)]
    verdicts[0] = rules.RunVerdict("result_0.txt", None, "aborted", False, "aborted")
    found = rules.score(verdicts, "unet3d")
    assert found.valid and found.counted == [float(i) for i in range(5, 37)]  # 1..4 fastest, 37..39 + failed
    roles = rules.roles(verdicts, "unet3d")
    assert roles.count("counted") == 32 and roles[0].startswith("dropped: did not converge")
    assert roles[1:5] == ["dropped: fastest"] * 4 and roles[37:] == ["dropped: slowest"] * 3
