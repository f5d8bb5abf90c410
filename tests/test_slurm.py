"""The `slurm` launcher and `publish --executor slurm`: job scripts and how jobs end (always), and
runs on a real Slurm cluster when one answers.

The cluster tests need `sinfo` to answer (`tools/slurm_cluster.sh up` starts a one-machine
cluster); they are skipped otherwise, and fail instead with BENCHBOOK_REQUIRE_SLURM=1 (CI). They
use the fake CPU workload of the runner tests, so no framework is needed: the job runs it with
this Python, which the node sees (one machine).
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from benchbook import cli
from benchbook.runfolder import records
from benchbook.studies import commands, failures, runner, study
from benchbook.studies.launchers import slurm
from benchbook.studies.launchers.base import Command

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).parent / "fixtures" / "runner"

STUDY = """\
schema_version: 1
model: resnet50_tf
runtime: cpu
sweep: {{batch_size: [8, 16], data: synthetic}}
iterations: 6
warmup_steps: 2
timeout: {timeout}
no_progress: {no_progress}
options: {options}
launcher: {launcher}
"""


def make(tmp_path, launcher="slurm", options="{}", timeout="2m", name="fake", no_progress="2m",
         extra="") -> study.Study:
    p = tmp_path / f"{name}.yaml"
    p.write_text(STUDY.format(launcher=launcher, options=options, timeout=timeout, no_progress=no_progress) + extra)
    return study.load(p)


@functools.cache
def _cluster() -> str | None:
    """Why there is no cluster to test with, or None when `sinfo` answers (asked once: a controller
    that is down takes sinfo seconds to say so)."""
    if not shutil.which("sinfo"):
        return "no sinfo on PATH (tools/slurm_cluster.sh up starts a one-machine cluster)"
    try:
        r = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, timeout=20)
    except subprocess.TimeoutExpired:
        return "sinfo did not answer within 20 s"
    if r.returncode != 0 or not r.stdout.strip():
        return f"no Slurm controller answers sinfo: {r.stderr.strip()} (tools/slurm_cluster.sh up starts one)"
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
    assert lines[:11] == ["#!/bin/bash", f"#SBATCH --job-name={s.name}.{rid}", "#SBATCH --nodes=1",
                          "#SBATCH --ntasks-per-node=1", "#SBATCH --time=00:10:00", "#SBATCH --partition=debug",
                          "#SBATCH --account=perf", "#SBATCH --exclusive",
                          f"#SBATCH --output={run_dir / (rid + '.log')}", "#SBATCH --open-mode=append",
                          "#SBATCH --qos=high"]
    assert "--gpus-per-node" not in cmd.script and "--cpus-per-task" not in cmd.script
    assert lines[-2].startswith(f"srun --cpu-bind=none {sys.executable} {fake} --mode training_benchmark")
    # the exit status is kept beside the log, for a job the controller has forgotten
    assert lines[-1] == (f'status=$?; echo "{{\\"exit_status\\": $status}}" > {run_dir / (rid + ".exit.json")}; '
                         "exit $status")
    # printed as a here-document that can be pasted on the login node
    assert cmd.shell().startswith("sbatch <<'SBATCH'\n#!/bin/bash\n") and cmd.shell().endswith("\nSBATCH")


def test_cpu_job_with_a_thread_count_gets_that_many_cpus_per_task(tmp_path, fake):
    s = make(tmp_path, extra="cpu: {threads: 2}\n")
    (_rid, _d, _c, cmd), _ = runner.plan(s, tmp_path / "runs", python=sys.executable)
    lines = cmd.script.splitlines()
    assert "#SBATCH --cpus-per-task=2" in lines and "export OMP_NUM_THREADS=2" in lines
    assert lines[-2].startswith("srun --cpus-per-task=2 ")  # srun does not always inherit it (Slurm >= 22.05)


def test_the_job_script_runs_as_bash_and_keeps_the_exit_status(tmp_path, fake):
    """The script itself, with a stand-in for srun: the exit status file and the job's status."""
    s = make(tmp_path, options="{behave: crash}")
    (rid, run_dir, _c, cmd), _ = runner.plan(s, tmp_path / "runs", python=sys.executable)
    run_dir.mkdir(parents=True)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "srun").write_text('#!/bin/sh\nexec "$@"\n')
    (bin_dir / "srun").chmod(0o755)
    r = subprocess.run(["bash", "-c", cmd.script], env=dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}"),
                       capture_output=True, text=True)
    assert r.returncode == 3 and "RuntimeError: boom" in r.stderr
    assert json.loads((run_dir / f"{rid}.exit.json").read_text()) == {"exit_status": 3}


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
    assert "--exclusive" not in script and "--cpus-per-task" not in script
    srun = script.splitlines()[-2]
    assert srun.startswith("srun --mpi=pmix --container-image=nvidia_rn50_tf:20.03-resnet "
                           "--container-mounts=/datasets/ImageNet/tfrecord:/data/tfrecords,"
                           f"/runs/{s.name}/4n8g_amp_bs224_xla_dali_r1:/results "
                           "--container-workdir=/workspace/rn50v15 python3 main.py --mode=training_benchmark")
    # the exit status is written on the batch host (outside the container), into the run folder
    assert script.splitlines()[-1].endswith(f"> /runs/{s.name}/4n8g_amp_bs224_xla_dali_r1/"
                                            "4n8g_amp_bs224_xla_dali_r1.exit.json; exit $status")
    one = cmds["1n1g_fp32_bs128_dali_r1"].script
    assert "#SBATCH --nodes=1\n#SBATCH --ntasks-per-node=1\n#SBATCH --gpus-per-node=1\n" in one


