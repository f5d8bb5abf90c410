"""Capture the software and hardware stack a benchmark runs on, as one JSON-serializable record.

Throughput depends on the whole stack (GPU model and clocks, driver, CUDA/cuDNN/NCCL, framework
build, container, model code, CPU, variables), so every run records all of it. Two rules shape
this module:

- What a machine does not have is recorded as absent, never raised: each section is a dict with
  `available` (and a `reason` when false), each probe is wrapped, each external command has a
  short timeout. A laptop without GPU gets a complete record.
- It uses the standard library only and Python 3.8 syntax, and imports nothing from benchbook,
  so that the same file runs inside a container or another environment with that environment's
  own interpreter: `python3 capture.py [--code DIR] [--image NAME]` prints the record as JSON.

Probes look at the machine through a `Probe` (environment variables, a file-system root, a
command runner), so that tests can replay recorded `nvidia-smi` output or a fake `/proc`.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import platform
import re
import shutil
import socket
import subprocess
import sys
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

SCHEMA_VERSION = 1

# Variables that change what the frameworks and libraries do (recorded in `variables`).
VARIABLE_PREFIXES = ("NCCL_", "TF_", "MXNET_", "HOROVOD_", "UCX_", "OMPI_MCA_", "CUDNN_")
VARIABLE_NAMES = ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "CUDA_LAUNCH_BLOCKING", "CUDA_DEVICE_MAX_CONNECTIONS",
                  "NVIDIA_VISIBLE_DEVICES", "OMP_NUM_THREADS", "KMP_AFFINITY", "KMP_BLOCKTIME")
# Names that match a prefix but are not behaviour: Terraform's TF_* settings (TF_VAR_* and TF_TOKEN_*
# may hold secrets), and version variables (NCCL_VERSION, MXNET_VERSION) that containers set and
# `container` records.
_NOT_VARIABLES = re.compile(r"^TF_(VAR|TOKEN|CLI|REGISTRY)_|^TF_(LOG|LOG_PATH|LOG_CORE|LOG_PROVIDER|INPUT|WORKSPACE|"
                            r"IN_AUTOMATION|DATA_DIR|PLUGIN_CACHE_DIR|IGNORE|APPEND_USER_AGENT)$|_VERSION$")
_SECRET = re.compile(r"TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|API_KEY|PRIVATE", re.IGNORECASE)

# nvidia-smi fields, in the order of the CSV it prints. The first query has existed in every
# driver; the settings query is separate so that a driver that lacks one of them loses only those.
GPU_QUERY = ("index", "name", "uuid", "memory.total", "driver_version", "clocks.max.sm", "clocks.max.mem",
             "pci.bus_id")
GPU_SETTINGS_QUERY = ("index", "clocks.applications.graphics", "clocks.applications.memory", "power.limit",
                      "persistence_mode", "ecc.mode.current")
_DEVICE_KEYS = {"index": "index", "name": "name", "uuid": "uuid", "memory.total": "memory_mib",
                "driver_version": "driver", "clocks.max.sm": "clock_max_sm_mhz", "clocks.max.mem": "clock_max_mem_mhz",
                "pci.bus_id": "pci_bus_id", "clocks.applications.graphics": "clock_app_sm_mhz",
                "clocks.applications.memory": "clock_app_mem_mhz", "power.limit": "power_limit_w",
                "persistence_mode": "persistence_mode", "ecc.mode.current": "ecc_mode"}

COMMAND_TIMEOUT = 10.0  # seconds; nvidia-smi on a busy 16-GPU node answers in about one
PYTHON_TIMEOUT = 120.0  # importing a framework (TensorFlow in an NGC container) takes tens of seconds


class Absent(Exception):
    """Raised by a probe when what it looks for is not there; the section records the reason."""


class TimedOut(Absent):
    """Raised when a command did not answer in time (the probe may retry with less to do)."""


class Probe:
    """Where the probes look: environment variables, a file-system root and a command runner.

    `runner(args, timeout)` returns `(exit code, stdout, stderr)` or None when the command does not
    exist; the default one looks the command up on the `PATH` of `env` (so that a fake `nvidia-smi`
    first on the PATH replaces the real one). `root` prefixes every file read, for a fake `/proc`.
    `nvml` False skips NVML even where nvidia-ml-py is installed.
    """

    def __init__(self, env: dict[str, str] | None = None, root: str | Path = "/",
                 runner: Callable[[list[str], float], tuple[int, str, str] | None] | None = None,
                 timeout: float = COMMAND_TIMEOUT, nvml: bool = True):
        self.env = dict(os.environ if env is None else env)
        self.root = Path(root)
        self.runner = runner or self._subprocess
        self.timeout = timeout
        self.nvml = nvml

    def path(self, name: str) -> Path:
        """`name` (an absolute path on the machine) under the probe's root."""
        return self.root / name.lstrip("/")

    def read(self, name: str) -> str | None:
        """The text of a file, or None when it cannot be read."""
        try:
            return self.path(name).read_text(encoding="utf-8", errors="replace")
        except (OSError, ValueError):
            return None

    def which(self, command: str) -> str | None:
        # ldconfig lives in /sbin, which is not on an ordinary user's PATH on Debian.
        search = self.env.get("PATH", os.defpath) + os.pathsep + "/usr/local/sbin:/usr/sbin:/sbin"
        return shutil.which(command, path=search)

    def _subprocess(self, args: list[str], timeout: float) -> tuple[int, str, str] | None:
        exe = args[0] if os.sep in args[0] else self.which(args[0])
        if exe is None or not os.path.exists(exe):
            return None
        # A session of its own, so that a timeout ends the command's children too (a shell wrapper's
        # child would otherwise hold the pipes open and the wait would last as long as it does).
        proc = subprocess.Popen([exe, *args[1:]], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=self.env, start_new_session=hasattr(os, "killpg"))
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            if hasattr(os, "killpg"):
                try:
                    os.killpg(proc.pid, 9)
                except OSError:
                    pass
            proc.kill()
            try:
                proc.communicate(timeout=5)
            except subprocess.TimeoutExpired:  # a child that left the session still holds the pipes
                pass
            raise
        return proc.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")

    def run(self, args: list[str], timeout: float | None = None) -> str:
        """The standard output of a command that succeeded; Absent (with why) otherwise."""
        limit = self.timeout if timeout is None else timeout
        try:
            result = self.runner(list(args), limit)
        except subprocess.TimeoutExpired:
            raise TimedOut(f"`{args[0]}` did not answer within {limit:g} s") from None
        except OSError as exc:
            raise Absent(f"`{args[0]}` could not be run: {exc.strerror or exc}") from None
        if result is None:
            raise Absent(f"`{args[0]}` not found on PATH")
        code, out, err = result
        if code != 0:
            first = next((line.strip() for line in (err + "\n" + out).splitlines() if line.strip()), "")
            raise Absent(f"`{' '.join(args[:2])}` exited with {code}" + (f": {first}" if first else ""))
        return out


