"""NGC MXNet ResNet-50 logs: the runner under mpirun (several runs in a file, summary tables) and DLLogger."""

from __future__ import annotations

import math
import statistics

import numpy as np
import pytest

from benchbook import analyze
from benchbook.logs.frames import one_metric
from benchbook.logs.rules import Rule
from benchbook.logs.textio import Chunk

RUNNER = "mxnet_gpu1_gpu4_amp_bs64.txt"
DLLOGGER = "mxnet_dllogger_fp32_bs96.txt"


@pytest.fixture
def runner(fixtures):
    return analyze([fixtures / "ngc_mxnet" / RUNNER])


def test_runner_file_holds_a_1_gpu_run_then_a_4_gpu_run(runner):
    assert runner.problems == []
    runs = runner.runs
    assert runs["run"].tolist() == [0, 1]
    assert runs["format"].tolist() == ["ngc_mxnet_resnet50"] * 2
    assert runs["framework"].tolist() == ["mxnet"] * 2
    assert runs["gpus"].tolist() == [1, 4]
    # The Namespace's batch_size is the global batch: 64 on 1 GPU, 256 on 4 GPUs.
    assert runs["global_batch_size"].tolist() == [64, 256]
    assert runs["batch_size"].tolist() == [64, 64]
    assert runs["precision"].tolist() == ["amp", "amp"]  # dtype='float16'
    assert [bool(x) for x in runs["xla"]] == [False, False]
    assert runs["line_start"].tolist() == [1, 11]
    assert runs["line_end"].tolist() == [10, 42]
    assert runs["status"].tolist() == ["complete", "complete"]
    assert runs["ranks"].tolist() == [1, 4]
    assert [list(w) for w in runs["warnings"]] == [[], []]


def test_runner_reported_values_come_from_the_total_ips_table(runner):
    assert runner.runs["reported_throughput"].tolist() == [605.07, 2336.8]


def test_runner_recomputes_benchmark_py_over_fit_py_s_durations_of_rank_0(runner):
    # fit.py (19.07) drops iterations 0-19 of epoch 0 (`durations[20:]`) and never resets its list:
    # epoch 1's total_ips is images over time of every record from [20-39] of epoch 0 on, which is
    # the harmonic mean of those 20-iteration rates; benchmark.py -w 1 keeps epoch 1 alone.
    runs = runner.runs
    assert runs["recomputed_throughput"].tolist() == pytest.approx([
        statistics.harmonic_mean([580, 590, 600, 610, 650]),
        statistics.harmonic_mean([2200, 2300, 2350, 2400, 2450])])
    assert runs["iterations"].tolist() == [5, 5]
    assert runs["warmup_records"].tolist() == [1, 1]
    # 4 intervals of 20 batches between the first and last measured records.
    assert runs["elapsed_throughput"].tolist() == pytest.approx([80 * 64 / 8.4, 80 * 256 / 8.65])


def test_runner_every_rank_logs_records_but_only_rank_0_is_measured(runner):
    it = runner.iterations
    four = it[it["run"] == 1]
    assert sorted(four["rank"].unique().tolist()) == [0, 1, 2, 3]
    assert (four.groupby("rank").size() == 6).all()
    measured = four[four["measured"]]
    assert measured["rank"].tolist() == [0] * 5
    assert measured["line"].tolist() == [20, 24, 28, 32, 36]
    assert measured["throughput"].tolist() == [2200.0, 2300.0, 2350.0, 2400.0, 2450.0]
    one = it[it["run"] == 0]
    assert one["line"].tolist() == [3, 4, 5, 7, 8, 9]
    assert one["epoch"].tolist() == [0, 0, 0, 1, 1, 1]
    assert one["warmup"].tolist() == [True] + [False] * 5
    assert one["lr"].tolist() == [0.01] * 3 + [0.02] * 3


def test_dllogger_format_is_mxnet_not_tf1(fixtures):
    # The PARAMETER line starts with `arch : `, as TF1 ConvNets' do; the train.ips keys decide.
    result = analyze([fixtures / "ngc_mxnet" / DLLOGGER])

    assert result.problems == []
    run = result.runs.iloc[0]
    assert run["format"] == "ngc_mxnet_resnet50"
    # kv_store device: one process drives both GPUs listed; batch_size 192 is global.
    assert (run["gpus"], run["batch_size"], run["global_batch_size"]) == (2, 96, 192)
    assert run["precision"] == "fp32"
    # `Summary: ... train.ips : 1569.8` is the mean over every epoch, warm-up included: not
    # benchmark.py's number (this log has no table), so kept apart and not reported.
    assert run["reported_throughput"] is None
    assert run["reported"]["summary.train.ips"] == 1569.8
    # Its epoch lines carry each epoch's train.ips (and validation, read as evaluations):
    # benchmark.py -w 1 keeps epoch 1's, 1570.
    assert run["recomputed_throughput"] == 1570.0
    assert run["elapsed_throughput"] is None  # an epoch line does not say how many iterations it covers
    assert (run["iterations"], run["warmup_records"]) == (1, 1)
    assert run["status"] == "complete"  # it printed its Summary
    assert (run["line_start"], run["line_end"]) == (1, 10)


