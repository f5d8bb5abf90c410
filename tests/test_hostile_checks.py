"""A study folder from someone else (issue 26, 12 and 13): `benchbook check` only looks, names that docker
would read as options are refused when the study is loaded, and what a probe reads is bounded.

The commands are stand-ins on PATH that write their arguments to calls.jsonl, so the test sees what
`benchbook check` would have run on a real machine, through the real runner.
"""

import hashlib
import json
import subprocess
import sys
import time

import pytest

from benchbook import cli
from benchbook.environment.capture.probe import CUT, OUTPUT_LIMIT, Probe
from benchbook.studies import checks, study
from benchbook.studies.study import StudyError

NGC = """\
schema_version: 1
model: resnet50_tf
runtime: ngc
code: {{repository: https://github.com/NVIDIA/DeepLearningExamples, commit: 99b1c898cead5603c945721162270c2fe077b4a2}}
container:
  image: {image}
  mode: {mode}
  name: {name}
data: {{path: {data}}}
sweep:
  gpus: 2x8
  batch_size: 128
launcher: mpirun
hosts: [node1, node2]
ssh_port: 10000
iterations: 100
warmup_steps: 10
"""

CPU = """\
schema_version: 1
model: resnet50_tf
runtime: cpu
python: {python}
sweep: {{batch_size: 8}}
iterations: 3
warmup_steps: 1
"""

DOCKER = """\
import json, sys
args = sys.argv[1:]
if args[:1] == ["info"]:
    print(json.dumps({"nvidia": {}, "runc": {}}))
elif args[:2] == ["image", "inspect"]:
    print("sha256:" + "a" * 64)
elif args[:1] == ["inspect"]:
    print("true")
else:
    print("/usr/local/mpi/bin/mpirun")
"""


@pytest.fixture
def machine(tmp_path, monkeypatch):
    """Stand-ins for docker, ssh, mpirun and a Python on PATH; returns a function giving the recorded calls."""
    bin_dir, log = tmp_path / "bin", tmp_path / "calls.jsonl"
    bin_dir.mkdir()
    record = f"import json, sys\nwith open({str(log)!r}, 'a') as f:\n    f.write(json.dumps(sys.argv) + '\\n')\n"
    for name, body in (("docker", DOCKER), ("ssh", ""), ("mpirun", ""), ("python-of-the-study", "")):
        tool = bin_dir / name
        tool.write_text(f"#!{sys.executable}\n{record}{body}")
        tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")

    def calls() -> list[list[str]]:
        if not log.exists():
            return []
        argvs = [json.loads(line) for line in log.read_text().splitlines()]
        return [[argv[0].rsplit("/", 1)[-1], *argv[1:]] for argv in argvs]

    calls.bin = bin_dir
    return calls


def ngc_study(tmp_path, mode="exec", image="nvidia_rn50_tf", name="tf_resnet", data="/nowhere/data"):
    p = tmp_path / f"ngc_{mode}.yaml"
    p.write_text(NGC.format(image=image, mode=mode, name=name, data=data))
    return p


def runs_something(call: list[str]) -> bool:
    """A call that runs something the study names: in its container, on its hosts, its Python."""
    return call[0] in ("ssh", "mpirun", "python-of-the-study") or call[:2] in (["docker", "run"], ["docker", "exec"])


# ---------------------------------------------------------------- check only looks unless --probe


@pytest.mark.parametrize("mode", ["exec", "run"])
def test_check_of_a_study_runs_nothing_it_names(tmp_path, machine, capsys, mode):
    """Issue 26 (12): `check` ran the study's image (docker run --rm IMAGE sh -c ...), exec'd into its
    container and opened ssh to every host it names. It only looks now; what it left out says so."""
    p = ngc_study(tmp_path, mode)
    code = cli.main(["check", str(p), "--json", "--gpus", "8"])
    doc = json.loads(capsys.readouterr().out)
    assert not [c for c in machine() if runs_something(c)], machine()
    assert ["docker", "info", "--format", "{{json .Runtimes}}"] in machine()  # it still looked
    got = {c["name"]: c for c in doc["checks"]}
    assert doc["probed"] is False and code == 1  # the data folder is not there (it is looked for on the host)
    assert [c["name"] for c in doc["checks"] if c["ok"] is False] == ["ImageNet TFRecords"]
    for name in ("mpirun", "ssh node1:10000", "ssh node2:10000"):
        assert got[name]["ok"] is None and "--probe" in got[name]["detail"], got[name]


