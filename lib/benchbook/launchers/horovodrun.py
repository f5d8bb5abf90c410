"""`horovodrun`: Horovod's own launcher (MPI or Gloo underneath), for containers that ship it."""

from __future__ import annotations

from . import register
from .base import Launcher, processes
from .mpirun import hosts


@register
class Horovodrun(Launcher):
    name = "horovodrun"

    def wrap(self, study, cfg, argv):
        n = processes(cfg, study)
        if n <= 1 and cfg.get("nodes", 1) <= 1:
            return argv
        per_node = n // max(1, cfg.get("nodes", 1))
        out = ["horovodrun", "-np", str(n), "-H", hosts(study, cfg, per_node)]
        if study.ssh_port:
            out += ["-p", str(study.ssh_port)]
        return out + study.launcher.args + argv
