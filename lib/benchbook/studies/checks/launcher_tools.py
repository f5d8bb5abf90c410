"""What the launcher starts runs with: `mpirun`/`mpiexec`/`horovodrun`, passwordless ssh to every host
of a multi-node point, and for launcher `slurm` the controller (`sbatch`, `sinfo`) and pyxis.

The programs and ssh are probed where the launcher runs: in the container (`docker exec NAME ...`,
or a throw-away `docker run --rm IMAGE ...`), or here in mode `inside` and on the CPU. Both run what
the study names (its image, its hosts): only with `Probes.probe` (`benchbook check --probe`, `run`);
otherwise a program is looked up only where `which` finds it (here), and ssh is not tried.
"""

from __future__ import annotations

from ..study import RunSpec, Study
from .containers import build_fix
from .needs import Needs
from .probes import CONTAINER_TIMEOUT, Check, Probes, first_line

PUBLISHED_SSH_PORT = 10000

_MPI_FIX = "sudo apt-get install -y openmpi-bin   # Open MPI: mpirun, mpiexec"


def program(p: Probes, name: str) -> Check:
    """A launcher program that runs here (CPU runs start their ranks from this machine)."""
    found = p.which(name)
    if found:
        return Check(name, True, found)
    fix = "pip install horovod   # in the framework's environment" if name == "horovodrun" else _MPI_FIX
    return Check(name, False, f"no `{name}` on PATH here; the study's launcher starts its processes with it", fix)


_SLURM_FIX = ("run benchbook on the cluster's login node, or install the Slurm client (sudo apt-get install -y "
              "slurm-client) configured for the cluster; for a one-machine cluster: tools/slurm_cluster.sh up")


def slurm(p: Probes, study: Study) -> list[Check]:
    """The scheduler the `slurm` launcher submits to, reached from here."""
    if not p.which("sbatch"):
        return [Check("slurm", False, "no `sbatch` on PATH; launcher slurm submits every run with it", _SLURM_FIX)]
    code, out, err = p.call(["sinfo", "-h", "-o", "%P %a %D %T"], CONTAINER_TIMEOUT)
    if code != 0:
        return [Check("slurm", False, f"`sinfo` failed: {first_line(err, out) or f'exit {code}'}", _SLURM_FIX)]
    partitions = [line.split()[0].rstrip("*") for line in out.splitlines() if line.strip()]
    wanted = study.launcher.slurm.partition
    checks = [Check("slurm", True, f"controller answers; partitions: {', '.join(dict.fromkeys(partitions))}")]
    if wanted and wanted not in partitions:
        checks.append(Check("slurm partition", False, f"partition {wanted!r} is not among {', '.join(partitions)}",
                            "set launcher.slurm.partition to one that `sinfo` lists"))
    if study.runtime == "ngc":
        code, out, err = p.call(["srun", "--help"], CONTAINER_TIMEOUT)
        if code == 0 and "--container-image" in out:
            checks.append(Check("pyxis", True, "srun --container-image is available"))
        else:
            checks.append(Check("pyxis", False, "srun has no --container-image: the pyxis plugin is not installed",
                                "install enroot and pyxis on the cluster (https://github.com/NVIDIA/pyxis), or ask "
                                "the cluster's administrators"))
    return checks



def _where(study: Study) -> str:
    c = study.container
    return {"inside": "here", "exec": f"in container {c.name}", "run": f"in a container of {c.image}"}[c.mode]


def _in_launcher(study: Study, argv: list[str]) -> list[str]:
    """`argv` run where the launcher (mpirun) runs: here, in the exec container, or in a fresh container."""
    c = study.container
    if c.mode == "inside":
        return argv
    if c.mode == "exec":
        return ["docker", "exec", "--", c.name, *argv]
    return ["docker", "run", "--rm", "--", c.image, *argv]  # as the runs start: the same image, network and keys


def _ssh_fix(study: Study, host: str) -> str:
    port = study.ssh_port or PUBLISHED_SSH_PORT
    inside = f"docker exec -it {study.container.name} bash" if study.container.mode == "exec" else \
        "a shell in the container"
    lines = [f"# on every node, in {inside} (the published multi-node set-up):",
             "apt-get update && apt-get install -y openssh-server",
             f"# /etc/ssh/sshd_config: Port {port}, PermitRootLogin yes, PubkeyAuthentication yes",
             "service ssh restart",
             "test -f /root/.ssh/id_rsa || ssh-keygen -t rsa -N '' -f /root/.ssh/id_rsa",
             "# append every node's /root/.ssh/id_rsa.pub to every node's /root/.ssh/authorized_keys",
             f"ssh -p {port} {host} true   # must succeed without a password prompt"]
    if not study.ssh_port:
        lines.insert(0, f"# set ssh_port: {port} in the study (mpirun passes it to ssh)")
    return "\n".join(lines)


def mpi_and_ssh(p: Probes, study: Study, needs: Needs, runs: list[RunSpec], ready: bool) -> list[Check]:
    out: list[Check] = []
    where = _where(study)
    for launcher in needs.launchers:
        name = launcher
        if not ready:
            out.append(Check(name, None, f"not checked {where}: the container is not available (see above)"))
        elif study.container.mode != "inside" and not p.probe:
            out.append(Check(name, None, f"not looked for {where}: that runs a command in the study's container; "
                             "benchbook check --probe does (benchbook run always does)"))
        elif study.container.mode == "inside":
            found = p.which(launcher)
            out.append(Check(name, True, found) if found else
                       Check(name, False, f"no `{launcher}` on PATH here",
                             "use the NGC image (it ships Open MPI), or install Open MPI: apt-get install -y "
                             "openmpi-bin"))
        else:
            code, o, e = p.call(_in_launcher(study, ["sh", "-c", f"command -v {launcher}"]), CONTAINER_TIMEOUT)
            found = o.strip().splitlines()[-1].strip() if o.strip() else ""  # after the NGC entrypoint's banner
            if code == 0 and found:
                out.append(Check(name, True, f"{found} ({where})"))
            else:
                out.append(Check(name, False, f"no `{launcher}` {where} ({first_line(e, o) or f'exit {code}'})",
                                 "build the image from the NGC framework image (it ships Open MPI) as the "
                                 "published set-up did:\n" + build_fix(study)))
    if needs.nodes > 1:
        hosts = study.hosts[:needs.nodes]
        port = study.ssh_port
        for host in hosts:
            name = f"ssh {host}" + (f":{port}" if port else "")
            if not ready:
                out.append(Check(name, None, f"not checked {where}: the container is not available (see above)"))
                continue
            if not p.probe:
                out.append(Check(name, None, f"not tried: ssh to {host} is a connection to a host the study names; "
                                 "benchbook check --probe tries it (benchbook run always does)"))
                continue
            argv = ["ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=5", *(["-p", str(port)] if port else []),
                    "--", host, "true"]
            code, o, e = p.call(_in_launcher(study, argv), CONTAINER_TIMEOUT)
            if code == 0:
                out.append(Check(name, True, f"passwordless ssh to {host}" + (f" port {port}" if port else "")
                                 + f" ({where})"))
            else:
                reason = first_line(e, o) or f"exit status {code}"
                out.append(Check(name, False, f"ssh {where} to {host}" + (f" port {port}" if port else "")
                                 + f" failed: {reason}; mpirun starts the other nodes' ranks over ssh",
                                 _ssh_fix(study, host)))
    return out