def test_check_with_probe_runs_them_with_the_names_after_a_double_dash(tmp_path, machine, capsys):
    p = ngc_study(tmp_path, "exec", data="/data/ImageNet")
    text = p.read_text().replace("data: {path: /data/ImageNet}", "data: {dali_index: /data/idx}")
    p.write_text(text.replace("gpus: 2x8", "gpus: 2x8\n  dali: true"))
    cli.main(["check", str(p), "--json", "--gpus", "8", "--probe"])
    assert json.loads(capsys.readouterr().out)["probed"] is True
    ran = [c for c in machine() if runs_something(c)]
    assert ["docker", "exec", "--", "tf_resnet", "sh", "-c", "command -v mpirun"] in ran
    assert ["docker", "exec", "--", "tf_resnet", "ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=5", "-p",
            "10000", "--", "node1", "true"] in ran
    assert ["docker", "exec", "--", "tf_resnet", "ls", "-1A", "--", "/data"] in ran
    assert ["docker", "exec", "--", "tf_resnet", "ls", "-1A", "--", "/data/idx"] in ran
    assert ["docker", "inspect", "-f", "{{.State.Running}}", "--", "tf_resnet"] in machine()


def test_check_looks_up_the_python_a_study_names_without_running_it(tmp_path, machine, capsys):
    p = tmp_path / "cpu.yaml"
    p.write_text(CPU.format(python="python-of-the-study"))
    cli.main(["check", str(p), "--json"])
    got = {c["name"]: c for c in json.loads(capsys.readouterr().out)["checks"]}
    assert machine() == []
    named = got["tensorflow (named Python)"]
    assert named["ok"] is None and str(machine.bin / "python-of-the-study") in named["detail"]
    p.write_text(CPU.format(python="/no/such/python"))
    assert cli.main(["check", str(p)]) == 1
    cli.main(["check", str(tmp_path / "cpu.yaml"), "--probe"])
    assert machine() == []  # /no/such/python cannot run; with the stand-in named, --probe runs it
    p.write_text(CPU.format(python="python-of-the-study"))
    cli.main(["check", str(p), "--probe"])
    assert machine()[0][:2] == ["python-of-the-study", "-c"]


def test_run_checks_in_full(tmp_path, machine):
    """`benchbook run` runs the study anyway: its check (checks.check's default) probes."""
    s = study.load(ngc_study(tmp_path, "exec"))
    results = {c.name: c for c in checks.check(s, gpus=8)}
    assert results["mpirun"].ok is True and results["ssh node1:10000"].ok is True
    assert any(c[:2] == ["docker", "exec"] for c in machine())


# ---------------------------------------------------------------- names docker would read as options


@pytest.mark.parametrize("image", ["-v", "--privileged", "--volume=/:/host", "nvidia_rn50_tf;touch MARK",
                                   "rn50 $(touch MARK)", "NVIDIA_RN50", "nvidia_rn50_tf:", "a/-b", "x" * 300])
def test_an_image_outside_the_docker_grammar_is_refused_at_load(tmp_path, image):
    p = ngc_study(tmp_path, "run", image=json.dumps(image))
    with pytest.raises(StudyError) as e:
        study.load(p)
    assert str(e.value).startswith(f"{p}:6: container.image = {image!r}: ") and "docker" in str(e.value)


@pytest.mark.parametrize("name", ["-d", "--rm", "--privileged=true", "a;b", "x", "tf resnet", "../x"])
def test_a_container_name_outside_dockers_is_refused_at_load(tmp_path, name):
    p = ngc_study(tmp_path, "exec", name=json.dumps(name))
    with pytest.raises(StudyError) as e:
        study.load(p)
    assert str(e.value).startswith(f"{p}:8: container.name = {name!r}: ") and "container name" in str(e.value)


@pytest.mark.parametrize("image", ["nvidia_rn50_tf", "nvcr.io/nvidia/tensorflow:20.03-tf1-py3", "localhost:5000/a/b:1",
                                   "nvcr.io/nvidia/pytorch@sha256:" + "0" * 64, "my.registry:443/team/rn50__x:v1.2"])
def test_docker_references_load(tmp_path, image):
    assert study.load(ngc_study(tmp_path, "run", image=image)).container.image == image