def _section(probe_fn: Callable[..., dict[str, Any]], *args: Any) -> dict[str, Any]:
    """Run one probe: its fields with `available: True`, or `available: False` and the reason.

    Any exception is caught here on purpose: a capture that fails because one probe met an odd
    machine would lose every other section of the record.
    """
    try:
        return {"available": True, **probe_fn(*args)}
    except Absent as exc:
        return {"available": False, "reason": str(exc)}
    except Exception as exc:  # noqa: BLE001 - see the docstring
        return {"available": False, "reason": f"probe failed: {type(exc).__name__}: {exc}"}


def _number(text: str | None) -> int | float | None:
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    return int(value) if value.is_integer() else value


# ---------------------------------------------------------------- system: OS, CPU, memory


def _system(p: Probe) -> dict[str, Any]:
    u = platform.uname()
    return {"os": u.system, "kernel": u.release, "arch": u.machine, "distro": _distro(p), "cpu": _cpu(p),
            "memory": _memory(p)}


def parse_os_release(text: str) -> dict[str, str]:
    """KEY=value lines of /etc/os-release, quotes removed."""
    out = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() and not key.startswith("#"):
            out[key.strip()] = value.strip().strip("'\"")
    return out


def _distro(p: Probe) -> dict[str, Any] | None:
    text = p.read("/etc/os-release") or p.read("/usr/lib/os-release")
    if text:
        fields = parse_os_release(text)
        return {"id": fields.get("ID"), "name": fields.get("NAME"), "version": fields.get("VERSION_ID"),
                "pretty": fields.get("PRETTY_NAME")}
    if platform.system() == "Darwin":
        release = platform.mac_ver()[0]
        return {"id": "macos", "name": "macOS", "version": release, "pretty": f"macOS {release}"}
    return None


def parse_cpuinfo(text: str) -> dict[str, Any]:
    """Model, sockets, physical cores and hardware threads from /proc/cpuinfo (x86 and most others).

    Sockets and cores are None where the file does not say (some ARM and virtual machines); lscpu
    fills them in then.
    """
    blocks = [b for b in re.split(r"\n\s*\n", text) if b.strip()]
    model, sockets, cores, threads = None, set(), set(), 0
    for block in blocks:
        fields = {}
        for line in block.splitlines():
            key, sep, value = line.partition(":")
            if sep:
                fields[key.strip().lower()] = value.strip()
        if "processor" not in fields:
            continue
        threads += 1
        model = model or fields.get("model name") or fields.get("cpu model") or fields.get("hardware")
        if "physical id" in fields:
            sockets.add(fields["physical id"])
            if "core id" in fields:
                cores.add((fields["physical id"], fields["core id"]))
    return {"model": model, "sockets": len(sockets) or None, "cores": len(cores) or None, "threads": threads or None}


