"""What a reader sees: the opening verdict and table, analysis-only mode describing the logs, readable
cells, and sections that collapse to one line when they have nothing to show (issue 20)."""

import copy
import json
import socket
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from benchbook.reports import display, logged_setup, machine
from benchbook.reports.report import Report
from benchbook.reports.sections import failures, opening, repeats, reproduction, scaling, setup, show, time_to_train
from benchbook.reports.sections import runs as run_section
from benchbook.runfolder import records
from conftest import CPU_STUDY as STUDY
from conftest import cpu_log_text as log_text

FIXTURES = Path(__file__).parent / "fixtures"
ROOT = Path(__file__).parent.parent


def study_folder(tmp_path, rates):
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "s.yaml").write_text(STUDY)
    # captured on this machine, as the runner records each run: the report reuses it instead of capturing
    # the machine again (machine._recorded_capture), which costs seconds
    capture = json.loads((FIXTURES / "environment" / "dgx1_tf1_20.03.json").read_text())
    capture["hostname"] = socket.gethostname()
    for repeat, rate in enumerate(rates, 1):
        run_id = f"cpu_fp32_bs8_syn_r{repeat}"
        d = tmp_path / "runs" / "s" / run_id
        d.mkdir(parents=True)
        (d / f"{run_id}.log").write_text(log_text(rate))
        records.write(d / "run.json", {"run_id": run_id, "status": "complete", "log": f"{run_id}.log",
                                       "config": {"gpus": 0, "batch_size": 8, "precision": "fp32", "xla": False,
                                                  "repeat": repeat, "run_id": run_id},
                                       "environment": copy.deepcopy(capture), "ended_at": "x",
                                       "started_at": "2026-11-24T10:03:01+00:00"})
    return Report(tmp_path / "s.yaml", runs_dir=tmp_path / "runs")


@pytest.mark.parametrize("value", [None, float("nan"), np.nan, pd.NA, pd.NaT, "", "?", "None", "NaN", "<NA>", [],
                                   "[]", "-"])
def test_missing_values_read_as_a_dash(value):
    assert display.text(value) == display.DASH
    frame = pd.DataFrame({"a": [value], "b": ["x"]})
    shown = display.table(frame, empty="-")
    cells = shown.markup.split("<tbody>")[1]
    assert "None" not in cells and "NaN" not in cells and "&lt;NA&gt;" not in cells and display.DASH in cells


def test_cells_read_well():
    assert display.utc("20261124T100301Z") == "2026-11-24 10:03:01 UTC"
    assert display.utc("2026-11-24T11:15:48+01:00") == "2026-11-24 10:15:48 UTC"
    assert display.utc(0) == "1970-01-01 00:00:00 UTC"
    assert [display.significant(x) for x in (1.0, 0.98765, 12.345, 1234.5)] == ["1.00", "0.988", "12.3", "1234"]
    assert [display.as_printed(x) for x in (1412.0, 381.46, 7601.888)] == ["1412", "381.46", "7601.888"]
    assert display.text(6.0) == "6" and display.text(["a", "b"]) == "a; b" and display.text(True) == "yes"
    # a deviation has its sign, except where it rounds to zero: a score equal to the published one (MLPerf's
    # deviation as a fraction, float noise below 0) reads "0.0000%", not "-0.0000%"
    shown = [display.signed(x) for x in (0.0612, -0.4, -0.004, 0.0, None)]
    assert shown == ["+0.06", "-0.40", "0.00", "0.00", display.DASH]
    assert display.signed(100 * (7.9999999999 / 8.0 - 1), 4, "%") == "0.0000%"
    long = "x" * 300
    shown = display.table(pd.DataFrame({"k": ["title"], "v": [long]}).set_index("k"), empty="-")
    assert long in shown.markup  # never cut
    path = display.table(pd.DataFrame({"source": ["results/NVIDIA/maskrcnn"], "n": [1]}), empty="-")
    assert "results/<wbr>NVIDIA/<wbr>maskrcnn" in path.markup  # wraps at its parts, not mid-word
    assert "results/NVIDIA/maskrcnn" in path.plain
    assert "<th>k</th>" in shown.markup  # a named index becomes a column; an unnamed one is dropped
    unnamed = display.table(pd.DataFrame({"v": ["<b>"]}, index=[7]), empty="-")
    assert ">7<" not in unnamed.markup and "&lt;b&gt;" in unnamed.markup  # no index column; escaped


def test_an_empty_table_collapses_to_one_line_that_says_why():
    shown = display.table(pd.DataFrame(columns=["a", "b"]), empty="every run completed")
    assert "<table" not in shown.markup and "every run completed" in shown.markup