def test_dllogger_records_and_epoch_evaluations(fixtures):
    result = analyze([fixtures / "ngc_mxnet" / DLLOGGER])

    it = result.iterations
    assert it["line"].tolist() == [2, 3, 4, 5, 6, 7, 8, 9]
    assert it["epoch"].tolist() == [0, 0, 0, 0, 1, 1, 1, 1]
    assert it["iteration"].tolist() == [20, 40, 60, -1] * 2  # -1: the epoch's own record
    assert it["throughput"].tolist() == [700.0, 1500.0, 1520.0, 1240.0, 1540.0, 1560.0, 1610.0, 1570.0]
    assert it["loss"].tolist() == [6.93, 6.88, 6.85, 6.88, 6.71, 6.62, 6.55, 6.62]
    assert it["warmup"].tolist() == [False] * 3 + [True] + [False] * 4
    assert it["measured"].tolist() == [False] * 7 + [True]
    # --warmup and --method apply to the records the rule reads: the epochs' own.
    run = analyze([fixtures / "ngc_mxnet" / DLLOGGER], Rule(method="mean", skip_records=0)).runs.iloc[0]
    assert run["recomputed_throughput"] == pytest.approx(statistics.mean([1240.0, 1570.0]))
    assert run["iterations"] == 2

    ev = one_metric(result.evaluations, "top1")  # a row per evaluation and metric: top-1's
    assert ev["line"].tolist() == [5, 9]
    assert ev["epoch"].tolist() == [0, 1]
    assert ev["top1"].tolist() == pytest.approx([1.12, 3.42])
    assert ev["eval_throughput"].tolist() == [4000.0, 4100.0]
    assert result.runs.iloc[0]["final_top1"] == pytest.approx(3.42)


def test_table_cells_with_a_unit_are_read_and_cells_with_no_number_left_out():
    from benchbook.logs.parsers import ngc_mxnet
    from benchbook.logs.parsers import scanning as ev

    text = ("x\ntrain.total_ips\n           |    128    |    256    |\n-------------------------\n"
            "     1     |   1316.7  |     -     |\n     8     | 9500.5 img/s | 1e4 |\n\n")
    events = ev.scan(Chunk.of(text), ngc_mxnet.FORMAT.patterns, ngc_mxnet.FORMAT.bulk)
    (_, _, kind, rows), = [e for e in events if e[2] == ev.TABLE]
    assert rows == [({"gpus": 1, "batch_size": 128}, {"train.total_ips": 1316.7}),
                    ({"gpus": 8, "batch_size": 128}, {"train.total_ips": 9500.5}),
                    ({"gpus": 8, "batch_size": 256}, {"train.total_ips": 1e4})]


HOROVOD_22 = "mxnet_dllogger_horovod_gpu8_amp_bs256.txt"  # NGC 22.x: rank 0 alone prints DLLogger lines


def _logged_epoch_rates(path):
    rates = {}
    for line in path.read_text().splitlines():
        head, sep, rest = line.partition(" - Epoch: ")
        if sep and "Iteration" not in rest:
            rates[int(rest.split()[0])] = float(rest.split("train.ips : ")[1].split()[0])
    return rates


def test_dllogger_22_gpus_and_batch_come_from_the_parameter_line_not_the_ranks(fixtures):
    # Only rank 0 logged records: counting those would say 1 GPU and a batch of 2048. The 8 ranks
    # that log `Starting epoch` are as many as the listed devices: one node.
    run = analyze([fixtures / "ngc_mxnet" / HOROVOD_22]).runs.iloc[0]
    assert run["ranks"] == 8
    assert (run["gpus"], run["batch_size"], run["global_batch_size"]) == (8, 256, 2048)
    assert run["precision"] == "amp"  # dtype float16
    assert run["status"] == "complete"
    assert list(run["warnings"]) == []


def test_dllogger_on_several_nodes_has_as_many_gpus_as_ranks(fixtures):
    # 2 nodes x `gpus : [0, 1]`, 4 Horovod ranks (each logs `Starting epoch`), batch_size 1024 over
    # all of them (data.py: batch_size // hvd.size()), no benchmark.py `-GPUS,BATCH` suffix.
    run = analyze([fixtures / "ngc_mxnet" / "mxnet_dllogger_horovod_two_nodes_amp_bs256.txt"]).runs.iloc[0]
    assert (run["ranks"], run["gpus"], run["batch_size"], run["global_batch_size"]) == (4, 4, 256, 1024)
    assert run["recomputed_throughput"] == 4000.0  # epoch 1's train.ips (benchmark.py -w 1)
    assert list(run["warnings"]) == []