def parse_lscpu(text: str) -> dict[str, Any]:
    """The same fields from `lscpu` (LC_ALL=C) output."""
    f = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            f[key.strip()] = value.strip()

    def num(key):
        value = _number(f.get(key))
        return int(value) if value is not None else None

    sockets, per_socket, threads = num("Socket(s)"), num("Core(s) per socket"), num("CPU(s)")
    return {"model": f.get("Model name"), "sockets": sockets,
            "cores": sockets * per_socket if sockets and per_socket else None, "threads": threads}


def _cpu(p: Probe) -> dict[str, Any]:
    cpu = parse_cpuinfo(p.read("/proc/cpuinfo") or "")
    if None in cpu.values() and platform.system() == "Linux":
        try:
            more = parse_lscpu(p.run(["lscpu"]))
        except Absent:
            more = {}
        cpu = {k: v if v is not None else more.get(k) for k, v in cpu.items()}
    if platform.system() == "Darwin" and cpu["model"] is None:
        cpu = _cpu_darwin(p)
    if cpu["threads"] is None:
        cpu["threads"] = os.cpu_count()
    # What this process may use: a container or `taskset` often grants fewer CPUs than the machine has.
    cpu["usable_threads"] = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else cpu["threads"]
    nodes = [n for n in glob.glob(str(p.path("/sys/devices/system/node/node*"))) if re.search(r"node\d+$", n)]
    cpu["numa_nodes"] = len(nodes) or None
    governor = p.read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")
    cpu["governor"] = governor.strip() if governor else None
    return cpu


def _cpu_darwin(p: Probe) -> dict[str, Any]:
    def sysctl(name):
        try:
            return p.run(["sysctl", "-n", name]).strip()
        except Absent:
            return None

    return {"model": sysctl("machdep.cpu.brand_string"), "sockets": _number(sysctl("hw.packages")),
            "cores": _number(sysctl("hw.physicalcpu")), "threads": _number(sysctl("hw.logicalcpu"))}


def _memory(p: Probe) -> dict[str, Any]:
    total = None
    m = re.search(r"^MemTotal:\s+(\d+)\s*kB", p.read("/proc/meminfo") or "", re.MULTILINE)
    if m:
        total = int(m.group(1)) * 1024
    elif platform.system() == "Darwin":
        try:
            total = _number(p.run(["sysctl", "-n", "hw.memsize"]).strip())
        except Absent:
            pass
    # A container's memory limit (cgroup v2, then v1); v1 writes a huge number for "no limit".
    limit = None
    for name in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        value = _number((p.read(name) or "").strip())
        if value is not None:
            limit = int(value) if value < 2**60 else None
            break
    return {"total_bytes": total, "cgroup_limit_bytes": limit}


# ---------------------------------------------------------------- GPUs


def parse_gpu_csv(text: str, fields: tuple[str, ...]) -> list[dict[str, Any]]:
    """Rows of `nvidia-smi --query-gpu=... --format=csv,noheader,nounits` as dicts of `_DEVICE_KEYS`.

    Numbers become int/float; `[N/A]` and `[Not Supported]` become None.
    """
    rows = []
    for line in text.splitlines():
        if not line.strip():
            continue
        cells = [c.strip() for c in line.split(",")]
        if len(cells) != len(fields):
            raise Absent(f"unexpected nvidia-smi output line: {line.strip()!r}")
        row = {}
        for field, cell in zip(fields, cells):  # noqa: B905 - lengths checked above; zip(strict) is 3.10+
            value: Any = None if cell.startswith("[") or cell in ("N/A", "") else cell
            if value is not None and field not in ("name", "uuid", "driver_version", "pci.bus_id",
                                                   "persistence_mode", "ecc.mode.current"):
                number = _number(value)
                value = number if number is not None else value
            row[_DEVICE_KEYS[field]] = value
        rows.append(row)
    return rows


def parse_smi_header(text: str) -> dict[str, str | None]:
    """Driver version and the CUDA version the driver supports, from plain `nvidia-smi` output."""
    driver = re.search(r"Driver Version:\s*([\w.]+)", text)
    cuda = re.search(r"CUDA Version:\s*([\w.]+)", text)
    return {"driver": driver.group(1) if driver else None, "cuda_driver": cuda.group(1) if cuda else None}


