"""`local`: the run on this machine; several processes on one node through `mpiexec`, as the
NGC READMEs launch their multi-GPU runs inside one container."""

from __future__ import annotations

from .base import Launcher, processes
from .registry import register


@register
class Local(Launcher):
    name = "local"

    def wrap(self, study, cfg, argv):
        n = processes(cfg, study)
        if n <= 1:
            return argv
        opts = study.launcher
        if study.runtime == "cpu":  # ranks share the cores; tag their lines so the analysis can tell them apart
            bind = opts.bind_to if "bind_to" in opts.model_fields_set else "none"
            return ["mpiexec", "--allow-run-as-root", "--tag-output", "--oversubscribe", "--bind-to", bind,
                    "-np", str(n), *opts.args, *argv]
        bind = opts.bind_to if "bind_to" in opts.model_fields_set else "socket"
        return ["mpiexec", "--allow-run-as-root", "--bind-to", bind, "-np", str(n), *opts.args, *argv]
