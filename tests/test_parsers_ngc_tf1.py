"""NGC TF1 ConvNets logs: `total_ips` and older `imgs_per_sec` records, summaries, evaluations."""

from __future__ import annotations

import math
from datetime import datetime

import pytest

from benchbook import analyze
from benchbook.logs.frames import one_metric

# tf_gpu1_amp_bs256.log: warmup_steps 3 and steps (0, 0)..(0, 7); the default rule is the mean of
# the records at or past step 3.
WARMUP_RATES = [120.0, 610.0, 870.0]
MEASURED_RATES = [1000.0, 1120.0, 900.0, 1010.0, 1250.0]


def test_total_ips_log_is_one_complete_run(fixtures):
    result = analyze([fixtures / "ngc_tf1" / "tf_gpu1_amp_bs256.log"])

    assert result.problems == []
    assert len(result.runs) == 1
    run = result.runs.iloc[0]
    assert run["format"] == "ngc_tf1_convnets"
    assert (run["framework"], run["model"]) == ("tensorflow", "resnet50")
    assert (run["run"], run["gpus"], run["batch_size"], run["global_batch_size"]) == (0, 1, 256, 256)
    assert run["precision"] == "amp"  # use_tf_amp : True, whatever `precision : fp32` says
    assert run["xla"] is not None and not run["xla"]
    assert run["reported_throughput"] == 1055.5
    assert run["recomputed_throughput"] == pytest.approx(sum(MEASURED_RATES) / len(MEASURED_RATES))
    assert (run["iterations"], run["warmup_records"]) == (5, 3)
    assert run["status"] == "complete"
    assert (run["line_start"], run["line_end"]) == (1, 14)
    assert list(run["warnings"]) == []


def test_total_ips_records_keep_their_lines_steps_and_rates(fixtures):
    it = analyze([fixtures / "ngc_tf1" / "tf_gpu1_amp_bs256.log"]).iterations

    assert it["line"].tolist() == list(range(5, 13))
    assert it["iteration"].tolist() == list(range(8))
    assert it["epoch"].tolist() == [0] * 8
    assert it["throughput"].tolist() == WARMUP_RATES + MEASURED_RATES
    assert it["warmup"].tolist() == [True] * 3 + [False] * 5
    assert it["measured"].tolist() == [False] * 3 + [True] * 5
    # Timestamps relative to the PARAMETER line at 08:00:00.
    assert it["elapsed"].tolist() == pytest.approx([5.0, 6.0, 7.0, 7.25, 7.5, 7.75, 8.0, 8.25])


def test_elapsed_throughput_is_images_over_wall_clock_of_measured_records(fixtures):
    run = analyze([fixtures / "ngc_tf1" / "tf_gpu1_amp_bs256.log"]).runs.iloc[0]
    # Steps 4..7 finished between the timestamps of steps 3 and 7: 4 steps of 256 images in 1.0 s.
    assert run["elapsed_throughput"] == pytest.approx(4 * 256 / 1.0)


def test_older_imgs_per_sec_lines_give_rate_loss_and_learning_rate(fixtures):
    result = analyze([fixtures / "ngc_tf1" / "tf_gpu8_fp32_bs128_imgs_per_sec.log"])

    assert result.problems == []
    run = result.runs.iloc[0]
    assert run["format"] == "ngc_tf1_convnets"
    assert (run["gpus"], run["batch_size"], run["global_batch_size"]) == (8, 128, 1024)
    assert run["precision"] == "fp32"
    assert bool(run["xla"])
    assert run["synthetic"]  # data_dir : None
    assert run["reported_throughput"] == 2851.25  # `() train_throughput : 2851.25` without a unit
    assert run["recomputed_throughput"] == pytest.approx((2800 + 2900 + 3000 + 2700) / 4)
    assert (run["iterations"], run["warmup_records"]) == (4, 1)
    assert run["status"] == "complete"
    assert (run["line_start"], run["line_end"]) == (1, 11)

    it = result.iterations
    assert it["iteration"].tolist() == [0, 10, 20, 30, 40]
    assert it["throughput"].tolist() == [350.0, 2800.0, 2900.0, 3000.0, 2700.0]
    assert it["loss"].tolist() == [7.76, 7.72, 7.69, 7.65, 7.61]  # total_loss, not cross_entropy
    assert it["lr"].tolist() == [0.0, 0.01, 0.02, 0.03, 0.04]
    # One record every 10 steps: 3 intervals of 10 steps of 1024 images in 10.5 s.
    assert run["elapsed_throughput"] == pytest.approx(30 * 1024 / 10.5)


