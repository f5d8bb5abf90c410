"""What a study's sweep asks of the machine: GPUs per node, nodes, launcher programs, real data, DALI.

Read once from the expanded runs; the GPU, launcher and data checks compare the machine with it.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import launchers as launchers_registry
from ..study import RunSpec, Study


@dataclass(frozen=True)
class Needs:
    per_node: int  # most GPUs on one node
    widest: str  # the point that needs them, as written (8, 4x8, 1,8)
    nodes: int  # most nodes
    launchers: tuple[str, ...]  # the programs that start several processes: mpiexec, mpirun, horovodrun
    real_data: bool
    dali: bool


def sweep_needs(study: Study, runs: list[RunSpec]) -> Needs:
    per_node, widest, nodes, launchers, real, dali = 0, "", 1, set(), False, False
    for r in runs:
        cfg = r.config
        if "gpu_counts" in cfg:  # MXNet benchmark.py: every count on this node
            n, g, label = 1, max(cfg["gpu_counts"]), ",".join(map(str, cfg["gpu_counts"]))
        else:
            n, g = cfg.get("nodes", 1), cfg.get("gpus_per_node", 0)
            label = f"{n}x{g}" if n > 1 else str(g)
        if g > per_node:
            per_node, widest = g, label
        nodes = max(nodes, n)
        wrapped = launchers_registry.get(study.launcher.name).wrap(study, cfg, ["PROGRAM"])
        if wrapped[0] != "PROGRAM":
            launchers.add(wrapped[0])
        real |= not cfg["synthetic"]
        dali |= bool(cfg["dali"]) and not cfg["synthetic"]
    return Needs(per_node, widest, nodes, tuple(sorted(launchers)), real, dali)
