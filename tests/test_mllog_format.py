"""logs/parsers/mllog.py: MLPerf result files through `benchbook analyze` (the engine's MLLOG format).

The result files are written here (`test_mlperf_mllog.result_text`, modelled on the published ones:
launcher text, rank prefixes, a second rank's init_start), and each number is checked against what
`benchbook mlperf score` makes of the same file.
"""

from __future__ import annotations

import importlib.util
import json
import math
import tarfile
from pathlib import Path

import pytest

from benchbook import analyze
from benchbook.cli import main
from benchbook.logs import logfiles
from benchbook.logs.analysis import EVAL_COLUMNS
from benchbook.logs.parsers import detect, mllog
from benchbook.mlperf import mllog as reader
from benchbook.mlperf import results
from benchbook.runfolder import MLLOG, records
from test_mlperf_mllog import START_MS, mll_line, mllog_line, result_text, write
from test_mlperf_score import repository

TOOL = Path(__file__).resolve().parents[1] / "tools" / "check_mlperf_results.py"


def one_run(path):
    result = analyze([path])
    assert not result.problems, result.problems
    assert len(result.runs) == 1
    return result.runs.iloc[0], result.evaluations


def test_a_v07_result_file_is_one_run_with_its_time_to_train(tmp_path):
    text = result_text(30.5, prefix="[0] ", accuracies=(0.5, 0.76))
    first = mllog_line(START_MS, "run_start", prefix="[0] ")
    second = mllog_line(START_MS + 1, "init_start", prefix="[1] ") + mllog_line(START_MS + 1, "run_start",
                                                                                prefix="[1] ")
    path = write(tmp_path / "result_0.txt", text.replace(first, first + second) + second)  # and after run_stop
    assert text.count(first) == 1
    run, evals = one_run(path)
    assert run["format"] == "mllog" and run["status"] == "complete" and run["model"] == "resnet50"
    reported = run["reported"]
    assert reported["time_to_train_minutes"] == reader.read(path).minutes  # the scorer's, to the bit
    assert reported["time_to_train_minutes"] == pytest.approx(30.5)
    assert reported["time_to_train_seconds"] == pytest.approx(30.5 * 60)
    assert reported["run_stop_status"] == "success" and reported["unit"] == "ms"
    assert reported["init_seconds"] == pytest.approx(45.0)
    assert (reported["submitter"], reported["platform"], reported["benchmark"], reported["division"]) == \
        ("Acme", "1xWidget", "resnet", "closed")
    assert reported["epochs"] == 2
    assert run["global_batch_size"] == 256
    assert run["reported_throughput"] is None and run["recomputed_throughput"] is None and run["iterations"] == 0
    assert run["rule"].startswith("mlperf: time to train") and "mlcommons/logging" in run["rule"]
    assert reported["quality"] == {"accuracy": 0.76}  # the benchmark's metric as the rule names it, as logged
    assert run["final_top1"] is None  # no model's metric: an MLPerf accuracy is not labelled top-1
    assert run["warnings"] == []
    assert list(evals.columns) == list(EVAL_COLUMNS)  # one long frame, whatever the format
    assert evals["epoch"].tolist() == [1.0, 2.0] and evals["metric"].tolist() == ["accuracy", "accuracy"]
    assert evals["value"].tolist() == [0.5, 0.76] and evals["unit"].tolist() == ["", ""]  # as logged, no top1
    assert evals["elapsed"].tolist() == pytest.approx([30.5 * 30, 30.5 * 60], abs=0.01)  # from rank 1's run_start


def test_a_v06_file_reads_seconds(tmp_path):
    path = write(tmp_path / "result_0.txt", result_text(12.25, version="v0.6", prefix="[0] "))
    run, evals = one_run(path)
    assert run["reported"]["unit"] == "s"
    assert run["reported"]["time_to_train_minutes"] == pytest.approx(12.25)
    assert run["reported"]["time_to_train_minutes"] == reader.read(path).minutes
    assert len(evals) == 2