def parse_topology(text: str) -> dict[str, Any]:
    """`nvidia-smi topo -m` as a matrix {row: {column: link}}, plus a summary of the GPU-GPU links.

    The columns are tab-separated (and "CPU Affinity" has a space, so tabs are the only safe
    separator); the legend after the first blank line is skipped. The summary counts the link
    types between pairs of GPUs ("NV1 x8, NV2 x8, SYS x12" on a DGX-1): two machines with the same
    summary are wired alike, which is what throughput depends on.
    """
    lines = [line.rstrip("\n") for line in text.splitlines()]
    header_at = next((i for i, line in enumerate(lines) if re.match(r"^\s*GPU0\b", line.strip("\t "))), None)
    if header_at is None:
        raise Absent("no matrix in `nvidia-smi topo -m` output")

    def cells(line):
        parts = line.split("\t") if "\t" in line else re.split(r"\s{2,}", line)
        return [c.strip() for c in parts]

    columns = [c for c in cells(lines[header_at]) if c]
    matrix: dict[str, dict[str, str]] = {}
    for line in lines[header_at + 1:]:
        if not line.strip():
            break
        row = cells(line)
        name, values = row[0], row[1:]
        matrix[name] = {col: val for col, val in zip(columns, values) if val}  # noqa: B905 - rows may be short
    gpus = [c for c in columns if re.fullmatch(r"GPU\d+", c)]
    counts: dict[str, int] = {}
    for i, a in enumerate(gpus):
        for b in gpus[i + 1:]:
            link = matrix.get(a, {}).get(b)
            if link:
                counts[link] = counts.get(link, 0) + 1
    summary = ", ".join(f"{k} x{counts[k]}" for k in sorted(counts))
    return {"columns": columns, "matrix": matrix, "summary": summary or None}


def _gpus(p: Probe) -> dict[str, Any]:
    source, devices, reason = "nvml", None, None
    if p.nvml:
        devices, header, reason = _gpus_nvml()
    if devices is None:
        source = "nvidia-smi"
        try:
            devices = parse_gpu_csv(p.run(["nvidia-smi", f"--query-gpu={','.join(GPU_QUERY)}",
                                           "--format=csv,noheader,nounits"]), GPU_QUERY)
        except Absent as exc:
            raise Absent(f"{exc}; no NVIDIA GPU or driver here" + (f" ({reason})" if reason else "")) from None
        try:
            settings = parse_gpu_csv(p.run(["nvidia-smi", f"--query-gpu={','.join(GPU_SETTINGS_QUERY)}",
                                            "--format=csv,noheader,nounits"]), GPU_SETTINGS_QUERY)
            by_index = {s.pop("index"): s for s in settings}
            for d in devices:
                d.update(by_index.get(d["index"], {}))
        except Absent:
            pass
        try:
            header = parse_smi_header(p.run(["nvidia-smi"]))
        except Absent:
            header = {"driver": None, "cuda_driver": None}
    if not devices:
        raise Absent(f"{source} lists no GPU")
    models = list(dict.fromkeys(d.get("name") for d in devices))
    driver = header.get("driver") or devices[0].get("driver")
    for d in devices:
        d.pop("driver", None)
    return {"source": source, "count": len(devices), "models": models, "driver": driver,
            "cuda_driver": header.get("cuda_driver"), "devices": devices, "topology": _section(_topology, p)}


def _topology(p: Probe) -> dict[str, Any]:
    text = p.run(["nvidia-smi", "topo", "-m"])
    return {"text": text, **parse_topology(text)}


def _gpus_nvml() -> tuple[list[dict[str, Any]] | None, dict[str, Any], str | None]:
    """Devices through NVML (nvidia-ml-py), or None and why not, so that nvidia-smi is asked instead."""
    try:
        import pynvml  # type: ignore[import-not-found]
    except ImportError:
        return None, {}, None
    try:
        pynvml.nvmlInit()
    except Exception as exc:  # noqa: BLE001 - NVMLError_LibraryNotFound and friends: no driver here
        return None, {}, f"NVML: {exc}"

    def s(value):
        return value.decode() if isinstance(value, bytes) else value

    def get(fn, *args):
        try:
            return fn(*args)
        except Exception:  # noqa: BLE001 - NVMLError_NotSupported on some boards and fields
            return None

    try:
        cuda = get(pynvml.nvmlSystemGetCudaDriverVersion_v2) or get(pynvml.nvmlSystemGetCudaDriverVersion)
        header = {"driver": s(get(pynvml.nvmlSystemGetDriverVersion)),
                  "cuda_driver": f"{cuda // 1000}.{cuda % 1000 // 10}" if cuda else None}
        devices = []
        for i in range(pynvml.nvmlDeviceGetCount()):
            h = pynvml.nvmlDeviceGetHandleByIndex(i)
            memory = get(pynvml.nvmlDeviceGetMemoryInfo, h)
            pci = get(pynvml.nvmlDeviceGetPciInfo, h)
            power = get(pynvml.nvmlDeviceGetPowerManagementLimit, h)
            persistence = get(pynvml.nvmlDeviceGetPersistenceMode, h)
            ecc = get(pynvml.nvmlDeviceGetEccMode, h)
            devices.append({
                "index": i, "name": s(get(pynvml.nvmlDeviceGetName, h)), "uuid": s(get(pynvml.nvmlDeviceGetUUID, h)),
                "memory_mib": memory.total // 2**20 if memory else None,
                "clock_max_sm_mhz": get(pynvml.nvmlDeviceGetMaxClockInfo, h, pynvml.NVML_CLOCK_SM),
                "clock_max_mem_mhz": get(pynvml.nvmlDeviceGetMaxClockInfo, h, pynvml.NVML_CLOCK_MEM),
                "pci_bus_id": s(pci.busId) if pci else None,
                "clock_app_sm_mhz": get(pynvml.nvmlDeviceGetApplicationsClock, h, pynvml.NVML_CLOCK_SM),
                "clock_app_mem_mhz": get(pynvml.nvmlDeviceGetApplicationsClock, h, pynvml.NVML_CLOCK_MEM),
                "power_limit_w": _number(f"{power / 1000:.2f}") if power is not None else None,
                "persistence_mode": None if persistence is None else ("Enabled" if persistence else "Disabled"),
                "ecc_mode": None if ecc is None else ("Enabled" if ecc[0] else "Disabled"),
            })
        return devices, header, None
    except Exception as exc:  # noqa: BLE001 - a half-working NVML: let nvidia-smi try
        return None, {}, f"NVML: {exc}"
    finally:
        get(pynvml.nvmlShutdown)


