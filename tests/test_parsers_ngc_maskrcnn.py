"""NGC TF2 Mask R-CNN logs: `[MaskRCNN] INFO` blocks under rank tags, the summary, the launch command."""

from __future__ import annotations

import statistics

import numpy as np
import pytest

from benchbook import analyze
from benchbook.logs.rules import Rule

# launch_command_at_end.txt logs every 5 iterations up to 30: all before the hook's warmup_steps
# (100), so the default rule has no running mean to read; these tests read the parsed records with
# an explicit rule instead (the first record is warm-up, the median of the others).
EXPLICIT = Rule(skip_records=1, method="median")
RATES = {5: 1.5, 10: 40.0, 15: 44.0, 20: 38.0, 25: 46.0, 30: 42.0}
STAMPS = {5: 1617000000.0, 10: 1617000003.8, 15: 1617000007.4, 20: 1617000011.6, 25: 1617000015.1,
          30: 1617000018.9}


def test_launch_command_at_the_end_gives_gpus_batch_amp_and_xla(fixtures):
    # The log has no AMP/XLA banner: precision and XLA can only come from `--amp` and `--xla`.
    result = analyze([fixtures / "ngc_maskrcnn" / "launch_command_at_end.txt"], EXPLICIT)

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
    result = analyze([fixtures / "ngc_maskrcnn" / "launch_command_at_end.txt"], EXPLICIT)

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
    run = analyze([fixtures / "ngc_maskrcnn" / "tf_gpu1_fp32_bs2.txt"], EXPLICIT).runs.iloc[0]

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


def _hook_log(path, step_times, gpus=8, batch=2, warmup_steps=100, every=5):
    """A log as AutoLoggingHook prints it: at a logging step, that step's rate up to warmup_steps,
    after it the mean of the rates of the steps since warmup_steps that did not log (the
    moving-average meter, window 1000: the whole of a run this short); `Average throughput` is the
    meter's value at exit (-1 when it measured nothing). Returns (the logged rates by step, the meter's final value)."""
    lines = ["[MaskRCNN] INFO    : Horovod successfully initialized ...",
             "[MaskRCNN] INFO    :                  Start Training                  "]
    meter, logged, t = [], {}, 1700000000.0
    for step, seconds in enumerate(step_times, start=1):
        t += seconds
        rate = batch / seconds * gpus
        if step % every == 0:
            logged[step] = round(sum(meter) / len(meter) if step > warmup_steps and meter else rate, 1)
            lines += [f"[MaskRCNN] INFO    : timestamp: {t:.4f}", f"[MaskRCNN] INFO    : iteration: {step}",
                      f"[MaskRCNN] INFO    : throughput: {logged[step]:.1f} samples/sec", ""]
        elif step > warmup_steps:
            meter.append(rate)
    final = sum(meter) / len(meter) if meter else -1.0  # the hook's value when its meter read nothing
    lines += [f"[MaskRCNN] INFO    : Average throughput: {final:.1f} samples/sec",
              f"[MaskRCNN] INFO    : Total processed steps: {len(step_times)}",
              "[MaskRCNN] INFO    : Job finished with status: `SUCCESS`"]
    path.write_text("\n".join("[1,0]<stdout>:" + line for line in lines) + "\n"
                    + f"horovodrun -np {gpus} python /workspace/mask_rcnn_main.py --train_batch_size {batch} --amp\n")
    return logged, final


def test_nvidia_rule_is_the_hook_s_running_mean_as_last_logged(tmp_path):
    # Slow first steps, then about 0.33 s a step with a stall every 37 steps.
    times = [12.0] * 3 + [0.33 + 0.03 * np.sin(0.7 * s) + (0.9 if s % 37 == 0 else 0.0) for s in range(4, 151)]
    logged, final = _hook_log(tmp_path / "tf_gpu8_amp_bs2.txt", times)
    result = analyze([tmp_path / "tf_gpu8_amp_bs2.txt"])
    run = result.runs.iloc[0]
    assert run["reported_throughput"] == round(final, 1)
    assert run["recomputed_throughput"] == logged[150] == round(final, 1)
    it = result.iterations
    assert it.loc[it["warmup"], "iteration"].tolist() == list(range(5, 101, 5))  # one step's rate each
    assert it.loc[it["measured"], "iteration"].tolist() == list(range(105, 151, 5))  # running means
    assert run["rule"].startswith("nvidia: ") and "logging_hook.py@" in run["rule"]
    # The rule before (median after the first interval) mixed one-step rates with running means.
    old = analyze([tmp_path / "tf_gpu8_amp_bs2.txt"], Rule(skip_records=1, method="median")).runs.iloc[0]
    assert abs(old["recomputed_throughput"] - round(final, 1)) / final > 0.005


