"""Hostile and broken logs and paths (issue 26): rank tags with huge numbers, files and folders that
cannot be read, lines no chunk holds, rates that are no rates, names that would drive a terminal."""

from __future__ import annotations

import json
import os
import tracemalloc

import pytest

from benchbook import analyze
from benchbook.cli import main
from benchbook.logs import analysis, logfiles, textio

PARAMETER = ("DLL 2021-01-01 00:00:00.000000 - PARAMETER arch : resnet50  mode : training_benchmark  "
             "batch_size : 256  warmup_steps : 0  precision : fp16 \n")


def _record(step: int, rate: str = "900.0", tag: str = "", second: int | None = None) -> str:
    second = step if second is None else second
    return f"{tag}DLL 2021-01-01 00:00:{second:02d}.000000 - (0, {step}) total_ips : {rate} \n"


def _log(tmp_path, name: str, text: str):
    path = tmp_path / name
    path.write_bytes(text.encode())
    return path


# --- item 1: rank tags with huge numbers -------------------------------------------------------

@pytest.mark.parametrize("rank", ["200000000", "4294967296", "18446744073709551616"])
def test_a_rank_tag_with_a_huge_number_leaves_its_line_out_with_a_warning_and_allocates_nothing_by_it(
        tmp_path, rank):
    text = ("[1,0]<stdout>:" + PARAMETER + _record(1, tag="[1,0]<stdout>:")
            + _record(2, "905.0", f"[1,{rank}]<stdout>:") + _record(3, tag="[1,1]<stdout>:")
            + _record(4, tag="[1,0]<stdout>:"))
    path = _log(tmp_path, "tf_gpu2_amp_bs256.log", text)
    tracemalloc.start()
    try:
        result = analyze([path])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 << 20, peak  # not an array sized by the rank (200000000 ranks: 1.6 GB)
    assert not result.problems
    (run,) = result.runs.to_dict("records")
    assert sorted(result.iterations["line"]) == [2, 4, 5]  # line 3 left out, the lines numbered as in the file
    assert sorted(set(result.iterations["rank"])) == [0, 1]
    assert any("left out" in w and "(line 3)" in w and "1048575" in w for w in run["warnings"]), run["warnings"]


def test_an_unexpected_error_while_analyzing_one_file_is_that_files_problem(tmp_path, monkeypatch):
    good = _log(tmp_path, "tf_gpu1_amp_bs256.log", PARAMETER + _record(1) + _record(2))
    bad = _log(tmp_path, "tf_gpu1_amp_bs256_broken.log", PARAMETER + _record(1) + _record(2))
    runs = analysis._runs

    def failing(drafts, path, *args):
        if path.name == bad.name:
            raise OverflowError("Python int too large to convert to C long")
        return runs(drafts, path, *args)

    monkeypatch.setattr(analysis, "_runs", failing)
    result = analyze([tmp_path])
    assert list(result.runs["source"]) == [str(good)]
    (problem,) = result.problems
    assert problem.source == str(bad) and "OverflowError: Python int too large" in problem.reason


# --- item 7: paths that cannot be read -----------------------------------------------------------

def _refuse(monkeypatch, refused: set[str], function: str = "stat"):
    """os.stat (or os.scandir) raising PermissionError for the paths in `refused`, as for a user
    a chmod 000 folder refuses (the tests run as root, whom chmod does not stop)."""
    real = getattr(os, function)

    def refusing(path, *args, **kwargs):
        if os.fspath(path) in refused:
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, function, refusing)


def test_a_path_whose_stat_is_refused_is_a_problem_and_the_rest_is_analyzed(tmp_path, monkeypatch, capsys):
    good = _log(tmp_path, "tf_gpu1_amp_bs256.log", PARAMETER + _record(1) + _record(2))
    hidden = tmp_path / "locked" / "run.log"  # a link into a chmod 000 folder, a file in it
    _refuse(monkeypatch, {str(hidden)})
    result = analyze([hidden, good])
    assert list(result.runs["source"]) == [str(good)]
    assert [(p.source, p.reason) for p in result.problems] == [(str(hidden), "cannot be read (Permission denied)")]
    assert main(["analyze", str(hidden), str(good), "--json", "--strict"]) == 1
    assert "locked/run.log: cannot be read (Permission denied)" in capsys.readouterr().err
    assert main(["analyze", str(hidden), str(good), "--json"]) == 0


