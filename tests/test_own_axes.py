"""Issue 46: a model's own axis (BERT's phase and sequence length) reaches every spelling of a configuration: a
phase-1 and a phase-2 row of the same GPUs, batch and precision never read the same in the runs table, the
scaling table, the index's best, the plots' labels or the data files (runs, configurations, iterations and
measures: the logs evaluate nothing), and its tokens/s measure is one of each run's."""

from __future__ import annotations

import csv

from benchbook.reports import configs, data_files, plots
from benchbook.reports.report import Report
from benchbook.reports.sections import runs as runs_section
from benchbook.reports.sections import scaling
from test_parsers_bert import _namespace, _pytorch_run


def _logs(tmp_path):
    """Phase 1 (sequence length 128) and phase 2 (512) at 1 and 8 GPUs, one batch and precision."""
    folder = tmp_path / "logs"
    folder.mkdir()
    for phase, seq in ((1, 128), (2, 512)):
        for gpus in (1, 8):
            namespace = _namespace(fp16=True, n_gpu=gpus, phase2=phase == 2, max_seq_length=seq)
            rate = (900.0 if phase == 1 else 300.0) * gpus * 0.95 ** (gpus > 1)
            lines = _pytorch_run(0, namespace, [(1, 8.0), (2, 7.9)], rate)
            (folder / f"bert_phase{phase}_gpu{gpus}.log").write_text("\n".join(lines) + "\n")
    return folder


def test_a_models_own_axis_reaches_every_spelling(tmp_path):
    report = Report(log_dir=_logs(tmp_path))
    runs = report.analysis.runs
    assert sorted(runs["phase"].tolist()) == [1, 1, 2, 2] and set(runs["gpus"]) == {1, 8}
    assert configs.own_varying(runs) == ["seq_len", "phase"]

    table = runs_section.table(report)
    assert {"sequence length", "phase"} <= set(table.columns)

    shown = scaling.table(report).markup
    assert "sequence length" in shown and "phase" in shown

    best = report.summary().best.label
    assert best == "8 GPUs, AMP, batch 64, sequence length 128, phase 1"

    labels, order = plots.config_labels(report.stats)
    assert len(set(labels)) == 4 and order[0].endswith("sequence length 128 · phase 1")

    (tmp_path / "out").mkdir()
    written = data_files.write(tmp_path / "out", data_files.report_tables(report))
    with open(tmp_path / "out" / "runs.csv", newline="", encoding="utf-8") as f:
        header = next(csv.reader(f))
    assert {"seq_len", "phase"} <= set(header), (written, header)
    with open(tmp_path / "out" / "configurations.csv", newline="", encoding="utf-8") as f:
        assert {"seq_len", "phase"} <= set(next(csv.reader(f)))
    # the step, evaluation and measure rows name the configuration with its phase; tokens/s is measured
    for name in ("iterations", "measures"):
        rows = data_files.load(tmp_path / "out" / f"{name}.csv")
        assert {c for c in rows["configuration"] if c.endswith("phase 2")}, name
    measured = data_files.load(tmp_path / "out" / "measures.csv")
    tokens = measured[measured["measure"] == "tokens_per_s"]
    assert len(tokens) == 4 and set(tokens["unit"]) == {"tokens/s"}


def test_a_configuration_is_one_value_with_a_spelling_per_style():
    """Issue 46: one value, each spelling a method, each saying the model's own axes that vary."""
    row = {"gpus": 8, "processes": 8, "precision": "amp", "batch_size": 256, "xla": True, "phase": 2, "seq_len": 512}
    plain, own = configs.Configuration.of(row), configs.Configuration.of(row, ["seq_len", "phase"])
    assert plain.sentence() == "8 GPUs, AMP, batch 256, XLA"
    assert own.sentence() == "8 GPUs, AMP, batch 256, XLA, sequence length 512, phase 2"
    assert plain.column_on() == "AMP bs256 on 8 GPUs"
    assert own.column_on() == "AMP bs256 sequence length 512 phase 2 on 8 GPUs"
    assert own.label() == "8 GPUs · amp · bs256 · xla · sequence length 512 · phase 2"
    assert own.run("file.log", 0) == "file.log:0 (8 GPUs, amp, bs 256, sequence length 512, phase 2)"
    assert configs.Configuration.of({**row, "phase": 1}, ["phase"]) != configs.Configuration.of(row, ["phase"])
    assert configs.Configuration.of({"gpus": 0, "processes": 2, "precision": "fp32", "batch_size": 8}).sentence() \
        == "CPU, 2 processes, FP32, batch 8"