def test_pyxis_images_are_for_slurm_only(tmp_path):
    pyxis = "nvcr.io#nvidia/pytorch:21.03-py3"
    p = ngc_study(tmp_path, "run", image=pyxis)
    with pytest.raises(StudyError) as e:
        study.load(p)
    assert str(e.value).startswith(f"{p}:6: container.image: 'nvcr.io#nvidia/pytorch:21.03-py3' is pyxis's form")
    p.write_text(p.read_text().replace("launcher: mpirun", "launcher: slurm"))
    assert study.load(p).container.image == pyxis
    p.write_text(p.read_text().replace("launcher: slurm", "launcher: {name: slurm, slurm: {container_image: -x}}"))
    with pytest.raises(StudyError, match=r"launcher.slurm.container_image = '-x': '-x' is not a docker image"):
        study.load(p)


# ---------------------------------------------------------------- what a probe reads is bounded


FLOOD = "import sys\nline = b'GPU 0: Tesla V100 (UUID: GPU-0)' * 64 + b'\\n'\nfor _ in range({n}):\n" \
        "    sys.stdout.buffer.write(line)\n"


def test_a_check_probe_keeps_the_head_of_a_flood(tmp_path):
    """Issue 26 (13): a probe held a command's whole output (an nvidia-smi printing 200 MB took 62 s)."""
    n = 40 * 2**20 // 1985  # 40 MB of 1985-byte lines
    t0 = time.monotonic()
    done = checks.bounded_run([sys.executable, "-c", FLOOD.format(n=n)], timeout=60)
    elapsed = time.monotonic() - t0
    cut = CUT.search(done.stdout)
    assert done.returncode == 0 and cut and int(cut.group("size")) == n * 1985
    kept = done.stdout[:cut.start()]
    assert len(kept) == int(cut.group("kept")) and OUTPUT_LIMIT - 1985 < len(kept) <= OUTPUT_LIMIT
    assert kept.endswith("\n")  # whole lines
    line = b"GPU 0: Tesla V100 (UUID: GPU-0)" * 64 + b"\n"
    assert cut.group("sha256") == hashlib.sha256(line * n).hexdigest()
    assert elapsed < 20, elapsed


def test_a_capture_probe_keeps_the_head_of_a_flood(tmp_path):
    smi = tmp_path / "nvidia-smi"
    smi.write_text(f"#!{sys.executable}\n" + FLOOD.format(n=40 * 2**20 // 1985))
    smi.chmod(0o755)
    out = Probe(env={"PATH": str(tmp_path)}).run(["nvidia-smi", "-L"])
    cut = CUT.search(out)
    assert out.startswith("GPU 0: Tesla V100") and cut and int(cut.group("kept")) <= OUTPUT_LIMIT
    assert len(out) < OUTPUT_LIMIT + 300


def test_a_large_local_patch_is_hashed_whole(tmp_path):
    """The capture keeps no patch past its limit, but its hash covers all of it, past the probe's cut too."""
    from benchbook.environment.capture.model_code import read_code

    repo = tmp_path / "code"
    repo.mkdir()
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(repo)]
    subprocess.run([*git, "init", "-q"], check=True)
    (repo / "big.txt").write_text("a\n")
    subprocess.run([*git, "add", "big.txt"], check=True)
    subprocess.run([*git, "commit", "-qm", "x"], check=True)
    hashes = set()
    for tail in ("x", "y"):  # two patches alike in their first 5 MB
        (repo / "big.txt").write_text("line of the patch\n" * 300000 + tail + "\n")
        full = subprocess.run([*git, "diff", "HEAD", "--binary", "--no-color", "--no-ext-diff"], check=True,
                              capture_output=True).stdout
        code = read_code(Probe(), repo)
        assert len(full) > OUTPUT_LIMIT and code["patch"] is None and code["patch_truncated"] is True
        assert code["patch_sha256"] == hashlib.sha256(full).hexdigest()
        hashes.add(code["patch_sha256"])
    assert len(hashes) == 2


def test_a_probe_that_prints_little_is_read_whole_and_its_status_kept(tmp_path):
    done = checks.bounded_run([sys.executable, "-c", "import sys; print('x' * 10); sys.exit(3)"], timeout=30)
    assert (done.returncode, done.stdout) == (3, "x" * 10 + "\n")
    with pytest.raises(subprocess.TimeoutExpired):
        checks.bounded_run([sys.executable, "-c", "import time; time.sleep(30)"], timeout=0.5)


def test_a_probe_whose_child_holds_the_pipe_ends_at_its_time_limit(tmp_path):
    """As communicate did: the output is read until the pipes close, within the time limit."""
    t0 = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        checks.bounded_run(["sh", "-c", "echo x; sleep 30 & exit 0"], timeout=1)
    assert time.monotonic() - t0 < 10
