"""Environment capture: a complete record everywhere, absent parts as absent, GPUs from nvidia-smi or NVML.

GPU tests replay a DGX-1's `nvidia-smi` (tests/fixtures/environment/bin/nvidia-smi) first on the
PATH; machine files (/proc/cpuinfo, /sys/class/infiniband, headers) come from a fake root folder.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import stat
import subprocess
import sys
import types
from pathlib import Path

import pytest

from benchbook.environment import SCRIPT, SECTIONS, Probe, capture
from benchbook.environment.capture import parse_cpuinfo, parse_lscpu, parse_topology, python_env, variables
from benchbook.environment.capture import record as capture_record

FIXTURES = Path(__file__).parent / "fixtures" / "environment"
FAKE_BIN = FIXTURES / "bin"
CAPTURE_FILES = sorted(SCRIPT.glob("*.py"))


def _take(**kwargs) -> dict:
    """A capture without framework imports (fast), NVML off unless asked."""
    probe = kwargs.pop("probe", None) or Probe(nvml=False)
    return capture.capture(import_frameworks=False, probe=probe, **kwargs)


@pytest.fixture
def fake_smi(monkeypatch):
    """The DGX-1 nvidia-smi first on the PATH."""
    monkeypatch.setenv("PATH", f"{FAKE_BIN}{os.pathsep}{os.environ.get('PATH', '')}")


@pytest.fixture
def no_tools(monkeypatch, tmp_path):
    """A PATH with nothing on it: no nvidia-smi, git, lscpu (ldconfig is still found in /sbin)."""
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))


def _script(folder: Path, name: str, body: str) -> Path:
    path = folder / name
    path.write_text("#!/bin/sh\n" + body, encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


# ---------------------------------------------------------------- complete records


def test_capture_on_this_machine_is_a_complete_json_record():
    record = _take(code_dir=Path(__file__).parent.parent)
    assert record["schema_version"] == 1 and record["captured_at"] and record["hostname"]
    assert set(SECTIONS) <= set(record)
    for name in SECTIONS[:-1]:  # every section but `variables` says whether it is there
        assert isinstance(record[name]["available"], bool), name
        assert record[name]["available"] or record[name]["reason"], name
    assert json.loads(json.dumps(record)) == record
    system = record["system"]
    assert system["available"] and system["os"] and system["kernel"]
    assert system["cpu"]["threads"] >= 1 and system["cpu"]["usable_threads"] >= 1
    assert record["python"]["available"] and record["python"]["version"] == ".".join(map(str, sys.version_info[:3]))
    assert "pytest" in record["python"]["packages"]
    if shutil.which("nvidia-smi") is None:
        assert record["gpus"]["available"] is False and "nvidia-smi" in record["gpus"]["reason"]


def test_without_gpu_or_tools_every_section_is_present_and_says_why(no_tools):
    record = _take(code_dir=Path(__file__).parent)
    assert set(SECTIONS) <= set(record)
    assert record["gpus"] == {"available": False,
                              "reason": "`nvidia-smi` not found on PATH; no NVIDIA GPU or driver here"}
    assert record["code"]["available"] is False and "git" in record["code"]["reason"]
    assert record["system"]["available"] and record["python"]["available"]


def test_a_missing_interpreter_costs_only_python_and_frameworks(tmp_path):
    record = _take(python=str(tmp_path / "no-such-python"))
    assert record["python"]["available"] is False
    assert record["python"]["reason"] == f"`{tmp_path / 'no-such-python'}` not found on PATH"
    assert record["frameworks"] == record["python"]
    assert record["system"]["available"]


def test_a_probe_that_breaks_becomes_an_absent_section(monkeypatch):
    def broken(p):
        raise ZeroDivisionError("odd machine")

    monkeypatch.setattr(capture_record, "read_infiniband", broken)
    record = _take()
    assert record["infiniband"] == {"available": False, "reason": "probe failed: ZeroDivisionError: odd machine"}


# ---------------------------------------------------------------- GPUs


def test_fake_nvidia_smi_fills_the_gpu_fields(fake_smi):
    gpus = _take()["gpus"]
    assert gpus["available"] and gpus["source"] == "nvidia-smi"
    assert gpus["count"] == 8 and gpus["models"] == ["Tesla V100-SXM2-16GB"]
    assert (gpus["driver"], gpus["cuda_driver"]) == ("440.33.01", "10.2")
    assert [d["index"] for d in gpus["devices"]] == list(range(8))
    first, last = gpus["devices"][0], gpus["devices"][7]
    assert first == {"index": 0, "name": "Tesla V100-SXM2-16GB", "uuid": "GPU-3e1a9c52-7f0b-4c1d-9a83-5b2f06d1e4a7",
                     "memory_mib": 16160, "clock_max_sm_mhz": 1530, "clock_max_mem_mhz": 877,
                     "pci_bus_id": "00000000:06:00.0", "clock_app_sm_mhz": 1312, "clock_app_mem_mhz": 877,
                     "power_limit_w": 300, "persistence_mode": "Enabled", "ecc_mode": "Enabled"}
    assert last["pci_bus_id"] == "00000000:8A:00.0"
    topo = gpus["topology"]
    assert topo["available"] and "GPU0\tGPU1" in topo["text"] and "NV#  = Connection traversing" in topo["text"]
    assert topo["summary"] == "NV1 x8, NV2 x8, SYS x12"
    assert topo["columns"][-1] == "CPU Affinity" and "mlx5_3" in topo["columns"]
    assert topo["matrix"]["GPU0"]["GPU3"] == "NV2" and topo["matrix"]["GPU0"]["GPU5"] == "SYS"
    assert topo["matrix"]["GPU7"]["CPU Affinity"] == "20-39,60-79"
    assert topo["matrix"]["mlx5_0"]["GPU1"] == "PIX"


def test_fixture_capture_holds_what_the_fake_nvidia_smi_gives(fake_smi):
    """dgx1_tf1_20.03.json (used by the diff tests) must stay what the capture makes of the fixture."""
    stored = json.loads((FIXTURES / "dgx1_tf1_20.03.json").read_text(encoding="utf-8"))
    assert _take()["gpus"] == stored["gpus"]


def test_nvidia_smi_without_driver_is_absent_with_its_message(monkeypatch, tmp_path):
    _script(tmp_path, "nvidia-smi", "echo \"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA "
                                    "driver. Make sure that the latest NVIDIA driver is installed and running.\"\n"
                                    "exit 9\n")
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    gpus = _take()["gpus"]
    assert gpus["available"] is False
    assert "exited with 9: NVIDIA-SMI has failed because it couldn't communicate" in gpus["reason"]


def test_a_hanging_nvidia_smi_is_cut_off(monkeypatch, tmp_path):
    _script(tmp_path, "nvidia-smi", "sleep 30\n")  # not exec: the shell's child must be ended too
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    gpus = _take(probe=Probe(nvml=False, timeout=0.5))["gpus"]
    assert gpus["available"] is False and "did not answer within 0.5 s" in gpus["reason"]


def test_a_driver_without_the_settings_fields_keeps_the_main_ones(monkeypatch, tmp_path):
    """The settings query fails on its own (an old driver lacks a field); the main query still counts."""
    _script(tmp_path, "nvidia-smi", f'case "$*" in *clocks.applications*) echo "Field is not valid" >&2; exit 2;; '
                                    f'esac\nexec "{FAKE_BIN / "nvidia-smi"}" "$@"\n')
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    gpus = _take()["gpus"]
    assert gpus["count"] == 8 and gpus["driver"] == "440.33.01"
    assert "clock_app_sm_mhz" not in gpus["devices"][0] and gpus["devices"][0]["memory_mib"] == 16160


def _fake_pynvml() -> types.ModuleType:
    """NVML answering like the fixture's DGX-1 (UUIDs and bus ids as nvidia-smi prints them)."""
    smi = (FAKE_BIN / "nvidia-smi").read_text(encoding="utf-8")
    rows = [line.split(", ") for line in smi.splitlines() if line.startswith(tuple(f"{i}, Tesla" for i in range(8)))]
    m = types.ModuleType("pynvml")
    m.NVML_CLOCK_SM, m.NVML_CLOCK_MEM = 1, 2
    m.nvmlInit = m.nvmlShutdown = lambda: None
    m.nvmlSystemGetDriverVersion = lambda: b"440.33.01"  # old nvidia-ml-py returns bytes
    m.nvmlSystemGetCudaDriverVersion_v2 = lambda: 10020
    m.nvmlDeviceGetCount = lambda: len(rows)
    m.nvmlDeviceGetHandleByIndex = lambda i: rows[i]
    m.nvmlDeviceGetName = lambda h: h[1]
    m.nvmlDeviceGetUUID = lambda h: h[2]
    m.nvmlDeviceGetMemoryInfo = lambda h: types.SimpleNamespace(total=16945512448)
    m.nvmlDeviceGetMaxClockInfo = lambda h, kind: 1530 if kind == 1 else 877
    m.nvmlDeviceGetApplicationsClock = lambda h, kind: 1312 if kind == 1 else 877
    m.nvmlDeviceGetPciInfo = lambda h: types.SimpleNamespace(busId=h[7].encode())
    m.nvmlDeviceGetPowerManagementLimit = lambda h: 300000
    m.nvmlDeviceGetPersistenceMode = lambda h: 1
    m.nvmlDeviceGetEccMode = lambda h: (1, 1)
    return m


