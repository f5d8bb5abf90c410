"""`benchbook mlperf run`: launch studies (params/mlperf/) checked on load, their dry-run against the
golden files and against the implementation README's own line, sbatch run as an argv with a fake
sbatch (never a real one), and a job's logs scored against the published score."""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path

import pytest
import yaml

from benchbook.cli import main
from benchbook.mlperf import launch
from test_mlperf_mllog import result_text, write

ROOT = Path(__file__).resolve().parents[1]
STUDIES = sorted((ROOT / "params" / "mlperf").glob("*.yaml"))
GOLDEN = ROOT / "tests" / "golden" / "mlperf"
# The README's launch line as it stands, mlcommons/training_results_v0.7@c66406115bb3c60cb9c49889b076727ccecba31e
# NVIDIA/benchmarks/resnet/implementations/dgxa100_ngc20.06_mxnet/README.md:
README_V07_RESNET = ('CONT="<docker/registry>/mlperf-nvidia:image_classification" DATADIR=<path/to/data/dir> '
                     'LOGDIR=<path/to/output/dir> sbatch -N $DGXNNODES -t $WALLTIME run.sub')


def test_every_study_has_a_golden_dry_run():
    assert STUDIES, "no launch study in params/mlperf/"
    assert {p.stem for p in STUDIES} == {p.stem for p in GOLDEN.glob("*.txt")}


@pytest.mark.parametrize("path", STUDIES, ids=lambda p: p.stem)
def test_dry_run_is_the_golden_file(path, capsys):
    assert main(["mlperf", "run", str(path), "--dry-run"]) == 0
    assert capsys.readouterr().out == (GOLDEN / f"{path.stem}.txt").read_text(encoding="utf-8")


def _split(command: str) -> tuple[dict[str, str], list[str]]:
    words = shlex.split(command)
    n = next(i for i, w in enumerate(words) if "=" not in w)
    return dict(w.split("=", 1) for w in words[:n]), words[n:]


@pytest.mark.parametrize("path", STUDIES, ids=lambda p: p.stem)
def test_dry_run_is_the_readme_line_with_the_study_values(path):
    """The README's variables and sbatch line, its $DGXNNODES and $WALLTIME the study's nodes and wall
    time, after `cd` to the implementation and the README's own `source config_...sh`."""
    study = launch.load(path)
    cd, source, command = study.lines()
    assert shlex.split(cd) == ["cd", study.implementation]
    assert source == study.readme.source == f"source {study.config}"
    readme_env, readme_argv = _split(study.readme.command)
    env, argv = _split(command)
    assert set(readme_env) <= set(env) and set(env) - set(readme_env) == {"NEXP"}
    assert env == {"CONT": study.image, "DATADIR": study.datadir, "LOGDIR": study.logdir, "NEXP": str(study.repeats)}
    filled = {"$DGXNNODES": str(study.nodes), "${DGXNNODES}": str(study.nodes), "$WALLTIME": study.walltime,
              "${WALLTIME}": study.walltime}
    assert argv == [filled.get(w, w) for w in readme_argv]


def test_the_shipped_study_quotes_the_readme_as_it_stands():
    study = launch.load(ROOT / "params" / "mlperf" / "nvidia_v0.7_resnet_dgxa100.yaml")
    assert study.readme.command == README_V07_RESNET
    docstring = " ".join(launch.__doc__.replace("\\\n", " ").split())  # one shell line, continued with \\
    assert README_V07_RESNET in docstring
    assert (study.nodes, study.walltime, study.repeats) == (1, "01:00:00", 5)


def _study(tmp_path: Path, **changes) -> Path:
    doc = yaml.safe_load(STUDIES[0].read_text(encoding="utf-8"))
    impl = tmp_path / "impl"
    doc.update(implementation=str(impl), logdir=str(tmp_path / "logs"), datadir=str(tmp_path / "data"))
    doc.update(changes)
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


