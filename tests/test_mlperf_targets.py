"""Targets over metrics logged one record each (issue 48 item 1): Stable Diffusion's FID and CLIP, each an
`eval_accuracy` record whose metadata names its `metric`, grouped into one evaluation per `samples_count`
(per `step_num` in v3.1) as mlperf-logging's compliance checker builds `aggregated_eval_accuracy` in its
closed_stable_diffusion.yaml BEGIN block; and an evaluation before run_start (issue 49 cause 15)."""

from __future__ import annotations

import json

import pytest

from benchbook.mlperf import mllog, results, rules, rulesdata
from test_mlperf_mllog import START_MS, mllog_line, write
from test_mlperf_score import SYSTEM

SD_ROUNDS = ("3.1", "4.0", "4.1", "5.0")


def sd_run(minutes: float, evals, *, by: str = "samples_count", division: str = "closed") -> str:
    """A Stable Diffusion result file: each of `evals` (step, metric, value) one eval_accuracy record, as
    the reference logs FID and CLIP, its metadata naming the metric and the step's samples_count."""
    out = [mllog_line(START_MS - 60_000, "submission_benchmark", "stable_diffusion"),
           mllog_line(START_MS - 60_000, "submission_division", division),
           mllog_line(START_MS - 60_000, "submission_org", "Acme"),
           mllog_line(START_MS - 50_000, "init_start"), mllog_line(START_MS - 40_000, "global_batch_size", 512),
           mllog_line(START_MS - 5_000, "init_stop"), mllog_line(START_MS, "run_start")]
    end = START_MS + minutes * 60_000
    for i, (step, metric, value) in enumerate(evals):
        meta = {"epoch_num": 0, "step_num": step, "samples_count": step * 512, "metric": metric}
        out.append(mllog_line(START_MS + (end - START_MS) * (i + 1) / (len(evals) + 1), "eval_accuracy", value,
                              **meta))
    out.append(mllog_line(end, "run_stop", status="success"))
    return "".join(out)


REACHED = [(1000, "FID", 120.0), (1000, "CLIP", 0.12), (2000, "FID", 88.5), (2000, "CLIP", 0.151)]


def folder_of(tmp_path, round_: str, texts) -> object:
    folder = tmp_path / f"training_results_v{round_}" / "Acme" / "results" / "box8" / "stable_diffusion"
    for i, text in enumerate(texts):
        write(folder / f"result_{i}.txt", text)
    write(folder.parents[2] / "systems" / "box8.json", json.dumps(SYSTEM))
    return folder


def test_the_rules_data_says_how_the_key_is_built():
    for round_ in SD_ROUNDS:
        goal = rules.target("stable_diffusion", round_)
        assert goal.key == "aggregated_eval_accuracy" and goal.aggregate["from"] == "eval_accuracy"
        assert goal.aggregate["metric"] == "metric" and "closed_stable_diffusion.yaml:" in goal.aggregate["source"]
        assert goal.aggregate["by"] == ("step_num" if round_ == "3.1" else "samples_count")
    assert all(t.aggregate is None for r, found in rules.loaded().targets.items() for b, t in found.items()
               if b != "stable_diffusion")


def test_a_begin_block_of_another_form_is_not_read_as_one():
    with pytest.raises(rulesdata.NotBounds):
        rulesdata.aggregate("for line in loglines:\n    pass\n")


def test_named_records_are_kept_with_their_metric_and_step(tmp_path):
    run = mllog.read(write(tmp_path / "result_0.txt", sd_run(100, REACHED)))
    assert [(e.metric, e.value, e.group("step_num"), e.samples) for e in run.evaluations][:2] == \
        [("FID", 120.0, 1000.0, 512000.0), ("CLIP", 0.12, 1000.0, 512000.0)]


@pytest.mark.parametrize("round_", SD_ROUNDS)
def test_both_metrics_reached_at_one_step_converge(tmp_path, round_):
    """Ten runs reaching FID <= 90 and CLIP >= 0.15 at step 2000: valid, every run converged, as the official
    tool scores the 73 folders of v3.1-v5.0 (every one of them refused before)."""
    folder = folder_of(tmp_path, round_, [sd_run(100 + i, REACHED) for i in range(10)])
    (found,) = results.score([folder])
    assert found.valid and found.runs_failed == 0, found.reason
    assert found.score_minutes == pytest.approx(sum(range(101, 109)) / 8)
    assert found.run_details[0]["samples"] == 2000 * 512


def test_one_metric_missed_is_a_failed_run_naming_the_values(tmp_path):
    missed = [(1000, "FID", 120.0), (1000, "CLIP", 0.12), (2000, "FID", 88.5), (2000, "CLIP", 0.149)]
    folder = folder_of(tmp_path, "4.0", [sd_run(100 + i, missed if i == 3 else REACHED) for i in range(10)])
    (found,) = results.score([folder])
    assert found.valid and found.runs_failed == 1
    reason = found.run_details[3]["reason"]
    assert reason.startswith("target FID <= 90 and CLIP >= 0.15 not reached (2 evaluations, "
                             "samples_count 512000: FID 120, CLIP 0.12; samples_count 1024000: FID 88.5, CLIP "
                             "0.149; mlperf_logging/compliance_checker/training_4.0.0/closed_stable_diffusion.yaml:")


