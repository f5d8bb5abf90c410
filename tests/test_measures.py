"""Issue 46: measures with units. Each run of `analyze --json` carries `measures` ({key: {value, unit, rule}}):
throughput in its model's unit for every run, tokens/s (the same records, each sample its sequence length) for a
model with a sequence length; `Analysis.measures` is the long frame of them."""

from __future__ import annotations

import json

from benchbook import analyze
from benchbook.cli import main
from benchbook.logs.frames import MEASURE_COLUMNS
from test_parsers_bert import _namespace, _pytorch_run


def _bert_logs(tmp_path):
    tmp_path.mkdir(exist_ok=True)
    known = _pytorch_run(0, _namespace(fp16=True, n_gpu=8, max_seq_length=512, phase2=True), [(1, 8.0)], 1234.5)
    unknown = [line for line in _pytorch_run(0, _namespace(n_gpu=8), [(1, 8.0)], 999.0) if "Namespace" not in line]
    (tmp_path / "phase2_gpu8.log").write_text("\n".join(known) + "\n")
    (tmp_path / "noconfig_gpu8.log").write_text("\n".join(unknown) + "\n")
    return tmp_path


def test_a_bert_run_measures_sequences_and_tokens_a_second(tmp_path, capsys):
    assert main(["analyze", str(_bert_logs(tmp_path)), "--json"]) == 0
    runs = {r["source"].rsplit("/", 1)[-1]: r for r in map(json.loads, capsys.readouterr().out.splitlines())}
    two = runs["phase2_gpu8.log"]
    assert two["seq_len"] == 512 and two["phase"] == 2
    assert two["measures"]["throughput"] == {"value": 1234.5, "unit": "sequences/s", "rule": two["rule"]}
    tokens = two["measures"]["tokens_per_s"]
    assert (tokens["value"], tokens["unit"]) == (1234.5 * 512, "tokens/s")
    assert tokens["rule"].startswith(two["rule"]) and "sequence length" in tokens["rule"]
    # no sequence length in the log: tokens/s is not made up, throughput stands
    assert list(runs["noconfig_gpu8.log"]["measures"]) == ["throughput"]


def test_a_resnet_run_measures_images_a_second(fixtures):
    result = analyze([fixtures / "ngc_tf1" / "tf_gpu1_amp_bs256.log"])
    assert list(result.measures.columns) == list(MEASURE_COLUMNS)
    row = result.measures.iloc[0]
    assert (row["measure"], row["unit"]) == ("throughput", "images/s") and len(result.measures) == len(result.runs)
    assert row["value"] == result.runs["recomputed_throughput"].iloc[0]


def test_a_reports_frames_and_data_files_are_tidy_and_typed(tmp_path):
    """Issue 46: `report.iterations` has each step's run name and configuration (a user's plot is one line), the
    iterations and measures are data files, and `data_files.load` reads a CSV back by the JSON's column types:
    text stays text (digits and empty cells kept), integers integers."""
    from benchbook.reports import data_files
    from benchbook.reports.report import Report

    report = Report(log_dir=_bert_logs(tmp_path / "logs"))
    its = report.iterations
    assert {"run", "configuration", "iteration", "throughput", "loss"} <= set(its.columns) and its["run"].notna().all()
    assert set(its["configuration"]) == set(report.measures["configuration"])
    here = tmp_path / "out"
    here.mkdir()
    written = data_files.write(here, data_files.report_tables(report))
    assert written == ["runs", "configurations", "iterations", "measures"]
    back = data_files.load(here / "measures.csv")
    assert back["value"].tolist() == report.measures["value"].tolist() and back["unit"].map(type).eq(str).all()
    runs = data_files.load(here / "runs.csv")
    assert str(runs["gpus"].dtype) == "Int64" and runs["warnings"].map(type).eq(str).all()  # "" stays ""


def test_a_reports_evaluations_are_long_one_row_per_metric(fixtures):
    from benchbook.reports.report import Report

    report = Report(log_dir=fixtures / "ngc_tf1")
    ev = report.evaluations
    assert {"top1", "top5"} <= set(ev["metric"]) and set(ev["unit"]) == {"%"}
    top1 = ev[(ev["metric"] == "top1") & ev["run"].str.startswith("train_and_evaluate_gpu1_amp_bs256.log")]
    assert top1["value"].tolist() == [52.10, 71.05, 76.55, 76.81]  # its four evaluations (the log's top1)
    assert top1["name"].iloc[0] == "top-1 accuracy"
    assert ev["run"].str.contains(r"\.log:\d+$").all() and ev["configuration"].notna().all()


def test_the_data_dictionary_is_one_place_and_its_page_is_current(repo_root):
    """Issue 46: one data dictionary (column, meaning, unit, type); docs/data-dictionary.md is written from it."""
    from benchbook.reports import dictionary

    rows = dictionary.rows()
    assert {r["frame"] for r in rows} == {"runs", "configurations", "iterations", "evaluations", "measures"}
    assert all(r["meaning"] for r in rows) and {"seq_len", "phase"} <= {r["column"] for r in rows}
    shown = {(r["frame"], r["column"]): r for r in rows}
    assert shown[("iterations", "elapsed")]["unit"] == "s" and shown[("runs", "gpus")]["type"] == "integer"
    assert shown[("runs", "xla")]["type"] == "boolean" and shown[("measures", "value")]["type"] == "number"
    page = (repo_root / "docs" / "data-dictionary.md").read_text(encoding="utf-8")
    assert page == dictionary.markdown(), "run: python tools/write_data_dictionary.py"


def test_a_rules_words_count_in_the_models_unit(tmp_path, fixtures):
    """Issue 46: a rule's words say what the run's model counts: images for ResNet-50, sequences for BERT."""
    from benchbook.logs.rules import Rule

    resnet = analyze([fixtures / "ngc_tf1" / "tf_gpu1_amp_bs256.log"], Rule(method="harmonic")).runs.iloc[0]
    assert "images / time implied by the logged rates" in resnet["rule"] and "samples" not in resnet["rule"]
    bert = analyze([_bert_logs(tmp_path) / "phase2_gpu8.log"], Rule(method="elapsed")).runs.iloc[0]
    assert "sequences / wall-clock time" in bert["rule"] and "samples" not in bert["rule"]
