"""`horovodrun`: Horovod's own launcher (MPI or Gloo underneath), for containers that ship it."""

from __future__ import annotations

from .base import Launcher
from .mpirun import placement
from .registry import register


@register
class Horovodrun(Launcher):
    name = "horovodrun"

    def wrap(self, study, cfg, argv):
        placed = placement(study, cfg)
        if placed is None:
            return argv
        n, hosts = placed
        out = ["horovodrun", "-np", str(n), "-H", hosts]
        if study.ssh_port:
            out += ["-p", str(study.ssh_port)]
        return out + study.launcher.args + argv
