"""The GPUs of this node (`nvidia-smi -L`, or given) against the most GPUs per node in the sweep."""

from __future__ import annotations

import re

from ..study import Study
from .needs import Needs
from .probes import Check, Probes, first_line


def gpu_count(p: Probes, study: Study, needs: Needs, gpus: int | None) -> Check:
    need = needs.per_node
    if gpus is None:
        code, out, err = p.call(["nvidia-smi", "-L"])
        if code != 0:
            reason = err.strip() if code is None else (first_line(err, out) or f"exit status {code}")
            return Check("GPUs per node", False, f"{need} needed (point {needs.widest}); nvidia-smi failed: {reason}",
                         "install the NVIDIA driver (nvidia-smi must list the GPUs), or run on a GPU node")
        gpus, source = len(re.findall(r"^GPU \d+:", out, re.MULTILINE)), "nvidia-smi -L"
    else:
        source = "given"
    detail = f"{gpus} on this node ({source}), {need} needed (largest point: {needs.widest} GPUs)"
    if gpus >= need:
        return Check("GPUs per node", True, detail)
    return Check("GPUs per node", False, detail,
                 f"run on a node with at least {need} GPUs, or remove the points above {gpus} GPUs per node "
                 "from the sweep")
