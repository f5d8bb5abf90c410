"""The model-particular notebook sections (reports/sections/own): per-epoch rates, per-iteration rates, loss.

Expected values are read from the fixture logs' own lines (cited beside each), and the tables are
checked against the rule's recomputed values, so that a section cannot drift from what the runs table says.
"""

from pathlib import Path
from statistics import harmonic_mean

import pytest

from benchbook.reports.report import Report
from benchbook.reports.sections import parts
from benchbook.reports.sections.own import epoch_rates, iteration_rates, loss, loss_components

FIXTURES = Path(__file__).parent / "fixtures"


def test_mxnet_epoch_rates_are_the_ones_whose_harmonic_mean_the_rule_gives():
    report = Report(log_dir=FIXTURES / "ngc_mxnet")
    table = epoch_rates.epoch_rates_table(report)
    runs = report.analysis.runs
    for label, rows in table.groupby("run"):
        used = rows[rows["used by the rule"]]["images/s"]
        assert not rows.iloc[0]["used by the rule"] and rows.iloc[0]["epoch"] == 0  # warm-up epoch
        file, rest = label.split(":", 1)  # file:run (GPUs, precision, batch)
        (recomputed,) = runs[runs["source"].str.endswith(file) & (runs["run"] == int(rest.split(" ")[0]))][
            "recomputed_throughput"]
        assert harmonic_mean(list(used)) == pytest.approx(recomputed, rel=1e-6)
    # mxnet_dllogger_fp32_bs96.txt: `Epoch: 0 ... train.ips : 1240.0` then `Epoch: 1 ... train.ips : 1570.0`
    fp32 = table[table["run"].str.startswith("mxnet_dllogger_fp32_bs96.txt:0 (2 GPUs, fp32, bs 96)")]
    assert list(fp32["images/s"]) == [1240.0, 1570.0]


def test_pytorch_iteration_rates_show_the_first_iterations_pulling_the_mean_down():
    report = Report(log_dir=FIXTURES / "ngc_pytorch")
    table = iteration_rates.iteration_rates_table(report).set_index("run")
    row = table.loc["pytorch_gpu8_amp_bs256.txt:0 (8 GPUs, amp, bs 256)"]
    # its lines 12-23: `Iteration: 1 ... train.total_ips : 640.00` ... `Iteration: 12 ... 5810.00`
    assert row["iterations logged"] == 12 and row["first iteration"] == 640.0
    assert row["mean of all"] < row["median"]
    # the default (nvidia) rule for this format is the mean of every iteration, the first ones included
    assert (table["mean of all"] - table["by the rule"]).abs().max() < 1e-6
    perf = iteration_rates.iteration_rates_table(Report(log_dir=FIXTURES / "ngc_pytorch", rule="perf"))
    assert (perf["by the rule"] > perf["mean of all"]).all()  # leaving iterations 1-9 out raises it


def test_maskrcnn_loss_is_the_first_and_last_logged_total_loss():
    report = Report(log_dir=FIXTURES / "ngc_maskrcnn")
    table = loss.loss_table(report).set_index("run")
    row = table.loc["tf_gpu1_fp32_bs2.txt:0 (1 GPU, fp32, bs 2)"]
    # tf_gpu1_fp32_bs2.txt: five blocks, `iteration: 5` ... `Total loss: 3.5`, the last `iteration: 25` ...
    # `Total loss: 2.7`
    assert (row["records"], row["first iteration"], row["first loss"]) == (5, 5, 3.5)
    assert (row["last iteration"], row["last loss"]) == (25, 2.7)


def test_views_of_records_the_logs_do_not_hold_are_none_so_their_sections_are_left_out(tmp_path):
    report = Report(log_dir=FIXTURES / "ngc_pytorch")
    assert epoch_rates.epoch_rates_table(report).empty  # PyTorch's rule is no per-epoch rule
    assert epoch_rates.shown(report) is None  # so its section is left out, not shown empty
    (tmp_path / "empty.log").write_text("nothing a parser knows\n")
    nothing = Report(log_dir=tmp_path)
    assert iteration_rates.iteration_rates_table(nothing).empty and iteration_rates.shown(nothing) is None
    assert loss.loss_table(nothing).empty and loss.shown(nothing) is None
    assert parts.section("Loss", "intro", loss.shown(nothing)) is None


