"""The parsing benchmark runs on the project's example logs, end to end, and both sides read the
same files (no timing is checked here: the ratio is measured by `make bench` and CI, on the
reference logs)."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _bench():
    spec = importlib.util.spec_from_file_location("bench_analyze", ROOT / "bench" / "bench_analyze.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_bench_times_the_cli_and_the_naive_loop_on_the_same_files(capsys):
    assert _bench().main(["--copies", "2", "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    files = int(re.search(r"^corpus: (\d+) files", out, re.M).group(1))
    naive = re.search(r"^naive regex loop, end to end +: +[0-9.]+ s .*, (\d+) records in (\d+) files\)$", out, re.M)
    cli = re.search(r"^benchbook analyze --json, end to end: +[0-9.]+ s .*, (\d+) runs of (\d+) files\)$", out, re.M)
    assert naive and cli, out
    assert int(naive.group(1)) > 0 and int(naive.group(2)) == files == int(cli.group(2))
    assert int(cli.group(1)) >= files
    assert re.search(r"^ratio naive/benchbook .*: [0-9.]+x$", out, re.M)
    assert re.search(r"^start-up: benchbook formats in [0-9.]+ s$", out, re.M)


def test_the_naive_loop_reads_every_format_of_the_examples(capsys):
    bench = _bench()
    for folder in sorted((ROOT / "examples" / "logs").iterdir()):
        logs = sorted(str(p) for p in folder.rglob("*") if p.is_file() and p.suffix in (".txt", ".log"))
        assert bench.naive_main(folder) == 0
        lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
        assert [line["source"] for line in lines] == logs and logs, folder  # one line a log, in path order
        assert all(line["records"] > 0 and line["mean_throughput"] > 0 for line in lines), lines


def test_bench_fails_when_analyzing_one_log_takes_more_memory_than_the_limit(capsys):
    # One 1 MB log of each folder of example logs, each analyzed in a fresh process: none fits in 1 MB.
    assert _bench().main(["--copies", "1", "--repeat", "1", "--single-file-megabytes", "1",
                          "--memory-limit", "1"]) == 1
    out = capsys.readouterr().out
    peaks = re.findall(r"^memory: one 1 MB log of (\S+) \(\d+ records\): peak (\d+) MB resident$", out, re.M)
    assert len(peaks) >= 3 and all(int(mb) > 1 for _, mb in peaks)  # a folder of logs each
    failed = re.findall(r"^FAIL: analyzing the 1 MB log of (\S+) took \d+ MB, above the limit of 1 MB$", out, re.M)
    assert sorted(failed) == sorted(name for name, _ in peaks)


def _reading():
    spec = importlib.util.spec_from_file_location("bench_reading", ROOT / "bench" / "bench_reading.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_reading_bench_measures_its_three_cases_and_fails_past_a_limit(capsys):
    # Small cases; limits no analysis meets (a peak under 1 MB, a run that costs nothing) must fail.
    assert _reading().main(["--line-megabytes", "9", "--line-limit", "1", "--megabytes", "2",
                            "--ratio-limit", "0.5", "--runs", "500", "--run-bytes=-1e9"]) == 1
    out = capsys.readouterr().out
    assert re.search(r"^reading: one 9 MB line, no newline: peak \d+ MB resident \(limit 1 MB\), [0-9.]+ s$", out, re.M)
    ratio = re.search(r"^reading: one 2 MB log, CR line ends: peak (\d+) MB resident, LF: (\d+) MB, ratio ([0-9.]+) "
                      r"\(limit 0.50\)$", out, re.M)
    assert ratio and 0.8 < float(ratio.group(3)) < 1.3, out  # CR line ends cost what LF ones do
    assert re.search(r"^reading: 500 pasted runs of two lines \(0.1 MB\): peak \d+ MB resident, the same records as "
                     r"one run: \d+ MB, ratio [0-9.]+; -?\d+ bytes a run above its records \(limit -1000000000\), "
                     r"[0-9.]+ s$", out, re.M), out
    assert re.search(r"^reading: the same through `benchbook analyze --json`: peak \d+ MB resident, as one run: "
                     r"\d+ MB; -?\d+ bytes a run above its records \(limit -1000000000\), [0-9.]+ s$", out, re.M), out
    assert re.findall(r"^FAIL: (.+)$", out, re.M) == ["one line", "CR line ends", "pasted runs",
                                                      "pasted runs, analyze --json"]


def test_the_archives_bench_times_a_zip_against_a_folder_of_the_same_logs(capsys):
    spec = importlib.util.spec_from_file_location("bench_archives", ROOT / "bench" / "bench_archives.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main(["--members", "30", "--records", "3", "--repeat", "1", "--ratio-limit", "1000"]) == 0
    assert module.main(["--members", "30", "--records", "3", "--repeat", "1", "--ratio-limit", "0.001"]) == 1
    out = capsys.readouterr().out
    assert len(re.findall(r"^archives: 30 logs of 3 records: a folder [0-9.]+ s, a zip [0-9.]+ s \(least of 1\); "
                          r"ratio zip/folder [0-9.]+ \(limit [0-9.]+\)$", out, re.M)) == 2
    assert "FAIL: the zip takes more than the limit times the folder" in out


def test_the_ranks_bench_reads_pieces_that_never_close_against_the_same_bytes_apart(capsys):
    spec = importlib.util.spec_from_file_location("bench_ranks", ROOT / "bench" / "bench_ranks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main(["--megabytes", "0.2", "--ratio-limit", "1000"]) == 0
    assert module.main(["--megabytes", "0.2", "--ratio-limit", "0.001"]) == 1
    out = capsys.readouterr().out
    assert len(re.findall(r"^ranks: 0.2 MB, \d+ lines each ending a piece of a rank that never closes its line: "
                          r"[0-9.]+ s; the pieces on lines of their own: [0-9.]+ s; ratio [0-9.]+ \(limit [0-9.]+\)$",
                          out, re.M)) == 2
    assert out.rstrip().endswith("FAIL: reading rank pieces that never close took more than the limit times the "
                                 "same bytes apart")


def test_the_data_files_bench_times_a_reports_tables_against_its_publish(capsys):
    spec = importlib.util.spec_from_file_location("bench_data_files", ROOT / "bench" / "bench_data_files.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    assert bench.main(["--repeat", "1", "--check", "0"]) == 1  # any share is over a limit of nothing
    out = capsys.readouterr().out
    assert "publish  best" in out and "data     best" in out and "data / publish of ngc-tf1-resnet50: " in out


def test_the_explain_bench_searches_a_written_log_and_the_bert_sets_within_the_limit(capsys):
    spec = importlib.util.spec_from_file_location("bench_explain", ROOT / "bench" / "bench_explain.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    assert bench.main(["--records", "3000"]) == 0
    assert bench.main(["--records", "3000", "--no-sets", "--limit", "0.000001"]) == 1
    out = capsys.readouterr().out
    assert len(re.findall(r"^explain: a log of one rank of 3000 records: read in [0-9.]+ s, searched in [0-9.]+ s "
                          r"\(limit [0-9.]+ s; .*\); first rule: --rule perf --tail 20$", out, re.M)) == 2
    assert re.search(r"^explain: a log of 8 ranks of 3000 records: .* first rule: --rule nvidia --tail 50 --rank 3 "
                     r"--method mean$", out, re.M)
    assert re.search(r"^explain: ngc-tf1-bert against ngc_tf1_bert: 10 cells of 10 runs .* 10 reproduced$", out, re.M)
    assert out.rstrip().endswith("FAIL: searching 3000 records took more than 0.0 s")


def test_the_line_length_bench_times_each_formats_openings_and_fails_past_the_growth_limit(capsys):
    spec = importlib.util.spec_from_file_location("bench_line_length", ROOT / "bench" / "bench_line_length.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    formats = ["ngc_bert_pytorch", "ngc_bert_tf1", "ngc_tf1_convnets"]
    assert bench.main(["--sizes", "64", "256", "--formats", *formats]) == 0
    assert bench.main(["--sizes", "64", "256", "--formats", "ngc_bert_tf1", "--growth-limit", "0.5"]) == 1
    out = capsys.readouterr().out
    rows = re.findall(r"^(\S+) +.{34} +([0-9.]+) s +([0-9.]+) s +([0-9.]+)(  FAIL)?$", out, re.M)
    assert {row[0] for row in rows} == set(formats)
    assert len(rows) == sum(len(bench.PREFIXES[name]) for name in formats) + len(bench.PREFIXES["ngc_bert_tf1"])
    assert out.rstrip().endswith("a doubling of its length: " + ", ".join(
        f"ngc_bert_tf1 ({ascii(p[:30])[1:-1]})" for p in bench.PREFIXES["ngc_bert_tf1"]))
