"""`mpirun`: OpenMPI across hosts over SSH, the way the published multi-node studies ran: one
rank per GPU (or per CPU process), every line tagged with its rank, the study's variables
exported to every rank, and the SSH port and agent of the containers' sshd."""

from __future__ import annotations

import os

from .base import Launcher, exported, processes
from .registry import register


def placement(study, cfg) -> tuple[int, str] | None:
    """(processes, `-H` of the run: the study's first `nodes` hosts with their slots, this host for
    one node) of a run an MPI launcher starts; None for one process on one node (no launcher)."""
    n, nodes = processes(cfg, study), cfg.get("nodes", 1)
    if n <= 1 and nodes <= 1:
        return None
    names = study.hosts[:nodes] if nodes > 1 or study.hosts else ["localhost"]
    return n, ",".join(f"{h}:{n // max(1, nodes)}" for h in names)


@register
class Mpirun(Launcher):
    name = "mpirun"

    def wrap(self, study, cfg, argv):
        placed = placement(study, cfg)
        if placed is None:
            return argv
        (n, hosts), opts = placed, study.launcher
        out = ["mpirun", "--allow-run-as-root", "--tag-output", "-np", str(n), "-H", hosts,
               "--bind-to", opts.bind_to, "--map-by", opts.map_by]
        if study.runtime == "cpu":
            out.append("--oversubscribe")
        names = exported(study)
        if study.runtime == "cpu":  # ranks start from this machine: pass only what is set (mpirun warns otherwise)
            names = [k for k in names if k in os.environ or k in study.env]
        out += [a for k in names for a in ("-x", k)]
        out += [a for k, v in opts.mca.items() for a in ("--mca", k, v)]
        if study.ssh_port:
            out += ["--mca", "plm_rsh_args", f"-p {study.ssh_port}"]
        if opts.ssh_agent:
            out += ["--mca", "plm_rsh_agent", opts.ssh_agent]
        return out + opts.args + argv