def test_nvidia_rule_has_no_number_for_a_run_that_stops_before_the_hook_s_warm_up(tmp_path):
    _hook_log(tmp_path / "tf_gpu8_amp_bs2.txt", [0.3] * 150)
    short = (tmp_path / "tf_gpu8_amp_bs2.txt").read_text().split("iteration: 105")[0]
    (tmp_path / "tf_gpu8_amp_bs2.txt").write_text(short.rsplit("\n", 2)[0] + "\n")
    run = analyze([tmp_path / "tf_gpu8_amp_bs2.txt"]).runs.iloc[0]
    assert run["recomputed_throughput"] is None
    assert "no record left after the warm-up" in " ".join(run["warnings"])


def test_an_average_of_minus_one_is_no_throughput_but_a_warning(tmp_path):
    # --total_steps 100: every step is the hook's warm-up, so its meter is empty and it prints -1.
    _, final = _hook_log(tmp_path / "tf_gpu8_amp_bs2.txt", [0.3] * 100)
    assert final == -1.0 and "Average throughput: -1.0 samples/sec" in (tmp_path / "tf_gpu8_amp_bs2.txt").read_text()
    run = analyze([tmp_path / "tf_gpu8_amp_bs2.txt"]).runs.iloc[0]
    assert run["status"] == "complete"
    assert run["reported_throughput"] is None and run["recomputed_throughput"] is None
    assert any("Average throughput is -1" in w and "measured no step" in w for w in run["warnings"])


def test_committed_hook_fixture_ends_on_the_meter(fixtures):
    run = analyze([fixtures / "ngc_maskrcnn" / "hook_running_mean_amp_bs2.txt"]).runs.iloc[0]
    assert (run["gpus"], run["batch_size"], run["precision"], bool(run["xla"])) == (8, 2, "amp", True)
    assert run["recomputed_throughput"] == run["reported_throughput"] == 46.8


def _losses_block(step: int, stamp: float, components: dict[str, float], total: float) -> list[str]:
    """A logged block as the hook prints it: timestamp, iteration, throughput, AMP statistics, then
    the metrics in name order, `Total loss` among them (mask_rcnn/hooks/logging_hook.py)."""
    info = "[1,0]<stdout>:[MaskRCNN] INFO    : "
    lines = [f"{info}timestamp: {stamp}", f"{info}iteration: {step}", f"{info}throughput: 12.5 samples/sec",
             f"{info}Steps - Since last loss scale: 2048.0", f"{info}=========== Metrics ==========="]
    lines += [f"{info}{name}: {value}" for name, value in components.items()]
    return [*lines, f"{info}Learning rate: 0.00136", f"{info}Total loss: {total}", "[1,0]<stdout>:"]


def test_loss_components_are_one_row_each_with_their_run_and_iteration(tmp_path):
    info = "[1,0]<stdout>:[MaskRCNN] INFO    : "
    first = {"FastRCNN box loss": 0.52801, "FastRCNN class loss": 0.41, "FastRCNN total loss": 0.93801,
             "L2 loss": 0.70242, "Mask loss": 0.6, "RPN box loss": 0.05, "RPN score loss": 0.2, "RPN total loss": 0.25}
    log = tmp_path / "tf_gpu1_amp_bs2.txt"
    log.write_text("\n".join([
        "[1,0]<stdout>:[MaskRCNN] DEBUG   : New Metric Registered: `L2 loss`, Aggregator: StandardMeter",
        f"{info}Horovod successfully initialized",
        *_losses_block(5, 1617000000.5, first, 3.2),
        *_losses_block(10, 1617000004.5, {"Mask loss": 0.05, "RPN total loss": 1.2}, 2.9),
        f"{info}Job finished with status: `SUCCESS`",
        f"{info}Horovod successfully initialized",  # a second run, a component before its first record
        f"{info}Mask loss: 0.7",
        *_losses_block(5, 1617000100.5, {"L2 loss": 0.71}, 3.0),
        "",
    ]))
    result = analyze([log])

    losses = result.losses
    assert list(losses.columns) == ["source", "run", "line", "iteration", "component", "value"]
    assert losses["component"].tolist() == [*first, "Mask loss", "RPN total loss", "Mask loss", "L2 loss"]
    assert losses["value"].tolist() == [*first.values(), 0.05, 1.2, 0.7, 0.71]
    assert losses["run"].tolist() == [0] * 10 + [1, 1]
    assert losses["iteration"].tolist() == [5] * 8 + [10, 10, -1, 5]
    lines = log.read_text().splitlines()
    assert all(lines[n - 1].endswith(f"{c}: {v}") for n, c, v in losses[["line", "component", "value"]].itertuples(
        index=False))
    assert result.iterations["loss"].tolist() == [3.2, 2.9, 3.0]  # `Total loss` stays the record's loss
    assert set(losses["source"]) == {str(log)}


def test_formats_without_loss_components_give_an_empty_frame_with_the_columns(fixtures):
    losses = analyze([fixtures / "ngc_tf1"]).losses
    assert losses.empty and list(losses.columns) == ["source", "run", "line", "iteration", "component", "value"]
    assert str(losses["value"].dtype) == "float64" and str(losses["iteration"].dtype) == "int64"