def test_dllogger_without_rank_tags_keeps_the_listed_devices(fixtures):
    # The same run without tags: nothing shows the other node, the devices listed are the GPUs.
    run = analyze([fixtures / "ngc_mxnet" / "mxnet_dllogger_horovod_untagged_amp.txt"]).runs.iloc[0]
    assert (run["gpus"], run["batch_size"]) == (2, 512)


def test_dllogger_22_reported_is_benchmark_py_s_table_not_the_summary_line(fixtures):
    run = analyze([fixtures / "ngc_mxnet" / HOROVOD_22]).runs.iloc[0]
    rates = _logged_epoch_rates(fixtures / "ngc_mxnet" / HOROVOD_22)
    assert run["reported_throughput"] == 23780.0  # the train.ips table: '{:.5g}'
    # The Summary is the mean over every epoch, warm-up included.
    assert run["reported"]["summary.train.ips"] == pytest.approx(statistics.mean(rates.values()))
    assert run["reported"]["summary.train.ips"] != run["reported_throughput"]


def test_dllogger_22_recomputes_the_harmonic_mean_of_the_logged_epochs_after_the_first(fixtures):
    result = analyze([fixtures / "ngc_mxnet" / HOROVOD_22])
    run = result.runs.iloc[0]
    rates = _logged_epoch_rates(fixtures / "ngc_mxnet" / HOROVOD_22)
    expected = statistics.harmonic_mean([rates[1], rates[2]])  # benchmark.py -w 1
    assert run["recomputed_throughput"] == pytest.approx(expected, rel=1e-12)
    assert float(f"{run['recomputed_throughput']:.5g}") == run["reported_throughput"]
    assert (run["iterations"], run["warmup_records"]) == (2, 1)
    assert run["rule"].startswith("nvidia: ") and "benchmark.py@" in run["rule"]
    it = result.iterations
    whole = it[it["iteration"] == -1]  # the epochs' own records: what the rule reads
    assert whole["epoch"].tolist() == [0, 1, 2]
    assert whole["warmup"].tolist() == [True, False, False]
    assert whole["measured"].tolist() == [False, True, True]
    assert not it.loc[it["iteration"] >= 0, "measured"].any()  # the 20-iteration records are not read
    assert whole["steps"].isna().all()  # an epoch's iterations are not logged on its line


def test_dllogger_22_the_20_iteration_records_are_read_with_an_explicit_method(fixtures):
    # --rule dlperf reads the first epoch's 20-iteration records (rank 0's, the only one here).
    run = analyze([fixtures / "ngc_mxnet" / HOROVOD_22], Rule(name="dlperf")).runs.iloc[0]
    it_rates = [float(line.split("train.ips : ")[1].split()[0])
                for line in (fixtures / "ngc_mxnet" / HOROVOD_22).read_text().splitlines()
                if "Epoch: 0 Iteration:" in line]
    # Only 5 records in epoch 0: DLPerf's speeds[20:120] is empty.
    assert len(it_rates) == 5
    assert run["recomputed_throughput"] is None or math.isnan(run["recomputed_throughput"])
    run = analyze([fixtures / "ngc_mxnet" / HOROVOD_22], Rule(name="dlperf", skip_records=1)).runs.iloc[0]
    assert run["recomputed_throughput"] == round(np.mean([round(r, 2) for r in it_rates[1:]]), 2)