# ---------------------------------------------------------------- CUDA, cuDNN, NCCL


def _ldconfig_versions(p: Probe) -> dict[str, str]:
    """{library stem: full version} of the shared libraries the dynamic linker knows, by the file a
    `libX.so.N` link resolves to (libnccl.so.2 -> libnccl.so.2.5.6)."""
    try:
        text = p.run(["ldconfig", "-p"])
    except Absent:
        return {}
    found: dict[str, str] = {}
    for m in re.finditer(r"^\s*(lib(?:cudart|cudnn|nccl))\.so\.[\d.]+ .*=> (\S+)$", text, re.MULTILINE):
        stem, target = m.group(1), m.group(2)
        real = os.path.basename(os.path.realpath(str(p.path(target))))
        version = re.search(r"\.so\.(\d+(?:\.\d+)+)$", real)
        if version and stem not in found:
            found[stem] = version.group(1)
    return found


def _header_version(p: Probe, names: list[str], prefix: str, patch: str) -> str | None:
    """MAJOR.MINOR.PATCH from the #defines of the first header found."""
    for name in names:
        text = p.read(name)
        if not text:
            continue
        parts = [re.search(rf"#define\s+{prefix}_{key}\s+(\d+)", text) for key in ("MAJOR", "MINOR", patch)]
        if all(parts):
            return ".".join(m.group(1) for m in parts if m)
    return None


_CUDNN_HEADERS = ["/usr/include/cudnn_version.h", "/usr/include/x86_64-linux-gnu/cudnn_version_v9.h",
                  "/usr/include/x86_64-linux-gnu/cudnn_version_v8.h", "/usr/local/cuda/include/cudnn_version.h",
                  "/usr/include/cudnn.h", "/usr/include/x86_64-linux-gnu/cudnn_v7.h", "/usr/local/cuda/include/cudnn.h"]
_NCCL_HEADERS = ["/usr/include/nccl.h", "/usr/local/cuda/include/nccl.h", "/usr/local/nccl/include/nccl.h"]


def _versions(sources: dict[str, str | None], what: str, looked: str) -> dict[str, Any]:
    """The version found first (the library actually linked, then headers, then what the container
    says), and every source's answer: when they disagree, someone replaced a library."""
    found = {k: v for k, v in sources.items() if v}
    if not found:
        raise Absent(f"no {what} found ({looked})")
    return {"version": next(iter(found.values())), "sources": found}


def _libraries(p: Probe) -> dict[str, dict[str, Any]]:
    libs = _ldconfig_versions(p)
    cuda_txt = p.read("/usr/local/cuda/version.txt") or ""
    cuda_json = None
    try:
        cuda_json = json.loads(p.read("/usr/local/cuda/version.json") or "null")
    except ValueError:
        pass
    cuda = {"library": libs.get("libcudart"),
            "toolkit": (cuda_json or {}).get("cuda_cudart", {}).get("version")
            or (re.search(r"CUDA Version\s+([\d.]+)", cuda_txt) or [None, None])[1],
            "nvcc": _nvcc(p), "env": p.env.get("CUDA_VERSION")}
    cudnn = {"library": libs.get("libcudnn"), "header": _header_version(p, _CUDNN_HEADERS, "CUDNN", "PATCHLEVEL"),
             "env": p.env.get("CUDNN_VERSION")}
    nccl = {"library": libs.get("libnccl"), "header": _header_version(p, _NCCL_HEADERS, "NCCL", "PATCH"),
            "env": p.env.get("NCCL_VERSION")}
    return {
        "cuda": _section(_versions, cuda, "CUDA runtime", "no libcudart, /usr/local/cuda, nvcc or CUDA_VERSION"),
        "cudnn": _section(_versions, cudnn, "cuDNN", "no libcudnn, cudnn header or CUDNN_VERSION"),
        "nccl": _section(_versions, nccl, "NCCL", "no libnccl, nccl.h or NCCL_VERSION"),
    }


