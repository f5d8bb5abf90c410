"""The InfiniBand adapters and their ports' state and rate, from /sys/class/infiniband."""

from __future__ import annotations

from typing import Any

try:
    from .probe import Absent, Probe
except ImportError:  # run as plain files (python3 capture/): siblings are top-level modules
    from probe import Absent, Probe


def read_infiniband(p: Probe) -> dict[str, Any]:
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