def test_nvml_gives_the_same_devices_as_nvidia_smi(fake_smi, monkeypatch):
    from_smi = _take()["gpus"]
    monkeypatch.setitem(sys.modules, "pynvml", _fake_pynvml())
    from_nvml = _take(probe=Probe(nvml=True))["gpus"]
    assert from_nvml["source"] == "nvml"
    for key in ("count", "models", "driver", "cuda_driver", "devices", "topology"):
        assert from_nvml[key] == from_smi[key], key


def test_nvml_without_a_driver_falls_back_to_nvidia_smi(fake_smi, monkeypatch):
    broken = _fake_pynvml()

    def no_library():
        raise RuntimeError("NVML Shared Library Not Found")

    broken.nvmlInit = no_library
    monkeypatch.setitem(sys.modules, "pynvml", broken)
    gpus = _take(probe=Probe(nvml=True))["gpus"]
    assert gpus["source"] == "nvidia-smi" and gpus["count"] == 8


def test_topology_of_a_newer_driver_with_numa_column():
    text = ("\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"
            "GPU0\t X \tNV12\t0-31\t0\t\tN/A\n"
            "GPU1\tNV12\t X \t0-31\t0\t\tN/A\n\nLegend:\n\n  X    = Self\n")
    topo = parse_topology(text)
    assert topo["summary"] == "NV12 x1"
    assert topo["matrix"]["GPU1"]["NUMA Affinity"] == "0"