def test_a_file_found_in_a_folder_whose_stat_is_refused_is_a_problem(tmp_path, monkeypatch):
    good = _log(tmp_path, "tf_gpu1_amp_bs256.log", PARAMETER + _record(1) + _record(2))
    link = tmp_path / "elsewhere.log"
    link.symlink_to(tmp_path / "locked" / "run.log")
    _refuse(monkeypatch, {str(link)})
    result = analyze([tmp_path])
    assert list(result.runs["source"]) == [str(good)]
    assert [(p.source, p.reason) for p in result.problems] == [(str(link), "cannot be read (Permission denied)")]


def test_a_folder_that_cannot_be_listed_is_a_problem_not_skipped_silently(tmp_path, monkeypatch, capsys):
    good = _log(tmp_path, "tf_gpu1_amp_bs256.log", PARAMETER + _record(1) + _record(2))
    locked = tmp_path / "locked"
    locked.mkdir()
    _log(locked, "tf_gpu1_fp32_bs256.log", PARAMETER + _record(1))
    _refuse(monkeypatch, {str(locked)}, "scandir")
    result = analyze([tmp_path])
    assert list(result.runs["source"]) == [str(good)]
    assert [(p.source, p.reason) for p in result.problems] == [
        (str(locked), "folder cannot be listed (Permission denied)")]
    assert main(["analyze", str(tmp_path), "--strict"]) == 1
    assert main(["analyze", str(tmp_path)]) == 0


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="no procfs here")
def test_a_pseudo_file_system_is_skipped_with_a_note_and_nothing_in_it_read(monkeypatch):
    # Issue 38 item 17: `analyze /proc` read every procfs file (past 100 s), and as root /proc/kmsg,
    # which consumes the kernel's messages. A folder on procfs, a file in it, and procfs met inside a walk.
    opened = []
    monkeypatch.setattr(textio, "chunks", lambda path, *a, **k: opened.append(path) or iter(()))
    result = analyze(["/proc/self/task", "/proc/self/status"])
    assert opened == [] and result.runs.empty
    assert {(p.source, p.reason) for p in result.problems} == {
        (where, "on the proc pseudo file system (the kernel's state, not logs): skipped, nothing in it read")
        for where in ("/proc/self/task", "/proc/self/status")}



@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="no procfs here")
def test_a_folder_met_in_a_walk_on_a_pseudo_file_system_is_noted_and_not_entered(tmp_path):
    _log(tmp_path, "tf_gpu1_amp_bs256.log", PARAMETER + _record(1))
    (tmp_path / "kernel").symlink_to("/proc/self")  # (a walk never enters a link: it is named all the same)
    files, problems = logfiles.log_files([tmp_path])
    assert files == [tmp_path / "tf_gpu1_amp_bs256.log"]
    assert [(p.source, p.reason) for p in problems] == [
        (str(tmp_path / "kernel"), "on the proc pseudo file system (the kernel's state, not logs): skipped, "
                                   f"nothing in it read (a link to {os.path.realpath('/proc/self')})")]


def test_a_fifo_or_socket_is_skipped_with_a_note(tmp_path):
    import socket

    _log(tmp_path, "tf_gpu1_amp_bs256.log", PARAMETER + _record(1))
    os.mkfifo(tmp_path / "pipe.log")  # reading it would wait for a writer for ever
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(tmp_path / "sock.log"))
    try:
        result = analyze([tmp_path, tmp_path / "pipe.log"])
    finally:
        server.close()
    assert len(result.runs) == 1
    assert sorted((p.source, p.reason) for p in result.problems) == [
        (str(tmp_path / "pipe.log"), "a FIFO, not a regular file: skipped"),
        (str(tmp_path / "pipe.log"), "a FIFO, not a regular file: skipped"),
        (str(tmp_path / "sock.log"), "a socket, not a regular file: skipped")]


# --- item 8: bounded reading ---------------------------------------------------------------------

def test_a_line_longer_than_the_limit_is_left_out_with_its_line_and_never_held(tmp_path):
    path = tmp_path / "tf_gpu1_amp_bs256.log"
    with open(path, "wb") as f:
        f.write((PARAMETER + _record(1)).encode())
        for _ in range(24):  # line 3: 24 MiB without a line end
            f.write(b"#" * (1 << 20))
        f.write(("\n" + _record(2) + _record(3)).encode())
    stats = textio.ReadStats()
    tracemalloc.start()
    try:
        parts = list(textio.chunks(path, stats, size=1 << 20, longest=2 << 20))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 12 << 20, peak  # a few chunks and the limit, not the 24 MiB line
    text = "".join(p.text for p in parts)
    assert text == PARAMETER + _record(1) + "\n" + _record(2) + _record(3)  # the line is an empty one
    assert (stats.long_count, stats.long_lines) == (1, [3])