def test_slurm_refuses_docker_exec_studies(tmp_path):
    text = (ROOT / "params" / "resnet50_tf" / "dlperf_scaling.yaml").read_text()
    p = tmp_path / "bad.yaml"
    p.write_text(text.replace("launcher: mpirun ", "launcher: slurm "))
    with pytest.raises(study.StudyError, match="launcher slurm starts its own containers .pyxis.; container.mode "
                                               "'exec' is for runs started on this machine: write mode: run"):
        study.load(p)


def test_shipped_slurm_studies(tmp_path):
    cpu = study.load(ROOT / "params" / "resnet50_tf" / "cpu_slurm.yaml")
    smoke = study.load(ROOT / "params" / "resnet50_tf" / "cpu_smoke.yaml")
    assert cpu.launcher.name == "slurm" and cpu.sweep == smoke.sweep and cpu.cpu == smoke.cpu
    assert (cpu.iterations, cpu.warmup_steps) == (smoke.iterations, smoke.warmup_steps)
    ngc = study.load(ROOT / "params" / "resnet50_tf" / "ngc_slurm.yaml")
    assert ngc.launcher.name == "slurm" and ngc.launcher.slurm.mpi == "pmix"
    script = {rid: cmd.script for rid, _d, _c, cmd in runner.plan(ngc, Path("/runs"))}["4n8g_amp_bs256_xla_r1"]
    assert "#SBATCH --nodes=4\n#SBATCH --ntasks-per-node=8\n#SBATCH --gpus-per-node=8\n" in script
    assert "'--container-image=nvcr.io#nvidia/tensorflow:20.12-tf1-py3'" in script
    assert "/results," in script and "--container-workdir=/workspace/rn50v15_tf" in script


# ---------------------------------------------------------------- how a job ended


# the exit status and signal `scontrol show job -o` gives in each end state, as seen on Slurm 22.05
@pytest.mark.parametrize("state, code, sig, tail, expected", [
    ("COMPLETED", 0, 0, [], ("COMPLETED", 0)),
    ("FAILED", 3, 0, ["srun: error: vm: task 0: Exited with exit code 3"], ("FAILED", 3)),
    ("FAILED", 139, 0, ["srun: error: vm: task 0: Segmentation fault"], ("FAILED", -11)),  # 128 + SIGSEGV
    ("FAILED", 137, 0, ["srun: error: vm: tasks 0-7: Killed"], ("FAILED", -9)),
    ("FAILED", 139, 0, ["srun: error: vm: task 0: Exited with exit code 139"], ("FAILED", 139)),
    ("CANCELLED", 0, 15, [], ("CANCELLED", -15)),
    ("CANCELLED", 0, 0, [], ("CANCELLED", -15)),  # cancelled while pending: never an exit status of 0
    ("CANCELLED", 1, 0, ["srun: error: vm: task 0: Terminated"], ("CANCELLED", -15)),  # the shell outlived its step
    ("TIMEOUT", 0, 15, [], ("TIMEOUT", -15)),
    ("OUT_OF_MEMORY", 0, 0, [], ("OUT_OF_MEMORY", -9)),
    ("NODE_FAIL", 0, 0, [], ("NODE_FAIL", -15)),
])
def test_end_states_as_exit_codes(state, code, sig, tail, expected):
    assert slurm.ending_of(state, code, sig, tail) == expected