# ---------------------------------------------------------------- a fake DGX-1 inside an NGC container

LDCONFIG = """4 libs found in cache `/etc/ld.so.cache'
\tlibnccl.so.2 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libnccl.so.2
\tlibcudnn.so.7 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcudnn.so.7
\tlibcudart.so.10.2 (libc6,x86-64) => /usr/local/cuda/lib64/libcudart.so.10.2
\tlibc.so.6 (libc6,x86-64) => /lib/x86_64-linux-gnu/libc.so.6
"""


@pytest.fixture
def dgx1_root(tmp_path) -> Path:
    """The files a DGX-1 inside the NGC TensorFlow 20.03 container shows."""
    root = tmp_path / "root"

    def write(name: str, text: str) -> None:
        path = root / name.lstrip("/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")

    write("/proc/cpuinfo", "\n".join(
        f"processor\t: {i}\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) CPU E5-2698 v4 @ 2.20GHz\n"
        f"physical id\t: {i // 20 % 2}\nsiblings\t: 40\ncore id\t\t: {i % 20}\ncpu cores\t: 20\n" for i in range(80)))
    write("/proc/meminfo", "MemTotal:       528278776 kB\nMemFree:        519911480 kB\n")
    write("/etc/os-release", 'NAME="Ubuntu"\nID=ubuntu\nPRETTY_NAME="Ubuntu 18.04.3 LTS"\nVERSION_ID="18.04"\n')
    write("/sys/fs/cgroup/memory.max", "max\n")
    for dev in ("mlx5_0", "mlx5_1"):
        write(f"/sys/class/infiniband/{dev}/fw_ver", "12.26.1040\n")
        write(f"/sys/class/infiniband/{dev}/hca_type", "MT4115\n")
        write(f"/sys/class/infiniband/{dev}/ports/1/state", "4: ACTIVE\n" if dev == "mlx5_0" else "1: DOWN\n")
        write(f"/sys/class/infiniband/{dev}/ports/1/phys_state", "5: LinkUp\n")
        write(f"/sys/class/infiniband/{dev}/ports/1/rate", "100 Gb/sec (4X EDR)\n")
        write(f"/sys/class/infiniband/{dev}/ports/1/link_layer", "InfiniBand\n")
    write("/.dockerenv", "")
    write("/usr/include/cudnn.h", "#define CUDNN_MAJOR 7\n#define CUDNN_MINOR 6\n#define CUDNN_PATCHLEVEL 5\n")
    write("/usr/include/nccl.h", "#define NCCL_MAJOR 2\n#define NCCL_MINOR 6\n#define NCCL_PATCH 3\n")
    write("/usr/local/cuda/version.txt", "CUDA Version 10.2.89\n")
    for lib, link in (("libnccl.so.2.6.3", "libnccl.so.2"), ("libcudnn.so.7.6.5", "libcudnn.so.7")):
        write(f"/usr/lib/x86_64-linux-gnu/{lib}", "")
        (root / "usr/lib/x86_64-linux-gnu" / link).symlink_to(lib)
    write("/usr/local/cuda/lib64/libcudart.so.10.2.89", "")
    (root / "usr/local/cuda/lib64/libcudart.so.10.2").symlink_to("libcudart.so.10.2.89")
    return root


