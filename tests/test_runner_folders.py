"""Study folders received from someone else or kept in a shared runs/ (issue 26, items 3, 7, 9, 13): links,
unreadable folders and records of the wrong shape are reported by `status` and left alone by `--resume`;
nothing is written through a link; one bad run never blocks the others."""

import errno
import json
import os

import pytest

from benchbook import cli
from benchbook.runfolder import records
from benchbook.studies import runner
from benchbook.studies.study import StudyError
from test_runner import make

RUNS = ("cpu_fp32_bs16_syn_r1", "cpu_fp32_bs8_syn_r1")


def finished(tmp_path):
    """(study, out, study folder) of a study of two runs that ran."""
    s = make(tmp_path, **{"repeats: 2": "repeats: 1"})
    out = tmp_path / "runs"
    runner.run_study(s, out, progress=False)
    return s, out, out / s.name


def rerun(folder, run_id):
    """Mark a run failed, so that --resume redoes it."""
    path = folder / run_id / records.RECORD
    records.write(path, dict(records.read(path), status="failed"))


def home(tmp_path):
    """A folder that is not a run's (someone's home), with what it holds."""
    victim = tmp_path / "home"
    victim.mkdir()
    (victim / "notes.txt").write_text("mine\n")
    (victim / ".bashrc").write_text("alias ll='ls -l'\n")
    return victim


def contents(folder):
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.mark.parametrize("target", ["home", ".."])
def test_resume_leaves_a_run_folder_that_is_a_link_alone(tmp_path, fake, capsys, target):
    s, out, folder = finished(tmp_path)
    victim = home(tmp_path) if target == "home" else out
    before = contents(victim)
    link = folder / RUNS[0]
    for p in link.iterdir():
        p.unlink()
    link.rmdir()
    link.symlink_to(victim if target == "home" else "..")
    rerun(folder, RUNS[1])
    capsys.readouterr()
    results = runner.run_study(s, out, resume=True, progress=False, say=lambda line: None)
    said = capsys.readouterr().out
    assert contents(victim) == before or target == ".."  # out holds the study: the other run's attempt is new
    assert not (victim / "attempts").exists() and (folder / RUNS[1] / "attempts" / "1").is_dir()
    assert f"{RUNS[0]}: {link} is a link (to {os.readlink(link)}), not a run folder: left alone" in said
    assert results[RUNS[1]]["status"] == "complete" and RUNS[0] not in results
    frame = records.table(folder).set_index("run_id")
    assert frame.loc[RUNS[0], "status"] == "unreadable" and "a link (to " in frame.loc[RUNS[0], "problem"]
    assert cli.main(["status", str(folder)]) == 1


def test_a_study_folder_that_is_a_link_is_refused(tmp_path, fake):
    s = make(tmp_path, **{"repeats: 2": "repeats: 1"})
    out, victim = tmp_path / "runs", home(tmp_path)
    out.mkdir()
    (out / s.name).symlink_to(victim)  # planted in a shared runs/
    for resume in (False, True):
        with pytest.raises(StudyError, match=f"{s.name} is a link .*never through a link"):
            runner.run_study(s, out, resume=resume, progress=False)
    assert contents(victim) == [".bashrc", "notes.txt"]


def test_nothing_is_written_through_a_planted_lock_or_attempts_link(tmp_path, fake):
    s, out, folder = finished(tmp_path)
    victim = home(tmp_path)
    rerun(folder, RUNS[0])
    (folder / RUNS[0] / "attempts").symlink_to(victim)
    lock = out / f".{s.name}.lock"
    lock.unlink()
    lock.symlink_to(victim / "notes.txt")
    with pytest.raises(StudyError, match=r"\.lock: cannot be opened \(a link: remove it\)"):
        runner.run_study(s, out, resume=True, progress=False)
    assert (victim / "notes.txt").read_text() == "mine\n"  # was truncated and overwritten with "pid N on host"
    lock.unlink()
    runner.run_study(s, out, resume=True, progress=False)
    assert contents(victim) == [".bashrc", "notes.txt"] and records.read(folder / RUNS[0] / records.RECORD)[
        "status"] == "failed"  # left alone: its attempts/ is a link


@pytest.mark.parametrize("holds", ["another run's record", "no record"])
def test_a_run_folder_without_a_record_of_this_run_is_left_alone(tmp_path, fake, capsys, holds):
    s, out, folder = finished(tmp_path)
    run_dir = folder / RUNS[0]
    if holds == "no record":
        (run_dir / records.RECORD).unlink()
    else:
        rec = records.read(folder / RUNS[1] / records.RECORD)
        records.write(run_dir / records.RECORD, dict(rec, status="failed"))
    before = contents(run_dir)
    capsys.readouterr()
    runner.run_study(s, out, resume=True, progress=False)
    assert contents(run_dir) == before
    assert "left alone" in capsys.readouterr().out
    problem = records.table(folder).set_index("run_id").loc[RUNS[0], "problem"]
    assert (f"the record of run '{RUNS[1]}'" if holds != "no record" else "no run record beside the log") in problem


def unreadable(monkeypatch, folder):
    """`chmod 000 folder`, which root does not feel: every look inside the folder is refused."""
    inside = str(folder) + os.sep

    def guard(real, itself):
        def call(path, *args, **kwargs):
            name = os.fsdecode(path) if isinstance(path, str | bytes | os.PathLike) else ""
            if name.startswith(inside) or itself and name == str(folder):
                raise PermissionError(errno.EACCES, "Permission denied", name)
            return real(path, *args, **kwargs)
        return call

    for name, itself in (("stat", False), ("lstat", False), ("open", False), ("listdir", True), ("scandir", True)):
        monkeypatch.setattr(os, name, guard(getattr(os, name), itself))


