"""`mpirun`: OpenMPI across hosts over SSH, the way the published multi-node studies ran: one
rank per GPU (or per CPU process), every line tagged with its rank, the study's variables
exported to every rank, and the SSH port and agent of the containers' sshd."""

from __future__ import annotations

import os

from . import register
from .base import Launcher, exported, processes


def hosts(study, cfg, slots: int) -> str:
    """`-H` of the run: the study's first `nodes` hosts with their slots (this host for one node)."""
    nodes = cfg.get("nodes", 1)
    names = study.hosts[:nodes] if nodes > 1 or study.hosts else ["localhost"]
    return ",".join(f"{h}:{slots}" for h in names)


@register
class Mpirun(Launcher):
    name = "mpirun"

    def wrap(self, study, cfg, argv):
        n = processes(cfg, study)
        if n <= 1 and cfg.get("nodes", 1) <= 1:
            return argv
        opts = study.launcher
        per_node = n // max(1, cfg.get("nodes", 1))
        out = ["mpirun", "--allow-run-as-root", "--tag-output", "-np", str(n), "-H", hosts(study, cfg, per_node),
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