NGC_ENV = {"CUDA_VERSION": "10.2.89", "CUDNN_VERSION": "7.6.5", "NCCL_VERSION": "2.6.3", "NVIDIA_BUILD_ID": "11010100",
           "NVIDIA_TENSORFLOW_VERSION": "20.03-tf1", "TENSORFLOW_VERSION": "1.15.2", "NCCL_DEBUG": "INFO",
           "CUDA_VISIBLE_DEVICES": "0,1", "OMP_NUM_THREADS": "1", "HOROVOD_FUSION_THRESHOLD": "67108864",
           "TF_XLA_FLAGS": "--tf_xla_auto_jit=2", "TF_VAR_db_password": "hunter2", "TF_TOKEN_app_terraform_io": "x",
           "TF_CLI_CONFIG_FILE": "/root/.terraformrc", "NCCL_SOCKET_PASSWORD": "made-up", "HOME": "/root"}


def _ngc_probe(root: Path, **env) -> Probe:
    variables = {"PATH": f"{FAKE_BIN}{os.pathsep}{os.environ['PATH']}", **NGC_ENV, **env}
    default = Probe(env=variables, root=root, nvml=False).runner  # a plain probe's: PATH lookup, subprocess

    def runner(args, timeout):
        if args[0] == "ldconfig":
            return 0, LDCONFIG, ""
        if args[0] in ("lscpu", "nvcc", "/usr/local/cuda/bin/nvcc"):
            return None
        return default(args, timeout)

    return Probe(env=variables, root=root, runner=runner, nvml=False)


def test_dgx1_in_an_ngc_container(dgx1_root):
    record = _take(probe=_ngc_probe(dgx1_root))
    system = record["system"]
    assert system["distro"]["pretty"] == "Ubuntu 18.04.3 LTS"
    assert {k: system["cpu"][k] for k in ("model", "sockets", "cores", "threads")} == {
        "model": "Intel(R) Xeon(R) CPU E5-2698 v4 @ 2.20GHz", "sockets": 2, "cores": 40, "threads": 80}
    assert system["memory"] == {"total_bytes": 528278776 * 1024, "cgroup_limit_bytes": None}
    assert record["cuda"] == {"available": True, "version": "10.2.89",
                              "sources": {"library": "10.2.89", "toolkit": "10.2.89", "env": "10.2.89"}}
    assert record["cudnn"]["version"] == "7.6.5" and set(record["cudnn"]["sources"]) == {"library", "header", "env"}
    assert record["nccl"]["version"] == "2.6.3" and record["nccl"]["sources"]["library"] == "2.6.3"
    container = record["container"]
    assert (container["inside"], container["runtime"], container["build_id"]) == (True, "docker", "11010100")
    assert container["env"]["NVIDIA_TENSORFLOW_VERSION"] == "20.03-tf1" and "HOME" not in container["env"]
    ib = record["infiniband"]["devices"]
    assert ib["mlx5_0"]["ports"]["1"] == {"state": "ACTIVE", "phys_state": "LinkUp", "rate": "100 Gb/sec (4X EDR)",
                                          "link_layer": "InfiniBand"}
    assert ib["mlx5_1"]["ports"]["1"]["state"] == "DOWN" and ib["mlx5_1"]["fw_ver"] == "12.26.1040"
    assert record["gpus"]["count"] == 8
    assert record["variables"] == {"CUDA_VISIBLE_DEVICES": "0,1", "HOROVOD_FUSION_THRESHOLD": "67108864",
                                   "NCCL_DEBUG": "INFO", "NCCL_SOCKET_PASSWORD": "<redacted>", "OMP_NUM_THREADS": "1",
                                   "TF_XLA_FLAGS": "--tf_xla_auto_jit=2"}


