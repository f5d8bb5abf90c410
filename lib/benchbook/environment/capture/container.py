"""The container the capture runs in (docker, podman, apptainer/singularity), its image, digest and the
version variables NGC images set; or, on the host, the digest of an image the local engine holds.
"""

from __future__ import annotations

import re
from typing import Any

try:
    from .probe import Absent, Probe
except ImportError:  # run as plain files (python3 capture/): siblings are top-level modules
    from probe import Absent, Probe


_CONTAINER_ENV = re.compile(r"_VERSION$|^NVIDIA_BUILD_ID$|_BUILD_ID$")


def read_container(p: Probe, image: str | None, digest: str | None) -> dict[str, Any]:
    runtime = None
    if p.path("/.dockerenv").exists():
        runtime = "docker"
    elif p.path("/run/.containerenv").exists():
        runtime = "podman"
    elif p.env.get("SINGULARITY_CONTAINER") or p.env.get("APPTAINER_CONTAINER"):
        runtime = "apptainer" if p.env.get("APPTAINER_CONTAINER") else "singularity"
    elif p.env.get("container"):
        runtime = p.env["container"]
    elif re.search(r"docker|kubepods|containerd|lxc", p.read("/proc/1/cgroup") or ""):
        runtime = "container"
    image = image or p.env.get("BENCHBOOK_IMAGE") or p.env.get("SINGULARITY_CONTAINER") \
        or p.env.get("APPTAINER_CONTAINER")
    digest = digest or p.env.get("BENCHBOOK_IMAGE_DIGEST")
    if image and "@sha256:" in image and not digest:
        digest = image.split("@", 1)[1]
    image_id = None
    if image and runtime is None and not digest:
        digest, image_id = _docker_digest(p, image)
    if runtime is None and not image:
        raise Absent("not inside a container (no /.dockerenv, /run/.containerenv, container cgroup or "
                     "SINGULARITY_CONTAINER) and no image given")
    env = {k: v for k, v in sorted(p.env.items()) if _CONTAINER_ENV.search(k)} if runtime else {}
    return {"inside": runtime is not None, "runtime": runtime, "image": image, "digest": digest,
            "image_id": image_id, "build_id": p.env.get("NVIDIA_BUILD_ID") if runtime else None, "env": env}


def _docker_digest(p: Probe, image: str) -> tuple[str | None, str | None]:
    """The repository digest and image id of an image the local docker engine holds (host side)."""
    try:
        text = p.run(["docker", "image", "inspect", "--format", "{{json .RepoDigests}} {{.Id}}", "--", image])
    except Absent:
        return None, None
    m = re.search(r"@(sha256:[0-9a-f]{64})", text)
    i = re.search(r"\s(sha256:[0-9a-f]{64})\s*$", text)
    return (m.group(1) if m else None), (i.group(1) if i else None)