def test_mask_rcnn_gives_bbox_and_segm_rows(tmp_path):
    run, evals = one_run(write(tmp_path / "result_0.txt", result_text(40, benchmark="maskrcnn",
                                                                       accuracies=(0.2, 0.38))))
    assert run["model"] == "maskrcnn" and run["final_top1"] is None
    assert run["reported"]["quality"] == pytest.approx({"BBOX": 0.38, "SEGM": 0.342})
    assert evals["metric"].tolist() == ["BBOX", "SEGM", "BBOX", "SEGM"]
    assert evals["value"].tolist() == pytest.approx([0.2, 0.18, 0.38, 0.342])
    assert "top1" not in set(evals["metric"]) and evals["epoch"].tolist() == [1, 1, 2, 2]


def test_v06_accuracy_nested_under_accuracy(tmp_path):
    start = START_MS / 1000
    text = (mll_line(start, "run_start") + mll_line(start + 60, "eval_accuracy",
                                                    {"epoch": 3, "accuracy": {"BBOX": 0.3, "SEGM": 0.25}})
            + mll_line(start + 90, "run_stop", status="success"))
    run, evals = one_run(write(tmp_path / "result_0.txt", "Beginning trial 1 of 1\n" + text))
    assert run["reported"]["time_to_train_minutes"] == pytest.approx(1.5)
    assert evals["metric"].tolist() == ["BBOX", "SEGM"] and evals["epoch"].tolist() == [3, 3]
    assert run["reported"]["epochs"] == 3


def test_an_aborted_run_failed_and_a_cut_one_is_incomplete(tmp_path):
    aborted, _ = one_run(write(tmp_path / "a" / "result_0.txt", result_text(9, status="aborted")))
    assert aborted["status"] == "failed" and aborted["failure"] == "run_stop status aborted"
    assert aborted["reported"]["run_stop_status"] == "aborted"
    cut, _ = one_run(write(tmp_path / "c" / "result_0.txt", result_text(9, stop=False)))
    assert cut["status"] == "incomplete" and cut["reported"]["time_to_train_minutes"] is None
    assert cut["warnings"] == ["no run_stop: the log stops before the run finished"]


def test_v05_and_bad_json_are_problems_naming_file_and_line(tmp_path):
    old = write(tmp_path / "v05.txt", "hello\n:::MLPv0.5.0 resnet 1541710862.123 (x.py:1) run_start\n")
    bad = write(tmp_path / "bad.txt", mllog_line(0, "run_start") + ':::MLLOG {"time_ms": 5, "key": \n'
                + mllog_line(9, "run_stop", status="success"))
    mixed = write(tmp_path / "mixed.txt", mllog_line(0, "run_start") + mll_line(1, "run_stop", status="success"))
    result = analyze([old, bad, mixed])
    assert result.runs.empty
    reasons = {p.source: p.reason for p in result.problems}
    assert reasons[str(old)].startswith("line 2: an MLPerf v0.5 log")
    assert reasons[str(bad)].startswith("line 2: the MLLOG JSON does not parse")
    assert reasons[str(mixed)].startswith("line 2: mixes ':::MLL'")


def test_sniffs_either_form_after_any_prefix():
    assert detect("mpirun -np 8\n[0] :::MLLOG {\"key\": 1}\n").name == "mllog"
    assert detect("x 0: :::MLL 1560803233.496 run_start: {}\n").name == "mllog"
    assert detect(":::MLPv0.5.0 resnet 1.0 (x.py:1) run_start\n").name == "mllog"
    assert detect("the word :::MLLOG alone\n") is None


