"""The framework environment's interpreter: its version, packages and frameworks (with their CUDA
builds), listed by running it, so that the capture never imports a framework itself.
"""

from __future__ import annotations

import json
from typing import Any

try:
    from .probe import Absent, Probe, TimedOut
except ImportError:  # run as plain files (python3 capture/): siblings are top-level modules
    from probe import Absent, Probe, TimedOut

PYTHON_TIMEOUT = 120.0  # importing a framework (TensorFlow in an NGC container) takes tens of seconds

# Runs in the interpreter of the framework environment, which may be old (NGC 20.xx containers ship
# Python 3.6): no walrus, no importlib.metadata without a fallback. Prints one marked JSON line last,
# because importing a framework may print to stdout.
PYTHON_SNIPPET = r'''
import importlib, json, platform, re, sys
IMPORT = len(sys.argv) > 1 and sys.argv[1] == "1"
def norm(name):
    return re.sub(r"[-_.]+", "-", name).lower()
packages = {}
try:
    from importlib import metadata
    for d in metadata.distributions():
        name = d.metadata["Name"]
        if name and norm(name) not in packages:
            packages[norm(name)] = d.version
except ImportError:
    import pkg_resources
    for d in pkg_resources.working_set:
        packages[norm(d.project_name)] = d.version
def dist(pred):
    names = sorted(n for n in packages if pred(n))
    return names[0] if names else None
def tf_info(m):
    info = {}
    v = getattr(m, "version", None)
    info["git_version"] = getattr(v, "GIT_VERSION", None) or getattr(m, "GIT_VERSION", None)
    try:
        info["built_with_cuda"] = bool(m.test.is_built_with_cuda())
    except Exception:
        pass
    try:
        b = m.sysconfig.get_build_info()
        info["cuda"] = b.get("cuda_version")
        info["cudnn"] = b.get("cudnn_version")
    except Exception:
        pass
    return info
def mx_info(m):
    feats = m.runtime.Features()
    return {"features": sorted(name for name, f in feats.items() if f.enabled)}
def torch_info(m):
    info = {"cuda": m.version.cuda, "git_version": getattr(m.version, "git_version", None)}
    try:
        info["cudnn"] = m.backends.cudnn.version()
    except Exception:
        pass
    try:
        v = m.cuda.nccl.version()
        info["nccl"] = ".".join(str(x) for x in v) if isinstance(v, tuple) else v
    except Exception:
        pass
    return info
FRAMEWORKS = [
    ("tensorflow", "tensorflow", lambda n: n in ("tensorflow", "tensorflow-gpu", "nvidia-tensorflow",
                                                 "tensorflow-cpu", "tf-nightly", "intel-tensorflow"), tf_info),
    ("mxnet", "mxnet", lambda n: n.startswith("mxnet"), mx_info),
    ("torch", "torch", lambda n: n == "torch", torch_info),
    ("horovod", "horovod", lambda n: n == "horovod", None),
    ("dali", "nvidia.dali", lambda n: n.startswith("nvidia-dali"), None),
]
frameworks = {}
for key, module, pred, build in FRAMEWORKS:
    package = dist(pred)
    info = {"package": package, "version": packages.get(package), "package_version": packages.get(package)}
    if IMPORT:
        try:
            m = importlib.import_module(module)
        except ImportError as exc:
            if package is None:
                continue
            info["import_error"] = "%s: %s" % (type(exc).__name__, exc)
        except Exception as exc:
            info["import_error"] = "%s: %s" % (type(exc).__name__, exc)
        else:
            info["version"] = getattr(m, "__version__", None) or info["version"]
            if build is not None:
                try:
                    info.update(build(m))
                except Exception as exc:
                    info["build_error"] = "%s: %s" % (type(exc).__name__, exc)
    elif package is None:
        continue
    frameworks[key] = info
out = {"version": platform.python_version(), "implementation": platform.python_implementation(),
       "executable": sys.executable, "prefix": sys.prefix, "packages": dict(sorted(packages.items())),
       "frameworks": frameworks}
sys.stdout.write("\n@@benchbook-env@@" + json.dumps(out, default=str) + "\n")
'''
_MARK = "@@benchbook-env@@"


def read_python(p: Probe, python: str, import_frameworks: bool) -> dict[str, Any]:
    """The interpreter's version and packages, and the frameworks it has (with their build when
    `import_frameworks`). If importing takes too long, the packages alone are recorded."""
    note = None
    try:
        out = p.run([python, "-c", PYTHON_SNIPPET, "1" if import_frameworks else "0"],
                    timeout=PYTHON_TIMEOUT if import_frameworks else p.timeout * 3)
    except TimedOut as exc:
        if not import_frameworks:
            raise
        note = f"frameworks not imported: {exc}"
        out = p.run([python, "-c", PYTHON_SNIPPET, "0"], timeout=p.timeout * 3)
    line = next((ln for ln in reversed(out.splitlines()) if ln.startswith(_MARK)), None)
    if line is None:
        raise Absent(f"{python} printed no package list")
    info = json.loads(line[len(_MARK):])
    if note:
        info["note"] = note
    return info