def test_a_purged_job_is_read_from_its_exit_status_file_or_its_log(tmp_path):
    status = tmp_path / "r1.exit.json"
    assert slurm.ending_of(None, None, None, [], status) == (None, None)  # nothing to go by
    status.write_text('{"exit_status": 3}\n')
    assert slurm.ending_of(None, None, None, [], status) == ("FAILED", 3)
    status.write_text('{"exit_status": 0}\n')
    assert slurm.ending_of(None, None, None, [], status) == ("COMPLETED", 0)
    gone = tmp_path / "none.exit.json"
    assert slurm.ending_of(None, None, None, ["slurmstepd-vm: error: *** JOB 38 ON vm CANCELLED AT "
                                              "2026-11-21T19:41:38 DUE TO TIME LIMIT ***"], gone) == ("TIMEOUT", -15)
    assert slurm.ending_of(None, None, None, ["slurmstepd-vm: error: *** JOB 37 ON vm CANCELLED AT "
                                              "2026-11-21T19:40:14 ***"], gone) == ("CANCELLED", -15)


def test_scontrol_line_is_read(monkeypatch):
    line = ("JobId=36 JobName=fail.sh UserId=root(0) GroupId=root(0) Priority=4294901724 Nice=0 Account=(null) "
            "JobState=FAILED Reason=NonZeroExitCode Dependency=(null) Requeue=1 Restarts=0 BatchFlag=1 ExitCode=3:0 "
            "RunTime=00:00:00 AllocNode:Sid=localhost:31568 NodeList=vm BatchHost=vm Command=/tmp/a b.sh "
            "StdOut=/tmp/fail.out Power=\n")
    monkeypatch.setattr(slurm, "_call", lambda argv, **kw: subprocess.CompletedProcess(argv, 0, line, ""))
    assert slurm.job_state("36") == ("FAILED", 3, 0)
    assert slurm.job_info("36")["NodeList"] == "vm"
    monkeypatch.setattr(slurm, "_call", lambda argv, **kw: subprocess.CompletedProcess(
        argv, 1, "", "slurm_load_jobs error: Invalid job id specified\n"))
    assert slurm.job_state("36") == (None, None, None)
    monkeypatch.setattr(slurm, "_call", lambda argv, **kw: subprocess.CompletedProcess(
        argv, 1, "", "slurm_load_jobs error: Unable to contact slurm controller (connect failure)\n"))
    with pytest.raises(slurm.SlurmError, match="Unable to contact slurm controller"):
        slurm.job_state("36")


def test_ctrl_c_during_the_submission_cancels_the_job_once_its_id_is_known(tmp_path, monkeypatch):
    """sbatch is not stopped halfway: the Ctrl-C waits until the job id is known, then cancels it."""
    cancelled, seen = [], {}

    def submit(script, output, argv=("sbatch",), env=None):
        os.kill(os.getpid(), signal.SIGINT)  # the user presses Ctrl-C while sbatch runs
        time.sleep(0.1)
        return "4242"

    monkeypatch.setattr(slurm, "submit", submit)
    monkeypatch.setattr(slurm, "cancel", cancelled.append)
    monkeypatch.setattr(slurm, "job_state", lambda job: ("CANCELLED", 0, 15))
    log = tmp_path / "r1.log"
    ending = slurm.Slurm().execute(Command(["sbatch"], launcher="slurm", script="#!/bin/bash\n"), log,
                                   started=seen.update)
    assert seen["slurm_job_id"] == "4242" and cancelled == ["4242"]
    assert ending.interrupted and failures.classify(ending, [])[0] == "interrupted"
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # the handlers are given back


