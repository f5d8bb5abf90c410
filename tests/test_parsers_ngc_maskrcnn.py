"""NGC TF2 Mask R-CNN logs: `[MaskRCNN] INFO` blocks under rank tags, the summary, the launch command."""

from __future__ import annotations

import statistics

import numpy as np
import pytest

from benchbook import analyze

# launch_command_at_end.txt logs every 5 iterations; the first interval (iteration 5) is warm-up.
RATES = {5: 1.5, 10: 40.0, 15: 44.0, 20: 38.0, 25: 46.0, 30: 42.0}
STAMPS = {5: 1617000000.0, 10: 1617000003.8, 15: 1617000007.4, 20: 1617000011.6, 25: 1617000015.1,
          30: 1617000018.9}


def test_launch_command_at_the_end_gives_gpus_batch_amp_and_xla(fixtures):
    # The log has no AMP/XLA banner: precision and XLA can only come from `--amp` and `--xla`.
    result = analyze([fixtures / "ngc_maskrcnn" / "launch_command_at_end.txt"])

    assert result.problems == []
    run = result.runs.iloc[0]
    assert run["format"] == "ngc_tf2_maskrcnn"
    assert (run["framework"], run["model"]) == ("tensorflow2", "maskrcnn")
    assert (run["gpus"], run["batch_size"], run["global_batch_size"]) == (8, 4, 32)
    assert run["precision"] == "amp"
    assert bool(run["xla"])
    assert run["reported_throughput"] == 41.7  # `Average throughput: 41.7 samples/sec`
    assert run["recomputed_throughput"] == pytest.approx(statistics.median(RATES[i] for i in (10, 15, 20, 25, 30)))
    assert (run["iterations"], run["warmup_records"]) == (5, 1)
    assert run["status"] == "complete"
    # The run spans its command line, printed after the job finished.
    assert (run["line_start"], run["line_end"]) == (1, 56)
    assert list(run["warnings"]) == []


def test_blocks_become_one_record_each(fixtures):
    result = analyze([fixtures / "ngc_maskrcnn" / "launch_command_at_end.txt"])

    it = result.iterations
    assert it["iteration"].tolist() == list(RATES)
    assert it["throughput"].tolist() == list(RATES.values())
    assert it["line"].tolist() == [6, 13, 20, 27, 34, 41]  # the timestamp line opens a record
    assert it["rank"].tolist() == [0] * 6
    assert it["loss"].tolist() == [3.41, 3.02, 2.87, 2.75, 2.66, 2.61]
    assert it["lr"].tolist() == pytest.approx([0.0002, 0.0004, 0.0006, 0.0008, 0.001, 0.0012])
    assert it["timestamp"].tolist() == pytest.approx(list(STAMPS.values()))
    assert it["warmup"].tolist() == [True] + [False] * 5
    run = result.runs.iloc[0]
    # 4 intervals of 5 iterations of 32 images between iterations 10 and 30.
    assert run["elapsed_throughput"] == pytest.approx(4 * 5 * 32 / (STAMPS[30] - STAMPS[10]))


def test_fp32_run_without_xla(fixtures):
    run = analyze([fixtures / "ngc_maskrcnn" / "tf_gpu1_fp32_bs2.txt"]).runs.iloc[0]

    assert (run["gpus"], run["batch_size"]) == (1, 2)
    assert run["precision"] == "fp32"
    assert run["xla"] is not None and not run["xla"]
    assert run["reported_throughput"] == 5.15
    assert run["recomputed_throughput"] == pytest.approx((5.0 + 5.2) / 2)  # median of 5.0, 5.2, 5.6, 4.8
    assert run["status"] == "complete"
    assert (run["line_start"], run["line_end"]) == (1, 46)


def test_banner_lines_give_amp_and_xla_when_no_command_is_printed(fixtures, tmp_path):
    lines = (fixtures / "ngc_maskrcnn" / "tf_gpu1_fp32_bs2.txt").read_text().splitlines()
    lines = [line for line in lines if "mask_rcnn_main.py" not in line]
    banner = ["[1,0]<stdout>:[MaskRCNN] INFO    : [train] AMP is activated - Experiment Feature",
              "[1,0]<stdout>:[MaskRCNN] INFO    : [train] XLA is activated - Experiment Feature"]
    path = tmp_path / "tf_gpu1_bs2.txt"
    path.write_text("\n".join(lines[:1] + banner + lines[1:]) + "\n")

    run = analyze([path]).runs.iloc[0]
    assert run["precision"] == "amp"
    assert bool(run["xla"])
    assert run["gpus"] == 1  # from the file name, as the command is gone
    assert run["status"] == "complete"


def test_block_values_after_a_summary_stay_with_their_record_but_never_cross_into_the_next_run(tmp_path):
    info = "[MaskRCNN] INFO    : "
    block = [f"{info}timestamp: 1617000000.5", f"{info}iteration: 10", f"{info}throughput: 40.0 samples/sec"]
    log = tmp_path / "two_runs.txt"
    log.write_text("\n".join([
        f"{info}Horovod successfully initialized",
        *block,
        f"{info}Average throughput: 40.0 samples/sec",  # the summary comes before the block's last lines
        f"{info}Total loss: 2.5",
        f"{info}Learning rate: 0.01",
        f"{info}Job finished with status: `SUCCESS`",
        f"{info}Horovod successfully initialized",  # the next run, whose first lines lack their timestamp
        f"{info}Total loss: 9.9",
        f"{info}Learning rate: 0.09",
        *block,
        "",
    ]))
    result = analyze([log])

    it = result.iterations
    assert it["run"].tolist() == [0, 1]
    assert it["loss"].tolist()[0] == 2.5 and it["lr"].tolist()[0] == 0.01
    assert np.isnan(it["loss"].tolist()[1]) and np.isnan(it["lr"].tolist()[1])


def test_a_run_reaches_the_last_line_of_its_last_block(tmp_path):
    # A log cut after the summary, which came between the last block's lines: the run still spans them.
    info = "[MaskRCNN] INFO    : "
    log = tmp_path / "cut.txt"
    log.write_text("\n".join([
        f"{info}Horovod successfully initialized",
        f"{info}timestamp: 1617000000.0", f"{info}iteration: 5", f"{info}throughput: 1.5 samples/sec",
        f"{info}timestamp: 1617000003.8", f"{info}iteration: 10", f"{info}throughput: 40.0 samples/sec",
        f"{info}Average throughput: 40.0 samples/sec",
        f"{info}Learning rate: 0.02",
        f"{info}Total loss: 2.5",
        "",
    ]))
    result = analyze([log])

    run = result.runs.iloc[0]
    assert (run["line_start"], run["line_end"]) == (1, 10)
    assert result.iterations["loss"].tolist()[-1] == 2.5