def test_analyze_warns_of_a_long_line_and_a_file_of_one_long_line_is_a_problem_naming_it(tmp_path):
    long = "#" * (2 * textio.LINE_BYTES)  # (one of 8 to 16 MiB whose end comes in the same read is kept)
    log = _log(tmp_path, "tf_gpu1_amp_bs256.log", PARAMETER + _record(1) + long + "\n" + _record(2))
    (run,) = analyze([log]).runs.to_dict("records")
    assert run["iterations"] == 2
    assert any("1 lines of 8 MiB or more were left out unread (line 3)" in w for w in run["warnings"]), run["warnings"]
    one = _log(tmp_path, "one_line.log", long)
    (problem,) = analyze([one]).problems
    assert "no known log format" in problem.reason and "left out unread (line 1)" in problem.reason


@pytest.mark.parametrize("size", [1, 2, 3, 5, 8, 13, 64])
def test_cr_ends_a_line_where_chunks_are_cut_and_crlf_across_a_cut_is_one_line_end(tmp_path, size):
    path = tmp_path / "progress.log"
    path.write_bytes(b"a\rbb\r\nccc\r\rd\r\n\re")
    stats = textio.ReadStats()
    parts = list(textio.chunks(path, stats, size=size, longest=64))
    assert "".join(p.text for p in parts) == "a\nbb\nccc\n\nd\n\ne\n"
    assert [p.first_line for p in parts] == [1 + sum(q.text.count("\n") for q in parts[:i]) for i in range(len(parts))]
    assert not stats.long_count


def test_a_log_with_cr_line_ends_is_read_in_chunks_not_whole(tmp_path):
    body = "".join(_record(i % 60, second=i % 60) for i in range(20000)).replace("\n", "\r")
    path = _log(tmp_path, "tf_gpu1_amp_bs256.log", PARAMETER.replace("\n", "\r") + body)
    parts = list(textio.chunks(path, size=64 << 10))
    assert len(parts) > 10 and max(len(p.text) for p in parts) <= 2 * (64 << 10)  # a read and a line carried
    assert sum(len(p.ends) - 1 for p in parts) == 20001


# What a pasted run costs (10**6 runs of two lines in 183 MB took 5.5 GB) is bounded by bench/bench_reading.py,
# which .ci/run runs: 50,000 pasted runs, at most 3,000 bytes a run above its records, through `analyze` and
# through `benchbook analyze --json` (issue 38 item 7: 200,000 runs took 1.05 GB there).


# --- item 13: rates that are no rates, JSON, what reaches a terminal ------------------------------

def test_negative_and_infinite_rates_are_refused_with_their_lines(tmp_path):
    text = PARAMETER + _record(1) + _record(2, "-5.0") + _record(3, "1e999") + _record(4, "910.0")
    (run,) = analyze([_log(tmp_path, "tf_gpu1_amp_bs256.log", text)]).runs.to_dict("records")
    assert run["recomputed_throughput"] == pytest.approx(905.0)
    assert run["iterations"] == 2
    assert any("2 records log a throughput that is negative or infinite: refused (line 3, 4)" in w
               for w in run["warnings"]), run["warnings"]


@pytest.mark.parametrize("value", ["inf", "nan", "-3"])
def test_a_reported_value_that_is_no_rate_is_refused_and_json_stays_strict(tmp_path, capsys, value):
    text = (PARAMETER + _record(1) + _record(2)
            + f"DLL 2021-01-01 00:00:03.000000 - () train_throughput : {value} images/s \n")
    path = _log(tmp_path, "tf_gpu1_amp_bs256.log", text)
    (run,) = analyze([path]).runs.to_dict("records")
    assert run["reported_throughput"] is None
    assert any("the reported throughput" in w and "refused" in w for w in run["warnings"]), run["warnings"]
    assert main(["analyze", str(path), "--json"]) == 0
    out = capsys.readouterr().out
    assert "Infinity" not in out
    json.loads(out, parse_constant=lambda name: pytest.fail(f"{name} in the JSON output"))


