"""The CUDA runtime, cuDNN and NCCL versions, from every source that says (the linked library, headers,
nvcc, the container's variables), so that a replaced library shows as a disagreement.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

try:
    from .probe import Absent, Probe, section
except ImportError:  # run as plain files (python3 capture/): siblings are top-level modules
    from probe import Absent, Probe, section


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


def read_libraries(p: Probe) -> dict[str, dict[str, Any]]:
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
        "cuda": section(_versions, cuda, "CUDA runtime", "no libcudart, /usr/local/cuda, nvcc or CUDA_VERSION"),
        "cudnn": section(_versions, cudnn, "cuDNN", "no libcudnn, cudnn header or CUDNN_VERSION"),
        "nccl": section(_versions, nccl, "NCCL", "no libnccl, nccl.h or NCCL_VERSION"),
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