def _nvcc(p: Probe) -> str | None:
    for command in ("nvcc", "/usr/local/cuda/bin/nvcc"):
        try:
            m = re.search(r"release [\d.]+, V([\d.]+)", p.run([command, "--version"]))
        except Absent:
            continue
        if m:
            return m.group(1)
    return None


# ---------------------------------------------------------------- container


_CONTAINER_ENV = re.compile(r"_VERSION$|^NVIDIA_BUILD_ID$|_BUILD_ID$")


def _container(p: Probe, image: str | None, digest: str | None) -> dict[str, Any]:
    runtime = None
    if p.path("/.dockerenv").exists():
        runtime = "docker"
    elif p.path("/run/.containerenv").exists():
        runtime = "podman"
    elif p.env.get("SINGULARITY_CONTAINER") or p.env.get("APPTAINER_CONTAINER"):
        runtime = "apptainer" if p.env.get("APPTAINER_CONTAINER") else "singularity"
    elif p.env.get("container"):
        runtime = p.env["container"]
    elif re.search(r"docker|kubepods|containerd|lxc", p.read("/proc/1/cgroup") or ""):
        runtime = "container"
    image = image or p.env.get("BENCHBOOK_IMAGE") or p.env.get("SINGULARITY_CONTAINER") \
        or p.env.get("APPTAINER_CONTAINER")
    digest = digest or p.env.get("BENCHBOOK_IMAGE_DIGEST")
    if image and "@sha256:" in image and not digest:
        digest = image.split("@", 1)[1]
    image_id = None
    if image and runtime is None and not digest:
        digest, image_id = _docker_digest(p, image)
    if runtime is None and not image:
        raise Absent("not inside a container (no /.dockerenv, /run/.containerenv, container cgroup or "
                     "SINGULARITY_CONTAINER) and no image given")
    env = {k: v for k, v in sorted(p.env.items()) if _CONTAINER_ENV.search(k)} if runtime else {}
    return {"inside": runtime is not None, "runtime": runtime, "image": image, "digest": digest,
            "image_id": image_id, "build_id": p.env.get("NVIDIA_BUILD_ID") if runtime else None, "env": env}


def _docker_digest(p: Probe, image: str) -> tuple[str | None, str | None]:
    """The repository digest and image id of an image the local docker engine holds (host side)."""
    try:
        text = p.run(["docker", "image", "inspect", "--format", "{{json .RepoDigests}} {{.Id}}", image])
    except Absent:
        return None, None
    m = re.search(r"@(sha256:[0-9a-f]{64})", text)
    i = re.search(r"\s(sha256:[0-9a-f]{64})\s*$", text)
    return (m.group(1) if m else None), (i.group(1) if i else None)


# ---------------------------------------------------------------- Python, packages, frameworks