def test_control_and_bidi_characters_in_names_and_log_text_never_reach_the_terminal(tmp_path, capsys):
    evil = "a\x1b[2J\u202egol.txt"
    good = _log(tmp_path, "tf_gpu1_amp_bs256\x1b]0;title\x07.log", PARAMETER + _record(1) + _record(2))
    _log(tmp_path, evil, "no log \x1b[31m here\n")
    assert main(["analyze", str(tmp_path)]) == 0
    assert main(["summarize", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    for stream in (captured.out, captured.err):
        assert "\x1b" not in stream and "\u202e" not in stream and "\x07" not in stream
    assert "a\\x1b[2J\\u202egol.txt" in captured.err.replace("\n", "")
    assert "\\x1b]0;title\\x07" in captured.out.replace("\n", "")
    assert good.exists()


# --- issue 38 item 14: values dropped without a word -----------------------------------------------

def _run_warnings(tmp_path, *records: str) -> tuple[dict, list[str]]:
    result = analyze([_log(tmp_path, "tf_gpu1_amp_bs256.log", PARAMETER + "".join(records))])
    assert not result.problems, result.problems
    (run,) = result.runs.to_dict("records")
    return run, run["warnings"]


def test_a_nan_rate_is_said_with_its_line(tmp_path):
    run, warnings = _run_warnings(tmp_path, _record(1), _record(2, "nan"), _record(3), _record(4, "1.2.3"))
    assert "records that log no throughput among records that do (NaN or no number), read without one: 2 " \
           "(line 3, 5)" in warnings
    assert run["recomputed_throughput"] == 900.0


def test_a_step_of_twenty_digits_is_said_with_its_line(tmp_path):
    run, warnings = _run_warnings(tmp_path, _record(1), _record(12345678901234567890, second=2), _record(3))
    assert "a step or epoch number past 18 digits: the record is left out: 1 (line 3)" in warnings
    assert run["iterations"] == 2


def test_a_timestamp_that_is_no_date_is_said_with_its_line(tmp_path):
    bad = _record(2).replace("2021-01-01", "2021-02-30")
    run, warnings = _run_warnings(tmp_path, _record(1), bad, _record(3))
    assert "records whose timestamp is no date among records whose is, read without one: 1 (line 3)" in warnings


def test_a_clock_going_back_is_said_with_its_line_per_rank(tmp_path):
    _, warnings = _run_warnings(tmp_path, _record(1, second=5), _record(2, second=2), _record(3, second=6))
    assert ("records whose time is before that of their rank's record before, by up to 3 s: 1 (line 3): the clock "
            "went back, times and rates around them are suspect") in warnings
    # two ranks logging in turns, each forward: no warning
    _, warnings = _run_warnings(tmp_path, *(_record(i, tag=f"[1,{r}]<stdout>:", second=10 * r + i)
                                            for i in range(1, 4) for r in (1, 0)))
    assert not [w for w in warnings if "clock went back" in w]


def test_rates_whose_sum_passes_the_largest_float_give_their_mean_without_a_numpy_warning(tmp_path):
    import warnings as python_warnings

    with python_warnings.catch_warnings():
        python_warnings.simplefilter("error")  # numpy's RuntimeWarning (overflow in reduceat) fails the test
        run, _ = _run_warnings(tmp_path, *(_record(i, "1e308") for i in range(1, 4)))
    assert run["recomputed_throughput"] == 1e308


def test_values_left_out_are_said_in_the_run_that_holds_them(tmp_path):
    runs = [PARAMETER.replace("00:00:00", f"0{h}:00:00") + "".join(
        _record(i, rate).replace("00:00:", f"0{h}:00:") for i, rate in enumerate(rates, 1))
        for h, rates in enumerate([("900.0", "900.0"), ("900.0", "nan", "900.0"), ("900.0", "900.0")])]
    runs[2] = runs[2].replace("02:00:02", "01:59:59")  # the third run's clock goes back at its second record
    result = analyze([_log(tmp_path, "tf_gpu1_amp_bs256.log", "".join(runs))])
    notes = [[w for w in warnings if "read without one" in w or "clock went back" in w]
             for warnings in result.runs["warnings"]]
    assert notes == [[], ["records that log no throughput among records that do (NaN or no number), read without "
                          "one: 1 (line 6)"],
                     ["records whose time is before that of their rank's record before, by up to 2 s: 1 (line 10): the "
                      "clock went back, times and rates around them are suspect"]]