def test_sbatch_missing_is_a_failed_run_with_the_fix(tmp_path, fake, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    s = make(tmp_path)
    results = runner.run_study(s, tmp_path / "runs", progress=False)
    assert len(results) == 2
    for rec in results.values():
        assert rec["status"] == "failed" and rec["failure"]["cause"] == "crash"
        assert "`sbatch` not found: install the Slurm client" in rec["failure"]["detail"]


def test_publish_job_refused_is_a_failed_report(tmp_path, monkeypatch):
    from benchbook.reports import publish

    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    logs = tmp_path / "mxnet"
    shutil.copytree(Path(__file__).parent / "fixtures" / "ngc_mxnet", logs)
    (entry,) = publish.publish([publish.for_logs(logs, "resnet50_mxnet", "mxnet")], tmp_path / "reports",
                               progress=False, executor="slurm")
    assert entry["status"] == "failed" and "`sbatch` not found" in entry["error"]
    assert "mxnet" in (tmp_path / "reports" / "index.html").read_text()


def test_publish_cli_options():
    args = cli.build_parser().parse_args(["publish", "--executor", "slurm", "--slurm-partition", "p",
                                          "--slurm-account", "a", "--slurm-time", "30m"])
    assert (args.executor, args.slurm_partition, args.slurm_account, args.slurm_time) == ("slurm", "p", "a", 1800)
    with pytest.raises(SystemExit):
        cli.build_parser().parse_args(["publish", "--slurm-time", "soon"])


# ---------------------------------------------------------------- on a real cluster


def summary(results: dict) -> dict:
    """What must match between the same study run locally and through Slurm."""
    out = {}
    for rid, rec in results.items():
        (a,) = rec["analysis"]
        cfg = {k: v for k, v in rec["config"].items() if k != "study"}
        out[rid] = (rec["status"], rec["exit_code"], rec["failure"], cfg, a["status"], a["iterations"],
                    a["batch_size"], a["recomputed_throughput"], a["reported_throughput"])
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
        node = socket.gethostname().split(".")[0]
        assert rec["slurm_nodes"] == slurm.job_info(rec["slurm_job_id"])["NodeList"] == node
        folder = tmp_path / "slurm" / s.name / rid
        assert (folder / f"{rid}.sbatch").read_text() == rec["job_script"]
        assert "Summary: train.ips" in (folder / f"{rid}.log").read_text()
        assert json.loads((folder / f"{rid}.exit.json").read_text()) == {"exit_status": 0}
        assert rec["failure"] is None and slurm.job_state(rec["slurm_job_id"])[0] == "COMPLETED"
    assert any("Summary: train.ips" in line for line in seen)  # the job's output is followed live
    assert any(line.startswith("slurm job ") and line.split(": ")[1].startswith(("PENDING", "RUNNING"))
               for line in seen)  # and the job's state as it changes


def test_a_job_sbatch_refuses_is_a_failed_run_with_its_message_and_the_study_goes_on(tmp_path, fake, cluster):
    s = make(tmp_path, launcher="{name: slurm, slurm: {partition: no_such_partition}}")
    results = runner.run_study(s, tmp_path / "runs", progress=False)
    assert len(results) == 2
    for rec in results.values():
        assert rec["status"] == "failed" and rec["failure"]["cause"] == "crash" and "slurm_job_id" not in rec
        assert rec["failure"]["detail"] == ("exit code 127: error: sbatch refused the job (exit 1): sbatch: error: "
                                            "invalid partition specified: no_such_partition / sbatch: error: Batch "
                                            "job submission failed: Invalid partition name specified")


SEGV = """\
import os, signal, datetime
print("DLL " + datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S.%f") + " - PARAMETER workload : fake", flush=True)
os.kill(os.getpid(), signal.SIGSEGV)
"""


@pytest.mark.parametrize("behave", ["crash", "oom", "segv"])
def test_a_failing_job_is_recorded_as_the_same_failure_as_locally(tmp_path, fake, cluster, monkeypatch, behave):
    if behave == "segv":
        script = tmp_path / "segv.py"
        script.write_text(SEGV)
        monkeypatch.setattr(commands.models, "workload_script", lambda framework, model=None: script)
    failed = {}
    only = None if behave == "crash" else (lambda rid: "bs8" in rid)  # one study that goes on is enough
    for launcher in ("local", "slurm"):
        (tmp_path / launcher).mkdir()
        s = make(tmp_path / launcher, launcher=launcher, options=f"{{behave: {behave}}}")
        failed[launcher] = runner.run_study(s, tmp_path / launcher / "runs", progress=False, only=only)
    assert len(failed["slurm"]) == (2 if behave == "crash" else 1)  # the study went on after the first failure
    for rid, rec in failed["slurm"].items():
        here = failed["local"][rid]
        assert rec["status"] == "failed" and rec["exit_code"] == here["exit_code"] != 0
        assert {k: rec["failure"][k] for k in ("cause", "detail")} == {k: here["failure"][k]
                                                                      for k in ("cause", "detail")}
        assert any(f"slurm job {rec['slurm_job_id']}: FAILED" in ln for ln in rec["failure"]["last_lines"])
    cause = next(iter(failed["slurm"].values()))["failure"]
    assert (cause["cause"], cause["detail"].split(":")[0]) == {
        "crash": ("crash", "exit code 3"), "oom": ("out_of_memory", "tensorflow.python.framework.errors_impl.Res"
                                                                     "ourceExhaustedError"),
        "segv": ("crash", "killed by SIGSEGV")}[behave]


def _gone(job_id: str) -> bool:
    state, _, _ = slurm.job_state(job_id)
    return state is None or state in slurm.TERMINAL


def _in_queue(job_id: str) -> bool:
    return job_id in slurm.queued([job_id])


def test_the_timeout_and_a_silent_log_cancel_the_job(tmp_path, fake, cluster):
    s = make(tmp_path, options="{behave: hang}", timeout="3")
    seen = []
    (rec,) = runner.run_study(s, tmp_path / "runs", progress=False, only=lambda rid: "bs8" in rid,
                              echo=seen.append).values()
    assert rec["status"] == "failed" and rec["failure"]["cause"] == "timeout"
    assert f"slurm job {rec['slurm_job_id']}: RUNNING (on {slurm.job_info(rec['slurm_job_id'])['NodeList']})" in seen
    assert rec["duration_s"] < 60 and not _in_queue(rec["slurm_job_id"])
    assert slurm.job_state(rec["slurm_job_id"])[0] == "CANCELLED"
    s = make(tmp_path, options="{behave: silent}", no_progress="3", name="silent")
    (rec,) = runner.run_study(s, tmp_path / "runs", progress=False, only=lambda rid: "bs8" in rid).values()
    assert rec["status"] == "failed" and rec["failure"]["cause"] == "no_progress"
    assert not _in_queue(rec["slurm_job_id"])


def test_a_job_cancelled_outside_benchbook_is_a_failed_run_that_says_so(tmp_path, fake, cluster):
    s = make(tmp_path, options="{behave: hang}")
    folder = tmp_path / "runs" / s.name

    def cancel_the_first_job():
        end = time.monotonic() + 60
        while time.monotonic() < end:
            jobs = [r["slurm_job_id"] for r in records.find(folder).values() if r.get("slurm_job_id")] \
                if folder.exists() else []
            if jobs and slurm.job_state(jobs[0])[0] == "RUNNING":
                subprocess.run(["scancel", jobs[0]], check=True)
                return
            time.sleep(0.2)

    killer = threading.Thread(target=cancel_the_first_job)
    killer.start()
    results = runner.run_study(s, tmp_path / "runs", progress=False, only=lambda rid: "bs8" in rid)
    killer.join()
    (rec,) = results.values()
    assert rec["status"] == "failed" and rec["failure"]["cause"] == "crash"
    assert rec["failure"]["detail"] == (f"killed by SIGTERM: error: slurm job {rec['slurm_job_id']} ended CANCELLED: "
                                        "the job was cancelled outside benchbook (scancel, or an administrator)")


def _running_job(folder: Path, proc: subprocess.Popen) -> tuple[str, str]:
    """(job id, run id) of the study's first job once it runs."""
    end = time.monotonic() + 60
    while True:
        assert time.monotonic() < end and proc.poll() is None, proc.communicate()
        running = [r for r in records.find(folder).values() if r.get("slurm_job_id")] if folder.exists() else []
        if running and slurm.job_state(running[0]["slurm_job_id"])[0] == "RUNNING":
            return running[0]["slurm_job_id"], running[0]["run_id"]
        time.sleep(0.2)


def _benchbook_run(s: study.Study, out: Path) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "lib"))
    return subprocess.Popen([sys.executable, str(FIXTURES / "drive.py"), "run", str(s.path), "--out", str(out),
                             "--quiet"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupting_the_study_cancels_the_job(tmp_path, cluster, sig):
    s = make(tmp_path, options="{behave: hang}")
    proc = _benchbook_run(s, tmp_path / "runs")
    folder = tmp_path / "runs" / s.name
    try:
        job, rid = _running_job(folder, proc)
        assert _in_queue(job)
        proc.send_signal(sig)
        proc.wait(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, proc.communicate()
    assert not _in_queue(job) and slurm.job_state(job)[0] == "CANCELLED"
    rec = records.find(folder)[rid]
    assert rec["status"] == "interrupted" and rec["failure"]["cause"] == "interrupted"
    assert len(records.find(folder)) == 1  # the study stopped: the next run was not submitted


def test_a_killed_benchbook_leaves_its_job_which_the_next_attempt_cancels(tmp_path, cluster, capsys):
    s = make(tmp_path, options="{behave: hang}")
    proc = _benchbook_run(s, tmp_path / "runs")
    folder = tmp_path / "runs" / s.name
    try:
        job, rid = _running_job(folder, proc)
        proc.kill()  # SIGKILL: nothing cancels the job
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    time.sleep(2)
    assert _in_queue(job) and records.find(folder)[rid]["status"] == "running"
    capsys.readouterr()
    s = make(tmp_path)  # the same study, its runs no longer hanging: the resumed run completes
    results = runner.run_study(s, tmp_path / "runs", resume=True, only=lambda run_id: run_id == rid,
                               progress=False, say=lambda line: None)
    assert not _in_queue(job) and slurm.job_state(job)[0] == "CANCELLED"
    assert f"{rid}: abandoned by its launcher; slurm job {job} cancelled" in capsys.readouterr().out
    rec = records.read(folder / rid / "attempts" / "1" / records.RECORD)  # the earlier attempt, moved aside
    assert rec["slurm_job_id"] == job and rec["status"] == "abandoned"
    assert results[rid]["status"] == "complete" and results[rid]["slurm_job_id"] != job


def test_publish_runs_each_notebook_as_a_slurm_job(tmp_path, cluster):
    from benchbook.reports import publish

    logs = tmp_path / "mxnet"
    shutil.copytree(Path(__file__).parent / "fixtures" / "ngc_mxnet", logs)
    reports = tmp_path / "reports"
    r = subprocess.run([sys.executable, "-m", "benchbook", "publish", "--executor", "slurm", "--slurm-time", "10m",
                        "--logs", str(logs), "--model", "resnet50_mxnet", "--name", "mxnet", "--reference",
                        "ngc_mxnet_resnet50", "--reports", str(reports), "--quiet"],
                       capture_output=True, text=True, timeout=300, env=dict(os.environ, PYTHONPATH=str(ROOT / "lib")))
    assert r.returncode == 0, r.stdout + r.stderr
    entry = records.read_json(reports / "mxnet" / "entry.json")
    assert entry["status"] == "ok" and entry["error"] is None
    (job,) = (reports / "mxnet" / "job").glob("*.sbatch")
    assert "-m benchbook.reports.publish" in job.read_text() and "#SBATCH --time=00:10:00" in job.read_text()
    assert (reports / "mxnet" / "report.html").is_file() and (reports / "mxnet" / entry["executed"]).is_file()
    assert records.read_json(reports / "mxnet" / "summary.json")["reference"] == "ngc_mxnet_resnet50"
    assert 'href="mxnet/report.html"' in (reports / "index.html").read_text()
    # a notebook that fails in its job is a failed report with its error, as it is locally
    import jupytext
    import nbformat

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1", metadata={"tags": ["parameters"]}),
                                         nbformat.v4.new_code_cell("raise ValueError('boom in the notebook')")],
                                  metadata={"kernelspec": {"name": "python3", "language": "python",
                                                           "display_name": "Python 3"},
                                            "language_info": {"name": "python"}})
    broken = tmp_path / "broken.ipynb"
    nbformat.write(nb, broken)
    jupytext.write(nb, broken.with_suffix(".py"), fmt="py:percent")  # its text source, as publish asks
    target = publish.Target("broken", broken, {"x": 2}, [])
    (entry,) = publish.publish([target], reports, progress=False, executor="slurm")
    assert (entry["status"], entry["error"]) == ("failed", "ValueError: boom in the notebook")
    assert (reports / "broken" / entry["executed"]).is_file() and (reports / "broken" / "report.html").is_file()
    index = (reports / "index.html").read_text()
    assert "boom in the notebook" in index and 'href="mxnet/report.html"' in index  # earlier reports stay
