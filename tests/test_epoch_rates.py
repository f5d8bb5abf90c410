"""The epochs a per-epoch rule's value is made of (`analysis.epochs`, MXNet benchmark.py's harmonic mean of
epoch rates) and the report section that shows them.

The 19.07 log is written here, in the form of fit.py@99b1c898's lines (a record per 20 batches, `Speed:` the
rate of those 20, and no per-epoch rate): an epoch's rate is then images / time of the measured records from
the first to the epoch's end, so each is computed below from the `Speed:` values alone.
"""

from pathlib import Path
from statistics import harmonic_mean

import pytest

from benchbook.logs.analysis import EPOCH_COLUMNS, analyze
from benchbook.logs.rules import Rule
from benchbook.reports.report import Report
from benchbook.reports.sections.own import epoch_rates

FIXTURES = Path(__file__).parent / "fixtures"
TAG = "[1,0]<stderr>:2021-04-01 10:00:{:02d},000:INFO: "
SPEEDS = {0: [300.0, 580.0, 590.0], 1: [600.0, 610.0, 650.0], 2: [660.0, 670.0, 680.0]}  # per epoch, 20 batches each


def _log_1907(path: Path) -> list[str]:
    """One 1-GPU run of three epochs as the 19.07 runner logs it; returns its lines."""
    lines = [TAG.format(0) + "Start with arguments Namespace(amp=False, arch='resnetv15', batch_size=64, "
             "data_backend='dali-gpu', disp_batches=20, dtype='float16', gpus=[0], kv_store='horovod', mode='train', "
             "num_epochs=3)"]
    second = 1
    for epoch, speeds in SPEEDS.items():
        lines.append(TAG.format(second) + f"Starting epoch {epoch}")
        for i, speed in enumerate(speeds):
            second += 2
            lines.append(TAG.format(second) + f"Epoch[{epoch}] Batch [{20 * i}-{20 * i + 19}]\tSpeed: {speed} "
                         "samples/sec\tLR: 0.01\t")
    lines.append(TAG.format(second + 1) + "Experiment took: 20.0 sec")
    path.write_text("\n".join(lines) + "\n")
    return lines


def _line_of(lines: list[str], text: str) -> int:
    (at,) = [n for n, line in enumerate(lines, start=1) if text in line]
    return at


def test_a_1907_run_s_epochs_are_the_rates_whose_harmonic_mean_is_its_recomputed_value(tmp_path):
    lines = _log_1907(tmp_path / "mxnet_gpu1_amp_bs64.txt")
    result = analyze([tmp_path])
    epochs, (run,) = result.epochs, result.runs.itertuples()
    assert list(epochs.columns) == list(EPOCH_COLUMNS)
    assert list(epochs["epoch"]) == [0, 1, 2] and list(epochs["used"]) == [False, True, True]  # -w 1
    # fit.py drops iterations 0-19 (durations[20:]) and never resets: each epoch from batch 20 of epoch 0 on
    measured = SPEEDS[0][1:]
    expected = []
    for epoch in (0, 1, 2):
        measured = measured + (SPEEDS[epoch] if epoch else [])
        expected.append(harmonic_mean(measured))  # equal 20-batch records: images / time of all so far
    assert list(epochs["rate"]) == pytest.approx(expected, rel=1e-12)
    firsts = ["Epoch[0] Batch [20-39]", "Epoch[1] Batch [0-19]", "Epoch[2] Batch [0-19]"]  # of measured records
    assert list(epochs["line_start"]) == [_line_of(lines, first) for first in firsts]
    assert list(epochs["line_end"]) == [_line_of(lines, f"Epoch[{e}] Batch [40-59]") for e in (0, 1, 2)]
    used = epochs[epochs["used"]]["rate"]
    assert harmonic_mean(list(used)) == pytest.approx(run.recomputed_throughput, rel=1e-12)
    assert (epochs["source"] == run.source).all() and (epochs["run"] == run.run).all()


def test_every_ngc_mxnet_fixture_run_is_the_harmonic_mean_of_its_used_epochs():
    result = analyze([FIXTURES / "ngc_mxnet"])
    runs = result.runs.set_index(["source", "run"])["recomputed_throughput"]
    per_run = result.epochs.groupby(["source", "run"])
    assert len(per_run) == len(runs)  # every run of the format, DLLogger's (whole-epoch records) too
    for key, rows in per_run:
        assert not rows.iloc[0]["used"] and rows.iloc[0]["epoch"] == 0  # the warm-up epoch, shown and not used
        assert harmonic_mean(list(rows[rows["used"]]["rate"])) == pytest.approx(runs[key], rel=1e-12)


def test_only_a_per_epoch_rule_gives_epochs():
    assert analyze([FIXTURES / "ngc_mxnet"], Rule(name="dlperf")).epochs.empty  # a mean of 20-batch records
    tf1 = analyze([FIXTURES / "ngc_tf1"]).epochs
    assert tf1.empty and list(tf1.columns) == list(EPOCH_COLUMNS)


def test_the_report_s_epoch_rates_row_ends_in_the_recomputed_value_and_says_why(tmp_path):
    _log_1907(tmp_path / "mxnet_gpu1_amp_bs64.txt")
    report = Report(log_dir=tmp_path)
    (value,) = report.analysis.runs["recomputed_throughput"]
    shown = epoch_rates.shown(report).plain.splitlines()
    assert shown[0].split(" | ") == ["run", "lines", "epoch 0", "epoch 1", "epoch 2", "harmonic mean of the used",
                                     "recomputed images/s"]
    cells = shown[1].split(" | ")
    assert cells[2].endswith("(warm-up)") and cells[-2] == cells[-1] == f"{value:.2f}"  # the runs table's digits
    assert "benchmark.py" in epoch_rates.why(report)
    assert epoch_rates.shown(Report(log_dir=FIXTURES / "ngc_tf1")) is None  # no section for TF1