def test_a_replaced_library_shows_in_the_sources(dgx1_root):
    """The linked library wins over what the container's variables claim; both are kept."""
    record = _take(probe=_ngc_probe(dgx1_root, NCCL_VERSION="2.5.6"))
    assert record["nccl"]["version"] == "2.6.3" and record["nccl"]["sources"]["env"] == "2.5.6"


def test_image_and_digest_from_the_launcher(dgx1_root):
    image = "nvcr.io/nvidia/tensorflow:20.03-tf1-py3"
    record = _take(probe=_ngc_probe(dgx1_root, BENCHBOOK_IMAGE=image, BENCHBOOK_IMAGE_DIGEST="sha256:" + "ab" * 32))
    assert record["container"]["image"] == image and record["container"]["digest"] == "sha256:" + "ab" * 32
    pinned = _take(image=f"{image}@sha256:{'cd' * 32}", probe=_ngc_probe(dgx1_root))
    assert pinned["container"]["digest"] == "sha256:" + "cd" * 32


def test_on_a_host_the_image_digest_comes_from_docker(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _script(bin_dir, "docker", f"echo '[\"nvcr.io/nvidia/tensorflow@sha256:{'ef' * 32}\"] sha256:{'01' * 32}'\n")
    root = tmp_path / "host"
    root.mkdir()
    probe = Probe(env={"PATH": str(bin_dir)}, root=root, nvml=False)
    container = _take(image="nvcr.io/nvidia/tensorflow:20.03-tf1-py3", probe=probe)["container"]
    assert container["available"] and container["inside"] is False
    assert (container["digest"], container["image_id"]) == ("sha256:" + "ef" * 32, "sha256:" + "01" * 32)
    assert _take(probe=probe)["container"] == {
        "available": False, "reason": "not inside a container (no /.dockerenv, /run/.containerenv, container cgroup "
                                      "or SINGULARITY_CONTAINER) and no image given"}


def test_cpuinfo_without_topology_is_completed_by_lscpu():
    arm = "processor\t: 0\nBogoMIPS\t: 50.00\nCPU implementer\t: 0x41\n\nprocessor\t: 1\nBogoMIPS\t: 50.00\n"
    assert parse_cpuinfo(arm) == {"model": None, "sockets": None, "cores": None, "threads": 2}
    lscpu = "Architecture:  aarch64\nCPU(s):  2\nModel name:  Neoverse-N1\nCore(s) per socket:  2\nSocket(s):  1\n"
    assert parse_lscpu(lscpu) == {"model": "Neoverse-N1", "sockets": 1, "cores": 2, "threads": 2}


def test_variables_keep_behaviour_and_drop_terraform_and_versions():
    assert variables(NGC_ENV) == {"CUDA_VISIBLE_DEVICES": "0,1", "HOROVOD_FUSION_THRESHOLD": "67108864",
                                  "NCCL_DEBUG": "INFO", "NCCL_SOCKET_PASSWORD": "<redacted>", "OMP_NUM_THREADS": "1",
                                  "TF_XLA_FLAGS": "--tf_xla_auto_jit=2"}


# ---------------------------------------------------------------- Python and frameworks


@pytest.fixture
def fake_frameworks(tmp_path) -> Path:
    """A folder for PYTHONPATH with TensorFlow 1.15, Horovod and DALI look-alikes and their dist-info."""
    site = tmp_path / "site"
    files = {
        "tensorflow/__init__.py": "__version__ = '1.15.2'\nfrom . import version, test, sysconfig\n",
        "tensorflow/version.py": "GIT_VERSION = 'v1.15.2-0-g5d80e1e8e6'\n",
        "tensorflow/test.py": "def is_built_with_cuda():\n    return True\n",
        "tensorflow/sysconfig.py": "def get_build_info():\n    return {'cuda_version': '10.2', 'cudnn_version': '7'}\n",
        "horovod/__init__.py": "__version__ = '0.19.0'\n",
        "nvidia/dali/__init__.py": "__version__ = '0.19.0'\n",
    }
    for name, version in (("tensorflow", "1.15.2+nv"), ("horovod", "0.19.0"), ("nvidia_dali_cuda100", "0.19.0")):
        files[f"{name}-{version}.dist-info/METADATA"] = \
            f"Metadata-Version: 2.1\nName: {name.replace('_', '-')}\nVersion: {version}\n"
    for name, text in files.items():
        (site / name).parent.mkdir(parents=True, exist_ok=True)
        (site / name).write_text(text, encoding="utf-8")
    return site


def test_frameworks_and_their_build_from_the_given_interpreter(fake_frameworks):
    probe = Probe(env={**os.environ, "PYTHONPATH": str(fake_frameworks)}, nvml=False)
    record = capture.capture(python=sys.executable, probe=probe)
    assert record["python"]["packages"]["tensorflow"] == "1.15.2+nv"
    assert record["python"]["executable"] == sys.executable
    fw = record["frameworks"]
    assert fw["available"]
    assert fw["tensorflow"] == {"package": "tensorflow", "version": "1.15.2", "package_version": "1.15.2+nv",
                                "git_version": "v1.15.2-0-g5d80e1e8e6", "built_with_cuda": True, "cuda": "10.2",
                                "cudnn": "7"}
    assert fw["horovod"]["version"] == "0.19.0"
    assert fw["dali"] == {"package": "nvidia-dali-cuda100", "version": "0.19.0", "package_version": "0.19.0"}
    without_import = capture.capture(python=sys.executable, probe=probe, import_frameworks=False)["frameworks"]
    assert without_import["tensorflow"] == {"package": "tensorflow", "version": "1.15.2+nv",
                                            "package_version": "1.15.2+nv"}


def test_a_framework_that_fails_to_import_is_recorded_with_the_error(fake_frameworks):
    (fake_frameworks / "horovod" / "__init__.py").write_text("raise ImportError('libmpi.so.40: cannot open')\n")
    probe = Probe(env={**os.environ, "PYTHONPATH": str(fake_frameworks)}, nvml=False)
    horovod = capture.capture(probe=probe)["frameworks"]["horovod"]
    assert horovod["version"] == "0.19.0" and horovod["import_error"] == "ImportError: libmpi.so.40: cannot open"


def test_a_slow_framework_import_falls_back_to_the_package_list(fake_frameworks, monkeypatch):
    (fake_frameworks / "tensorflow" / "__init__.py").write_text("import time\ntime.sleep(30)\n")
    monkeypatch.setattr(python_env, "PYTHON_TIMEOUT", 1.0)
    probe = Probe(env={**os.environ, "PYTHONPATH": str(fake_frameworks)}, nvml=False)
    record = capture.capture(probe=probe)
    assert record["frameworks"]["tensorflow"]["version"] == "1.15.2+nv"
    assert "frameworks not imported" in record["python"]["note"]


# ---------------------------------------------------------------- model code


def _git(folder: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-C", str(folder), *args],
                          check=True, capture_output=True, text=True).stdout.strip()


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_code_repository_commit_and_local_patch(tmp_path):
    repo = tmp_path / "DeepLearningExamples"
    (repo / "TensorFlow").mkdir(parents=True)
    _git(repo, "init", "-q")
    (repo / "TensorFlow" / "main.py").write_text("BATCH = 256\n")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "first")
    _git(repo, "remote", "add", "origin", "https://user:ghp_secret@github.com/NVIDIA/DeepLearningExamples.git")
    commit = _git(repo, "rev-parse", "HEAD")
    clean = _take(code_dir=repo / "TensorFlow")["code"]
    assert clean["available"] and clean["commit"] == commit and clean["dirty"] is False
    assert clean["repository"] == "https://github.com/NVIDIA/DeepLearningExamples.git"
    assert clean["patch_sha256"] is None and clean["root"] == str(repo.resolve())

    (repo / "TensorFlow" / "main.py").write_text("BATCH = 512\n")
    (repo / "notes.txt").write_text("untracked\n")
    dirty = _take(code_dir=repo)["code"]
    assert dirty["dirty"] is True and dirty["changed_files"] == ["TensorFlow/main.py"]
    assert dirty["untracked_files"] == 1
    assert "+BATCH = 512" in dirty["patch"] and len(dirty["patch_sha256"]) == 64
    (repo / "TensorFlow" / "main.py").write_text("BATCH = 1024\n")
    assert _take(code_dir=repo)["code"]["patch_sha256"] != dirty["patch_sha256"]