@pytest.mark.parametrize("unit", [" images/s", "", " [images/s]"])
def test_train_throughput_summary_with_or_without_unit(write_tf1_log, unit):
    path = write_tf1_log("tf_unit.log", gpus=2, batch=64, amp=False, rates=[300.0, 700.0, 710.0],
                         warmup=1, reported=704.75, summary_unit=unit)
    run = analyze([path]).runs.iloc[0]
    assert run["reported_throughput"] == 704.75
    assert run["recomputed_throughput"] == pytest.approx(705.0)
    assert run["status"] == "complete"


def test_train_and_evaluate_mode_gives_evaluations_in_percent(fixtures):
    result = analyze([fixtures / "ngc_tf1" / "train_and_evaluate_gpu1_amp_bs256.log"])

    run = result.runs.iloc[0]
    assert run["status"] == "complete"
    assert run["reported_throughput"] == 1000.0
    assert run["recomputed_throughput"] == pytest.approx((1010 + 990 + 1005 + 995 + 1000 + 1000) / 6)
    assert run["final_top1"] == pytest.approx(76.81)
    assert (run["line_start"], run["line_end"]) == (1, 19)

    ev = one_metric(result.evaluations, "top1")  # a row per evaluation and metric: top-1's
    assert ev["line"].tolist() == [8, 12, 16, 19]
    assert ev["epoch"].tolist()[:3] == [0, 1, 2]
    assert math.isnan(ev["epoch"].tolist()[3])  # `() top1_accuracy ...` names no epoch
    assert ev["top1"].tolist() == pytest.approx([52.10, 71.05, 76.55, 76.81])
    assert one_metric(result.evaluations, "top5")["top5"].tolist() == pytest.approx([77.02, 90.21, 92.88, 93.10])
    assert set(result.evaluations["unit"]) == {"%"} and len(result.evaluations) == 8
    assert ev["eval_throughput"].tolist() == [2950.0, 3010.0, 3020.0, 3100.0]
    # Seconds since the PARAMETER line at 12:00:00.
    assert ev["elapsed"].tolist() == pytest.approx([600.0, 1200.0, 1800.0, 1860.0])
    assert set(ev["source"]) == {str(fixtures / "ngc_tf1" / "train_and_evaluate_gpu1_amp_bs256.log")}


# train_mode_gpu2_amp_bs256.log and train_and_evaluate_hooks_gpu2_amp_bs256.log: runner.train()'s
# TrainingLoggingHook logs steps 20..39 (its own default warm-up, 20), PARAMETER warmup_steps is 30,
# and `() train_throughput` is the mean of all 20 logged steps (training_hooks.py@33110132).
HOOK_RATES = [1000.0, 1020.0, 980.0, 1010.0, 990.0, 1005.0, 995.0, 1015.0, 985.0, 1000.0,
              1100.0, 1120.0, 1080.0, 1110.0, 1090.0, 1105.0, 1095.0, 1115.0, 1085.0, 1100.0]


