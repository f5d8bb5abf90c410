"""The operating system, CPU (model, sockets, cores, threads, NUMA, governor) and memory (and a
container's cgroup limit), from /etc/os-release, /proc, /sys, lscpu or sysctl.
"""

from __future__ import annotations

import glob
import os
import platform
import re
from typing import Any

try:
    from .probe import Absent, Probe, number
except ImportError:  # run as plain files (python3 capture/): siblings are top-level modules
    from probe import Absent, Probe, number


def read_system(p: Probe) -> dict[str, Any]:
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
        value = number(f.get(key))
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

    return {"model": sysctl("machdep.cpu.brand_string"), "sockets": number(sysctl("hw.packages")),
            "cores": number(sysctl("hw.physicalcpu")), "threads": number(sysctl("hw.logicalcpu"))}


def _memory(p: Probe) -> dict[str, Any]:
    total = None
    m = re.search(r"^MemTotal:\s+(\d+)\s*kB", p.read("/proc/meminfo") or "", re.MULTILINE)
    if m:
        total = int(m.group(1)) * 1024
    elif platform.system() == "Darwin":
        try:
            total = number(p.run(["sysctl", "-n", "hw.memsize"]).strip())
        except Absent:
            pass
    # A container's memory limit (cgroup v2, then v1); v1 writes a huge number for "no limit".
    limit = None
    for name in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        value = number((p.read(name) or "").strip())
        if value is not None:
            limit = int(value) if value < 2**60 else None
            break
    return {"total_bytes": total, "cgroup_limit_bytes": limit}