@pytest.mark.parametrize("field, value, message", [
    ("image", "Registry/UPPER case;rm", "image = 'Registry/UPPER case;rm': 'Registry/UPPER case;rm' is not a docker "
                                        "image reference"),
    ("datadir", "/data; rm -rf /", "datadir = '/data; rm -rf /': '/data; rm -rf /' is not an absolute path"),
    ("logdir", "/logs\nsbatch evil.sub", "is not an absolute path"),
    ("logdir", "relative/logs", "is not an absolute path"),
    ("implementation", "/impl/../../etc", "no '..'"),
    ("config", "config_X.sh; rm", "config = 'config_X.sh; rm': String should match pattern"),
    ("config", "../config_X.sh", "String should match pattern"),
    ("nodes", 0, "nodes = 0: Input should be greater than or equal to 1"),
    ("nodes", "1", "nodes = '1': Input should be a valid integer"),
    ("walltime", "1 hour", "walltime = '1 hour': String should match pattern"),
    ("repeats", 4, ": repeats: 4 runs, but a resnet result needs 5 runs (mlcommons/logging"),
    ("repeats", 10_000, "repeats = 10000: Input should be less than or equal to 100"),
    ("nexp", 5, "unknown key 'nexp'"),
])
def test_bad_values_are_refused_with_file_and_line(tmp_path, field, value, message):
    path = _study(tmp_path, **{field: value})
    with pytest.raises(launch.LaunchError) as err:
        launch.load(path)
    text = str(err.value)
    assert message in text
    line = next(i for i, t in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
                if t.startswith(f"{field}:"))
    assert text.startswith(f"{path}:{line}: ") or f"\n{path}:{line}: " in text