def test_analyze_agrees_with_score_on_every_run(tmp_path):
    folder = repository(tmp_path, (10, 30, 12, 11, 13), prefix="[0] ")
    repository(tmp_path, (20, 21, 22, 23, 24), version="v0.6")
    found = (results.score_folder(p.parent) for p in sorted(tmp_path.rglob("result_0.txt")))
    scored = {str(f.folder): f for f in found}
    result = analyze([tmp_path])
    assert len(result.runs) == 10 and not result.problems  # the systems files are .json: no logs
    minutes = dict(zip(result.runs["source"], (r["time_to_train_minutes"] for r in result.runs["reported"]),
                       strict=True))
    for name, found in scored.items():
        for run in found.run_details:
            assert minutes[f"{name}/{run['file']}"] == run["minutes"]
    assert str(folder) in scored


def test_the_mlperf_rule_is_named_and_the_others_stay_theirs(tmp_path, capsys):
    path = write(tmp_path / "result_0.txt", result_text(5))
    assert main(["analyze", "--json", "--rule", "mlperf", str(path)]) == 0
    assert json.loads(capsys.readouterr().out)["rule"].startswith("mlperf: ")
    assert mllog.FORMAT.rule(None).name == "mlperf"
    assert main(["analyze", "--json", "--rule", "nvidia", str(path)]) == 1  # no throughput rule applies
    assert "unknown rule of the mllog format 'nvidia'" in capsys.readouterr().err


def test_a_log_without_named_metrics_keeps_the_evaluation_columns(fixtures):
    evals = analyze([fixtures / "ngc_tf1" / "train_and_evaluate_gpu1_amp_bs256.log"]).evaluations
    assert list(evals.columns) == list(EVAL_COLUMNS) and len(evals)


def test_a_run_folders_mllog_is_not_a_second_run(tmp_path):
    run_folder = tmp_path / "study" / "run_1"
    write(run_folder / "resnet50.log", "a log\n")
    write(run_folder / records.RECORD, "{}")
    write(run_folder / MLLOG, result_text(3))
    loose = write(tmp_path / "other" / MLLOG, result_text(4))  # no run.json beside it: a result file
    files, problems = logfiles.log_files([tmp_path])
    assert files == [loose, run_folder / "resnet50.log"] and not problems
    assert logfiles.log_files([run_folder / MLLOG])[0] == [run_folder / MLLOG]  # named: analysed
    assert logfiles._RECORD == records.RECORD
    run, _ = one_run(run_folder / MLLOG)
    assert math.isclose(run["reported"]["time_to_train_minutes"], 3)


def test_the_results_check_cross_checks_analyze_against_score(tmp_path):
    spec = importlib.util.spec_from_file_location("check_mlperf_results", TOOL)
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    repository(tmp_path, (10, 30, 12, 11, 13))
    scored = tool.score(tmp_path)
    assert tool.analyzed_like_scored(tmp_path, scored) == []
    (name, row), = scored.items()
    row["run_details"][1]["minutes"] += 1e-6
    assert tool.analyzed_like_scored(tmp_path, scored) == [
        f"{row['folder']}/result_1.txt: analyze gives {row['run_details'][1]['minutes'] - 1e-6} minutes, score "
        f"{row['run_details'][1]['minutes']}"]
    row["run_details"].append(dict(row["run_details"][0], file="result_9.txt"))
    assert f"{row['folder']}/result_9.txt: scored, not analyzed" in tool.analyzed_like_scored(tmp_path, scored)


def test_an_archived_run_folders_mllog_is_not_a_second_run_either(tmp_path):
    folder = tmp_path / "runs"
    write(folder / "run_1" / "resnet50.log", "a log\n")
    write(folder / "run_1" / records.RECORD, "{}")
    write(folder / "run_1" / MLLOG, result_text(3))
    write(folder / "loose" / MLLOG, result_text(4))
    with tarfile.open(tmp_path / "runs.tar.gz", "w:gz") as tar:
        tar.add(folder, arcname="runs")
    files, problems = logfiles.log_files([tmp_path / "runs.tar.gz"])
    assert sorted(f.inner for f in files) == ["runs/loose/mllog.txt", "runs/run_1/resnet50.log"] and not problems