@pytest.mark.parametrize("name", ["train_mode_gpu2_amp_bs256.log", "train_and_evaluate_hooks_gpu2_amp_bs256.log"])
def test_train_modes_read_every_logged_training_step(fixtures, name):
    run = analyze([fixtures / "ngc_tf1" / name]).runs.iloc[0]

    assert run["reported_throughput"] == 1050.0
    assert run["recomputed_throughput"] == pytest.approx(sum(HOOK_RATES) / len(HOOK_RATES))
    assert (run["iterations"], run["warmup_records"]) == (20, 0)  # not the 10 before PARAMETER warmup_steps 30
    assert list(run["warnings"]) == []


def test_evaluation_steps_after_training_are_not_training_records(fixtures):
    result = analyze([fixtures / "ngc_tf1" / "train_and_evaluate_hooks_gpu2_amp_bs256.log"])

    it = result.iterations
    evaluation = it[it["line"] > 32]  # after `() train_throughput` (line 32): the evaluation's hook
    assert evaluation["throughput"].tolist() == [2500.0, 2600.0, 2550.0, 2450.0, 2500.0, 2400.0]
    assert not evaluation["measured"].any() and not evaluation["warmup"].any()
    assert it[it["line"] <= 32]["measured"].sum() == 20
    assert one_metric(result.evaluations, "top1")["eval_throughput"].tolist() == [2500.0]


def test_training_benchmark_logs_still_skip_before_warmup_steps(fixtures):
    # An older training_benchmark log (BenchmarkLoggingHook) with imgs_per_sec lines from step 0:
    # the mode, not the key, decides; step 0 is before warmup_steps 10.
    run = analyze([fixtures / "ngc_tf1" / "tf_gpu8_fp32_bs128_imgs_per_sec.log"]).runs.iloc[0]
    assert (run["warmup_records"], run["iterations"]) == (1, 4)


def test_time_between_logged_steps_earns_a_wall_clock_warning(fixtures):
    # Evaluation passes sit between the logged steps: 600 records' worth of images over 29 minutes.
    run = analyze([fixtures / "ngc_tf1" / "train_and_evaluate_gpu1_amp_bs256.log"]).runs.iloc[0]
    assert run["elapsed_throughput"] == pytest.approx(256 * 500 / (29 * 60 - 5 * 60))
    assert any("wall-clock" in w for w in run["warnings"])


def test_two_runs_in_one_file_are_found_in_file_order(tmp_path, write_tf1_log):
    first = write_tf1_log("a.log", gpus=1, batch=64, amp=False, rates=[50.0, 300.0, 310.0], warmup=1).read_text()
    second = write_tf1_log("b.log", gpus=1, batch=64, amp=True, rates=[50.0, 800.0, 820.0], warmup=1,
                           start=datetime(2021, 1, 4, 9, 0, 0)).read_text()
    path = tmp_path / "two_runs.log"
    path.write_text(first + second)
    n = first.count("\n")

    runs = analyze([path]).runs
    assert runs["run"].tolist() == [0, 1]
    assert runs["precision"].tolist() == ["fp32", "amp"]
    assert runs["line_start"].tolist() == [1, n + 1]
    assert runs["line_end"].tolist() == [n, 2 * n]
    assert runs["recomputed_throughput"].tolist() == pytest.approx([305.0, 810.0])
    assert runs["status"].tolist() == ["complete", "complete"]


def test_records_under_rank_tags_belong_to_rank_0(tmp_path, write_tf1_log):
    text = write_tf1_log("plain.log", gpus=1, batch=64, amp=False, rates=[50.0, 300.0, 310.0], warmup=1).read_text()
    path = tmp_path / "tagged.log"
    path.write_text("".join(f"[1,0]<stdout>:{line}\n" for line in text.splitlines()))

    result = analyze([path])
    assert result.iterations["rank"].tolist() == [0, 0, 0]
    run = result.runs.iloc[0]
    assert (run["gpus"], run["batch_size"], run["precision"]) == (1, 64, "fp32")
    assert run["recomputed_throughput"] == pytest.approx(305.0)
    assert run["status"] == "complete"