def test_a_study_that_is_not_a_mapping(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text("- a\n- b\n", encoding="utf-8")
    with pytest.raises(launch.LaunchError, match="a launch study is a YAML mapping"):
        launch.load(path)


def _implementation(tmp_path: Path) -> Path:
    impl = tmp_path / "impl"
    write(impl / "run.sub", "#!/bin/bash\n")
    write(impl / "config_DGXA100.sh", "export DGXNNODES=1\nexport WALLTIME=01:00:00\nexport DGXSYSTEM=DGXA100\n")
    return impl


def _fake_sbatch(tmp_path: Path, output: str = "Submitted batch job 4242", code: int = 0) -> Path:
    """An sbatch that records its argv, folder and environment, and answers as sbatch does."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    seen = tmp_path / "seen.json"
    write(bin_dir / "sbatch", f"""#!{os.environ.get('PYTHON', '/usr/bin/env python3')}
import json, os, sys
keys = ("CONT", "DATADIR", "LOGDIR", "NEXP", "DGXSYSTEM")
json.dump({{"argv": sys.argv[1:], "cwd": os.getcwd(), "env": {{k: os.environ.get(k) for k in keys}}}},
          open({str(seen)!r}, "w"))
print({output!r})
sys.exit({code})
""")
    (bin_dir / "sbatch").chmod(0o755)
    return seen


def test_run_submits_through_sbatch_as_the_readme_does(tmp_path, monkeypatch, capsys):
    impl = _implementation(tmp_path)
    seen = _fake_sbatch(tmp_path)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    path = _study(tmp_path)
    assert main(["mlperf", "run", str(path)]) == 0
    got = json.loads(seen.read_text(encoding="utf-8"))
    assert got["argv"] == ["-N", "1", "-t", "01:00:00", "run.sub"]
    assert Path(got["cwd"]) == impl
    assert got["env"] == {"CONT": "registry.example.com/mlperf-nvidia:image_classification",
                          "DATADIR": str(tmp_path / "data"), "LOGDIR": str(tmp_path / "logs"), "NEXP": "5",
                          "DGXSYSTEM": "DGXA100"}  # the config was sourced
    jobs = json.loads((tmp_path / "logs" / launch.JOBS_FILE).read_text(encoding="utf-8"))
    assert [j["job"] for j in jobs] == ["4242"] and jobs[0]["study"] == "nvidia_v0.7_resnet_dgxa100"
    assert "job 4242" in capsys.readouterr().out


def test_a_failed_sbatch_is_an_error_and_nothing_is_recorded(tmp_path, monkeypatch, capsys):
    _implementation(tmp_path)
    _fake_sbatch(tmp_path, output="sbatch: error: invalid partition", code=1)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    assert main(["mlperf", "run", str(_study(tmp_path))]) == 2
    assert "sbatch failed (exit 1): sbatch: error: invalid partition" in capsys.readouterr().err
    assert not (tmp_path / "logs" / launch.JOBS_FILE).exists()


def test_without_slurm_the_error_says_so(tmp_path, monkeypatch, capsys):
    _implementation(tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert main(["mlperf", "run", str(_study(tmp_path))]) == 2
    assert "sbatch is not on PATH" in capsys.readouterr().err


def test_the_dry_run_quotes_what_the_shell_would_split(tmp_path, capsys):
    path = _study(tmp_path, implementation="/opt/a+b/impl", image="registry.example.com:5000/x/y:tag-1")
    assert main(["mlperf", "run", str(path), "--dry-run"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "cd /opt/a+b/impl" and lines[2].startswith("CONT=registry.example.com:5000/x/y:tag-1 ")


def test_the_jobs_logs_are_scored_against_the_published_score(tmp_path, capsys):
    """Two jobs in LOGDIR, run.sub's <log base>_<n>.log: one of 5 runs (scored), one cut short (invalid)."""
    logs = tmp_path / "logs"
    for n, minutes in enumerate((40, 39, 41, 38, 42), 1):
        write(logs / f"rsnt50_1x8x408_2011250900_{n}.log", result_text(minutes, org="NVIDIA"))
    for n in (1, 2):
        write(logs / f"rsnt50_1x8x408_2011260900_{n}.log", result_text(40, org="NVIDIA"))
    write(logs / "notes.txt", "not a log\n")
    path = _study(tmp_path)
    assert main(["mlperf", "run", str(path), "--score", "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [Path(r["folder"]).name for r in rows] == ["rsnt50_1x8x408_2011250900", "rsnt50_1x8x408_2011260900"]
    assert rows[0]["score_minutes"] == pytest.approx(40.0) and rows[0]["valid"]
    assert rows[0]["published_minutes"] == 39.7797
    assert rows[0]["ratio"] == pytest.approx(40.0 / 39.7797)
    assert rows[0]["published_source"].startswith("mlcommons/training_results_v0.7@0a8a85a2:NVIDIA/results/")
    assert (rows[0]["submitter"], rows[0]["system"], rows[0]["round"]) == ("NVIDIA", "dgxa100_ngc20.06_mxnet", "v0.7")
    assert not rows[1]["valid"] and rows[1]["reason"] == "2 of the 5 result files resnet needs"
    assert rows[1]["runs"] == 2 and rows[1]["ratio"] is None
    assert main(["mlperf", "run", str(path), "--score"]) == 0
    out = capsys.readouterr().out
    assert "1.006" in out and "published: mlcommons/training_results_v0.7@0a8a85a2" in out


def test_scoring_before_the_job_ran_says_so(tmp_path, capsys):
    (tmp_path / "logs").mkdir()
    assert main(["mlperf", "run", str(_study(tmp_path)), "--score"]) == 2
    assert "no <log base>_<n>.log file" in capsys.readouterr().err


def test_a_jobs_file_that_is_not_ours_submits_nothing(tmp_path, monkeypatch, capsys):
    _implementation(tmp_path)
    seen = _fake_sbatch(tmp_path)
    write(tmp_path / "logs" / launch.JOBS_FILE, "{not json")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    assert main(["mlperf", "run", str(_study(tmp_path))]) == 2
    err = capsys.readouterr().err
    assert "not the list of jobs benchbook writes" in err and "nothing submitted" in err
    assert not seen.exists()


def test_a_link_planted_as_the_jobs_file_is_refused(tmp_path, monkeypatch, capsys):
    _implementation(tmp_path)
    seen = _fake_sbatch(tmp_path)
    victim = write(tmp_path / "victim.json", "[1, 2]\n")
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / launch.JOBS_FILE).symlink_to(victim)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    assert main(["mlperf", "run", str(_study(tmp_path))]) == 2
    err = capsys.readouterr().err
    assert f"{launch.JOBS_FILE}: a link or not a plain file, refused" in err and "nothing submitted" in err
    assert victim.read_text() == "[1, 2]\n" and not seen.exists()


def test_the_jobs_file_is_replaced_whole(tmp_path, monkeypatch):
    _implementation(tmp_path)
    _fake_sbatch(tmp_path)
    record = write(tmp_path / "logs" / launch.JOBS_FILE, '[{"job": "1"}]\n')
    other = tmp_path / "other-name"
    os.link(record, other)  # a second name of the same file: a write in place would change it too
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    assert main(["mlperf", "run", str(_study(tmp_path))]) == 0
    assert [j["job"] for j in json.loads(record.read_text())] == ["1", "4242"]
    assert other.read_text() == '[{"job": "1"}]\n' and not list((tmp_path / "logs").glob(".run.*"))