# Runs in the interpreter of the framework environment, which may be old (NGC 20.xx containers ship
# Python 3.6): no walrus, no importlib.metadata without a fallback. Prints one marked JSON line last,
# because importing a framework may print to stdout.
PYTHON_SNIPPET = r'''
import importlib, json, platform, re, sys
IMPORT = len(sys.argv) > 1 and sys.argv[1] == "1"
def norm(name):
    return re.sub(r"[-_.]+", "-", name).lower()
packages = {}
try:
    from importlib import metadata
    for d in metadata.distributions():
        name = d.metadata["Name"]
        if name and norm(name) not in packages:
            packages[norm(name)] = d.version
except ImportError:
    import pkg_resources
    for d in pkg_resources.working_set:
        packages[norm(d.project_name)] = d.version
def dist(pred):
    names = sorted(n for n in packages if pred(n))
    return names[0] if names else None
def tf_info(m):
    info = {}
    v = getattr(m, "version", None)
    info["git_version"] = getattr(v, "GIT_VERSION", None) or getattr(m, "GIT_VERSION", None)
    try:
        info["built_with_cuda"] = bool(m.test.is_built_with_cuda())
    except Exception:
        pass
    try:
        b = m.sysconfig.get_build_info()
        info["cuda"] = b.get("cuda_version")
        info["cudnn"] = b.get("cudnn_version")
    except Exception:
        pass
    return info
def mx_info(m):
    feats = m.runtime.Features()
    return {"features": sorted(name for name, f in feats.items() if f.enabled)}
def torch_info(m):
    info = {"cuda": m.version.cuda, "git_version": getattr(m.version, "git_version", None)}
    try:
        info["cudnn"] = m.backends.cudnn.version()
    except Exception:
        pass
    try:
        v = m.cuda.nccl.version()
        info["nccl"] = ".".join(str(x) for x in v) if isinstance(v, tuple) else v
    except Exception:
        pass
    return info
FRAMEWORKS = [
    ("tensorflow", "tensorflow", lambda n: n in ("tensorflow", "tensorflow-gpu", "nvidia-tensorflow",
                                                 "tensorflow-cpu", "tf-nightly", "intel-tensorflow"), tf_info),
    ("mxnet", "mxnet", lambda n: n.startswith("mxnet"), mx_info),
    ("torch", "torch", lambda n: n == "torch", torch_info),
    ("horovod", "horovod", lambda n: n == "horovod", None),
    ("dali", "nvidia.dali", lambda n: n.startswith("nvidia-dali"), None),
]
frameworks = {}
for key, module, pred, build in FRAMEWORKS:
    package = dist(pred)
    info = {"package": package, "version": packages.get(package), "package_version": packages.get(package)}
    if IMPORT:
        try:
            m = importlib.import_module(module)
        except ImportError as exc:
            if package is None:
                continue
            info["import_error"] = "%s: %s" % (type(exc).__name__, exc)
        except Exception as exc:
            info["import_error"] = "%s: %s" % (type(exc).__name__, exc)
        else:
            info["version"] = getattr(m, "__version__", None) or info["version"]
            if build is not None:
                try:
                    info.update(build(m))
                except Exception as exc:
                    info["build_error"] = "%s: %s" % (type(exc).__name__, exc)
    elif package is None:
        continue
    frameworks[key] = info
out = {"version": platform.python_version(), "implementation": platform.python_implementation(),
       "executable": sys.executable, "prefix": sys.prefix, "packages": dict(sorted(packages.items())),
       "frameworks": frameworks}
sys.stdout.write("\n@@benchbook-env@@" + json.dumps(out, default=str) + "\n")
'''
_MARK = "@@benchbook-env@@"


def _python(p: Probe, python: str, import_frameworks: bool) -> dict[str, Any]:
    """The interpreter's version and packages, and the frameworks it has (with their build when
    `import_frameworks`). If importing takes too long, the packages alone are recorded."""
    note = None
    try:
        out = p.run([python, "-c", PYTHON_SNIPPET, "1" if import_frameworks else "0"],
                    timeout=PYTHON_TIMEOUT if import_frameworks else p.timeout * 3)
    except TimedOut as exc:
        if not import_frameworks:
            raise
        note = f"frameworks not imported: {exc}"
        out = p.run([python, "-c", PYTHON_SNIPPET, "0"], timeout=p.timeout * 3)
    line = next((ln for ln in reversed(out.splitlines()) if ln.startswith(_MARK)), None)
    if line is None:
        raise Absent(f"{python} printed no package list")
    info = json.loads(line[len(_MARK):])
    if note:
        info["note"] = note
    return info


# ---------------------------------------------------------------- model code


def _sanitize_url(url: str) -> str:
    """A remote URL without the user:token@ part that https remotes sometimes carry."""
    return re.sub(r"^(\w[\w+.-]*://)[^/@]+@", r"\1", url.strip())


PATCH_LIMIT = 256 * 1024  # bytes of local patch kept in the record; its hash always covers all of it


def _code(p: Probe, code_dir: Path | None) -> dict[str, Any]:
    if code_dir is None:
        raise Absent("no model code folder given")
    folder = Path(code_dir).resolve()
    if not folder.is_dir():
        raise Absent(f"{folder} is not a folder")

    def git(*args):
        # safe.directory: in a container the checkout is often owned by another user, which
        # git >= 2.35.2 otherwise refuses to read.
        return p.run(["git", "-c", "safe.directory=*", "-C", str(folder), *args])

    try:
        top = git("rev-parse", "--show-toplevel").strip()
    except Absent as exc:
        raise Absent(f"{folder} is not in a git repository ({exc})") from None

    def maybe(*args):
        try:
            return git(*args).strip() or None
        except Absent:
            return None

    try:
        status = git("status", "--porcelain", "--untracked-files=normal")  # "XY path": not stripped
    except Absent:
        status = ""

    remotes = (maybe("remote") or "").split()
    remote = "origin" if "origin" in remotes else (remotes[0] if remotes else None)
    url = maybe("remote", "get-url", remote) if remote else None
    changed = [line[3:] for line in status.splitlines() if not line.startswith("??")]
    untracked = [line[3:] for line in status.splitlines() if line.startswith("??")]
    commit = maybe("rev-parse", "HEAD")
    patch = ""
    if commit and changed:
        try:
            patch = git("diff", "HEAD", "--binary", "--no-color", "--no-ext-diff")
        except Absent:
            pass
    return {"path": str(folder), "root": top, "repository": _sanitize_url(url) if url else None,
            "commit": commit, "branch": maybe("rev-parse", "--abbrev-ref", "HEAD"),
            "describe": maybe("describe", "--tags", "--always"), "dirty": bool(changed), "changed_files": changed,
            "untracked_files": len(untracked),
            "patch_sha256": hashlib.sha256(patch.encode("utf-8")).hexdigest() if patch else None,
            "patch": patch if len(patch.encode("utf-8")) <= PATCH_LIMIT else None,
            "patch_truncated": len(patch.encode("utf-8")) > PATCH_LIMIT}


