"""Hostile values in a study reach the printed command line and the job script quoted (issue 21, 2-3).

One golden file per launcher (`tests/golden/hostile__<launcher>.txt`, regenerated with
BENCHBOOK_UPDATE_GOLDEN=1), and each printed command, pasted into bash with stand-ins for docker,
mpirun, horovodrun and srun on PATH, passes every value as one argument and runs nothing else.
"""

import json
import os
import shlex
import subprocess
from pathlib import Path

import pytest

from benchbook.studies import runner, study
from benchbook.studies.launchers.base import Command, UnsafeCommandError

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "golden"
LAUNCHERS = ["local", "mpirun", "horovodrun", "slurm"]

HOSTILE = """\
schema_version: 1
name: hostile
model: resnet50_tf
runtime: ngc
code: {{repository: https://github.com/NVIDIA/DeepLearningExamples, commit: 99b1c898cead5603c945721162270c2fe077b4a2,
       workdir: "/workspace/rn50 $(touch MARK)"}}
container: {{image: nvidia_rn50_tf}}
data: {{path: "/data/it's `touch MARK`"}}
launcher:
  name: {launcher}
  args: ["--x=$(touch MARK)"]
  slurm: {{partition: "gpu $(touch MARK)", sbatch: ["--comment=$(touch MARK)"], srun: ["--label;touch MARK"]}}
hosts: [node1]
sweep:
  gpus: 2
  batch_size: 128
iterations: 100
warmup_steps: 10
env:
  A: "1; touch MARK"
  B: "$(touch MARK)"
  C: "it's \\"quoted\\" `touch MARK`"
options:
  tag: "x; touch MARK"
  -e: "$(touch MARK)"
"""


def plan(tmp_path, launcher):
    path = tmp_path / f"hostile_{launcher}.yaml"
    path.write_text(HOSTILE.format(launcher=launcher))
    return runner.plan(study.load(path), Path("/runs"))


@pytest.mark.parametrize("launcher", LAUNCHERS)
def test_hostile_values_golden(tmp_path, launcher):
    text = "".join(f"# {rid}\n{cmd.shell()}\n" for rid, _d, _c, cmd in plan(tmp_path, launcher))
    golden = GOLDEN / f"hostile__{launcher}.txt"
    if os.environ.get("BENCHBOOK_UPDATE_GOLDEN"):
        golden.write_text(text)
    assert text == golden.read_text()


def stand_ins(folder: Path) -> Path:
    """docker, mpirun, horovodrun, mpiexec and srun that write their arguments and A, B, C as JSON."""
    bin_dir = folder / "bin"
    bin_dir.mkdir()
    for name in ("docker", "mpirun", "horovodrun", "mpiexec", "srun"):
        tool = bin_dir / name
        tool.write_text("#!/usr/bin/env python3\nimport json, os, sys\n"
                        f"with open({str(folder / 'calls.jsonl')!r}, 'a') as f:\n"
                        "    f.write(json.dumps({'argv': sys.argv[1:], 'env': {k: os.environ.get(k) "
                        "for k in 'ABC'}}) + '\\n')\n")
        tool.chmod(0o755)
    return bin_dir


@pytest.mark.parametrize("launcher", LAUNCHERS)
def test_pasted_commands_run_nothing_but_the_command(tmp_path, launcher):
    bin_dir = stand_ins(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    values = {"A": "1; touch MARK", "B": "$(touch MARK)", "C": "it's \"quoted\" `touch MARK`"}
    for _rid, _d, _c, cmd in plan(tmp_path, launcher):
        if cmd.script is not None:  # the job script, as sbatch would hand it to bash
            script = work / "job.sh"
            script.write_text(cmd.script)
            subprocess.run(["bash", str(script)], cwd=work, env=env, check=False, capture_output=True)
        else:
            subprocess.run(["bash", "-c", cmd.shell()], cwd=work, env=env, check=True, capture_output=True)
        assert not (work / "MARK").exists(), cmd.shell()
        calls = [json.loads(line) for line in (tmp_path / "calls.jsonl").read_text().splitlines()]
        last = calls[-1]
        expected = cmd.argv if cmd.script is None else shlex.split(cmd.script.splitlines()[-2])
        assert last["argv"] == expected[1:]
        if cmd.script is not None or launcher == "local":  # docker run passes them with -e, not in its own env
            assert {k: last["env"][k] for k in values} == (values if cmd.script is not None else
                                                            {k: None for k in values})
        assert "touch MARK" in " ".join(last["argv"])  # the values arrived, as arguments


def test_an_env_name_that_is_not_a_name_is_refused_by_the_command_itself():
    with pytest.raises(UnsafeCommandError, match="'A=1; touch x; B' is not a name"):
        Command(["true"], {"A=1; touch x; B": "y"}).shell()
    with pytest.raises(UnsafeCommandError, match="control character"):
        Command(["true"], {"A": "1\ntouch x"}).shell()


def test_pasted_cpu_command_keeps_variables_to_the_command(tmp_path):
    """A CPU run's variables are a prefix of the printed line (no container): each is one assignment."""
    bin_dir = stand_ins(tmp_path)
    path = tmp_path / "cpu.yaml"
    path.write_text("schema_version: 1\nname: hostile-cpu\nmodel: resnet50_tf\nruntime: cpu\n"
                    "sweep: {batch_size: 8, processes: 2}\niterations: 3\nwarmup_steps: 1\n"
                    "env: {A: '1; touch MARK', B: '$(touch MARK)', C: \"it's `touch MARK`\"}\n")
    (_rid, _d, _c, cmd), = runner.plan(study.load(path), tmp_path / "runs", python="/envs/tf/bin/python")
    assert cmd.shell().startswith("A='1; touch MARK' B='$(touch MARK)' C='it'\"'\"'s `touch MARK`' mpiexec ")
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    subprocess.run(["bash", "-c", cmd.shell()], cwd=tmp_path, env=env, check=True, capture_output=True)
    assert not (tmp_path / "MARK").exists()
    call = json.loads((tmp_path / "calls.jsonl").read_text())
    assert call["argv"] == cmd.argv[1:] and call["env"] == cmd.env
