"""`benchbook mlperf score` on our own runs: a benchbook study folder whose runs wrote mllog.txt
(runfolder.MLLOG) beside run.json; each sweep point is a result, its repeats the runs."""

from __future__ import annotations

import json

import pytest

from benchbook.cli import main
from benchbook.mlperf import results
from benchbook.runfolder import MLLOG, records
from test_mlperf_mllog import result_text, write
from test_mlperf_score import digests

STUDY = "cpu_time_to_train"


def run_folder(study_dir, point, repeat, minutes, *, host="node7", mllog=True, **logged):
    """runs/<study>/<point>_r<repeat>/: run.json, the run's log, and its mllog.txt."""
    run_id = f"{point}_r{repeat}"
    folder = study_dir / run_id
    record = {"run_id": run_id, "study": study_dir.name, "status": "complete", "log": f"{run_id}.log",
              "config": {"study": study_dir.name, "batch_size": 32, "precision": "fp32", "repeat": repeat},
              "launcher": {"pid": 100 + repeat, "hostname": host}}
    write(folder / records.RECORD, json.dumps(record))
    write(folder / f"{run_id}.log", "DLLL {}\n")
    if mllog:
        write(folder / MLLOG, result_text(minutes, org="benchbook", **logged))
    return folder


@pytest.fixture
def study_dir(tmp_path):
    d = tmp_path / "runs" / STUDY
    write(d / "study.json", json.dumps({"study": STUDY}))
    for repeat, minutes in enumerate((3.0, 2.0, 4.0, 2.5, 3.5), 1):
        run_folder(d, "cpu_fp32_bs32", repeat, minutes)
    for repeat, minutes in enumerate((5.0, 6.0, 7.0), 1):
        run_folder(d, "cpu_fp32_bs64", repeat, minutes)
    return d


def _rows(capsys):
    return {r["folder"].rsplit("/", 1)[1]: r for r in map(json.loads, capsys.readouterr().out.splitlines())}


def test_each_sweep_point_is_a_result_and_its_repeats_the_runs(study_dir, capsys):
    before = digests(study_dir)
    assert main(["mlperf", "score", "--json", str(study_dir)]) == 0
    rows = _rows(capsys)
    assert set(rows) == {"cpu_fp32_bs32", "cpu_fp32_bs64"}
    full = rows["cpu_fp32_bs32"]
    assert (full["submitter"], full["system"], full["benchmark"]) == ("benchbook", "node7", "resnet")
    assert full["valid"] and full["score_minutes"] == pytest.approx(3.0)  # 2.0 and 4.0 dropped
    assert full["runs"] == 5 and full["runs_failed"] == 0
    assert [d["file"] for d in full["run_details"]] == [f"cpu_fp32_bs32_r{i}/{MLLOG}" for i in range(1, 6)]
    assert full["round"] == "v4.0"
    assert any("scored by the v4.0 rule" in p for p in full["problems"])
    short = rows["cpu_fp32_bs64"]
    assert not short["valid"] and short["score_minutes"] is None
    assert short["reason"] == "3 of the 5 result files resnet needs"
    assert short["runs"] == 3 and [d["minutes"] for d in short["run_details"]] == pytest.approx([5.0, 6.0, 7.0])
    assert digests(study_dir) == before  # read, never written


def test_the_runs_folder_above_the_study_and_the_round_option(study_dir, capsys):
    assert main(["mlperf", "score", "--json", "--round", "v0.7", str(study_dir.parent)]) == 0
    rows = _rows(capsys)
    assert {r["round"] for r in rows.values()} == {"v0.7"}
    assert not any("scored by the" in p for r in rows.values() for p in r["problems"])


def test_a_run_that_missed_the_target_takes_the_slowest_slot(study_dir, capsys):
    run_folder(study_dir, "cpu_fp32_bs32", 3, 1.0, accuracies=(0.3, 0.5))  # fastest, but never reached 0.759
    assert main(["mlperf", "score", "--json", str(study_dir)]) == 0
    full = _rows(capsys)["cpu_fp32_bs32"]
    assert full["runs_failed"] == 1 and full["score_minutes"] == pytest.approx((2.5 + 3.0 + 3.5) / 3)
    assert full["run_details"][2]["role"] == "dropped: did not converge (a slowest slot)"


def test_a_run_without_mllog_is_named_and_left_out(study_dir, capsys):
    run_folder(study_dir, "cpu_fp32_bs64", 4, 0, mllog=False)
    assert main(["mlperf", "score", "--json", str(study_dir)]) == 0
    short = _rows(capsys)["cpu_fp32_bs64"]
    assert short["runs"] == 3
    assert any(p.endswith(f"cpu_fp32_bs64_r4/{MLLOG}: missing (the run wrote no MLPerf log): left out")
               for p in short["problems"])


def test_without_a_host_the_system_is_the_study(tmp_path, capsys):
    d = tmp_path / STUDY
    for repeat in range(1, 6):
        run_folder(d, "cpu_fp32_bs32", repeat, 2.0 + repeat, host="")
    assert main(["mlperf", "score", "--json", str(d)]) == 0
    row = _rows(capsys)["cpu_fp32_bs32"]
    assert (row["submitter"], row["system"], row["score_minutes"]) == ("benchbook", STUDY, pytest.approx(5.0))
    assert main(["mlperf", "score", str(d)]) == 0  # the table too
    assert "1 MLPerf Training result" in capsys.readouterr().out


def test_result_files_are_still_found_beside_study_folders(study_dir, tmp_path, capsys):
    write(tmp_path / "runs" / "result_0.txt", result_text(1.0))
    folders, studies = results.find_all([tmp_path / "runs"])
    assert folders == [tmp_path / "runs"] and studies == [study_dir]


def test_the_record_name_is_the_runfolder_one():
    assert results.RECORD == records.RECORD


def test_an_open_division_run_is_judged_by_its_run_stop_status(study_dir, capsys):
    """Our CPU runs log the open division: no quality target there (open_resnet.yaml), so a run that
    logged success at its study's own target converges; one that stopped `aborted` does not."""
    for repeat, minutes in enumerate((3.0, 2.0, 4.0, 2.5, 3.5), 1):
        run_folder(study_dir, "cpu_fp32_bs32", repeat, minutes, accuracies=(0.2, 0.3), division="open",
                   status="aborted" if repeat == 5 else "success")
    assert main(["mlperf", "score", "--json", str(study_dir)]) == 0
    full = _rows(capsys)["cpu_fp32_bs32"]
    assert full["valid"] and full["runs_failed"] == 1
    assert full["score_minutes"] == pytest.approx((2.5 + 3.0 + 4.0) / 3)  # 2.0 dropped; aborted run slowest slot