def test_analysis_only_describes_the_logs_never_this_machine():
    r = Report(log_dir=FIXTURES / "ngc_maskrcnn", reference="ngc_tf2_maskrcnn")
    described = r.logs_description() if hasattr(r, "logs_description") else logged_setup.logs_description(r)
    text = described.to_string()
    assert "not in the logs" in text and "V100-SXM2-16GB" in text and "horovodrun -np" in text
    host = (machine.capture(r).get("host") or {}).get("hostname") or "\0"
    differences = " ".join(machine.reference_differences(r)["difference"])
    for word in ("CPU", "CUDA", "absent", host):
        assert word not in differences and word not in str(setup.used(r)), word
    assert failures.launch_status(r) is None and show(r, "setup_needed") is None  # nothing was launched
    first = opening.verdict(r)
    # nothing was re-run: "consistent", not "reproduced", with the size of the miss
    assert first.plain.startswith("Not consistent: 0 of 8 published configurations within ±5%") and \
        "3 runs in 3 log files" in first.plain and "deviation -5.65%" in first.plain and \
        "GPU type not in the logs" in \
        first.plain
    assert "1 slower, 7 not measured" in first.plain


def test_logs_that_match_no_published_configuration_say_so_in_one_line():
    r = Report(log_dir=FIXTURES / "ngc_mxnet", reference="ngc_tf2_maskrcnn")
    shown = reproduction.table(r)
    assert "<table" not in shown.markup and "none of the configurations in the logs" in shown.plain
    assert show(r, "reproduction_plot") is None
    assert opening.verdict(r).plain.startswith("Not measured:")


def test_a_study_with_one_run_per_configuration_collapses_its_empty_sections(tmp_path):
    r = study_folder(tmp_path, [42.48875])
    # sections with nothing to show are left out, heading and all (parts.section): no repeats, no speedup
    assert repeats.spread(r) is None and scaling.table(r) is None
    described = dict(line.split(" | ") for line in show(r, "description").plain.splitlines()[1:])
    assert described["reference"] == display.DASH and described["published in"] == display.DASH
    assert show(r, "scaling_plot") is None and time_to_train.reached(r) is None
    assert "42.49" in show(r, "runs").markup and "42.48875" not in show(r, "runs").markup
    status = failures.launch_status(r)
    assert "2026-11-24 10:03:01 UTC" in status.markup
    # Headers for reading, the unit with the throughput, and a CPU run said so rather than "0 GPUs".
    header = status.plain.splitlines()[0].split(" | ")
    assert {"run id", "GPUs", "per-GPU batch", "started", "duration s", "throughput images/s"} <= set(header)
    assert not {"run_id", "gpus", "started_at", "duration_s", "throughput"} & set(header)
    row = dict(zip(header, status.plain.splitlines()[1].split(" | "), strict=True))
    assert row["GPUs"] == "CPU"
    for shown in (show(r, "runs"),):
        lines = _runs_table(shown).splitlines()
        assert dict(zip(lines[0].split(" | "), lines[1].split(" | "), strict=True))["GPUs"] == "CPU"
    assert "no published reference" in opening.verdict(r).plain


def test_repeats_that_vary_by_more_than_ten_percent_are_flagged(tmp_path):
    r = study_folder(tmp_path, [10.0, 20.0])
    shown = repeats.spread(r)
    assert "repeats vary by more than 10%" in shown.markup and "CV 47.1% over 2 runs" in shown.markup
    assert "bs8 on CPU: CV" in shown.plain and "GPU(s)" not in shown.plain
    assert 'alt="' in shown.markup  # the figure comes with its alt text
    steady = study_folder(tmp_path / "steady", [10.0, 10.5])
    assert "vary by more than" not in repeats.spread(steady).markup


def test_a_reference_name_outside_the_folder_fails_before_anything_runs(tmp_path):
    from benchbook.reports.references import ReferenceOutsideError
    with pytest.raises(ReferenceOutsideError, match="is not a file of the references folder"):
        Report(log_dir=FIXTURES / "ngc_tf1", reference="../../../etc/passwd")


def test_analysis_only_of_a_study_folder_reads_its_run_records(tmp_path):
    """Logs with run records beside them: what the logs do not say (container, framework versions, code
    commit) comes from the records (the machine that ran them), marked as such."""
    study_folder(tmp_path, [10.0])
    r = Report(log_dir=tmp_path / "runs" / "s", reference="ngc_tf1_resnet50")
    text = logged_setup.logs_description(r).to_string()
    assert "nvcr.io/nvidia/tensorflow:20.03-tf1-py3 (run record)" in text and "tensorflow 1.15.2" in text
    assert "4a15e9146a6516941ba3ae146621a5c94e4bc431 (run record)" in text
    assert "GPU type" in text and "cpu" in text  # the logs' own device line wins over the record


