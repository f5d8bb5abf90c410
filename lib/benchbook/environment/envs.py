"""Isolated Python environments for the CPU workloads, one per framework, the way a container
isolates an NGC framework: MXNet 1.9.1 needs numpy older than 1.24, which benchbook itself cannot
run with, so each framework gets its own virtual environment built from pinned requirements.

An environment is created on first use and reused while its requirements file and Python stay the
same (the folder name carries their hash); a half-built one (no ready marker) is rebuilt.

Where a framework is already installed (a GPU machine whose `python3` has PyTorch, and no package
index), a study's `python:` or the variable BENCHBOOK_PYTHON_<FRAMEWORK> (BENCHBOOK_PYTHON_PYTORCH,
BENCHBOOK_PYTHON_TENSORFLOW, BENCHBOOK_PYTHON_MXNET) names the Python to use instead; the study's
wins. That Python must import the framework; nothing is installed into it.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import time
import venv
from collections.abc import Callable
from pathlib import Path

from .. import workloads
from ..errors import BenchbookError

READY = ".benchbook-ready"
IMPORTS = {"tensorflow": "tensorflow", "mxnet": "mxnet", "pytorch": "torch"}


class FrameworkEnvError(BenchbookError):
    """A framework environment could not be created; the message names the log of the install."""


class NamedPythonError(FrameworkEnvError):
    """Raised when the Python a study or BENCHBOOK_PYTHON_<FRAMEWORK> names is not there, does not
    run, or cannot import the framework; the message says which setting named it."""


def variable(framework: str) -> str:
    """The environment variable that names a Python for `framework`: BENCHBOOK_PYTHON_PYTORCH..."""
    return f"BENCHBOOK_PYTHON_{framework.upper()}"


def named(framework: str, study_python: str | None = None) -> tuple[Path, str] | None:
    """(Python, the setting that named it) where the study or the environment names one, else None."""
    if study_python:
        return Path(study_python), "the study's `python`"
    value = os.environ.get(variable(framework))
    return (Path(value), variable(framework)) if value else None


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


def python(framework: str, study_python: str | None = None) -> Path:
    """The Python a run of the framework uses: the one named (study, variable), else the interpreter
    of the framework's environment (which may not exist yet)."""
    chosen = named(framework, study_python)
    return chosen[0] if chosen else path(framework) / "bin" / "python"


def ready(framework: str) -> bool:
    return (path(framework) / READY).is_file()


def _check_named(framework: str, python: Path, setting: str) -> Path:
    """The named Python, once it has imported the framework; NamedPythonError says why not."""
    module = IMPORTS[framework]
    if not python.is_file() or not os.access(python, os.X_OK):
        raise NamedPythonError(f"{setting} names {python}, which is not an executable file: name a Python that "
                               f"has {module} (e.g. /usr/bin/python3), or unset it to build the environment")
    try:
        done = subprocess.run([str(python), "-c", f"import {module}"], capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise NamedPythonError(f"{setting} names {python}, which did not run: {exc}") from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
        raise NamedPythonError(f"{setting} names {python}, which cannot import {module}: {last}")
    return python


@contextlib.contextmanager
def _lock(name: str):
    root().mkdir(parents=True, exist_ok=True)
    with open(root() / f"{name}.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # two studies starting at once build the environment once
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def ensure(framework: str, say: Callable[[str], None] = print, study_python: str | None = None) -> Path:
    """The Python of the framework's runs: the one the study or BENCHBOOK_PYTHON_<FRAMEWORK> names,
    checked, else the framework environment's, creating the environment first if needed."""
    if framework not in IMPORTS:
        raise BenchbookError(f"no CPU environment for framework {framework!r}; known: {', '.join(IMPORTS)}")
    chosen = named(framework, study_python)
    if chosen:
        return _check_named(framework, *chosen)
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
        steps = {  # what it does, in words: the step
            # no .pyc compiled ahead for every module of the framework (tens of seconds on two cores): the
            # first run compiles what it imports, into the environment, for the runs after it
            f"installing {reqs.name}": [str(python(framework)), "-m", "pip", "install", "--disable-pip-version-check",
                                        "--no-compile", "-r", str(reqs)],
            f"importing {IMPORTS[framework]} once": [str(python(framework)), "-c", f"import {IMPORTS[framework]}"],
        }
        with open(log, "w") as out:
            for doing, step in steps.items():
                out.write("$ " + " ".join(step) + "\n")
                out.flush()
                code = _run_saying(step, out, log, lambda seconds, last, doing=doing: say(
                    f"{framework} environment: {doing}, {seconds:.0f} s so far ({last})"))
                if code != 0:
                    tail = "".join(line + "\n" for line in _last_lines(log)[-15:])
                    raise FrameworkEnvError(
                        f"creating the {framework} environment failed (exit {code}) in: {' '.join(step)}\n"
                        f"last lines of {log}:\n{tail}\nfix the cause and run again; the half-built "
                        f"environment in {target} will be rebuilt")
        (target / READY).write_text(key(framework) + "\n")
        say(f"{framework} environment ready")
    return python(framework)


PROGRESS_EVERY = 30.0  # seconds between two lines of progress of an install step


def _run_saying(step: list[str], out, log: Path, progress: Callable[[float, str], None]) -> int:
    """Run one install step into its log, and every PROGRESS_EVERY seconds say how long it has run and
    the log's last line (pip's `Collecting ...`): an install takes minutes, which must not look like a hang."""
    started = time.monotonic()
    proc = subprocess.Popen(step, stdout=out, stderr=subprocess.STDOUT)
    try:
        while True:
            try:
                return proc.wait(timeout=PROGRESS_EVERY)
            except subprocess.TimeoutExpired:
                progress(time.monotonic() - started, _last_line(log))
    except BaseException:  # Ctrl-C or an error of `progress`: the install does not go on alone
        proc.kill()
        proc.wait()
        raise


def _last_lines(log: Path, tail: int = 16384) -> list[str]:
    """The lines of the install log's last `tail` bytes (a pip log runs to megabytes: never read whole)."""
    with open(log, "rb") as f:
        f.seek(max(0, f.seek(0, os.SEEK_END) - tail))
        return f.read().decode("utf-8", errors="replace").splitlines()


def _last_line(log: Path) -> str:
    """The last non-empty line of the install log, cut to one line of a terminal."""
    last = next((line.strip() for line in reversed(_last_lines(log)) if line.strip()), "no output yet")
    return last if len(last) <= 100 else last[:99] + "…"

