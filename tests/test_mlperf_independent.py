"""Independent runs (issue 48 item 3): byte-identical result files are a rule broken, named so, with the
figure the official arithmetic gives when it counts the copy; zero-padded names are plain names; and where
benchbook's score and the official tool's differ, the JSON says the cause (item 4)."""

from __future__ import annotations

import pytest

from benchbook.mlperf import results
from test_mlperf_mllog import result_text, write
from test_mlperf_score import repository


def test_two_identical_result_files_break_the_rule_with_the_official_figure_beside(tmp_path):
    folder = repository(tmp_path, (10, 11, 12, 13, 14))
    (folder / "result_3.txt").write_bytes((folder / "result_0.txt").read_bytes())  # 10 minutes twice, no 13
    (found,) = results.score([folder])
    assert not found.valid and found.score_minutes is None
    assert found.reason.startswith("result_3.txt is byte-identical to result_0.txt: one run logged twice is not two "
                                   "runs; the rules ask for 5 runs, each a complete execution training a model from "
                                   "initialization to the target (mlcommons/training_policies training_rules.adoc")
    assert found.official["score_minutes"] == pytest.approx((10 + 11 + 12) / 3)  # 10, 10, 11, 12, 14: 10 and 14 out
    assert found.official["figure"] == "11.0000 minutes" and "mlperf-logging 4.1.68" in found.official["tool"]
    assert "counts every result_*.txt as a run, result_3.txt too" in found.official["cause"]


def test_a_folder_the_official_tool_agrees_with_has_no_difference(tmp_path):
    (found,) = results.score([repository(tmp_path)])
    assert found.valid and found.official is None


def test_v06_names_the_unit_the_official_tool_misreads(tmp_path):
    (found,) = results.score([repository(tmp_path, version="v0.6")])
    assert found.official["score_minutes"] == pytest.approx(found.score_minutes / 1000)
    assert "as milliseconds" in found.official["cause"]


@pytest.mark.parametrize("names", [[f"result_{i:02d}.txt" for i in range(1, 6)],
                                   [f"result_{i:03d}.txt" for i in range(5)],
                                   [f"result_8xH100_{i:02d}.txt" for i in range(1, 6)]])
def test_zero_padded_names_are_read_without_a_word(tmp_path, names):
    folder = repository(tmp_path, ())
    for i, name in enumerate(names):
        write(folder / name, result_text(10 + i))
    (found,) = results.score([folder])
    assert found.valid and found.runs == 5 and found.problems == []
    assert [d["file"] for d in found.run_details] == names


def test_the_page_says_where_the_official_tool_differs_and_why(tmp_path):
    from benchbook.mlperf.report import MLPerfReport

    folder = repository(tmp_path / "a", (10, 11, 12, 13, 14))
    (folder / "result_3.txt").write_bytes((folder / "result_0.txt").read_bytes())
    repository(tmp_path / "b")
    valid = MLPerfReport(str(tmp_path)).published()["valid"].tolist()
    assert valid[1] == "yes"
    assert valid[0].startswith("no: result_3.txt is byte-identical to result_0.txt")
    assert "; the official result_summarizer gives 11.0000 minutes: result_summarizer counts every" in valid[0]
    assert valid[0].endswith("(mlperf-logging 4.1.68 (PyPI, mlcommons/logging; result_summarizer.py, "
                             "compliance_checker/mlp_compliance.py))")


def test_a_forged_open_division_turns_no_target_off(tmp_path):
    """Issue 49 cause 5: a result file saying submission_division open in a closed folder (its systems file) is
    judged by the closed rules: five runs short of the target are not a valid result, and the file is named."""
    folder = repository(tmp_path, division="open", accuracies=(0.05, 0.10))
    (found,) = results.score([folder])
    assert found.division == "closed" and not found.valid and found.runs_failed == 5
    assert "target accuracy >= 0.759 not reached" in found.run_details[0]["reason"]
    assert sum("submission_division 'open', but the folder is 'closed'" in p for p in found.problems) == 5


def test_an_open_folder_is_judged_by_the_open_rules(tmp_path):
    from test_mlperf_score import SYSTEM

    folder = repository(tmp_path, division="open", accuracies=(0.05, 0.10), system={**SYSTEM, "division": "open"})
    (found,) = results.score([folder])
    assert found.division == "open" and found.valid
    assert all("submission_division" not in p for p in found.problems)


def test_runs_logging_different_divisions_without_a_systems_file_get_the_closed_rules(tmp_path):
    folder = repository(tmp_path, accuracies=(0.05, 0.10), system=None, overrides={0: {"division": "open"}})
    (found,) = results.score([folder])
    assert found.division == "closed" and found.runs_failed == 5
    assert any("log different divisions (closed, open)" in p for p in found.problems)


def _weights(text: str, tensors) -> str:
    """The result file with a weights_initialization record per tensor before run_start, as v1.1 logs them."""
    from test_mlperf_mllog import START_MS, mllog_line

    records = "".join(mllog_line(START_MS - 20_000, "weights_initialization", tensor=t) for t in tensors)
    at = text.index(mllog_line(START_MS, "run_start"))
    return text[:at] + records + text[at:]


def test_v11_runs_the_official_tool_drops_over_weights_initialization_are_explained(tmp_path):
    """Item 4: mlperf-logging 4.1.68 fails v1.1 files over weights_initialization checks that were warnings for
    ruleset 1.1.0; benchbook scores them as the round's review did and says the official figure and why."""
    from benchbook.mlperf import rules

    names = rules.loaded().weights[("1.1", "resnet")][0]
    folder = repository(tmp_path, (10, 11, 12, 13, 14), version="v1.1")
    for i in (0, 1):  # two runs log every tensor the END check lists: the official tool keeps those two
        path = folder / f"result_{i}.txt"
        path.write_text(_weights(path.read_text(), names))
    (found,) = results.score([folder])
    assert found.valid and found.score_minutes == pytest.approx(12.0)
    assert found.official["score_minutes"] is None and found.official["figure"].startswith("no score (3 runs did not")
    assert found.official["cause"].startswith("mlperf-logging 4.1.68 fails the file over the weights_initialization "
                                              "checks of its training_1.1.0 rules")
    assert "result_2.txt, result_3.txt, result_4.txt log no weights_initialization" in found.official["cause"]
    assert "training_1.1.0/closed_resnet.yaml:" in found.official["cause"]


def test_v11_runs_naming_every_tensor_agree_with_the_official_tool(tmp_path):
    from benchbook.mlperf import rules

    names = rules.loaded().weights[("1.1", "resnet")][0]
    folder = repository(tmp_path, (10, 11, 12, 13, 14), version="v1.1")
    for i in range(5):
        path = folder / f"result_{i}.txt"
        path.write_text(_weights(path.read_text(), names))
    (found,) = results.score([folder])
    assert found.valid and found.official is None
