"""mlperf.power: energy to train from a result folder's power/ logs, as result_summarizer computes it."""

from __future__ import annotations

import pytest

from benchbook.mlperf import power, results
from test_mlperf_mllog import START_MS, mllog_line, write
from test_mlperf_score import repository


def power_logs(folder, runs: int, watts=(500.0, 520.0, 480.0), switch=100.0, efficiency=0.95):
    """power/result_<i>/node_0.txt (readings every second from start to stop) and sw_0.txt per run."""
    for i in range(runs):
        logs = folder / "power" / f"result_{i}"
        lines = [mllog_line(START_MS, "conversion_eff", efficiency), mllog_line(START_MS, "power_measurement_start")]
        lines += [mllog_line(START_MS + 1000 * (k + 1), "power_reading", watts[k % len(watts)]) for k in range(60)]
        lines.append(mllog_line(START_MS + 60_000, "power_measurement_stop"))
        write(logs / "node_0.txt", "".join(lines))
        write(logs / "sw_0.txt", mllog_line(START_MS, "interconnect_power_est", switch))


def test_energy_is_the_counted_runs_mean(tmp_path):
    folder = repository(tmp_path, (10, 11, 12, 13, 14), version="v2.1", scaling=1.25)
    power_logs(folder, 5)
    (found,) = results.score([folder])
    mean_watts = 0.95 * (500 + 520 + 480) / 3 + 100  # the node's readings (their mean over the minute), the switch
    assert found.energy_joules == pytest.approx(mean_watts * 12.0 * 60 * 1.25)  # 11, 12, 13 minutes counted
    assert found.problems == []


def test_a_run_without_its_power_log_is_named(tmp_path):
    folder = repository(tmp_path, (10, 11, 12, 13, 14), version="v2.1")
    power_logs(folder, 2)  # result_2.. have none
    (found,) = results.score([folder])
    assert found.energy_joules is None and any("result_2: no node_*.txt power log" in p for p in found.problems)


def test_as_result_summarizer_computes_it(tmp_path):
    pytest.importorskip("mlperf_logging")
    from mlperf_logging.result_summarizer import result_summarizer

    folder = repository(tmp_path, (10, 11, 12, 13, 14), version="v2.1")
    power_logs(folder, 5, watts=(300.0, 700.0))
    ours = power.run_energy(folder, "result_0.txt", 10.0)
    official = result_summarizer._compute_total_power(str(folder), str(folder / "result_0.txt"), 600_000, "2.1.0")
    assert ours == pytest.approx(official)


def test_a_switch_log_is_read_in_its_order_as_result_summarizer_reads_it(tmp_path):
    """The last conversion_eff before the first interconnect_power_est, in the file's order (not by time)."""
    pytest.importorskip("mlperf_logging")
    from mlperf_logging.compliance_checker.mlp_parser import parse_file
    from mlperf_logging.result_summarizer import result_summarizer

    sw = write(tmp_path / "sw_0.txt", mllog_line(START_MS, "conversion_eff", 0.9)
               + mllog_line(START_MS + 5, "conversion_eff", 0.8)
               + mllog_line(START_MS + 9, "interconnect_power_est", 100.0)
               + mllog_line(START_MS + 1, "conversion_eff", 0.5))
    official = result_summarizer._compute_power_sw(parse_file(str(sw), "2.1.0")[0], 600_000)
    assert power._switch(sw, 600_000) == pytest.approx(official) == pytest.approx(0.8 * 100.0 * 600)


def test_a_power_record_that_does_not_parse_is_named_with_its_line(tmp_path):
    folder = repository(tmp_path, (10, 11, 12, 13, 14), version="v2.1")
    power_logs(folder, 5)
    node = folder / "power" / "result_1" / "node_0.txt"
    node.write_text(node.read_text() + ':::MLLOG {"key": "power_reading", "value": \n', encoding="utf-8")
    (found,) = results.score([folder])
    assert found.energy_joules is None
    assert any(f"{node}: line 64: " in p and "no energy for the result" in p for p in found.problems)


def test_power_logs_inside_an_archive_are_named_not_left_out_silently(tmp_path):
    import tarfile

    folder = repository(tmp_path / "tree", (10, 11, 12, 13, 14), version="v2.1")
    power_logs(folder, 5)
    archive = tmp_path / "results.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(tmp_path / "tree" / "training_results_v2.1", arcname="training_results_v2.1")
    (found,) = results.score([archive])
    assert found.valid and found.energy_joules is None
    assert [p for p in found.problems if "power" in p] == [
        f"{found.folder}/power: power logs inside an archive are not read: no energy for the result"]


@pytest.mark.parametrize(("key", "value", "why"), [
    ("power_reading", -500.0, "power_reading = -500.0: expected watts from 0 to 1e6"),
    ("power_reading", 1e308, "power_reading = 1e+308: expected watts from 0 to 1e6"),
    ("power_reading", -1e308, "power_reading = -1e+308: expected watts"),
    ("power_reading", "NaN", "power_reading = nan: expected watts"),
    ("power_reading", "x", "power_reading = 'x': expected watts"),
    ("interconnect_power_est", -1.0, "interconnect_power_est = -1.0: expected watts"),
    ("conversion_eff", 0.0, "conversion_eff = 0.0: expected an efficiency above 0, at most 1"),
    ("conversion_eff", 7.0, "conversion_eff = 7.0: expected an efficiency")])
def test_a_power_value_out_of_its_range_is_refused_with_its_line(tmp_path, key, value, why):
    """Issue 49 cause 10: negative watts gave a negative energy on a valid result, 1e308 and NaN a null without
    a word (math.fsum overflowing on +/-1e308 ended the command)."""
    folder = repository(tmp_path, (10, 11, 12, 13, 14), version="v2.1")
    power_logs(folder, 5)
    node = folder / "power" / "result_2" / ("sw_0.txt" if key == "interconnect_power_est" else "node_0.txt")
    text = node.read_text()
    logged = float("nan") if value == "NaN" else value
    line = mllog_line(START_MS + 500, key, logged).replace("NaN", "NaN")
    node.write_text(text.replace(mllog_line(START_MS, "power_measurement_start"),
                                 mllog_line(START_MS, "power_measurement_start") + line, 1) if node.name != "sw_0.txt"
                    else line + text)
    (found,) = results.score([folder])
    assert found.valid and found.energy_joules is None
    assert any(why in p and "result_2" in p and "line " in p and "no energy for the result" in p
               for p in found.problems), found.problems
