"""mlperf.checks: mlperf-logging's own tools (the `mlperf` extra, in the `test` extra) on copies of result
folders built here: their score agrees with benchbook's to 4 decimals on rounds 0.7 and later, and
the folders read stay byte-identical although the RCP checker rewrites scaling.json where it runs."""

from __future__ import annotations

import re

import pytest

from benchbook.mlperf import checks, results, rules
from test_mlperf_score import digests, repository

pytest.importorskip("mlperf_logging", reason="the mlperf extra (mlperf-logging) is not installed")

CASES = {
    "five converged runs": ("v0.7", (41.5, 39.25, 40.125, 38.0, 44.75), {}, None),
    "one run short of the target": ("v0.7", (41.5, 39.25, 40.125, 38.0, 35.0),
                                    {4: {"accuracies": (0.5, 0.75), "status": "aborted"}}, None),
    "a committed scaling.json": ("v1.0", (60.5, 61.0, 59.75, 62.25, 58.0), {}, 1.0625),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_result_summarizer_agrees_to_four_decimals(tmp_path, case):
    version, minutes, overrides, scaling = CASES[case]
    folder = repository(tmp_path, minutes, version=version, scaling=scaling, overrides=overrides)
    (ours,) = results.score([folder])
    before = digests(tmp_path)
    official = checks.official(folder, version, "resnet")
    assert digests(tmp_path) == before  # the tools ran on a copy
    assert ours.valid and official["summarizer"] is not None, official
    assert round(official["summarizer"], 4) == round(ours.score_minutes, 4)


def test_verdicts_beside_the_score(tmp_path):
    # batch 1632 converging in 34 epochs: faster than the reference points' mean at that batch
    # (rcps_resnet.json, resnet_ref_1632) but within their max speedup, so the RCP check normalises
    folder = repository(tmp_path, (60.5, 61.0, 59.75, 62.25, 58.0), version="v1.0", scaling=1.0625, batch=1632,
                        accuracies=(0.5,) * 33 + (0.76,))
    found = checks.run(folder, "v1.0", "resnet")
    assert found["compliance"] == "pass (5 of 5 files)"
    verdict, norm, committed = re.fullmatch(r"pass \(RCP found\), normalisation (\d\.\d{4}); committed "
                                            r"scaling.json (\d\.\d{4}), the factor of the published score",
                                            found["rcp"]).group(0, 1, 2)
    assert 1.0 < float(norm) < 1.1 and committed == "1.0625"
    assert found["result_summarizer"] == f"{results.score([folder])[0].score_minutes:.4f} minutes"


def test_rcp_failure_gives_no_normalisation(tmp_path):
    folder = repository(tmp_path, version="v1.0", batch=1632)  # 2 epochs: far faster than any reference run
    found = checks.run(folder, "v1.0", "resnet")
    assert found["rcp"].startswith("fail (") and "normalisation" not in found["rcp"]
    assert found["rcp"].endswith("; no committed scaling.json: the published score is unscaled")


def test_a_refused_scaling_json_is_not_said_to_be_missing(tmp_path):
    folder = repository(tmp_path, scaling=0.5)
    found = checks.run(folder, "v0.7", "resnet")
    assert found["rcp"].startswith("not applicable: ") and "no committed scaling.json" not in found["rcp"]
    assert found["rcp"].endswith("scaling.json: scaling_factor = 0.5: expected {\"scaling_factor\": <a JSON number "
                                 "from 1 to 2.0>} (rcp_checker.py:460-462, :487 of mlperf-logging 4.1.68): the "
                                 "folder is not scored")


def test_compliance_failure_names_the_file(tmp_path):
    folder = repository(tmp_path, overrides={2: {"accuracies": (0.5, 0.7)}})
    found = checks.run(folder, "v0.7", "resnet")
    assert found["compliance"] == "fail (1 of 5 files: result_2.txt)"
    (ours,) = results.score([folder])
    explained = checks.run(folder, "v0.7", "resnet", ours.as_dict())
    assert explained["compliance"].startswith("fail (1 of 5 files: result_2.txt, a failed run in the score too: "
                                              "target accuracy >= 0.759 not reached (2 evaluations, epoch 1: "
                                              "accuracy 0.5; epoch 2: accuracy 0.7; mlperf_logging/")
    assert explained["result_summarizer"] == f"{ours.score_minutes:.4f} minutes; benchbook the same"
    assert found["rcp"].startswith("not applicable: mlperf-logging's RCP check begins with v1.0")


def test_without_a_round_nothing_runs(tmp_path):
    folder = repository(tmp_path)
    assert checks.run(folder, None, "resnet") == {"checks": "not run: the round is unknown (give --round)"}


def test_the_known_difference_a_run_logged_aborted(tmp_path):
    """From v0.7 on, mlperf-logging's rules ask only that run_stop has a status (training_0.7.0/
    common.yaml:95), so result_summarizer counts a run that reached the target but logged `aborted`;
    benchbook counts it as a failed run (the slowest slot), as the MLPerf rule says of a run that
    did not succeed. The README says so."""
    folder = repository(tmp_path, (10, 11, 12, 13, 5), overrides={4: {"status": "aborted"}})
    (ours,) = results.score([folder])
    official = checks.official(folder, "v0.7", "resnet")
    assert ours.score_minutes == pytest.approx(12.0)  # 11, 12, 13: the aborted 5 takes the slowest slot
    assert official["summarizer"] == pytest.approx(11.0)  # 10, 11, 12: the aborted 5 counted as the fastest
    said = checks.run(folder, "v0.7", "resnet", ours.as_dict())["result_summarizer"]
    cause = ("from v0.7 mlperf-logging's rules ask only that run_stop has a status (training_0.7.0/common.yaml:95) "
             "and count result_4.txt, which reached the target; benchbook counts a run that did not log success as "
             "failed (the slowest slot)")
    assert said == f"11.0000 minutes; benchbook 12.0000 minutes: {cause}"
    assert ours.official["score_minutes"] == pytest.approx(11.0) and ours.official["cause"] == cause


def test_a_copied_run_is_explained_as_the_refusal_says(tmp_path):
    """Issue 48 item 3: result_summarizer counts a byte-identical copy as a run; --check gives its figure with
    the cause benchbook's refusal names (the rules' independent runs), the figure benchbook gives beside it."""
    folder = repository(tmp_path, (10, 11, 12, 13, 14))
    (folder / "result_4.txt").write_bytes((folder / "result_1.txt").read_bytes())  # result_4: a copy of result_1
    (ours,) = results.score([folder])
    assert not ours.valid and "result_4.txt is byte-identical to result_1.txt" in ours.reason
    assert ours.official["score_minutes"] == pytest.approx((11 + 11 + 12) / 3)
    said = checks.run(folder, "v0.7", "resnet", ours.as_dict())["result_summarizer"]
    assert said.startswith("11.3333 minutes; benchbook no score: result_summarizer counts every result_*.txt as a "
                           "run, result_4.txt too (a byte-identical copy); benchbook refuses the folder: the rules")
    assert "no known check" not in said


def test_v11_weights_initialization_difference_is_what_the_official_tool_does(tmp_path):
    """Issue 48 item 4: the files benchbook says mlperf-logging 4.1.68 drops over the training_1.1.0
    weights_initialization checks are the ones its compliance checker fails, over those checks alone; --check
    gives the same cause as the JSON."""
    from test_mlperf_independent import _weights

    names = rules.loaded().weights[("1.1", "resnet")][0]
    folder = repository(tmp_path, (10, 11, 12, 13, 14), version="v1.1")
    for i in (0, 1):
        path = folder / f"result_{i}.txt"
        path.write_text(_weights(path.read_text(), names))
    found = checks.official(folder, "1.1", "resnet")
    assert [ok for _, ok, *_ in found["compliance"]] == [True, True, False, False, False]
    assert all(all("weights_initialization" in m or "initialized_tensors" in m for m in said)
               for _, ok, _, said in found["compliance"] if not ok)
    (ours,) = results.score([folder])
    said = checks.run(folder, "1.1", "resnet", ours.as_dict())["result_summarizer"]
    assert said == f"no score; benchbook 12.0000 minutes: {ours.official['cause']}"


@pytest.mark.parametrize("evals", [
    [(1000, "FID", 120.0), (1000, "CLIP", 0.12), (2000, "FID", 88.5), (2000, "CLIP", 0.151)],
    [(1000, "FID", 120.0), (1000, "CLIP", 0.12), (2000, "FID", 88.5), (2000, "CLIP", 0.149)],
    [(1000, "FID", 91.0), (1000, "CLIP", 0.2), (2000, "FID", 89.0), (2000, "CLIP", 0.3), (2000, "FID", 95.0)]])
def test_stable_diffusion_targets_read_as_the_compliance_checker_reads_them(tmp_path, evals):
    """Issue 48 item 1: benchbook's verdict on FID and CLIP logged one record each is the compliance checker's own
    (its closed_stable_diffusion.yaml run alone, BEGIN block and ATLEAST_ONE_CHECK, on the same file)."""
    pytest.importorskip("mlperf_logging")
    from pathlib import Path

    from mlperf_logging.compliance_checker import mlp_compliance

    from benchbook.mlperf import mllog
    from test_mlperf_targets import sd_run

    path = tmp_path / "result_0.txt"
    path.write_text(sd_run(100, evals))
    checker = mlp_compliance.make_checker("training", "5.0.0", True, False)
    loglines, _ = mlp_compliance.mlp_parser.parse_file(str(path), ruleset="5.0.0")
    rules_file = Path(mlp_compliance.__file__).parent / "training_5.0.0" / "closed_stable_diffusion.yaml"
    checker.configured_checks(loglines, str(rules_file))
    official = not any("Failed checks for aggregated_eval_accuracy" in m for m in checker.not_overwritable)
    assert rules.judge(mllog.read(path), "stable_diffusion", "5.0").converged is official