PASTED = "pasted_runs_tf_gpu1_amp_bs256.txt"  # 3 runs, pasted terminal text between them


def _pasted_runs(path):
    runs = analyze([path]).runs
    assert runs["run"].tolist() == [0, 1, 2]
    return runs


@pytest.mark.parametrize("key", ["total_ips", "imgs_per_sec"])  # read in bulk, and a line at a time
def test_runs_pasted_one_after_the_other_are_split_where_the_step_counter_goes_back(fixtures, tmp_path, key):
    path = tmp_path / PASTED
    path.write_text((fixtures / "ngc_tf1" / PASTED).read_text().replace("total_ips", key))
    runs = _pasted_runs(path)
    # The second run's paste begins at its step 200, six minutes after the first ended at 496.
    assert runs["line_start"].tolist() == [1, 37, 57]
    assert runs["line_end"].tolist() == [33, 54, 72]  # the shell prompt and `ls` output belong to none
    assert runs["reported_throughput"].tolist() == [994.5, 412.0, 407.0]
    assert runs["iterations"].tolist() == [17, 16, 10]
    assert runs["status"].tolist() == ["complete"] * 3
    (first, second, third) = (list(w) for w in runs["warnings"])
    assert first == []
    assert len(second) == 1 and "a new run begins at line 37 without a start line" in second[0]
    assert "from 496 to 200" in second[0] and "come from the file name alone" in second[0]


def test_a_pasted_run_whose_parameters_contradict_the_file_name_is_not_labelled_from_it(fixtures):
    third = _pasted_runs(fixtures / "ngc_tf1" / PASTED).iloc[2]
    assert third["precision"] == "fp32"  # its PARAMETER line, not the file name's `amp`
    assert list(third["warnings"]) == ["precision is 'fp32' in the log but 'amp' in the file name; the log wins"]


def test_a_step_counter_going_back_within_a_minute_is_one_run(tmp_path, fixtures):
    # A counter that goes back without a jump of the clock (a re-numbered log) does not split it.
    text = (fixtures / "ngc_tf1" / PASTED).read_text().splitlines()
    path = tmp_path / "tf_gpu1_amp_bs256.txt"
    path.write_text("\n".join(text[:31] + ["DLL 2020-12-28 09:00:08.000000 - (0, 10) total_ips : 990.0 "]) + "\n")
    runs = analyze([path]).runs
    assert len(runs) == 1


def test_display_every_above_1_warns_that_the_recomputed_number_is_from_a_sample(fixtures):
    # display_every 10: the hook averaged every step from warmup_steps on but logged one in 10.
    run = analyze([fixtures / "ngc_tf1" / "tf_gpu8_fp32_bs128_imgs_per_sec.log"]).runs.iloc[0]
    assert any(w.startswith("display_every is 10: the logged steps are one in 10") for w in run["warnings"])
    every_step = analyze([fixtures / "ngc_tf1" / "tf_gpu1_amp_bs256.log"]).runs.iloc[0]  # display_every 1
    assert not any("display_every" in w for w in every_step["warnings"])


def test_an_evaluation_starting_minutes_after_training_is_no_new_run(fixtures, tmp_path):
    # Building the evaluation's estimator and DALI pipeline can take minutes: the step counter goes
    # back (1, 39) -> (0, 30) and the clock jumps, but `Starting Model Evaluation...` came first.
    text = (fixtures / "ngc_tf1" / "train_and_evaluate_hooks_gpu2_amp_bs256.log").read_text()
    training, evaluation = text.split("Starting Model Evaluation...")
    log = tmp_path / "slow_evaluation.log"
    log.write_text(training + "Starting Model Evaluation..." + evaluation.replace("09:00:", "09:03:"))
    result = analyze([log])
    assert len(result.runs) == 1
    run = result.runs.iloc[0]
    assert (run["iterations"], run["recomputed_throughput"], run["line_end"]) == (20, 1050.0, 45)
    assert list(run["warnings"]) == []