def test_code_outside_a_repository_or_not_given(tmp_path):
    assert _take()["code"] == {"available": False, "reason": "no model code folder given"}
    outside = _take(code_dir=tmp_path)["code"]
    assert outside["available"] is False and "not in a git repository" in outside["reason"]


# ---------------------------------------------------------------- standalone script


def test_capture_parses_as_python_3_8():
    assert SCRIPT == Path(capture.__file__).parent and SCRIPT / "__main__.py" in CAPTURE_FILES
    for path in CAPTURE_FILES:
        ast.parse(path.read_text(encoding="utf-8"), feature_version=(3, 8))
    ast.parse(capture.PYTHON_SNIPPET, feature_version=(3, 6))


def test_capture_imports_only_the_standard_library_and_its_siblings():
    """What a container's bare interpreter has: the standard library, and the folder's own modules."""
    siblings = {p.stem for p in CAPTURE_FILES}
    for path in CAPTURE_FILES:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [a.name.split(".")[0] for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [(node.module or "").split(".")[0]]
            else:
                continue
            outside = [n for n in names if n not in sys.stdlib_module_names and n not in siblings | {"pynvml"}]
            assert outside == [], f"{path.name} imports {outside}"


def _standalone_copy(tmp_path: Path) -> Path:
    """The capture folder as a launcher copies it into a container: its files alone, no benchbook around."""
    return Path(shutil.copytree(SCRIPT, tmp_path / "capture", ignore=shutil.ignore_patterns("__pycache__")))


def test_capture_runs_without_benchbook(tmp_path, fake_smi):
    """Copied into a container and run with its interpreter: no benchbook, no site-packages."""
    copy = _standalone_copy(tmp_path)
    done = subprocess.run([sys.executable, "-I", "-S", str(copy), "--no-import"], capture_output=True, text=True,
                          cwd=tmp_path, env=os.environ, timeout=120, check=True)
    record = json.loads(done.stdout)
    assert set(SECTIONS) <= set(record) and record["gpus"]["count"] == 8


def _python_3_8() -> str | None:
    """A Python 3.8 interpreter on this machine (PATH, or pyenv's versions), or None."""
    candidates = [shutil.which("python3.8"), *map(str, sorted(Path.home().glob(".pyenv/versions/3.8*/bin/python3.8")))]
    for python in filter(None, candidates):
        answered = subprocess.run([python, "-c", "import sys; print(sys.version_info[:2])"], capture_output=True,
                                  text=True, timeout=60, check=False)
        if answered.returncode == 0 and answered.stdout.strip() == "(3, 8)":
            return python
    return None


def test_capture_runs_standalone_on_python_3_8(tmp_path, fake_smi):
    """The oldest interpreter the capture promises (an NGC 20.xx-era container's), from a copy of the folder."""
    python = _python_3_8()
    if python is None:
        pytest.skip("no Python 3.8 interpreter here (PATH or ~/.pyenv/versions/3.8*)")
    copy = _standalone_copy(tmp_path)
    done = subprocess.run([python, "-I", str(copy), "--no-import"], capture_output=True, text=True, cwd=tmp_path,
                          env=os.environ, timeout=120, check=True)
    record = json.loads(done.stdout)
    assert record["python"]["version"].startswith("3.8.") and record["gpus"]["count"] == 8
    assert set(SECTIONS) <= set(record)