def test_the_reproduction_table_shows_published_digits_units_and_the_tolerance(tmp_path, monkeypatch):
    # A made-up reference for the Mask R-CNN fixture logs, its 8-GPU AMP number printed with a trailing zero
    # and a tolerance of 2.5%: the table keeps "49.60", shows the measured number to 2 decimals alike, and a
    # line under it names the unit and the tolerance; the headline's verdict column names it too.
    text = (ROOT / "params" / "references" / "ngc_tf2_maskrcnn.yaml").read_text()
    text = text.replace("throughput: 49.6}", "throughput: 49.60}").replace("tolerance: 0.05", "tolerance: 0.025")
    (tmp_path / "printed.yaml").write_text(text)
    monkeypatch.setenv("BENCHBOOK_REFERENCES", str(tmp_path))
    r = Report(log_dir=FIXTURES / "ngc_maskrcnn", reference="printed")
    shown = reproduction.table(r)
    header = shown.plain.splitlines()[0].split(" | ")
    assert {"per-GPU batch", "notes", "GPUs"} <= set(header) and "batch_size" not in header
    # the numbers, verdicts and speedups are the grid's, shown once (issue 39, item 8)
    assert not {"published", "measured", "verdict", "published speedup", "measured speedup"} & set(header)
    assert "within 1 ± 2.5%" in shown.plain
    first = opening.verdict(r)
    assert "samples/s" in first.plain and "49.60 | 46.80 | -5.65" in first.plain
    assert "within ±2.5%" in first.plain and 'title="slower"' in first.markup


def test_the_scaling_table_names_its_unit_and_gives_speedup_only_against_a_measured_baseline():
    # The MXNet fixture logs: AMP bs64 on 1 and 4 GPUs (a speedup), AMP bs256 on 8 GPUs and FP32 bs96 on 2
    # GPUs alone (no 1-GPU run to compare with: a dash, never a number).
    shown = scaling.table(Report(log_dir=FIXTURES / "ngc_mxnet"))
    lines = [line.split(" | ") for line in shown.plain.splitlines()]
    rows = {(r[0], r[2]): dict(zip(lines[0], r, strict=True)) for r in lines[1:]}
    assert lines[0][:2] == ["GPUs", "precision"] and "processes" not in lines[0]
    assert not [h for h in lines[0] if "median" in h]  # the medians are the grid's
    assert rows[("4", "64")]["speedup"] == "3.86" and rows[("1", "64")]["speedup"] == "1.00"
    assert rows[("4", "64")]["efficiency %"] == "96.6"
    assert rows[("8", "256")]["speedup"] == display.DASH and rows[("2", "96")]["efficiency %"] == display.DASH


def test_the_measured_number_has_the_published_decimals_without_digits_it_does_not_have(tmp_path, monkeypatch):
    # Published 605.100 (3 decimals) against the MXNet fixture's 1-GPU AMP bs64 median, 605.0686...: shown as
    # 605.069, not as a number rounded to 2 decimals and padded (605.070).
    text = (ROOT / "params" / "references" / "ngc_mxnet_resnet50.yaml").read_text()
    head = text[:text.index("rows:")]
    (tmp_path / "three.yaml").write_text(head + "rows:\n  - {gpus: 1, batch_size: 64, precision: amp, "
                                                "throughput: 605.100}\n")
    monkeypatch.setenv("BENCHBOOK_REFERENCES", str(tmp_path))
    shown = opening.verdict(Report(log_dir=FIXTURES / "ngc_mxnet", reference="three"))
    assert "| 605.100 | 605.069 |" in shown.plain


def test_the_runs_table_tells_cpu_runs_apart_by_their_processes(tmp_path):
    # cpu_mpi's 1- and 2-process runs of one configuration: the processes column says which is which (the
    # benchbook_cpu PARAMETER line's `processes : N`, parsers/benchbook_cpu.py); GPU runs, one process per
    # GPU, do without it.
    r = study_folder(tmp_path, [10.0, 19.0])
    second = tmp_path / "runs" / "s" / "cpu_fp32_bs8_syn_r2" / "cpu_fp32_bs8_syn_r2.log"
    second.write_text(second.read_text().replace("gpus : 0  ", "gpus : 0  processes : 2  ", 1))
    lines = [line.split(" | ") for line in _runs_table(show(r, "runs")).splitlines()]
    rows = [dict(zip(lines[0], row, strict=True)) for row in lines[1:]]
    assert [(row["GPUs"], row["processes"], row["recomputed images/s"]) for row in rows] == [
        ("CPU", "1", "10.00"), ("CPU", "2", "19.00")]
    assert "the highest median 19.00 images/s (CPU, 2 processes, FP32, batch 8)" in opening.verdict(r).plain
    mxnet = _runs_table(show(Report(log_dir=FIXTURES / "ngc_mxnet"), "runs"))
    assert "processes" not in mxnet.splitlines()[0].split(" | ")


def test_a_folder_without_runs_has_a_runs_table_of_the_same_headers_and_says_so(tmp_path):
    (tmp_path / "crash.log").write_text("Traceback (most recent call last):\nRuntimeError: out of memory\n")
    r = Report(log_dir=tmp_path)
    assert "GPUs" in run_section.table(r) and "processes" in run_section.table(r) and run_section.table(r).empty
    assert _runs_table(show(r, "runs")) == f"no run found in {tmp_path}"


def _runs_table(shown) -> str:
    """The runs section's table as text, below the section's heading and paragraph."""
    return shown.plain.split("\n\n", 1)[1]

