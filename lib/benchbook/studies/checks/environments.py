"""CPU studies: the framework's isolated environment, or the Python a study names (and its CUDA GPU).

The pinned environment (`benchbook.environment.envs`) is built by the first run, so a missing one is not a
failure unless Python cannot build virtual environments here.
"""

from __future__ import annotations

import importlib.util
import shlex

from ... import workloads
from ...environment import envs
from ..study import Study
from .probes import Check, Probes


def named_python(p: Probes, study: Study, python: str) -> list[Check]:
    """The Python a study or BENCHBOOK_PYTHON_<FRAMEWORK> names: it imports the framework (its
    version), and for `cpu.device: cuda` PyTorch sees a GPU (how many, the first one's name). One that
    the study names is only looked up unless `p.probe`: running it runs what the study chose."""
    fw, module = study.framework, envs.IMPORTS[study.framework]
    setting = "the study's `python`" if study.python else envs.variable(fw)
    cuda = study.cpu.device == "cuda"
    code = f"import {module}; print({module}.__version__)"
    if cuda:
        code += "; n = torch.cuda.device_count(); print(n, torch.cuda.get_device_name(0) if n else '')"
    name = f"{fw} (named Python)"
    fix = f"name a Python that has {module} in {setting}, or unset it to build the pinned environment"
    if study.python and not p.probe:  # a program the study names: looked up, not run
        found = p.which(python)
        if not found:
            return [Check(name, False, f"{python} (from {setting}) is not a program on PATH nor an executable file",
                          fix)]
        return [Check(name, None, f"{found} (from {setting}): not run; benchbook check --probe imports {module} "
                      "with it (benchbook run always does)")]
    status, out, err = p.call([python, "-c", code], timeout=120)
    if status != 0:
        why = (err.strip().splitlines() or [out.strip() or f"exit status {status}"])[-1]
        return [Check(name, False, f"{python} (from {setting}) cannot import {module}: {why}", fix)]
    lines = out.splitlines()
    checks = [Check(name, True, f"{python} (from {setting}): {module} {lines[0].strip() if lines else '?'}")]
    if cuda:
        count, _, gpu = (lines[1] if len(lines) > 1 else "0").partition(" ")
        ok = count.strip().isdigit() and int(count) > 0
        detail = f"{count} CUDA device(s), the first: {gpu.strip()}" if ok else "PyTorch sees no CUDA device"
        checks.append(Check("CUDA GPU", ok, detail, None if ok else "run on a machine with an NVIDIA GPU and its "
                            "driver, with a CUDA build of PyTorch"))
    return checks


def cpu_environment(study: Study) -> Check:
    fw = study.framework
    name = f"{fw} environment"
    reqs = workloads.requirements(fw).name
    if envs.ready(fw):
        return Check(name, True, f"{envs.path(fw)} (from {reqs})")
    if importlib.util.find_spec("ensurepip") is None:
        return Check(name, False, f"{envs.path(fw)} does not exist, and this Python cannot create it: no ensurepip "
                     "(virtual environments without pip)",
                     "sudo apt-get install python3-venv   # the venv/ensurepip package of this Python")
    return Check(name, None, f"{envs.path(fw)} not created yet: created automatically by the first run "
                 f"(pinned in {reqs}; needs the package index or a mirror)",
                 f"benchbook run {shlex.quote(str(study.path)) if study.path else 'STUDY'}")