def test_metrics_at_different_steps_are_no_evaluation_of_both(tmp_path):
    """FID reached at one step and CLIP at another: no evaluation holds both, the run did not converge (the
    checker's aggregated record of each step lacks one metric)."""
    apart = [(1000, "FID", 80.0), (2000, "CLIP", 0.2)]
    folder = folder_of(tmp_path, "5.0", [sd_run(100 + i, apart if i in (0, 1) else REACHED) for i in range(10)])
    (found,) = results.score([folder])
    assert not found.valid and found.runs_failed == 2
    assert "2 runs did not converge, at most 1 may" in found.reason
    assert "samples_count 512000: FID 80 (no CLIP); samples_count 1024000: CLIP 0.2 (no FID)" in found.reason


def test_v31_groups_by_step(tmp_path):
    """3.1.0's BEGIN block groups by step_num: two records of one step but different samples_count are one
    evaluation there."""
    text = sd_run(100, REACHED).replace('"samples_count": 1024000, "metric": "CLIP"',
                                        '"samples_count": 1024001, "metric": "CLIP"')
    run = mllog.read(write(tmp_path / "result_0.txt", text))
    assert rules.judge(run, "stable_diffusion", "3.1").converged
    assert not rules.judge(run, "stable_diffusion", "4.0").converged


def test_the_last_value_of_a_metric_at_a_step_is_the_one_read(tmp_path):
    again = [*REACHED, (2000, "FID", 95.0)]  # FID logged again for step 2000: the checker keeps the last
    run = mllog.read(write(tmp_path / "result_0.txt", sd_run(100, again)))
    verdict = rules.judge(run, "stable_diffusion", "5.0")
    assert not verdict.converged and "FID 95, CLIP 0.151" in verdict.reason


def test_an_aggregated_record_logged_as_such_still_counts(tmp_path):
    """A log holding the key itself (one record, a dict of both metrics) is checked as the checker checks it."""
    *head, stop = sd_run(100, []).splitlines(keepends=True)
    aggregated = mllog_line(START_MS + 1000, "aggregated_eval_accuracy", {"FID": 80.0, "CLIP": 0.2})
    run = mllog.read(write(tmp_path / "result_0.txt", "".join([*head, aggregated, stop])))
    assert rules.judge(run, "stable_diffusion", "4.1").converged


def test_an_evaluation_before_run_start_does_not_count(tmp_path):
    """Issue 49 cause 15: the target reached only in an evaluation logged before run_start is not reached by
    the timed run."""
    lines = sd_run(100, REACHED).splitlines(keepends=True)
    start = next(i for i, t in enumerate(lines) if '"run_start"' in t)
    evals = [t for t in lines if '"eval_accuracy"' in t]
    rest = [t for t in lines if t not in evals and t is not lines[start]]
    text = "".join([*rest[:start], *evals, lines[start], *rest[start:]])
    run = mllog.read(write(tmp_path / "result_0.txt", text))
    verdict = rules.judge(run, "stable_diffusion", "4.0")
    assert not verdict.converged
    assert "2 evaluations before run_start (line 11) not counted" in verdict.reason


def test_where_the_official_checker_fails_on_a_metric_alone_the_json_says_why(tmp_path):
    """Item 4: a first evaluation holding FID without CLIP fails the checker's CHECK of aggregated_eval_accuracy
    ("failed test: 'CLIP' in v['value']", as mlperf-logging 4.1.68 says of this file), so result_summarizer drops
    the run; benchbook counts it from its evaluations that hold both, and says the official figure and why."""
    lone = [(500, "FID", 150.0), *REACHED]
    folder = folder_of(tmp_path, "5.0", [sd_run(100 + i, lone if i == 0 else REACHED) for i in range(10)])
    (found,) = results.score([folder])
    assert found.valid and found.runs_failed == 0
    assert "an evaluation of result_0.txt logs some of FID, CLIP and not all: the compliance checker fails the file" \
        in found.official["cause"]
    assert found.official["score_minutes"] == pytest.approx(sum(range(102, 110)) / 8)  # result_0 a failed run


@pytest.mark.parametrize(("evals", "fails"), [
    ([{"FID": 150.0}, {"FID": 80.0, "CLIP": 0.2}], True),  # the first lacks CLIP: the CHECK
    ([{"FID": 80.0, "CLIP": 0.2}, {"FID": 80.0}], True),  # FID holds, CLIP reached and missing: KeyError
    ([{"FID": 80.0, "CLIP": 0.2}, {"FID": 95.0}], False),  # FID does not hold: `and` stops before CLIP
    ([{"FID": 80.0, "CLIP": 0.2}, {"CLIP": 0.2}], True)])  # FID missing: KeyError
def test_the_checkers_own_reading_of_partial_evaluations(evals, fails):
    from benchbook.mlperf import official

    assert official._checker_fails(evals, rules.target("stable_diffusion", "5.0")) is fails


def test_the_official_figure_counts_an_evaluation_before_run_start(tmp_path):
    lines = sd_run(100, REACHED).splitlines(keepends=True)
    start = next(i for i, t in enumerate(lines) if '"run_start"' in t)
    evals = [t for t in lines if '"eval_accuracy"' in t]
    rest = [t for t in lines if t not in evals and t is not lines[start]]
    early = "".join([*rest[:start], *evals, lines[start], *rest[start:]])
    folder = folder_of(tmp_path, "4.0", [early if i == 9 else sd_run(100 + i, REACHED) for i in range(10)])
    (found,) = results.score([folder])
    assert found.valid and found.runs_failed == 1 and found.score_minutes == pytest.approx(sum(range(101, 109)) / 8)
    assert found.official["score_minutes"] == pytest.approx((100 + sum(range(101, 108))) / 8)  # result_9 counted
    assert "counts result_9.txt, whose target is reached only in an evaluation logged before run_start" in \
        found.official["cause"]