def test_an_unreadable_run_folder_is_a_problem_and_the_rest_goes_on(tmp_path, fake, capsys, monkeypatch):
    s, out, folder = finished(tmp_path)
    rerun(folder, RUNS[1])
    unreadable(monkeypatch, folder / RUNS[0])
    frame = records.table(folder).set_index("run_id")
    assert frame.loc[RUNS[0], "status"] == "unreadable"
    assert frame.loc[RUNS[0], "problem"] == f"{folder / RUNS[0]}: cannot be read (Permission denied)"
    assert frame.loc[RUNS[1], "status"] == "failed"
    capsys.readouterr()
    assert cli.main(["status", str(folder)]) == 1
    assert "Permission denied" in capsys.readouterr().out
    results = runner.run_study(s, out, resume=True, progress=False)
    assert results[RUNS[1]]["status"] == "complete"
    assert f"{RUNS[0]}: {folder / RUNS[0]} cannot be read (Permission denied): left alone" in capsys.readouterr().out


def test_a_link_into_an_unreadable_folder_is_a_problem_row(tmp_path, fake, capsys, monkeypatch):
    s, out, folder = finished(tmp_path)
    closed = tmp_path / "closed"
    (closed / "run").mkdir(parents=True)
    (folder / "elsewhere").symlink_to(closed / "run")
    unreadable(monkeypatch, closed)
    frame = records.table(folder).set_index("run_id")
    assert "a link (to " in frame.loc["elsewhere", "problem"] and len(frame) == 3
    capsys.readouterr()
    assert cli.main(["status", str(folder), str(folder / "elsewhere"), str(closed / "run")]) == 1
    err = capsys.readouterr().err
    assert "elsewhere: a link (to " in err and "run: cannot be read (Permission denied)" in err


DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize("field, value, says", [
    ("status", 5, "`status` is 5, expected one of running, complete"),
    ("config", [], "`config` is [], expected an object"),
    ("environment", json.loads("[" * 500 + "]" * 500), "nested too deeply (at most 64 levels)"),
    ("launcher", "pid 1", '`launcher` is "pid 1", expected an object'),
    ("duration_s", "forever", '`duration_s` is "forever", expected seconds'),
    ("duration_s", float("nan"), "`duration_s` is NaN, expected seconds"),
    ("failure", {"cause": "\u001b[2J"}, "`failure.cause` is \"\\u001b[2J\", expected one of out_of_memory"),
    ("analysis", [1], "`analysis` is [1], expected a list of objects"),
    ("analysis", [{"recomputed_throughput": "fast"}], '`analysis[0].recomputed_throughput` is "fast"'),
    ("log", "../../../etc/passwd", '`log` is "../../../etc/passwd", expected a file name in the run\'s folder'),
    ("child", {"pid": "1"}, '`child.pid` is "1", expected a PID'),
    ("run_id", 7, "`run_id` is 7, expected a run id"),
])
def test_a_record_of_the_wrong_shape_is_named_and_blocks_nothing(tmp_path, fake, capsys, field, value, says):
    s, out, folder = finished(tmp_path)
    path = folder / RUNS[0] / records.RECORD
    rec = dict(records.read(path), status="running")
    rec[field] = value
    path.write_text(json.dumps(rec))
    rerun(folder, RUNS[1])
    frame = records.table(folder).set_index("run_id")
    assert frame.loc[RUNS[0], "status"] == "unreadable" and str(path) in frame.loc[RUNS[0], "problem"]
    assert says in frame.loc[RUNS[0], "problem"], frame.loc[RUNS[0], "problem"]
    capsys.readouterr()
    assert cli.main(["status", str(folder)]) == 1
    shown = capsys.readouterr().out
    assert "nan" not in shown.lower().replace("nan,", "") and "forever" not in shown.split("run.json")[0]
    results = runner.run_study(s, out, resume=True, progress=False)
    assert results[RUNS[1]]["status"] == "complete" and RUNS[0] not in results
    assert records.config_beside(folder / RUNS[1] / f"{RUNS[1]}.log")["batch_size"] == 8


def test_a_record_nested_past_the_parser_s_stack_is_a_problem_not_a_crash(tmp_path, fake):
    s, out, folder = finished(tmp_path)
    (folder / RUNS[0] / records.RECORD).write_text('{"status": "failed", "config": {}, "x": ' + DEEP + "}")
    (folder / RUNS[0] / f"{RUNS[0]}.log.run.json").write_text(DEEP)
    assert "nested too deeply" in records.table(folder).set_index("run_id").loc[RUNS[0], "problem"]
    assert records.config_beside(folder / RUNS[0] / f"{RUNS[0]}.log") == {}
    (folder / RUNS[0] / f"{RUNS[0]}.log.run.json").unlink()
    assert records.config_beside(folder / RUNS[0] / f"{RUNS[0]}.log") == {}  # run.json beside it: as deep
    runner.run_study(s, out, resume=True, progress=False)  # left alone, no RecursionError


def test_status_shows_a_dash_not_nan_in_healthy_rows(tmp_path, fake, capsys):
    """A row that lacks a value (an unreadable record's) made pandas turn the healthy rows' None into NaN."""
    s, out, folder = finished(tmp_path)
    (folder / RUNS[0] / records.RECORD).write_text('{"status": "comp')
    capsys.readouterr()
    assert cli.main(["status", str(folder)]) == 1
    healthy = next(line for line in capsys.readouterr().out.splitlines() if RUNS[1] in line)
    assert "nan" not in healthy and "complete" in healthy and " - " in healthy
