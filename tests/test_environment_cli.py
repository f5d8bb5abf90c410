"""`benchbook env` and `benchbook env diff`: JSON record, table, differences, errors that name the file.

The commands are driven through a parser built here with `cli_env.add_parsers`, as `benchbook.cli`
does; the last tests go through `benchbook.cli.main`.
"""

from __future__ import annotations

import argparse
import copy
import io
import json
import os
from pathlib import Path

import pytest
from rich.console import Console

from benchbook import cli_env
from benchbook.environment import SECTIONS
from benchbook.errors import BenchbookError

FIXTURES = Path(__file__).parent / "fixtures" / "environment"
IMAGE_20_06 = "nvcr.io/nvidia/tensorflow:20.06-tf1-py3"


def _run(argv: list[str]) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `benchbook <argv>` through cli_env's parsers."""
    parser = argparse.ArgumentParser(prog="benchbook")
    cli_env.add_parsers(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    out, err = io.StringIO(), io.StringIO()
    printed = io.StringIO()
    import contextlib

    with contextlib.redirect_stdout(printed):
        code = args.func(args, Console(file=out, width=200), Console(file=err, width=200))
    return code, printed.getvalue() + out.getvalue(), err.getvalue()


@pytest.fixture
def no_nvml(monkeypatch):
    """pynvml unimportable, so that the fake nvidia-smi is what is asked, wherever the tests run."""
    monkeypatch.setitem(__import__("sys").modules, "pynvml", None)


@pytest.fixture
def fake_smi(monkeypatch, no_nvml):
    monkeypatch.setenv("PATH", f"{FIXTURES / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}")


@pytest.fixture
def no_gpu(monkeypatch, tmp_path, no_nvml):
    """This machine as a laptop without GPU: no nvidia-smi on the PATH (other tools kept)."""
    keep = tmp_path / "bin"
    keep.mkdir()
    for tool in ("git", "lscpu", "ldconfig"):
        for folder in os.environ.get("PATH", "").split(os.pathsep):
            if (Path(folder) / tool).exists():
                (keep / tool).symlink_to(Path(folder) / tool)
                break
    monkeypatch.setenv("PATH", str(keep))


def test_env_json_is_a_complete_record_without_gpu(no_gpu):
    code, out, err = _run(["env", "--json", "--no-import", "--code", str(Path(__file__).parent.parent)])
    assert code == 0 and err == ""
    record = json.loads(out)
    assert set(SECTIONS) <= set(record)
    assert record["gpus"]["available"] is False and "nvidia-smi" in record["gpus"]["reason"]
    assert record["system"]["available"] and record["python"]["available"]


def test_env_json_with_fake_nvidia_smi_fills_the_gpus(fake_smi):
    code, out, _ = _run(["env", "--json", "--no-import"])
    gpus = json.loads(out)["gpus"]
    assert (gpus["count"], gpus["models"], gpus["driver"], gpus["cuda_driver"]) == (
        8, ["Tesla V100-SXM2-16GB"], "440.33.01", "10.2")
    assert gpus["topology"]["summary"] == "NV1 x8, NV2 x8, SYS x12"


def test_env_table_shows_the_main_fields(fake_smi):
    code, out, _ = _run(["env", "--no-import"])
    assert code == 0
    for text in ("8 x Tesla V100-SXM2-16GB", "16160 MiB", "application 1312/877 MHz", "440.33.01, CUDA 10.2",
                 "NV1 x8, NV2 x8, SYS x12", "Python", "InfiniBand"):
        assert text in out, text


def test_env_table_says_what_is_absent(no_gpu):
    _, out, _ = _run(["env", "--no-import"])
    assert "GPUs" in out and "absent: `nvidia-smi` not found on PATH" in out


def test_env_rejects_a_missing_interpreter_or_code_folder(tmp_path):
    with pytest.raises(BenchbookError, match=r"--python .*no-python: no such interpreter"):
        _run(["env", "--python", str(tmp_path / "no-python")])
    with pytest.raises(BenchbookError, match=r"--code .*nowhere: not a folder"):
        _run(["env", "--code", str(tmp_path / "nowhere")])


# ---------------------------------------------------------------- env diff


@pytest.fixture
def two_captures(tmp_path) -> tuple[Path, Path]:
    """The DGX-1 capture, and the same with another driver and container image."""
    a = json.loads((FIXTURES / "dgx1_tf1_20.03.json").read_text(encoding="utf-8"))
    b = copy.deepcopy(a)
    b["gpus"]["driver"] = "450.51.06"
    b["container"]["image"] = IMAGE_20_06
    pa, pb = tmp_path / "a.json", tmp_path / "b.json"
    pa.write_text(json.dumps(a), encoding="utf-8")
    pb.write_text(json.dumps(b), encoding="utf-8")
    return pa, pb


def test_env_diff_lists_exactly_driver_and_container(two_captures):
    code, out, err = _run(["env", "diff", *map(str, two_captures)])
    assert code == 0 and err == ""
    assert "2 differences, most significant first" in out
    rows = [line for line in out.splitlines() if line.startswith("│")]
    assert len(rows) == 2
    assert "gpus.driver" in rows[0] and "440.33.01" in rows[0] and "450.51.06" in rows[0]
    assert "container.image" in rows[1] and "20.06-tf1-py3" in rows[1]


def test_env_diff_json(two_captures):
    code, out, _ = _run(["env", "diff", *map(str, two_captures), "--json"])
    result = json.loads(out)
    assert code == 0 and result["a"].endswith("a.json") and result["drift"] == {}
    assert [(d["key"], d["a"], d["b"]) for d in result["differences"]] == [
        ("gpus.driver", "440.33.01", "450.51.06"),
        ("container.image", "nvcr.io/nvidia/tensorflow:20.03-tf1-py3", IMAGE_20_06)]


def test_env_diff_of_identical_captures(two_captures):
    a, _ = two_captures
    code, out, _ = _run(["env", "diff", str(a), str(a)])
    assert code == 0 and "no differences" in out


def test_env_diff_shows_drift_within_a_study(tmp_path, two_captures):
    a, b = (json.loads(p.read_text()) for p in two_captures)
    for i, env in enumerate((a, a, b)):
        folder = tmp_path / "study" / f"r{i + 1}"
        folder.mkdir(parents=True)
        (folder / "run.json").write_text(json.dumps({"status": "complete",
                                                     "config": {"batch_size": 256, "repeat": i + 1},
                                                     "environment": env}))
    code, out, _ = _run(["env", "diff", str(tmp_path / "study"), str(two_captures[0])])
    assert code == 0
    assert "study (3 runs)" in out and "varies: 440.33.01 | 450.51.06" in out
    assert "drift within A: 3 environments that should be alike" in out and "r3" in out


def test_env_diff_limits_long_lists(two_captures, tmp_path):
    a = json.loads(two_captures[0].read_text())
    b = copy.deepcopy(a)
    b["python"]["packages"] = {f"pkg{i:03d}": "1.0" for i in range(60)}
    pb = tmp_path / "many.json"
    pb.write_text(json.dumps(b))
    _, out, _ = _run(["env", "diff", str(two_captures[0]), str(pb)])
    assert f"... and {60 + 26 - cli_env.DIFF_LIMIT} more (Python packages); --all lists them" in out
    _, everything, _ = _run(["env", "diff", str(two_captures[0]), str(pb), "--all"])
    assert "more (" not in everything and "pkg059" in everything


def test_env_diff_of_unreadable_input_names_the_file(tmp_path, two_captures):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(BenchbookError, match=r"bad\.json: not valid JSON \(line 1, column 2"):
        _run(["env", "diff", str(two_captures[0]), str(bad)])


# ---------------------------------------------------------------- through benchbook.cli.main


def test_main_exits_2_naming_the_unreadable_file(tmp_path, two_captures, capsys):
    from benchbook.cli import main

    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    assert main(["env", "diff", str(two_captures[0]), str(bad)]) == 2
    assert "bad.json: not valid JSON (line 1, column 2" in capsys.readouterr().err


def test_main_env_diff_exits_0_when_environments_differ(two_captures, capsys):
    from benchbook.cli import main

    assert main(["env", "diff", *map(str, two_captures), "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["differences"]) == 2


def test_main_env_diff_of_a_wrongly_typed_or_deep_capture_exits_2_naming_file_and_field(tmp_path, two_captures,
                                                                                         capsys):
    """Issue 26 (9): these were internal errors (AttributeError, RecursionError)."""
    from benchbook.cli import main

    capture = json.loads(two_captures[0].read_text(encoding="utf-8"))
    capture["system"]["cpu"] = ["AMD EPYC"]
    typed = tmp_path / "typed.json"
    typed.write_text(json.dumps(capture), encoding="utf-8")
    assert main(["env", "diff", str(two_captures[0]), str(typed)]) == 2
    err = capsys.readouterr().err
    assert "typed.json: system.cpu: expected an object, found a list" in err and "internal error" not in err
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100000 + "]" * 100000, encoding="utf-8")
    assert main(["env", "diff", str(deep), str(two_captures[0])]) == 2
    err = capsys.readouterr().err
    assert "deep.json: nested too deeply" in err and "internal error" not in err


def test_env_diff_shows_terminal_escapes_and_bidi_controls_never_sends_them(tmp_path, two_captures):
    """Issue 38 (16): a capture's host name `\\x1b[2J\\x1b]0;PWN\\x07` cleared the screen and retitled the
    terminal; every value, label and warning is escaped as `analyze` escapes its names."""
    a, b = (json.loads(p.read_text()) for p in two_captures)
    b["hostname"] = "\x1b[2J\x1b]0;PWN\x07"
    b["container"]["image"] = "img\u202egpj.exe"
    folder = tmp_path / "run\x1b[31m"
    folder.mkdir()
    (folder / "run.json").write_text(json.dumps({"status": "complete", "config": {}, "environment": b}))
    for i, env in enumerate((a, b, {"host": {"hostname": "x"}, "capture_error": "boom\x1b[5m"})):
        run = tmp_path / "study\x1b]0;T\x07" / f"r{i}"
        run.mkdir(parents=True)
        (run / "run.json").write_text(json.dumps({"status": "complete", "config": {}, "environment": env}))
    for argv in ([str(two_captures[0]), str(folder)], [str(tmp_path / "study\x1b]0;T\x07"), str(folder)]):
        code, out, err = _run(["env", "diff", *argv, "--all"])
        assert code == 0
        for text in (out, err):
            assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text, text
        assert "\\x1b[2J\\x1b]0;PWN\\x07" in out.replace("│", "").replace(" ", "").replace("\n", "")
    assert "img\\u202egpj.exe" in out and "study\\x1b]0;T\\x07" in out
    assert "r2" in err and "\\x1b[5m" in err  # the warning of the study's record without a capture


def test_env_table_shows_a_captures_terminal_escapes_never_sends_them():
    """`benchbook env`'s table (and a report's environment rows) escaped rich markup but sent a captured
    value's terminal escapes as they were: a container image `\\x1b]0;PWN\\x07` retitled the terminal."""
    from benchbook.environment.summary import summary_rows

    record = json.loads((FIXTURES / "dgx1_tf1_20.03.json").read_text(encoding="utf-8"))
    record["container"]["image"] = "img\x1b]0;PWN\x07\u202e[bold]x"
    record["gpus"]["driver"] = "450\x1b[2J"
    record["variables"] = {"NCCL_DEBUG": "INFO\x1b[31m"}
    out = io.StringIO()
    console = Console(file=out, width=400, force_terminal=True)
    for _part, value in summary_rows(record):
        console.print(value, markup=True, highlight=False)
    text = out.getvalue()
    assert "\x07" not in text and "\u202e" not in text and "\x1b]" not in text and "\x1b[2J" not in text
    assert "img\\x1b]0;PWN\\x07\\u202e[bold]x" in text and "450\\x1b[2J" in text and "INFO\\x1b[31m" in text
