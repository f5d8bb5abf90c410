"""NGC PyTorch ConvNets logs: multiproc.py's 8 processes, older `img/s` units with two runs in a
file, 32 GPUs under mpirun --tag-output --timestamp-output, and the published reference log."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchbook import analyze
from benchbook.logs.frames import one_metric
from benchbook.logs.parsers import detect, get
from benchbook.logs.rules import Rule

FOLDER = "ngc_pytorch"
SHARED = Path(__file__).resolve().parents[2] / "shared" / "reference-logs-variants" / "ngc-pytorch-resnet50"


def _rates(path: Path) -> list[list[float]]:
    """The per-iteration train.total_ips of each run, read with a plain split (not the parser)."""
    runs: list[list[float]] = []
    for line in path.read_text().splitlines():
        if "PARAMETER data :" in line:
            runs.append([])
        if " Iteration: " in line and "train.total_ips : " in line:
            runs[-1].append(float(line.split("train.total_ips : ")[1].split()[0]))
    return runs


def test_sniffed_as_the_pytorch_format_not_mxnet_or_tf1(fixtures):
    for path in sorted((fixtures / FOLDER).iterdir()):
        assert detect(path.read_text()[:4000]).name == "ngc_pytorch_convnets", path.name


def test_8_gpus_from_world_size_and_the_nvidia_rule_is_the_mean_of_every_iteration(fixtures):
    path = fixtures / FOLDER / "pytorch_gpu8_amp_bs256.txt"
    result = analyze([path])
    assert result.problems == []
    run = result.runs.iloc[0]
    assert (run["format"], run["framework"], run["gpus"], run["batch_size"]) == ("ngc_pytorch_convnets", "pytorch",
                                                                             8, 256)
    assert run["precision"] == "amp" and run["status"] == "complete"
    rates = _rates(path)[0]
    assert len(rates) == 12 and rates[0] == 640.0  # the first, slow iteration counts (PERF_METER)
    assert run["recomputed_throughput"] == pytest.approx(sum(rates) / len(rates))
    assert run["warmup_records"] == 0 and run["iterations"] == 12
    assert run["reported_throughput"] == 5378.33  # the Summary line's train.total_ips


def test_older_img_s_units_and_two_runs_in_one_file(fixtures):
    path = fixtures / FOLDER / "pytorch_gpu1_two_runs_img_s.txt"
    runs = analyze([path]).runs
    assert runs["precision"].tolist() == ["fp32", "amp"]
    assert runs["gpus"].tolist() == [1, 1]
    assert runs["line_start"].tolist() == [1, 24]
    want = [sum(r) / len(r) for r in _rates(path)]
    assert runs["recomputed_throughput"].tolist() == pytest.approx(want)
    assert runs["reported_throughput"].tolist() == [372.08, 745.83]


def test_32_gpus_under_mpirun_tags_with_timestamps(fixtures):
    path = fixtures / FOLDER / "pytorch_gpu32_amp_bs256_mpirun.txt"
    result = analyze([path])
    assert result.problems == []
    run = result.runs.iloc[0]
    assert (run["gpus"], run["batch_size"], run["precision"], run["status"]) == (32, 256, "amp", "complete")
    rates = _rates(path)[0]
    assert run["recomputed_throughput"] == pytest.approx(sum(rates) / len(rates))


def test_perf_rule_leaves_out_iterations_1_to_9(fixtures):
    path = fixtures / FOLDER / "pytorch_gpu8_amp_bs256.txt"
    run = analyze([path], rule=Rule(name="perf")).runs.iloc[0]
    rates = _rates(path)[0][9:]
    assert run["recomputed_throughput"] == pytest.approx(sum(rates) / len(rates))
    assert run["warmup_records"] == 9
    assert [r.name for r in get("ngc_pytorch_convnets").rules] == ["nvidia", "perf"]


def test_argv_list_alone_opens_a_run_with_its_options(tmp_path):
    # A log cut before main.py's PARAMETER line: multiproc.py's argv says batch and precision.
    log = tmp_path / "cut.txt"
    log.write_text("['/usr/bin/python', '-u', './main.py', '--arch', 'resnet50', '-b', '128', '--amp', "
                   "'/imagenet']\nDLL 2026-11-20 09:00:01.000000 - Epoch: 0 Iteration: 1  train.loss : 7.0 None "
                   "train.compute_ips : 101.0 img/s train.total_ips : 100.0 img/s train.lr : 0.1 \n")
    run = analyze([log]).runs.iloc[0]
    assert (run["batch_size"], run["precision"], run["recomputed_throughput"]) == (128, "amp", 100.0)


@pytest.mark.skipif(not SHARED.is_dir(), reason="reference logs not beside the repository")
def test_reference_log_nvidia_rule_and_the_published_table():
    # V100, 21.03: the Summary says 782.08 (the 100th iteration is measured but not printed);
    # PaddlePaddle's table says 790.033, the mean of iterations 10-99.
    def analyzed(*extra):
        out = subprocess.run([sys.executable, "-m", "benchbook.cli", "analyze", "--json", *extra, str(SHARED)],
                             capture_output=True, text=True, check=True)
        return json.loads(out.stdout.splitlines()[0])
    nvidia, perf = analyzed(), analyzed("--rule", "perf")
    assert nvidia["reported_throughput"] == 782.08
    assert abs(nvidia["recomputed_throughput"] - 782.08) / 782.08 < 0.002
    assert abs(perf["recomputed_throughput"] - 790.033) / 790.033 < 0.002
    assert (nvidia["gpus"], nvidia["batch_size"], nvidia["precision"]) == (1, 256, "amp")


def test_validation_lines_are_evaluations_not_records(tmp_path):
    # train_val mode: validation iterations carry a third step number and val.* keys; the epoch
    # line carries the epoch's top-1 (logger.py format_step: `Validation Iteration: V`).
    stamp = "DLL 2026-11-20 09:00:0{} - "
    log = tmp_path / "pytorch_gpu1_fp32_bs64.txt"
    log.write_text("\n".join([
        stamp.format(0) + "PARAMETER arch : resnet50  batch_size : 64  amp : False  world_size : 1  "
        "raport_file : experiment_raport.json ",
        stamp.format(1) + "Epoch: 0 Iteration: 1  train.loss : 6.9 None train.compute_ips : 300.0 images/s "
        "train.total_ips : 290.0 images/s train.lr : 0.1 ",
        stamp.format(2) + "Epoch: 0 Iteration: 2  train.loss : 6.8 None train.compute_ips : 310.0 images/s "
        "train.total_ips : 300.0 images/s train.lr : 0.1 ",
        stamp.format(3) + "Epoch: 0 Iteration: 2 Validation Iteration: 1  val.top1 : 0.0 % val.top5 : 1.5 % "
        "val.loss : 6.9 None val.compute_ips : 900.0 images/s val.total_ips : 880.0 images/s",
        stamp.format(4) + "Epoch: 0  train.loss : 6.85 None train.total_ips : 295.0 images/s val.top1 : 12.5 % "
        "val.top5 : 1.2 % val.total_ips : 870.0 images/s",
        stamp.format(5) + "Summary: train.loss : 6.85 None train.total_ips : 295.00 images/s val.top1 : 0.1 %",
    ]) + "\n")
    result = analyze([log])
    run = result.runs.iloc[0]
    assert (run["iterations"], run["recomputed_throughput"], run["reported_throughput"]) == (2, 295.0, 295.0)
    assert (run["gpus"], run["batch_size"], run["precision"]) == (1, 64, "fp32")
    evals = one_metric(result.evaluations, "top1")
    assert evals["top1"].tolist() == [12.5] and evals["eval_throughput"].tolist() == [870.0]


def test_argv_without_data_backend_leaves_dali_to_the_parameter_line(fixtures):
    # multiproc.py's argv names no --data-backend; main.py's default, in PARAMETER, is dali-gpu.
    run = analyze([fixtures / "ngc_pytorch" / "pytorch_gpu2_amp_bs128_default_backend.txt"]).runs.iloc[0]
    assert (run["dali"], run["synthetic"]) == (True, False)
    assert (run["gpus"], run["batch_size"], run["reported_throughput"]) == (2, 128, 1945.83)
    assert run["recomputed_throughput"] == pytest.approx(23350.0 / 12)
    assert list(run["warnings"]) == []  # no "conflicting dali" between the argv and PARAMETER


def test_a_log_that_names_no_data_backend_reads_as_real_data_without_dali(tmp_path):
    argv = "['/usr/bin/python', '-u', './main.py', '--arch', 'resnet50', '-b', '64', '/imagenet']\n"
    (tmp_path / "log.txt").write_text(argv + "DLL 2024-02-05 10:00:01.000000 - Epoch: 0 Iteration: 1  "
                                      "train.loss : 7.0 None train.total_ips : 500.0 images/s\n")
    run = analyze([tmp_path / "log.txt"]).runs.iloc[0]
    assert (run["dali"], run["synthetic"], run["batch_size"]) == (False, False, 64)


def test_gpus_from_multiprocs_argv_lists_where_no_world_size_is_logged(fixtures):
    # multiproc.py@11820597 prints one argv list per local process; the log has no PARAMETER
    # world_size, so the 8 lists are the 8 GPUs (read as 1 GPU before).
    run = analyze([fixtures / "ngc_pytorch_multiproc" / "pytorch_gpu8_amp_bs64_argv_only.txt"]).runs.iloc[0]
    assert (run["gpus"], run["batch_size"], run["global_batch_size"]) == (8, 64, 512)
    assert run["line_start"] == 1 and run["status"] == "complete"
    assert run["recomputed_throughput"] == pytest.approx((3100.0 + 3950.0 + 4010.0 + 3990.0) / 4)
    assert list(run["warnings"]) == []


def test_world_size_wins_over_one_nodes_argv_lists(fixtures, tmp_path):
    # Two nodes of 8: each multiproc.py prints its own 8 lists, main.py's PARAMETER says 16.
    text = (fixtures / "ngc_pytorch_multiproc" / "pytorch_gpu8_amp_bs64_argv_only.txt").read_text().splitlines()
    parameter = ("DLL 2020-05-04 11:00:00.000000 - PARAMETER arch : resnet50  batch_size : 64  amp : True  "
                 "world_size : 16  data_backend : synthetic ")
    log = tmp_path / "two_nodes.txt"
    log.write_text("\n".join([*text[:8], parameter, *text[8:]]) + "\n")
    assert analyze([log]).runs["gpus"].tolist() == [16]
