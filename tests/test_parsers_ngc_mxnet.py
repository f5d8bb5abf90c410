"""NGC MXNet ResNet-50 logs: the runner under mpirun (several runs in a file, summary tables) and DLLogger."""

from __future__ import annotations

import pytest

from benchbook import analyze

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
    assert runner.runs["reported_throughput"].tolist() == [621.5, 2398.7]


def test_runner_recomputes_the_mean_of_rank_0_after_the_first_epoch(runner):
    runs = runner.runs
    assert runs["recomputed_throughput"].tolist() == pytest.approx([(600 + 610 + 650) / 3,
                                                                    (2350 + 2400 + 2450) / 3])
    assert runs["iterations"].tolist() == [3, 3]
    # 2 intervals of 20 batches between the first and last measured records.
    assert runs["elapsed_throughput"].tolist() == pytest.approx([40 * 64 / 4.0, 40 * 256 / 4.25])


def test_runner_every_rank_logs_records_but_only_rank_0_is_measured(runner):
    it = runner.iterations
    four = it[it["run"] == 1]
    assert sorted(four["rank"].unique().tolist()) == [0, 1, 2, 3]
    assert (four.groupby("rank").size() == 6).all()
    measured = four[four["measured"]]
    assert measured["rank"].tolist() == [0, 0, 0]
    assert measured["line"].tolist() == [28, 32, 36]
    assert measured["throughput"].tolist() == [2350.0, 2400.0, 2450.0]
    one = it[it["run"] == 0]
    assert one["line"].tolist() == [3, 4, 5, 7, 8, 9]
    assert one["epoch"].tolist() == [0, 0, 0, 1, 1, 1]
    assert one["warmup"].tolist() == [True] * 3 + [False] * 3
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
    assert run["reported_throughput"] == 1569.8  # `Summary: ... train.ips : 1569.8 images/s`
    assert run["recomputed_throughput"] == pytest.approx((1540 + 1560 + 1610) / 3)
    assert run["elapsed_throughput"] == pytest.approx(40 * 192 / 4.9)
    assert (run["iterations"], run["warmup_records"]) == (3, 3)
    assert run["status"] == "complete"
    assert (run["line_start"], run["line_end"]) == (1, 10)


def test_dllogger_records_and_epoch_evaluations(fixtures):
    result = analyze([fixtures / "ngc_mxnet" / DLLOGGER])

    it = result.iterations
    assert it["line"].tolist() == [2, 3, 4, 6, 7, 8]
    assert it["epoch"].tolist() == [0, 0, 0, 1, 1, 1]
    assert it["iteration"].tolist() == [20, 40, 60] * 2
    assert it["throughput"].tolist() == [700.0, 1500.0, 1520.0, 1540.0, 1560.0, 1610.0]
    assert it["loss"].tolist() == [6.93, 6.88, 6.85, 6.71, 6.62, 6.55]
    assert it["measured"].tolist() == [False] * 3 + [True] * 3

    ev = result.evaluations
    assert ev["line"].tolist() == [5, 9]
    assert ev["epoch"].tolist() == [0, 1]
    assert ev["top1"].tolist() == pytest.approx([1.12, 3.42])
    assert ev["eval_throughput"].tolist() == [4000.0, 4100.0]
    assert result.runs.iloc[0]["final_top1"] == pytest.approx(3.42)


def test_table_cells_with_a_unit_are_read_and_cells_with_no_number_left_out():
    from benchbook import events as ev
    from benchbook.parsers import ngc_mxnet

    text = ("x\ntrain.total_ips\n           |    128    |    256    |\n-------------------------\n"
            "     1     |   1316.7  |     -     |\n     8     | 9500.5 img/s | 1e4 |\n\n")
    (_, _, kind, rows), = [e for e in ngc_mxnet.scan(text, 1) if e[2] == ev.TABLE]
    assert rows == [({"gpus": 1, "batch_size": 128}, {"train.total_ips": 1316.7}),
                    ({"gpus": 8, "batch_size": 128}, {"train.total_ips": 9500.5}),
                    ({"gpus": 8, "batch_size": 256}, {"train.total_ips": 1e4})]
