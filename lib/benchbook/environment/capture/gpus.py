"""The GPUs: through NVML (nvidia-ml-py) where it works, else `nvidia-smi` queries; their clocks,
power, persistence and ECC settings, the driver, and the `nvidia-smi topo -m` wiring.
"""

from __future__ import annotations

import re
from typing import Any

try:
    from .probe import Absent, Probe, number, section
except ImportError:  # run as plain files (python3 capture/): siblings are top-level modules
    from probe import Absent, Probe, number, section

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
                parsed = number(value)
                value = parsed if parsed is not None else value
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


def read_gpus(p: Probe) -> dict[str, Any]:
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
            "cuda_driver": header.get("cuda_driver"), "devices": devices, "topology": section(_topology, p)}


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
                "power_limit_w": number(f"{power / 1000:.2f}") if power is not None else None,
                "persistence_mode": None if persistence is None else ("Enabled" if persistence else "Disabled"),
                "ecc_mode": None if ecc is None else ("Enabled" if ecc[0] else "Disabled"),
            })
        return devices, header, None
    except Exception as exc:  # noqa: BLE001 - a half-working NVML: let nvidia-smi try
        return None, {}, f"NVML: {exc}"
    finally:
        get(pynvml.nvmlShutdown)
