"""What one sweep point may ask: the precisions of each runtime, GPUs as `8` or `2x8`, and what the
model's scripts accept (XLA, DALI, synthetic data, several processes), checked when a study is loaded.
"""

from __future__ import annotations

import re
from typing import Any

# What these checks are given: a `studies.study.Study`, which imports this module (naming the type
# here would be an import back up to it).
Study = Any

PRECISIONS = {"ngc": ("fp32", "amp", "tf32"), "cpu": ("fp32", "bf16")}
CUDA_PRECISIONS = ("fp32", "tf32", "amp", "bf16")  # the PyTorch workload on a GPU (cpu.device: cuda)


def parse_gpus(spec: int | str, gpus_per_node: int) -> tuple[int, int]:
    """`8` or `"8"` (one node) or `"2x8"` (nodes x GPUs per node) as (nodes, GPUs per node)."""
    if isinstance(spec, bool):
        raise ValueError(f"{spec!r} is not a GPU count")
    if isinstance(spec, int):
        return 1, spec
    m = re.fullmatch(r"\s*(\d+)\s*(?:[xX*]\s*(\d+))?\s*", str(spec))
    if not m:
        raise ValueError(f"{spec!r} is not a GPU count; write 8 (one node) or 2x8 (nodes x GPUs per node)")
    return (int(m.group(1)), int(m.group(2))) if m.group(2) else (1, int(m.group(1)))


def point_errors(study: Study, point: dict) -> list[str]:
    """What is impossible about one sweep point, in words."""
    errors = []
    try:
        nodes, per_node = parse_gpus(point["gpus"], study.gpus_per_node)
    except ValueError as exc:
        return [f"gpus: {exc}"]
    precision, rt = point["precision"], study.runtime
    cuda = rt == "cpu" and study.cpu.device == "cuda"
    allowed = CUDA_PRECISIONS if cuda else PRECISIONS[rt]
    if precision not in allowed:
        where = "cpu.device cuda" if cuda else f"runtime {rt}"
        errors.append(f"precision: {precision!r} is not available on {where}; allowed: {', '.join(allowed)}")
    if point["batch_size"] < 1:
        errors.append(f"batch_size: {point['batch_size']} must be at least 1")
    launcher = study.launcher.name
    if point["processes"] < 1:
        errors.append(f"processes: {point['processes']} must be at least 1")
    spec = study.spec
    if rt == "cpu":
        if point["processes"] > 1 and not spec.cpu_processes:
            errors.append(f"processes: the {study.model} CPU workload trains in one process; write processes: 1")
        if cuda and (nodes, per_node) != (1, 1):
            errors.append(f"gpus: {point['gpus']!r}; cpu.device cuda runs the workload on one GPU: write gpus: 1")
        elif not cuda and (nodes, per_node) != (1, 0):
            errors.append(f"gpus: {point['gpus']!r} on runtime cpu; CPU runs use no GPU: write gpus: 0")
        if point["dali"]:
            errors.append("dali: the CPU workloads have no DALI pipeline; write dali: false")
        if point["xla"] and not spec.cpu_xla:
            errors.append(f"xla: {study.model} has no XLA on the CPU; write xla: false")
        if spec.cpu_generated_data and point["data"] == "real":
            errors.append(f"data: {spec.cpu_generated_data}; write data: synthetic")
        return errors
    if nodes < 1 or per_node < 1:
        errors.append(f"gpus: {point['gpus']!r}; runtime ngc needs at least one GPU")
    if point["processes"] != 1:
        errors.append("processes: NGC runs start one process per GPU; set gpus instead")
    if nodes > 1 and launcher == "local":
        errors.append(f"gpus: {point['gpus']!r} spans {nodes} nodes but launcher local runs on this node; "
                      "choose launcher mpirun, horovodrun or slurm")
    if per_node > study.gpus_per_node:
        errors.append(
            f"gpus: {point['gpus']!r} puts {per_node} GPUs on one node but gpus_per_node is {study.gpus_per_node}; "
            f"write it as nodes x GPUs per node, e.g. {max(1, -(-per_node // study.gpus_per_node))}x"
            f"{min(per_node, study.gpus_per_node)}")
    if nodes > 1 and len(study.hosts) < nodes and launcher in ("mpirun", "horovodrun"):
        errors.append(f"gpus: {point['gpus']!r} needs {nodes} hosts but `hosts` lists {len(study.hosts)}")
    if point["xla"] and spec.ngc_xla == "never":
        errors.append(f"xla: {study.framework} {spec.title} has no XLA; write xla: false")
    if not point["xla"] and spec.ngc_xla == "always":
        errors.append(f"xla: {spec.ngc_script} always enables XLA; write xla: true")
    if point["dali"] and not spec.ngc_dali:
        errors.append(f"dali: the {spec.title} pipeline does not use DALI; write dali: false")
    if point["dali"] and point["data"] == "synthetic":
        errors.append("dali: DALI reads real data; synthetic data runs with dali: false")
    if point["data"] == "real" and not study.data.path and study.container and study.container.mode == "run":
        errors.append("data: real data needs data.path (the host folder to mount)")
    if not spec.ngc_synthetic and point["data"] == "synthetic":
        errors.append(f"data: {spec.title} trains on {spec.dataset}; synthetic data is not available")
    if point["dali"] and spec.dali_index and not study.data.dali_index:
        errors.append("dali: DALI with TFRecords needs data.dali_index (the index folder)")
    return errors
