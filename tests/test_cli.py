"""The `benchbook` command line: the JSON contract, tables, exit codes and error messages."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys

import pytest

from benchbook import analyze
from benchbook.cli import main

CONTRACT_KEYS = {"source", "run", "format", "framework", "model", "gpus", "batch_size", "precision", "xla",
                 "reported_throughput", "recomputed_throughput", "iterations", "status", "warnings"}
# tf_gpu1_amp_bs256.log: 8 records of 1 GPU x 256 images, the first 3 are warm-up by default.
RATES = [120.0, 610.0, 870.0, 1000.0, 1120.0, 900.0, 1010.0, 1250.0]


def _json_lines(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def _flat(text: str) -> str:
    """Console output with its wrapping undone."""
    return " ".join(text.split())


@pytest.fixture
def full_log(copy_fixture):
    """tf_gpu1_amp_bs256.log under a name that gives nodes and repeat too: every column is known."""
    return copy_fixture("ngc_tf1/tf_gpu1_amp_bs256.log", "1n1g/r50_b256_amp_1.log")


def test_analyze_json_prints_one_object_per_run(full_log, capsys):
    assert main(["analyze", str(full_log), "--json"]) == 0
    out, err = capsys.readouterr()
    [obj] = _json_lines(out)
    assert CONTRACT_KEYS <= set(obj)
    assert obj["source"] == str(full_log)
    assert (obj["run"], obj["format"], obj["framework"], obj["model"]) == (0, "ngc_tf1_convnets", "tensorflow",
                                                                          "resnet50")
    assert (obj["gpus"], obj["nodes"], obj["batch_size"], obj["repeat"]) == (1, 1, 256, 1)
    assert (obj["precision"], obj["xla"]) == ("amp", False)
    assert obj["reported_throughput"] == 1055.5
    assert obj["recomputed_throughput"] == pytest.approx(statistics.mean(RATES[3:]))
    assert (obj["iterations"], obj["status"], obj["warnings"]) == (5, "complete", [])
    assert err == ""


def test_analyze_json_covers_every_run_of_every_format(fixtures, capsys):
    folders = [fixtures / "ngc_tf1", fixtures / "ngc_mxnet", fixtures / "ngc_maskrcnn"]
    assert main(["analyze", *map(str, folders), "--json"]) == 0
    objs = _json_lines(capsys.readouterr().out)
    runs = analyze(folders).runs
    assert [(o["source"], o["run"]) for o in objs] == list(zip(runs["source"], runs["run"], strict=True))
    assert {o["format"] for o in objs} == {"ngc_tf1_convnets", "ngc_mxnet_resnet50", "ngc_tf2_maskrcnn"}
    for obj in objs:
        assert CONTRACT_KEYS <= set(obj)
        assert isinstance(obj["warnings"], list)
        assert obj["status"] == "complete"


def test_analyze_json_writes_unknown_values_as_null(fixtures, capsys):
    code = main(["analyze", str(fixtures / "ngc_mxnet" / "mxnet_gpu1_gpu4_amp_bs64.txt"), "--json"])
    out, _ = capsys.readouterr()
    assert code == 0
    runs = _json_lines(out)
    assert [(r["run"], r["gpus"], r["nodes"], r["repeat"]) for r in runs] == [(0, 1, None, None), (1, 4, None, None)]
    assert [r["reported_throughput"] for r in runs] == [605.07, 2336.8]


@pytest.mark.parametrize("args, expected, used", [
    ([], statistics.mean(RATES[3:]), 5),
    (["--warmup", "0"], statistics.mean(RATES), 8),
    (["--window", "2"], statistics.mean(RATES[3:5]), 2),
    (["--method", "median"], statistics.median(RATES[3:]), 5),
    (["--method", "harmonic"], 5 / sum(1 / r for r in RATES[3:]), 5),
    (["--method", "elapsed"], 4 * 256 / 1.0, 5),
    (["--warmup", "5", "--window", "2", "--method", "median"], statistics.median(RATES[5:7]), 2),
    (["--skip-records", "5", "--window", "2", "--method", "median"], statistics.median(RATES[5:7]), 2),
])
def test_rule_options_change_the_recomputed_throughput(full_log, capsys, args, expected, used):
    assert main(["analyze", str(full_log), "--json", *args]) == 0
    [obj] = _json_lines(capsys.readouterr().out)
    assert obj["recomputed_throughput"] == pytest.approx(expected, rel=1e-6)
    assert obj["iterations"] == used
    assert obj["reported_throughput"] == 1055.5


@pytest.mark.parametrize("args, field", [
    (["--warmup", "-1"], "--skip-records"),
    (["--skip-records", "-1"], "--skip-records"),
    (["--window", "0"], "--window"),
    (["--tolerance", "0"], "--tolerance"),
])
def test_invalid_rule_values_exit_2_with_a_clear_message(full_log, capsys, args, field):
    assert main(["analyze", str(full_log), *args]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert "invalid throughput rule" in err and field in err
    assert "Traceback" not in err


def test_an_unknown_method_is_a_usage_error(full_log, capsys):
    with pytest.raises(SystemExit) as info:
        main(["analyze", str(full_log), "--method", "geometric"])
    assert info.value.code == 2
    assert "geometric" in capsys.readouterr().err


def test_an_unknown_format_exits_2_listing_the_known_ones(full_log, capsys):
    assert main(["analyze", str(full_log), "--format", "ngc_pytorch_bert"]) == 2
    err = _flat(capsys.readouterr().err)
    assert "ngc_pytorch_bert" in err and "ngc_tf1_convnets" in err
    assert "Traceback" not in err


def _mixed_folder(tmp_path, fixtures):
    folder = tmp_path / "mixed"
    folder.mkdir()
    (folder / "good.log").write_bytes((fixtures / "ngc_tf1" / "tf_gpu1_amp_bs256.log").read_bytes())
    (folder / "empty.log").write_bytes(b"")
    (folder / "core.bin").write_bytes(bytes(range(256)) * 4)
    (folder / "notes.log").write_bytes((fixtures / "robustness" / "no_known_format.log").read_bytes())
    return folder


def test_exit_0_when_some_files_are_good_and_bad_ones_on_stderr(tmp_path, fixtures, capsys):
    folder = _mixed_folder(tmp_path, fixtures)
    assert main(["analyze", str(folder), str(tmp_path / "missing.log")]) == 0
    out, err = capsys.readouterr()
    assert "good.log" in out and "complete" in out
    err = _flat(err)
    for name, reason in (("empty.log", "empty"), ("core.bin", "binary"), ("notes.log", "no known log format"),
                         ("missing.log", "no such file")):
        assert name in err and reason in err
    assert "Traceback" not in err


def test_exit_1_with_strict_when_any_file_is_bad(tmp_path, fixtures, capsys):
    folder = _mixed_folder(tmp_path, fixtures)
    assert main(["analyze", str(folder), "--strict"]) == 1
    assert "notes.log" in _flat(capsys.readouterr().err)


def test_strict_exit_0_when_every_file_is_good(full_log, capsys):
    assert main(["analyze", str(full_log), "--strict"]) == 0


def test_exit_1_when_no_file_can_be_analyzed(tmp_path, fixtures, capsys):
    folder = _mixed_folder(tmp_path, fixtures)
    (folder / "good.log").unlink()
    assert main(["analyze", str(folder)]) == 1
    assert main(["analyze", str(tmp_path / "missing.log"), "--json"]) == 1
    out, err = capsys.readouterr()
    assert out.count("{") == 0
    assert "Traceback" not in err


def test_analyze_table_shows_runs_and_warnings_with_their_lines(fixtures, capsys):
    assert main(["analyze", str(fixtures / "metadata" / "conflict" / "tf_gpu4_fp32_bs64.txt")]) == 0
    out = _flat(capsys.readouterr().out)
    assert "ngc_tf1_convnets" in out and "640.00" in out and "complete" in out
    assert "warning" in out and "lines 1-10" in out and "the log wins" in out


def _study(write_tf1_log):
    # 1 and 2 GPUs, FP32 batch 64 (two repeats each) and AMP batch 128 (one each).
    for gpus, rates in ((1, (300.0, 320.0)), (2, (600.0, 610.0))):
        for repeat, rate in enumerate(rates, 1):
            write_tf1_log(f"study/1n{gpus}g/r50_b64_fp32_{repeat}.log", gpus=gpus, batch=64, amp=False,
                          rates=[50.0, rate, rate], warmup=1)
    for gpus, rate in ((1, 900.0), (2, 1710.0)):
        write_tf1_log(f"study/1n{gpus}g/r50_b128_amp_1.log", gpus=gpus, batch=128, amp=True,
                      rates=[50.0, rate, rate], warmup=1)


def test_summarize_prints_the_published_layout(tmp_path, write_tf1_log, capsys):
    _study(write_tf1_log)
    assert main(["summarize", str(tmp_path / "study")]) == 0
    out = capsys.readouterr().out
    assert "resnet50 (tensorflow)" in out
    assert out.index("FP32 bs64") < out.index("AMP bs128")
    lines = [line.split() for line in out.splitlines()]
    # Rows: nodes 1, GPUs 1 then (nodes left blank) GPUs 2; columns median, mean, speedup per config.
    one = next(cells for cells in lines if cells[:2] == ["1", "1"])
    two = next(cells for cells in lines if cells[:1] == ["2"])
    assert [float(c) for c in one[2:]] == pytest.approx([310.0, 310.0, 1.0, 900.0, 900.0, 1.0])
    assert [float(c) for c in two[1:]] == pytest.approx([605.0, 605.0, 605.0 / 310.0, 1710.0, 1710.0,
                                                         1710.0 / 900.0], abs=0.005)


def test_summarize_json_gives_the_statistics(tmp_path, write_tf1_log, capsys):
    _study(write_tf1_log)
    assert main(["summarize", str(tmp_path / "study"), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    got = {(r["gpus"], r["batch_size"], r["precision"]): r for r in rows}
    assert set(got) == {(1, 64, "fp32"), (2, 64, "fp32"), (1, 128, "amp"), (2, 128, "amp")}
    assert got[(1, 64, "fp32")]["runs"] == 2
    assert got[(1, 64, "fp32")]["median"] == pytest.approx(310.0)
    assert got[(2, 64, "fp32")]["speedup"] == pytest.approx(605.0 / 310.0)
    assert got[(2, 128, "amp")]["efficiency"] == pytest.approx(1710.0 / 900.0 / 2)


def test_formats_lists_every_format_with_its_named_rules_and_their_sources(capsys):
    assert main(["formats"]) == 0
    out = capsys.readouterr().out
    for name, method in (("ngc_tf1_convnets", "mean"), ("ngc_mxnet_resnet50", "epochs"), ("ngc_tf2_maskrcnn", "last")):
        row = next(line for line in out.splitlines() if name in line and "│" in line)
        assert " nvidia " in row and f" {method} " in row
    sources = {line.split(": ", 1)[0].strip(): line.split(": ", 1)[1] for line in out.splitlines()
               if line.startswith("  ") and ": " in line}
    assert "TensorFlow/Classification/ConvNets/utils/hooks/benchmark_hooks.py@bd257e14" in sources[
        "ngc_tf1_convnets nvidia"]
    assert "MxNet/Classification/RN50v1.5/benchmark.py@52c60d2e" in sources["ngc_mxnet_resnet50 nvidia"]
    assert "mask_rcnn/hooks/logging_hook.py@e5428044" in sources["ngc_tf2_maskrcnn nvidia"]
    assert sources["ngc_tf1_convnets dlperf"].startswith("Oneflow-Inc/DLPerf ")
    assert sources["ngc_mxnet_resnet50 dlperf"].endswith("extract_mxnet_logs.py@0b0f0881")
    assert "ngc_tf2_maskrcnn dlperf" not in sources


def test_analyze_rule_selects_a_named_rule_and_its_parts_stay_overridable(tmp_path, fixtures, capsys):
    log = fixtures / "ngc_tf1" / "tf_gpu1_amp_bs256.log"
    assert main(["analyze", "--json", "--rule", "dlperf", "--warmup", "2", str(log)]) == 0
    run = json.loads(capsys.readouterr().out)
    assert run["rule"].startswith("dlperf: skip the first 2 records, then use at most 100 records")
    assert run["iterations"] == 6


def test_analyze_an_unknown_rule_name_is_an_error_listing_the_known_ones(fixtures, capsys):
    code = main(["analyze", "--rule", "nvdia", str(fixtures / "ngc_tf1" / "tf_gpu1_amp_bs256.log")])
    assert code != 0
    err = capsys.readouterr().err
    assert "'nvdia'" in err and "dlperf, mlperf, nvidia" in err


def test_a_reader_that_leaves_early_is_not_an_error(tmp_path, fixtures):
    folder = tmp_path / "many"
    folder.mkdir()
    for i in range(40):  # well over one stdout buffer of JSON lines
        (folder / f"run_{i:02d}.log").write_bytes((fixtures / "ngc_tf1" / "tf_gpu1_amp_bs256.log").read_bytes())
    proc = subprocess.Popen([sys.executable, "-m", "benchbook.cli", "analyze", "--json", str(folder)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # like `| head -0`: the reader is gone before the first line
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0, err
    assert "error" not in err.lower() and "Traceback" not in err


def test_summarize_can_aggregate_the_reported_values(tmp_path, write_tf1_log, capsys):
    write_tf1_log("r/1n1g/r50_b64_fp32_1.log", gpus=1, batch=64, amp=False, rates=[50.0, 300.0], warmup=1,
                  reported=299.0)
    write_tf1_log("r/1n1g/r50_b64_fp32_2.log", gpus=1, batch=64, amp=False, rates=[50.0, 320.0], warmup=1,
                  reported=321.0)
    assert main(["summarize", str(tmp_path / "r"), "--json", "--value", "reported_throughput"]) == 0
    [row] = json.loads(capsys.readouterr().out)
    assert (row["runs"], row["min"], row["max"]) == (2, 299.0, 321.0)
    assert row["median"] == pytest.approx(310.0)


def test_summarize_keeps_a_run_cut_before_its_summary_and_flags_it(tmp_path, write_tf1_log, capsys):
    _study(write_tf1_log)
    cut = tmp_path / "study" / "1n2g" / "r50_b128_amp_2.log"
    write_tf1_log("study/1n2g/r50_b128_amp_2.log", gpus=2, batch=128, amp=True, rates=[50.0, 1690.0, 1690.0],
                  warmup=1)
    lines = cut.read_text().splitlines()
    cut.write_text("\n".join(line for line in lines if "train_throughput" not in line and "Ending" not in line)
                   + "\n")
    assert analyze([cut]).runs.iloc[0]["status"] == "incomplete"
    assert main(["summarize", str(tmp_path / "study"), "--json"]) == 0
    got = {(r["gpus"], r["batch_size"], r["precision"]): r for r in json.loads(capsys.readouterr().out)}
    assert got[(2, 128, "amp")]["runs"] == 2 and got[(2, 128, "amp")]["incomplete"] == 1
    assert got[(2, 128, "amp")]["median"] == pytest.approx((1710.0 + 1690.0) / 2)
    assert main(["summarize", str(tmp_path / "study")]) == 0
    assert "incomplete: 1 of the 2 runs of 2 GPUs, AMP bs128" in capsys.readouterr().out


@pytest.mark.parametrize(("argv", "absent"), [
    (["--help"], ["pydantic", "numpy", "benchbook.logs.textio", "benchbook.studies.study",
                  "benchbook.studies.checks",
                  "benchbook.cli_env"]),
    (["analyze", "--help"], ["pydantic", "numpy", "benchbook.logs.textio", "benchbook.studies.study",
                             "benchbook.studies.checks"]),
    (["formats"], ["pydantic", "benchbook.logs.textio", "benchbook.studies.study", "benchbook.studies.checks",
                   "benchbook.cli_env", "benchbook.models"]),
])
def test_argument_parsing_imports_no_study_checks_or_pydantic(argv, absent):
    """Parsing a command line declares `check` and `env` in full only when it names them, so the
    study loader, the checks and (for --help) pydantic are not imported to start another command."""
    code = ("import sys\nfrom benchbook import cli\ntry:\n    cli.main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
            f"print(sorted(m for m in {absent!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, check=True).stdout
    assert out.splitlines()[-1] == "[]"


def test_lazy_commands_are_declared_in_full_when_named_and_their_help_line_is_theirs(capsys):
    from benchbook import cli
    from benchbook.studies import study

    assert cli.LIFT_CAPS_ENV == study.LIFT_CAPS_ENV
    lazy = cli.build_parser([]).format_help()  # `benchbook --help`: check and env by their one-line help
    for name in cli.LAZY_COMMANDS:
        # declared in full (its module imported), the command lists the same line in the same help
        assert cli.LAZY_HELP[name] in " ".join(lazy.split())
        assert cli.build_parser([name]).format_help() == lazy
    with pytest.raises(SystemExit):
        main(["check", "--help"])
    assert "--data-prep" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["--help"])
    listed = capsys.readouterr().out
    assert "check" in listed and "env" in listed


def test_an_unknown_model_for_publish_logs_names_the_known_ones(tmp_path, capsys):
    assert main(["publish", "--logs", str(tmp_path), "--model", "resnet51", "--reports", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert "resnet51" in err and "resnet50_tf" in err


def test_run_finds_a_shipped_study_from_any_folder(tmp_path, monkeypatch, capsys):
    """`benchbook run params/...` from a folder that has no params/: the project's own study (an installed
    benchbook's shipped copy), its runs under the current folder."""
    monkeypatch.chdir(tmp_path)
    assert main(["run", "params/resnet50_tf/cpu_smoke.yaml", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "# study resnet50_tf-cpu_smoke" in out and str(tmp_path / "runs" / "resnet50_tf-cpu_smoke") in out
