"""What `diff.view` reads of a capture, checked before it reads it.

A capture comes from a file: one benchbook wrote, or one that was edited, truncated or written by
hand (a run record in a received study folder). Each field `view` reads has the type it expects
(a section is an object, `gpus.devices` a list of objects, a package version one value), and nothing
is nested deeper than MAX_DEPTH; a field that is not so is a `CaptureError` naming the file and the
field, never an AttributeError halfway through a comparison. Fields `view` does not read are left
as they are (their depth aside).
"""

from __future__ import annotations

from typing import Any

from ..errors import BenchbookError

#: How deep a capture or a run's config may nest: benchbook writes five levels at most.
MAX_DEPTH = 32

_S = "one value (text, number, true/false or null)"  # a leaf `view` compares
ANY = "anything"  # kept as it is (flattened by view), only its depth is bounded
_SCALARS = (str, int, float, bool, type(None))

_DEVICE = {k: _S for k in ("name", "memory_mib", "clock_max_sm_mhz", "clock_max_mem_mhz", "clock_app_sm_mhz",
                           "clock_app_mem_mhz", "power_limit_w", "persistence_mode", "ecc_mode", "uuid", "pci_bus_id")}
#: The shape of what view reads: a dict is an object (its "*" every other key), a one-item list a list.
SHAPE: dict[str, Any] = {
    "hostname": _S,
    "system": {"os": _S, "kernel": _S, "arch": _S, "distro": {"pretty": _S}, "cpu": {"*": _S},
               "memory": {"total_bytes": _S, "cgroup_limit_bytes": _S}},
    "gpus": {"count": _S, "driver": _S, "cuda_driver": _S, "topology": {"summary": _S}, "devices": [_DEVICE]},
    "cuda": {"version": _S}, "cudnn": {"version": _S}, "nccl": {"version": _S},
    "frameworks": {"*": ANY},
    "container": {**{k: _S for k in ("inside", "runtime", "image", "digest", "image_id", "build_id")},
                  "env": {"*": _S}},
    "code": {k: _S for k in ("repository", "commit", "dirty", "patch_sha256", "path")},
    "variables": {"*": _S},
    "infiniband": {"devices": {"*": {"hca_type": _S, "fw_ver": _S, "ports": {"*": {"*": _S}}}}},
    "python": {"version": _S, "implementation": _S, "executable": _S, "packages": {"*": _S}},
}


class CaptureError(BenchbookError, ValueError):
    """Raised when a capture (or a run's config) holds a field of a type `view` cannot compare."""


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "text", bool: "true/false", type(None): "null"}.get(
        type(value), "a number" if isinstance(value, int | float) else type(value).__name__)


def check(value: Any, source: str, where: str = "", shape: Any = None) -> None:
    """CaptureError naming `source` and the field when `value` (a capture, or with `shape` ANY a run's
    config) is not what view reads, the first such field in file order. Walked with a stack: a nesting of
    any depth is an error, not a crash."""
    stack = [(value, SHAPE if shape is None else shape, where, 0)]
    while stack:
        value, shape, where, depth = stack.pop()
        label = where or "(top level)"
        if depth > MAX_DEPTH:
            raise CaptureError(f"{source}: {label}: nested more than {MAX_DEPTH} levels deep (what benchbook "
                               "writes nests five at most)")
        if shape == _S:
            if not isinstance(value, _SCALARS):
                raise CaptureError(f"{source}: {label}: expected {_S}, found {_kind(value)}")
        elif shape == ANY:
            if isinstance(value, dict):
                stack += reversed([(v, ANY, f"{where}.{k}", depth + 1) for k, v in value.items()])
            elif isinstance(value, list):
                stack += reversed([(v, ANY, f"{where}[{i}]", depth + 1) for i, v in enumerate(value)])
        elif value is None:
            continue  # an absent object or list: view reads it as empty
        elif isinstance(shape, list):
            if not isinstance(value, list):
                raise CaptureError(f"{source}: {label}: expected a list, found {_kind(value)}")
            stack += reversed([(v, shape[0], f"{where}[{i}]", depth + 1) for i, v in enumerate(value)])
        elif not isinstance(value, dict):
            raise CaptureError(f"{source}: {label}: expected an object, found {_kind(value)}")
        else:
            stack += reversed([(v, shape.get(k, shape.get("*", ANY)), f"{where}.{k}" if where else k, depth + 1)
                               for k, v in value.items()])