# The components NGC's TF2 Mask R-CNN registers for its log (NVIDIA/DeepLearningExamples
# TensorFlow2/Segmentation/MaskRCNN/mask_rcnn/mask_rcnn_model.py@726e3261, `register_metric(name=...)`), printed
# in name order after each block's throughput (mask_rcnn/hooks/logging_hook.py); values made up, falling.
COMPONENTS = ["FastRCNN box loss", "FastRCNN class loss", "FastRCNN total loss", "L2 loss", "Mask loss",
              "RPN box loss", "RPN score loss", "RPN total loss"]
INFO = "[1,0]<stdout>:[MaskRCNN] INFO    : "


def _component_log(path: Path, iterations: list[int]) -> None:
    """A Mask R-CNN log whose blocks print the loss components, as the hook does; one run, which prints a
    component before its first record (it belongs to no iteration)."""
    lines = [f"{INFO}Horovod successfully initialized", f"{INFO}Mask loss: 0.99000"]
    for step, iteration in enumerate(iterations):
        lines += [f"{INFO}timestamp: {1617000000.5 + 4 * step}", f"{INFO}iteration: {iteration}",
                  f"{INFO}throughput: 12.5 samples/sec", f"{INFO}=========== Metrics ==========="]
        lines += [f"{INFO}{name}: {0.9 - 0.1 * k / len(COMPONENTS) - 0.05 * step:.5f}"
                  for k, name in enumerate(COMPONENTS)]
        lines += [f"{INFO}Learning rate: 0.00136", f"{INFO}Total loss: {3.2 - 0.1 * step:.5f}", "[1,0]<stdout>:"]
    path.write_text("\n".join([*lines, f"{INFO}Job finished with status: `SUCCESS`", ""]))


def test_maskrcnn_loss_components_per_run_in_the_order_the_log_prints_them(tmp_path):
    _component_log(tmp_path / "tf_gpu1_fp32_bs2.txt", [5, 10, 15, 20, 25])
    _component_log(tmp_path / "tf_gpu8_amp_bs2.txt", [5, 10])
    report = Report(log_dir=tmp_path)
    table = loss_components.loss_components_table(report)
    gpu1 = table[table["run"] == "tf_gpu1_fp32_bs2.txt:0 (1 GPU, fp32, bs 2)"]
    assert list(gpu1["component"]) == COMPONENTS and set(gpu1["records"]) == {5}
    mask = gpu1.set_index("component").loc["Mask loss"]
    # `Mask loss: 0.85000` in the block of `iteration: 5`, `Mask loss: 0.65000` in that of `iteration: 25`; the
    # `Mask loss: 0.99000` before the first block is no iteration's
    assert mask["records"] == 5
    assert (mask["first iteration"], mask["first value"], mask["last iteration"], mask["last value"]) == (
        5, 0.85, 25, 0.65)
    assert len(table) == 2 * len(COMPONENTS) and list(table.columns) == loss_components.COLUMNS
    shown = loss_components.shown(report)
    header, first, second = (line.split(" | ") for line in shown.plain.splitlines()[:3])
    assert header == ["run", "iterations", *COMPONENTS] and "<img" in shown.markup  # a row per run, then the curves
    assert dict(zip(header, first, strict=True))["Mask loss"] == "0.8500 → 0.6500" and first[1] == "5–25"
    assert second[0] == "tf_gpu8_amp_bs2.txt:0 (8 GPUs, fp32, bs 2)" and second[1] == "5–10"
    assert 'alt="Loss components per iteration; FastRCNN box loss' in shown.markup


def test_logs_without_loss_components_leave_their_section_out():
    report = Report(log_dir=FIXTURES / "ngc_maskrcnn")  # total loss only
    assert loss_components.loss_components_table(report).empty
    assert loss_components.shown(report) is None
