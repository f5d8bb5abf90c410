"""Isolated Python environments for the CPU workloads, one per framework, the way a container
isolates an NGC framework: MXNet 1.9.1 needs numpy older than 1.24, which benchbook itself cannot
run with, so each framework gets its own virtual environment built from pinned requirements.

An environment is created on first use and reused while its requirements file and Python stay the
same (the folder name carries their hash); a half-built one (no ready marker) is rebuilt.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import venv
from collections.abc import Callable
from pathlib import Path

from . import workloads
from .errors import BenchbookError

READY = ".benchbook-ready"
IMPORTS = {"tensorflow": "tensorflow", "mxnet": "mxnet", "pytorch": "torch"}


class FrameworkEnvError(BenchbookError):
    """A framework environment could not be created; the message names the log of the install."""


def root() -> Path:
    """Where environments live: `$BENCHBOOK_ENVS`, else `~/.cache/benchbook/envs`."""
    base = os.environ.get("BENCHBOOK_ENVS")
    return Path(base) if base else Path.home() / ".cache" / "benchbook" / "envs"


def key(framework: str) -> str:
    """Hash of what defines the environment: the pinned requirements and the Python version."""
    h = hashlib.sha256(workloads.requirements(framework).read_bytes())
    h.update(f"{sys.version_info.major}.{sys.version_info.minor}".encode())
    return h.hexdigest()[:12]


def path(framework: str) -> Path:
    return root() / f"{framework}-{key(framework)}"


def python(framework: str) -> Path:
    """The interpreter of the framework's environment (which may not exist yet)."""
    return path(framework) / "bin" / "python"


def ready(framework: str) -> bool:
    return (path(framework) / READY).is_file()


@contextlib.contextmanager
def _lock(name: str):
    root().mkdir(parents=True, exist_ok=True)
    with open(root() / f"{name}.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # two studies starting at once build the environment once
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def ensure(framework: str, say: Callable[[str], None] = print) -> Path:
    """The framework environment's Python, creating the environment first if needed."""
    if framework not in IMPORTS:
        raise BenchbookError(f"no CPU environment for framework {framework!r}; known: {', '.join(IMPORTS)}")
    target = path(framework)
    if ready(framework):
        return python(framework)
    with _lock(target.name):
        if ready(framework):
            return python(framework)
        if target.exists():
            shutil.rmtree(target)  # a build that never finished
        log = target.with_name(target.name + ".install.log")
        reqs = workloads.requirements(framework)
        say(f"creating the {framework} environment in {target} from {reqs.name} (first use only; log: {log})")
        venv.EnvBuilder(with_pip=True, symlinks=True).create(target)
        steps = [
            [str(python(framework)), "-m", "pip", "install", "--disable-pip-version-check", "-r", str(reqs)],
            [str(python(framework)), "-c", f"import {IMPORTS[framework]}"],
        ]
        with open(log, "w") as out:
            for step in steps:
                out.write("$ " + " ".join(step) + "\n")
                out.flush()
                code = subprocess.call(step, stdout=out, stderr=subprocess.STDOUT)
                if code != 0:
                    tail = "".join(log.read_text(errors="replace").splitlines(keepends=True)[-15:])
                    raise FrameworkEnvError(
                        f"creating the {framework} environment failed (exit {code}) in: {' '.join(step)}\n"
                        f"last lines of {log}:\n{tail}\nfix the cause and run again; the half-built "
                        f"environment in {target} will be rebuilt")
        (target / READY).write_text(key(framework) + "\n")
    return python(framework)
