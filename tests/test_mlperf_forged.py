"""Forged, impossible and broken input to `mlperf score` (issue 38): a scaling.json that is no plausible
number, runs whose time is not positive and finite, deep or huge JSON in a folder's files. Each is a
problem of its own folder, naming the file and field; the other folders are still scored, and `--json`
stays strict JSON."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from benchbook.core import userfiles
from benchbook.mlperf import results
from test_mlperf_mllog import START_MS, result_text, write
from test_mlperf_score import SYSTEM, repository


def _strict(text: str):
    def refuse(constant):
        raise ValueError(f"{constant} in --json output")

    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize("factor", ["-3", "0", '"2.0"', "true", "1e308", "NaN", "Infinity", "1e-300", "0.5", "null",
                                    "[1.5]", "9" * 4000])
def test_a_forged_scaling_factor_refuses_the_folder(tmp_path, factor):
    folder = repository(tmp_path)
    (folder / "scaling.json").write_text('{"scaling_factor": ' + factor + "}")
    (found,) = results.score([folder])
    assert not found.valid and found.score_minutes is None and found.scaling_factor is None
    assert found.reason.startswith(f"{folder}/scaling.json: ") and "the folder is not scored" in found.reason
    assert any(p.startswith(f"{folder}/scaling.json") for p in found.problems)


@pytest.mark.parametrize("factor", ["1", "1.0294", "2"])
def test_a_plausible_scaling_factor_is_applied(tmp_path, factor):
    folder = repository(tmp_path)
    (folder / "scaling.json").write_text('{"scaling_factor": ' + factor + "}")
    (found,) = results.score([folder])
    assert found.valid and found.score_minutes == pytest.approx(12.0 * float(factor))


def test_a_deep_scaling_json_is_a_problem_of_its_folder_alone(tmp_path):
    broken = repository(tmp_path / "a")
    (broken / "scaling.json").write_text("[" * 100_000 + "]" * 100_000)
    good = repository(tmp_path / "b")
    found = {f.folder: f for f in results.score([tmp_path])}
    assert not found[str(broken)].valid and "nested too deep" in found[str(broken)].reason
    assert found[str(good)].valid and found[str(good)].score_minutes == pytest.approx(12.0)


@pytest.mark.parametrize("value", ["99999999999999999999999", 99999999999999999999999, -8, "eight", 1.5, True])
def test_an_impossible_accelerator_count_is_a_problem_naming_the_field(tmp_path, value):
    folder = repository(tmp_path, system={**SYSTEM, "accelerators_per_node": value})
    (found,) = results.score([folder])
    assert found.valid and found.accelerators is None and found.accelerator_minutes is None
    assert any("box8.json: accelerators_per_node = " in p for p in found.problems)


def test_a_deep_systems_file_is_a_problem(tmp_path):
    folder = repository(tmp_path)
    (folder.parents[2] / "systems" / "box8.json").write_text("{\"a\": " + "[" * 100_000 + "]" * 100_000 + "}")
    (found,) = results.score([folder])
    assert found.valid and any("box8.json: neither a JSON object" in p and "nested too deep" in p
                               for p in found.problems)


def test_a_systems_file_is_read_once_and_strictly(tmp_path, monkeypatch):
    folder = repository(tmp_path)
    path = folder.parents[2] / "systems" / "box8.json"
    path.write_text('{"system_name": "box8", "accelerators_per_node": NaN}')
    opened = []
    real_open = userfiles.open_regular  # (what opens every file of a result folder)
    monkeypatch.setattr(userfiles, "open_regular", lambda where: opened.append(os.path.basename(where))
                        or real_open(where))
    (found,) = results.score([folder])
    assert opened.count("box8.json") == 1
    assert any("box8.json: neither a JSON object" in p and "NaN is not a JSON number" in p for p in found.problems)


@pytest.mark.parametrize(("stop_ms", "why"), [(START_MS - 1_590_000_000_000, "not a positive finite time"),
                                              (START_MS, "not a positive finite time"),
                                              ("1e400", "not a positive finite time")])
def test_a_run_whose_time_is_not_positive_and_finite_is_a_failed_run(tmp_path, stop_ms, why):
    folder = repository(tmp_path, (10, 11, 12, 13, 14))
    text = result_text(10).splitlines(keepends=True)
    at = next(i for i, line in enumerate(text) if '"key": "run_stop"' in line)
    record = json.loads(text[at].split(":::MLLOG ", 1)[1])
    record["time_ms"] = "@@"
    text[at] = ":::MLLOG " + json.dumps(record).replace('"@@"', str(stop_ms)) + "\n"
    write(folder / "result_0.txt", "".join(text))
    (found,) = results.score([folder])
    assert found.runs_failed == 1 and why in found.run_details[0]["reason"]
    assert found.valid and found.score_minutes == pytest.approx(13.0)  # 11 dropped as fastest, result_0 slowest


def test_json_output_is_strict(tmp_path):
    folder = repository(tmp_path, (10, 11, 12, 13, 14))
    text = result_text(10).replace('"key": "eval_accuracy", "value": 0.76, "metadata": {"file": "train.py", '
                                   '"lineno": 1, "epoch_num": 2}',
                                   '"key": "eval_accuracy", "value": 0.76, "metadata": {"file": "train.py", '
                                   '"lineno": 1, "epoch_num": 1e400}')
    assert "1e400" in text
    write(folder / "result_0.txt", text)
    stop = result_text(10).splitlines(keepends=True)
    at = next(i for i, line in enumerate(stop) if '"key": "run_stop"' in line)
    stop[at] = re.sub(r'"time_ms": [0-9.e+]+', '"time_ms": Infinity', stop[at])
    write(folder / "result_1.txt", "".join(stop))
    out = subprocess.run([sys.executable, "-m", "benchbook.cli", "mlperf", "score", "--json", str(folder)],
                         capture_output=True, text=True, check=True).stdout
    (row,) = [_strict(line) for line in out.splitlines()]
    assert row["run_details"][0]["epochs"] is None and row["run_details"][1]["minutes"] is None
    assert "not a positive finite time" in row["run_details"][1]["reason"]


def test_the_notebook_scores_the_other_folders(tmp_path):
    from benchbook.mlperf.report import MLPerfReport

    broken = repository(tmp_path / "a", system={**SYSTEM, "number_of_nodes": 99999999999999999999999})
    (broken / "scaling.json").write_text('{"scaling_factor": ' + "9" * 4000 + "}")
    repository(tmp_path / "b")
    table = MLPerfReport(str(tmp_path)).published()
    assert table["valid"].tolist()[1] == "yes" and "scaling.json: scaling_factor = 9999" in table["valid"].tolist()[0]


def test_a_long_line_without_newline_is_bounded_as_analyze_bounds_it(tmp_path):
    """A 64 MiB line at the end of a result file: read in 8 MiB pieces and left out, named (it was held whole:
    128 MiB traced)."""
    import tracemalloc

    from benchbook.mlperf import mllog

    path = write(tmp_path / "result_0.txt", result_text(10))
    with path.open("a") as f:
        f.write("x" * (64 << 20))
    tracemalloc.start()
    try:
        run = mllog.read(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert run.minutes == pytest.approx(10.0) and peak < 48 << 20
    assert run.problems == [f"{path}: 1 line of 8 MiB or more left out (line 40), as analyze leaves them out"]


def test_extra_and_copied_result_files_are_named(tmp_path):
    folder = repository(tmp_path, (10, 11, 12, 13, 14))
    (folder / "result_00.txt").write_bytes((folder / "result_0.txt").read_bytes())  # a copy of result_0
    write(folder / "result_-1.txt", result_text(1))
    write(folder / f"result_{'9' * 23}.txt", result_text(2))
    (found,) = results.score([folder])
    assert found.runs == 8 and not found.valid and found.score_minutes is None
    assert found.reason.startswith("result_00.txt is byte-identical to result_0.txt: one run logged twice is not two "
                                   "runs; the rules ask for 5 runs, each a complete execution")
    assert any("8 result files, resnet needs 5: mlperf-logging's package checker refuses" in p for p in found.problems)
    assert any(f": 'result_{'9' * 23}.txt', 'result_-1.txt': read as result files" in p
               for p in found.problems)
    assert [d["file"] for d in found.run_details] == ["result_0.txt", "result_00.txt", "result_1.txt", "result_2.txt",
                                                      "result_3.txt", "result_4.txt", f"result_{'9' * 23}.txt",
                                                      "result_-1.txt"]


@pytest.mark.parametrize("names", [[f"result_{i}.txt" for i in range(5)],
                                   [f"result_8xSMC-H100_{i}.txt" for i in range(1, 6)],
                                   [f"result_run{i}.txt" for i in range(1, 6)]])
def test_every_result_file_name_the_rules_count_is_read(tmp_path, names):
    """mlperf-logging counts `result_*.txt` (package_checker.py:98): `result_<id>_<N>.txt` and `result_runN.txt`
    are result files (the v4.0 Supermicro and power submissions name them so)."""
    folder = tmp_path / "training_results_v4.0" / "Acme" / "results" / "box8" / "resnet"
    for i, name in enumerate(names):
        write(folder / name, result_text(10 + i, version="v4.0"))
    write(folder / "notes.txt", "not a result\n")
    (found,) = results.score([tmp_path])
    assert found.valid and found.runs == 5 and found.score_minutes == pytest.approx(12.0)
    assert [d["file"] for d in found.run_details] == names


@pytest.mark.parametrize("level", [1, 0])  # the system folder, the benchmark folder
def test_a_folder_that_cannot_be_listed_is_named(tmp_path, level, monkeypatch):
    folder = repository(tmp_path / "a")
    other = repository(tmp_path / "b")
    locked = folder.parents[level - 1] if level else folder
    if os.geteuid() == 0:  # root lists any folder: a listing refused as chmod 000 refuses it
        def refuse(real):
            def call(path=".", *args):
                if os.fspath(path) == str(locked):
                    raise PermissionError(13, "Permission denied", os.fspath(path))
                return real(path, *args)
            return call

        monkeypatch.setattr(os, "scandir", refuse(os.scandir))
        monkeypatch.setattr(os, "listdir", refuse(os.listdir))
    else:
        locked.chmod(0)
    try:
        found = {f.folder: f for f in results.score([tmp_path])}
    finally:
        locked.chmod(0o755)
    assert found[str(other)].valid
    assert not found[str(locked)].valid and found[str(locked)].reason.startswith(f"{locked}: cannot be listed")
    assert found[str(locked)].system == "box8"