def _runner_19_07(path, ranks, epochs, records, rate_of, epoch_gap=0):
    """A 19.07 runner log under mpirun --tag-output: every rank prints its Namespace and its
    Speedometer lines (`Epoch[E] Batch [a-b]\tSpeed: x samples/sec`), 20 batches a line."""
    lines = []
    for r in range(ranks):
        lines.append(f"[1,{r}]<stderr>:2021-05-01 08:00:00,000:INFO: Start with arguments Namespace(amp=False, "
                     f"arch='resnetv15', batch_size={64 * ranks}, data_backend='synthetic', disp_batches=20, "
                     f"dtype='float32', gpus=[{', '.join(map(str, range(ranks)))}], kv_store='horovod', mode='train', "
                     f"num_epochs={epochs}, report='report.json-{ranks},64')")
    second = 1
    for e in range(epochs):
        second += epoch_gap if e else 0  # validation between epochs
        for k in range(records):
            second += 1
            for r in range(ranks):
                stamp = f"2021-05-01 {8 + second // 3600:02d}:{second // 60 % 60:02d}:{second % 60:02d},000"
                lines.append(f"[1,{r}]<stderr>:{stamp}:INFO: Epoch[{e}] Batch [{20 * k}-{20 * k + 19}]\t"
                             f"Speed: {rate_of(e, k, r)!r} samples/sec\tLR: 0.1\t")
    lines.append("[1,0]<stderr>:2021-05-01 09:00:00,000:INFO: Experiment took: 3599.0 sec")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_dlperf_mxnet_rule_is_the_median_over_ranks_then_the_mean_of_records_20_to_120(tmp_path):
    # extract_mxnet_logs.py: each ` Epoch[0] Batch ` speed rounded to 2 decimals, the median over
    # the ranks of each record, the mean of records [20:120], rounded to 2 decimals.
    def rate(e, k, r):
        return 1000.0 + 7.123 * k + [0.0, 3.3333, -50.0][r] + 100.0 * e

    path = _runner_19_07(tmp_path / "mxnet_gpu3_fp32_bs64.txt", ranks=3, epochs=2, records=130, rate_of=rate)
    run = analyze([path], Rule(name="dlperf")).runs.iloc[0]
    medians = [statistics.median(round(rate(0, k, r), 2) for r in range(3)) for k in range(130)]
    assert run["recomputed_throughput"] == round(np.mean(medians[20:120]), 2)
    assert run["iterations"] == 100
    assert run["rule"].startswith("dlperf: ") and "extract_mxnet_logs.py@" in run["rule"]
    # Every part stays overridable: a window of 50 records.
    run = analyze([path], Rule(name="dlperf", window=50)).runs.iloc[0]
    assert run["recomputed_throughput"] == round(np.mean(medians[20:70]), 2)


def test_nvidia_mxnet_19_07_rule_over_three_epochs(tmp_path):
    # fit.py: each epoch's total_ips is images over the durations from iteration 20 of epoch 0 on
    # (the list is never reset); benchmark.py -w 1: harmonic mean of epochs 1 and 2.
    def rate(e, k, r):
        return [900.0, 1000.0, 1100.0][e] + 10.0 * (k % 3)

    path = _runner_19_07(tmp_path / "mxnet_gpu1_fp32_bs64.txt", ranks=1, epochs=3, records=5, rate_of=rate)
    run = analyze([path]).runs.iloc[0]
    from_20 = [rate(0, k, 0) for k in range(1, 5)]
    epoch1 = statistics.harmonic_mean(from_20 + [rate(1, k, 0) for k in range(5)])
    epoch2 = statistics.harmonic_mean(from_20 + [rate(e, k, 0) for e in (1, 2) for k in range(5)])
    assert run["recomputed_throughput"] == pytest.approx(statistics.harmonic_mean([epoch1, epoch2]), rel=1e-12)
    # The mean of the records after the first epoch (the rule before) is another number.
    assert run["recomputed_throughput"] != pytest.approx(statistics.mean(rate(e, k, 0) for e in (1, 2)
                                                                          for k in range(5)), rel=1e-3)


@pytest.mark.parametrize("ranks", [1, 2])
def test_minutes_of_validation_between_epochs_do_not_split_a_run(tmp_path, ranks):
    # Each epoch counts its batches from 0 again: the counter goes back and the clock jumps, but
    # to a later epoch: the same run (the split is for runs pasted one after the other).
    path = _runner_19_07(tmp_path / "mxnet_gpu2_fp32_bs64.txt", ranks=ranks, epochs=3, records=5,
                         rate_of=lambda e, k, r: 1000.0 + k, epoch_gap=600)
    runs = analyze([path]).runs
    assert len(runs) == 1
    assert not any("new run" in w for w in runs.iloc[0]["warnings"])
    assert runs.iloc[0]["iterations"] == 14  # every record of epochs 0-2 but Batch [0-19] of epoch 0


@pytest.mark.parametrize("rate", ["nan", "inf"])
def test_a_speed_of_nan_or_inf_is_read_and_said_with_its_line(fixtures, tmp_path, rate):
    """MXNet's Speedometer prints what its division gives: a `Speed: nan samples/sec` line was not matched and
    its record dropped without a word; it is a record without a rate, named among the run's warnings."""
    lines = (fixtures / "ngc_mxnet" / "mxnet_gpu1_gpu4_amp_bs64.txt").read_text(encoding="utf-8").split("\n")
    at = [i for i, line in enumerate(lines) if "Speed: " in line][2]
    lines[at] = lines[at].replace("Speed: 590.0", f"Speed: {rate}")
    log = tmp_path / "mxnet_gpu1_gpu4_amp_bs64.txt"
    log.write_text("\n".join(lines), encoding="utf-8")
    result = analyze([log])
    first = result.runs.iloc[0]
    said = [w for w in first["warnings"] if "no throughput" in w or "not finite" in w or "infinite" in w]
    assert said and f"line {at + 1}" in said[0], first["warnings"]
    assert (result.iterations["line"] == at + 1).any()
