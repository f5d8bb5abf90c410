"""The `slurm` launcher: job scripts (always), and runs on a real Slurm cluster when one answers.

The cluster tests need `sinfo` to answer (`tools/slurm_cluster.sh up` starts a one-machine
cluster); they are skipped otherwise, and fail instead with BENCHBOOK_REQUIRE_SLURM=1 (CI). They
use the fake CPU workload of the runner tests, so no framework is needed.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchbook import commands, envs, records, runner, study
from benchbook.launchers import slurm

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).parent / "fixtures" / "runner"
FAKE = FIXTURES / "fake_workload.py"

STUDY = """\
schema_version: 1
model: resnet50_tf
runtime: cpu
sweep: {{batch_size: [8, 16], data: synthetic}}
iterations: 6
warmup: 2
timeout: {timeout}
options: {options}
launcher: {launcher}
"""


def make(tmp_path, launcher="slurm", options="{}", timeout="2m", name="fake") -> study.Study:
    p = tmp_path / f"{name}.yaml"
    p.write_text(STUDY.format(launcher=launcher, options=options, timeout=timeout))
    return study.load(p)


@pytest.fixture
def fake(monkeypatch):
    monkeypatch.setattr(commands.workloads, "script", lambda framework, model=None: FAKE, raising=False)
    monkeypatch.setattr(envs, "ensure", lambda framework, say=print: Path(sys.executable))


def _cluster() -> str | None:
    """Why there is no cluster to test with, or None when `sinfo` answers."""
    if not shutil.which("sinfo"):
        return "no sinfo on PATH (tools/slurm_cluster.sh up starts a one-machine cluster)"
    try:
        r = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, timeout=20)
    except subprocess.TimeoutExpired:
        return "sinfo did not answer"
    if r.returncode != 0 or not r.stdout.strip():
        return f"no Slurm controller answers: {r.stderr.strip()}"
    return None


@pytest.fixture
def cluster():
    why = _cluster()
    if why:
        if os.environ.get("BENCHBOOK_REQUIRE_SLURM"):
            pytest.fail(f"BENCHBOOK_REQUIRE_SLURM is set but {why}")
        pytest.skip(why)


# ---------------------------------------------------------------- job scripts


def test_time_limit_is_written_the_way_slurm_reads_it():
    assert slurm.slurm_time(90) == "00:02:00" and slurm.slurm_time(3600) == "01:00:00"
    assert slurm.slurm_time(1) == "00:01:00" and slurm.slurm_time(86400 + 1800) == "1-00:30:00"


def test_cpu_job_script(tmp_path, fake):
    s = make(tmp_path, launcher="{name: slurm, slurm: {partition: debug, account: perf, time: 10m, "
                                 "sbatch: [--qos=high], srun: [--cpu-bind=none]}}")
    (rid, run_dir, cfg, cmd), _ = runner.plan(s, tmp_path / "runs", python=sys.executable)
    assert cmd.argv == ["sbatch"] and cmd.launcher == "slurm" and cmd.pre == []
    lines = cmd.script.splitlines()
    assert lines[:9] == ["#!/bin/bash", f"#SBATCH --job-name={s.name}.{rid}", "#SBATCH --nodes=1",
                         "#SBATCH --ntasks-per-node=1", "#SBATCH --time=00:10:00", "#SBATCH --partition=debug",
                         "#SBATCH --account=perf", "#SBATCH --exclusive",
                         f"#SBATCH --output={run_dir / (rid + '.log')}"]
    assert "#SBATCH --qos=high" in lines and "--gpus-per-node" not in cmd.script
    assert lines[-1].startswith(f"srun --cpu-bind=none {sys.executable} {FAKE} --mode training_benchmark")
    # printed as a here-document that can be pasted on the login node
    assert cmd.shell().startswith("sbatch <<'SBATCH'\n#!/bin/bash\n") and cmd.shell().endswith("\nSBATCH")


def test_ngc_job_runs_one_task_per_gpu_in_pyxis_containers(tmp_path):
    text = (ROOT / "params" / "resnet50_tf" / "dlperf_scaling.yaml").read_text()
    p = tmp_path / "dlperf_slurm.yaml"
    p.write_text(text.replace("launcher: mpirun ", "launcher: {name: slurm, slurm: {mpi: pmix, exclusive: false}} ")
                 .replace("mode: exec\n  name: tf_resnet", "mode: run"))
    s = study.load(p)
    cmds = {rid: cmd for rid, _d, _c, cmd in runner.plan(s, Path("/runs"))}
    script = cmds["4n8g_amp_bs224_xla_dali_r1"].script
    assert "#SBATCH --nodes=4\n#SBATCH --ntasks-per-node=8\n#SBATCH --gpus-per-node=8\n" in script
    assert "export NCCL_DEBUG=INFO\n" in script and "docker" not in script and "mpirun" not in script
    srun = script.splitlines()[-1]
    assert srun.startswith("srun --mpi=pmix --container-image=nvidia_rn50_tf:20.03-resnet "
                           "--container-mounts=/datasets/ImageNet/tfrecord:/data/tfrecords,"
                           f"/runs/{s.name}/4n8g_amp_bs224_xla_dali_r1:/results "
                           "--container-workdir=/workspace/rn50v15 python3 main.py --mode=training_benchmark")
    one = cmds["1n1g_fp32_bs128_dali_r1"].script
    assert "#SBATCH --nodes=1\n#SBATCH --ntasks-per-node=1\n#SBATCH --gpus-per-node=1\n" in one


def test_slurm_refuses_docker_exec_studies(tmp_path):
    text = (ROOT / "params" / "resnet50_tf" / "dlperf_scaling.yaml").read_text()
    p = tmp_path / "bad.yaml"
    p.write_text(text.replace("launcher: mpirun ", "launcher: slurm "))
    with pytest.raises(study.StudyError, match="launcher slurm starts its own containers .pyxis.; container.mode "
                                               "'exec' is for runs started on this machine: write mode: run"):
        study.load(p)


def test_sbatch_missing_is_a_failed_run_with_the_fix(tmp_path, fake, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    s = make(tmp_path)
    results = runner.run_study(s, tmp_path / "runs", progress=False)
    for rec in results.values():
        assert rec["status"] == "failed" and rec["failure"]["cause"] == "crash"
        assert "`sbatch` not found: install the Slurm client" in rec["failure"]["detail"]


# ---------------------------------------------------------------- on a real cluster


def summary(results: dict) -> dict:
    """What must match between the same study run locally and through Slurm."""
    out = {}
    for rid, rec in results.items():
        (a,) = rec["analysis"]
        cfg = {k: v for k, v in rec["config"].items() if k != "study"}
        out[rid] = (rec["status"], rec["exit_code"], cfg, a["status"], a["iterations"], a["batch_size"],
                    a["recomputed_throughput"], a["reported_throughput"])
    return out


def test_a_study_through_slurm_matches_the_same_study_run_locally(tmp_path, fake, cluster):
    local = runner.run_study(make(tmp_path, launcher="local", name="same"), tmp_path / "local", progress=False)
    seen = []
    s = make(tmp_path, name="same")
    through = runner.run_study(s, tmp_path / "slurm", progress=False, echo=seen.append)
    assert summary(through) == summary(local)
    assert all(r["status"] == "complete" for r in through.values())
    for rid, rec in through.items():
        assert rec["slurm_job_id"].isdigit() and rec["command_launcher"] == "slurm"
        folder = tmp_path / "slurm" / s.name / rid
        assert (folder / f"{rid}.sbatch").read_text() == rec["job_script"]
        assert "Summary: train.ips" in (folder / f"{rid}.log").read_text()
    assert any("Summary: train.ips" in line for line in seen)  # the job's output is followed live


def test_a_failing_job_is_recorded_with_its_cause_and_the_study_goes_on(tmp_path, fake, cluster):
    results = runner.run_study(make(tmp_path, options="{behave: crash}"), tmp_path / "runs", progress=False)
    assert len(results) == 2
    for rec in results.values():
        assert rec["status"] == "failed" and rec["failure"]["cause"] == "crash"
        assert rec["failure"]["detail"].startswith("exit code 3: RuntimeError: boom")
        assert any("FAILED" in line for line in rec["failure"]["last_lines"])


def test_the_timeout_cancels_the_job(tmp_path, fake, cluster):
    s = make(tmp_path, options="{behave: hang}", timeout="3")
    results = runner.run_study(s, tmp_path / "runs", progress=False, only=lambda rid: "bs8" in rid)
    (rec,) = results.values()
    assert rec["status"] == "failed" and rec["failure"]["cause"] == "timeout"
    assert _gone(rec["slurm_job_id"])


def _gone(job_id: str) -> bool:
    state, _, _ = slurm.job_state(job_id)
    return state is None or state in slurm.TERMINAL


def test_interrupting_the_study_cancels_the_job(tmp_path, cluster):
    s = make(tmp_path, options="{behave: hang}")
    env = dict(os.environ, PYTHONPATH=str(ROOT / "lib"))
    proc = subprocess.Popen([sys.executable, str(FIXTURES / "drive.py"), "run", str(s.path), "--out",
                             str(tmp_path / "runs"), "--quiet"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    folder = tmp_path / "runs" / s.name
    try:
        end = time.monotonic() + 60
        job = None
        while job is None:
            assert time.monotonic() < end and proc.poll() is None, proc.communicate()
            running = [r for r in records.find(folder).values() if r.get("slurm_job_id")]
            if running and slurm.job_state(running[0]["slurm_job_id"])[0] == "RUNNING":
                job, rid = running[0]["slurm_job_id"], running[0]["run_id"]
            time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130
    assert _gone(job)
    rec = records.find(folder)[rid]
    assert rec["status"] == "interrupted" and rec["failure"]["cause"] == "interrupted"


def test_publish_runs_each_notebook_as_a_slurm_job(tmp_path, cluster):
    from benchbook import publish

    logs = tmp_path / "mxnet"
    shutil.copytree(Path(__file__).parent / "fixtures" / "ngc_mxnet", logs)
    targets = [publish.for_logs(logs, "resnet50_mxnet", "mxnet", "ngc_mxnet_resnet50")]
    reports = tmp_path / "reports"
    (entry,) = publish.publish(targets, reports, progress=False, executor="slurm", slurm={"time": 600})
    assert entry["status"] == "ok", entry.get("error")
    (job,) = (reports / "mxnet" / "job").glob("*.sbatch")
    assert "benchbook.publish" in job.read_text() and "#SBATCH --time=00:10:00" in job.read_text()
    assert (reports / "mxnet" / "report.html").is_file() and (reports / "mxnet" / entry["executed"]).is_file()
    assert records.read_json(reports / "mxnet" / "summary.json")["reference"] == "ngc_mxnet_resnet50"
    assert 'href="mxnet/report.html"' in (reports / "index.html").read_text()


def test_publish_job_refused_is_a_failed_report(tmp_path, monkeypatch):
    from benchbook import publish

    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    logs = tmp_path / "mxnet"
    shutil.copytree(Path(__file__).parent / "fixtures" / "ngc_mxnet", logs)
    (entry,) = publish.publish([publish.for_logs(logs, "resnet50_mxnet", "mxnet")], tmp_path / "reports",
                               progress=False, executor="slurm")
    assert entry["status"] == "failed" and "`sbatch` not found" in entry["error"]
