"""The command line with hostile paths and a broken machine (issue 21, 5, 6, 8): messages name the path
as it is (no rich markup), OS errors name their file, status shows what cannot be read."""

import re
from pathlib import Path

from benchbook import cli
from benchbook.runfolder import records
from benchbook.studies import study

CPU = """\
schema_version: 1
model: resnet50_tf
runtime: cpu
sweep: {batch_size: 8, data: synthetic}
iterations: 6
warmup_steps: 2
"""


def flat(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def test_a_path_that_looks_like_markup_is_printed_as_it_is(tmp_path, capsys):
    folder = tmp_path / "[" / "x]" / "[bold]"
    folder.mkdir(parents=True)
    assert cli.main(["run", str(folder / "rep4.yaml")]) == 2
    err = flat(capsys.readouterr().err)
    assert f"benchbook: {folder / 'rep4.yaml'}: no such study file" in err and "Traceback" not in err


def test_analysis_problems_under_a_markup_path_are_printed_as_they_are(tmp_path, capsys):
    folder = tmp_path / "[" / "x]"
    folder.mkdir(parents=True)
    (folder / "empty.log").write_text("")
    assert cli.main(["analyze", str(folder)]) == 1
    err = flat(capsys.readouterr().err)
    assert f"benchbook: {folder / 'empty.log'}:" in err


def test_runs_and_warnings_under_a_markup_path_are_printed_as_they_are(tmp_path, capsys):
    folder = tmp_path / "[/x]" / "[bold]"
    folder.mkdir(parents=True)
    log = Path(__file__).parent / "fixtures" / "ngc_tf1" / "pasted_runs_tf_gpu1_amp_bs256.txt"
    (folder / log.name).write_bytes(log.read_bytes())  # a log whose runs carry warnings
    assert cli.main(["analyze", str(folder)]) == 0
    out = flat(capsys.readouterr().out)
    assert f"warning: {folder / log.name} run" in out


def test_an_os_error_names_its_path(tmp_path, fake, capsys):
    path = tmp_path / "s.yaml"
    path.write_text(CPU)
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    assert cli.main(["run", str(path), "--out", str(blocker / "runs"), "--no-check", "--quiet"]) == 2
    err = flat(capsys.readouterr().err)
    assert f"benchbook: cannot use {blocker / 'runs'}" in err and "internal error" not in err


def test_status_shows_unreadable_records_and_fails(tmp_path, fake, capsys):
    path = tmp_path / "s.yaml"
    path.write_text(CPU)
    assert cli.main(["run", str(path), "--out", str(tmp_path / "runs"), "--no-check", "--quiet"]) == 0
    (folder,) = [p for p in (tmp_path / "runs").iterdir() if p.is_dir()]
    (folder / "cpu_fp32_bs8_syn_r1" / records.RECORD).write_text("{")
    capsys.readouterr()
    assert cli.main(["status", str(folder)]) == 1
    out = flat(capsys.readouterr().out)
    assert "1 runs" in out and "unreadable" in out and "not a readable run record" in out


def test_the_caps_are_lifted_by_a_named_flag(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv(study.LIFT_CAPS_ENV, "0")  # the flag sets it for the processes it starts: undone after
    path = tmp_path / "s.yaml"
    path.write_text(CPU.replace("batch_size: 8", "batch_size: 8, processes: 2000"))
    assert cli.main(["run", str(path), "--dry-run"]) == 2
    assert "--allow-large-study" in flat(capsys.readouterr().err)
    assert cli.main(["run", str(path), "--dry-run", "--allow-large-study"]) == 0
    assert "-np 2000" in capsys.readouterr().out


def test_status_and_errors_never_send_a_folder_names_terminal_escapes(tmp_path, capsys):
    """A study folder or run folder named with an escape sequence or a bidi control (a received
    `runs/`) is shown escaped by `status`, in its table and in its errors, like every other command."""
    study_dir = tmp_path / "st\x1b]0;owned\x07udy"
    run = study_dir / "run\u202e1"
    run.mkdir(parents=True)
    (run / "run.json").write_text("{not json")
    missing = tmp_path / "gone\x1b[2J"
    assert cli.main(["status", str(study_dir), str(missing)]) == 1
    captured = capsys.readouterr()
    for stream in (captured.out, captured.err):
        assert "\x1b" not in stream and "\u202e" not in stream and "\x07" not in stream
    assert "st\\x1b]0;owned\\x07udy" in flat(captured.out).replace(" ", "")
    assert "gone\\x1b[2J" in captured.err
