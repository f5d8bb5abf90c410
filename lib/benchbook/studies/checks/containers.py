"""NGC studies: the docker client, its engine and the NVIDIA runtime; the image (mode `run`), the running
container (mode `exec`), or the signs that benchbook itself runs in a container (mode `inside`).
"""

from __future__ import annotations

import json
import shlex

from .. import commands
from ..study import Study
from .probes import Check, Probes, first_line

_TOOLKIT = ("nvidia-container-toolkit", "nvidia-container-runtime-hook", "nvidia-container-cli", "nvidia-ctk")
_TOOLKIT_FIX = ("sudo apt-get install -y nvidia-container-toolkit && sudo nvidia-ctk runtime configure "
                "--runtime=docker && sudo systemctl restart docker   # NVIDIA Container Toolkit (docker --gpus)")


def docker(p: Probes, study: Study) -> list[Check]:
    if not p.which("docker"):
        detail = "no `docker` on PATH; the study runs its commands with docker " \
                 f"(container.mode {study.container.mode})"
        fix = "install Docker Engine (https://docs.docker.com/engine/install/) and the NVIDIA Container Toolkit"
        if p.which("srun") and (p.which("enroot") or p.which("enroot-start")):
            detail += "; this is a Slurm machine with enroot"
            fix = (f"under Slurm, set `launcher: slurm` in the study: every run becomes an sbatch job whose srun "
                   f"starts the container with pyxis (--container-image={study.container.image}); or run benchbook "
                   f"inside the container with container.mode: inside, e.g. srun --container-image="
                   f"{study.container.image} --container-mounts={study.data.path or 'DATA'}:{study.data.mount} "
                   f"benchbook run STUDY")
        return [Check("docker", False, detail, fix)]
    code, out, err = p.call(["docker", "info", "--format", "{{json .Runtimes}}"])
    if code != 0:
        reason = first_line(err, out) or f"exit status {code}"
        fix = "sudo systemctl start docker"
        if "permission denied" in reason.lower():
            fix = "sudo usermod -aG docker $USER   # then log in again (or run benchbook with sudo)"
        return [Check("docker", True, p.which("docker") or "docker"),
                Check("docker engine", False, f"`docker info` failed: {reason}", fix)]
    checks = [Check("docker", True, p.which("docker") or "docker"), Check("docker engine", True, "reachable")]
    try:
        runtimes = json.loads(out.strip() or "{}")
    except json.JSONDecodeError:
        runtimes = {}
    names = sorted(runtimes) if isinstance(runtimes, dict) else []
    if "nvidia" in names:
        checks.append(Check("NVIDIA container runtime", True, f"docker runtimes: {', '.join(names)}"))
    else:
        tool = next((t for t in _TOOLKIT if p.which(t)), None)
        if tool:
            checks.append(Check("NVIDIA container runtime", True,
                                f"NVIDIA Container Toolkit ({tool}) for `docker run --gpus`"))
        else:
            checks.append(Check("NVIDIA container runtime", False,
                                f"docker runtimes: {', '.join(names) or 'none listed'}; no nvidia runtime and no "
                                "NVIDIA Container Toolkit: `docker run --gpus all` will fail", _TOOLKIT_FIX))
    return checks


def build_fix(study: Study) -> str:
    return "\n".join(commands.setup_steps(study))


def image(p: Probes, study: Study) -> Check:
    image = study.container.image
    code, out, err = p.call(["docker", "image", "inspect", "--format", "{{.Id}}", "--", image])
    if code == 0:
        return Check("image", True, f"{image} ({out.strip()[:19] or 'present'})")
    reason = first_line(err, out) or "not found"
    return Check("image", False, f"{image} is not in the local docker engine ({reason})", build_fix(study))


def _container_run_line(study: Study) -> str:
    c = study.container
    argv = ["docker", "run", "-d", "-it", "--gpus", "all", "--ipc=host", "--net=host", *c.options, "--name", c.name]
    if study.data.path:
        argv += ["-v", f"{study.data.path}:{study.data.mount}"]
    argv += [a for h, m in c.mounts.items() for a in ("-v", f"{h}:{m}")]
    return shlex.join([*argv, c.image])


def container(p: Probes, study: Study) -> Check:
    name = study.container.name
    code, out, err = p.call(["docker", "inspect", "-f", "{{.State.Running}}", "--", name])
    state = out.strip().lower()
    if code == 0 and state == "true":
        return Check("container", True, f"{name} is running")
    if code == 0:
        return Check("container", False, f"container {name} exists but is not running", f"docker start {name}")
    return Check("container", False, f"no container {name} ({first_line(err, out) or 'docker inspect failed'}); "
                 "container.mode exec runs the commands in it", _container_run_line(study))


def inside(p: Probes, study: Study) -> Check:
    signs = [s for s, there in (("/.dockerenv", (p.root / ".dockerenv").exists()),
                                ("/run/.containerenv", (p.root / "run/.containerenv").exists()),
                                ("NVIDIA_BUILD_ID", bool(p.env.get("NVIDIA_BUILD_ID"))),
                                ("container", bool(p.env.get("container")))) if there]
    if signs:
        return Check("inside container", True, f"container.mode inside: {', '.join(signs)}")
    return Check("inside container", False,
                 "container.mode inside, but no sign of a container here (no /.dockerenv, /run/.containerenv, "
                 "NVIDIA_BUILD_ID)",
                 f"start benchbook in the container: docker run -it --gpus all --ipc=host ... {study.container.image}, "
                 f"or under Slurm with enroot/pyxis: srun --container-image={study.container.image} ... "
                 "benchbook run STUDY")