# ---------------------------------------------------------------- InfiniBand, variables


def _infiniband(p: Probe) -> dict[str, Any]:
    base = p.path("/sys/class/infiniband")
    if not base.is_dir():
        raise Absent("no InfiniBand devices (/sys/class/infiniband absent)")

    def read(path):
        try:
            return path.read_text(encoding="utf-8", errors="replace").strip() or None
        except OSError:
            return None

    devices = {}
    for dev in sorted(base.iterdir()):
        ports = {}
        for port in sorted((dev / "ports").iterdir()) if (dev / "ports").is_dir() else []:
            state = read(port / "state")  # "4: ACTIVE"
            phys = read(port / "phys_state")  # "5: LinkUp"
            ports[port.name] = {"state": state.split(":", 1)[-1].strip() if state else None,
                                "phys_state": phys.split(":", 1)[-1].strip() if phys else None,
                                "rate": read(port / "rate"), "link_layer": read(port / "link_layer")}
        devices[dev.name] = {"hca_type": read(dev / "hca_type"), "fw_ver": read(dev / "fw_ver"),
                             "board_id": read(dev / "board_id"), "ports": ports}
    if not devices:
        raise Absent("no InfiniBand devices (/sys/class/infiniband is empty)")
    return {"devices": devices}


def variables(env: dict[str, str]) -> dict[str, str]:
    """The environment variables that change what the libraries do; secrets-like names redacted."""
    out = {}
    for name in sorted(env):
        if (name in VARIABLE_NAMES or name.startswith(VARIABLE_PREFIXES)) and not _NOT_VARIABLES.search(name):
            out[name] = "<redacted>" if _SECRET.search(name) else env[name]
    return out


# ---------------------------------------------------------------- the record


def capture(python: str | None = None, code_dir: str | Path | None = None, *, image: str | None = None,
            digest: str | None = None, import_frameworks: bool = True, probe: Probe | None = None) -> dict[str, Any]:
    """Everything about this machine and environment that throughput depends on, as a JSON-able dict.

    `python`: the interpreter of the framework environment (default: this one); its packages and
    frameworks are listed by running it, so benchbook never imports a framework itself. `code_dir`:
    the model code's checkout (repository, commit, local patch). `image`/`digest`: the container
    image, when the caller knows it (also read from BENCHBOOK_IMAGE and BENCHBOOK_IMAGE_DIGEST, so a
    launcher can pass them into the container). Sections that do not apply say so: `available`
    false and a `reason`.
    """
    p = probe or Probe()
    py = _section(_python, p, python or sys.executable, import_frameworks)
    if py["available"]:
        found = py.pop("frameworks")
        frameworks = {"available": bool(found), **found} if found else {
            "available": False, "reason": f"no tensorflow, mxnet, torch, horovod or DALI in {py['executable']}"}
    else:
        frameworks = dict(py)
    libraries = _libraries(p)
    return {
        "schema_version": SCHEMA_VERSION,
        "captured_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),  # noqa: UP017 - runs on 3.8
        "hostname": socket.gethostname(),
        "system": _section(_system, p),
        "gpus": _section(_gpus, p),
        "cuda": libraries["cuda"],
        "cudnn": libraries["cudnn"],
        "nccl": libraries["nccl"],
        "frameworks": frameworks,
        "container": _section(_container, p, image, digest),
        "python": py,
        "code": _section(_code, p, code_dir),
        "infiniband": _section(_infiniband, p),
        "variables": variables(p.env),
    }


SECTIONS = ("system", "gpus", "cuda", "cudnn", "nccl", "frameworks", "container", "python", "code", "infiniband",
            "variables")


def main(argv: list[str] | None = None) -> int:
    """`python3 capture.py [--python PY] [--code DIR] [--image NAME] [--no-import]`: the record as JSON."""
    import argparse

    ap = argparse.ArgumentParser(description="Print this environment's benchbook capture as JSON.")
    ap.add_argument("--python", help="interpreter whose packages and frameworks to list (default: this one)")
    ap.add_argument("--code", help="the model code's git checkout")
    ap.add_argument("--image", help="the container image name")
    ap.add_argument("--no-import", action="store_true", help="list framework packages without importing them")
    args = ap.parse_args(argv)
    record = capture(args.python, args.code, image=args.image, import_frameworks=not args.no_import)
    sys.stdout.write(json.dumps(record, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
