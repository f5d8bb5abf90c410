"""The whole record: every section in one JSON-able dict (`capture`), and `main`, the command line that
prints it (`python3 capture/ [--code DIR] [--image NAME]`).
"""

from __future__ import annotations

import json
import socket
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

try:
    from .container import read_container
    from .gpus import read_gpus
    from .infiniband import read_infiniband
    from .libraries import read_libraries
    from .model_code import read_code
    from .probe import Probe, section
    from .python_env import read_python
    from .system import read_system
    from .variables import variables
except ImportError:  # run as plain files (python3 capture/): siblings are top-level modules
    from container import read_container
    from gpus import read_gpus
    from infiniband import read_infiniband
    from libraries import read_libraries
    from model_code import read_code
    from probe import Probe, section
    from python_env import read_python
    from system import read_system
    from variables import variables

SCHEMA_VERSION = 1


def capture(python: str | None = None, code_dir: str | Path | None = None, *, image: str | None = None,
            digest: str | None = None, import_frameworks: bool = True, probe: Probe | None = None) -> dict[str, Any]:
    """Everything about this machine and environment that throughput depends on, as a JSON-able dict.

    `python`: the interpreter of the framework environment (default: this one); its packages and
    frameworks are listed by running it, so benchbook never imports a framework itself. `code_dir`:
    the model code's checkout (repository, commit, local patch). `image`/`digest`: the container
    image, when the caller knows it (also read from BENCHBOOK_IMAGE and BENCHBOOK_IMAGE_DIGEST, so a
    launcher can pass them into the container). Sections that do not apply say so: `available`
    false and a `reason`.
    """
    p = probe or Probe()
    py = section(read_python, p, python or sys.executable, import_frameworks)
    if py["available"]:
        found = py.pop("frameworks")
        frameworks = {"available": bool(found), **found} if found else {
            "available": False, "reason": f"no tensorflow, mxnet, torch, horovod or DALI in {py['executable']}"}
    else:
        frameworks = dict(py)
    libraries = read_libraries(p)
    return {
        "schema_version": SCHEMA_VERSION,
        "captured_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),  # noqa: UP017 - runs on 3.8
        "hostname": socket.gethostname(),
        "system": section(read_system, p),
        "gpus": section(read_gpus, p),
        "cuda": libraries["cuda"],
        "cudnn": libraries["cudnn"],
        "nccl": libraries["nccl"],
        "frameworks": frameworks,
        "container": section(read_container, p, image, digest),
        "python": py,
        "code": section(read_code, p, code_dir),
        "infiniband": section(read_infiniband, p),
        "variables": variables(p.env),
    }


SECTIONS = ("system", "gpus", "cuda", "cudnn", "nccl", "frameworks", "container", "python", "code", "infiniband",
            "variables")


def main(argv: list[str] | None = None) -> int:
    """`python3 capture.py [--python PY] [--code DIR] [--image NAME] [--no-import]`: the record as JSON."""
    import argparse

    ap = argparse.ArgumentParser(description="Print this environment's benchbook capture as JSON.")
    ap.add_argument("--python", help="interpreter whose packages and frameworks to list (default: this one)")
    ap.add_argument("--code", help="the model code's git checkout")
    ap.add_argument("--image", help="the container image name")
    ap.add_argument("--no-import", action="store_true", help="list framework packages without importing them")
    args = ap.parse_args(argv)
    record = capture(args.python, args.code, image=args.image, import_frameworks=not args.no_import)
    sys.stdout.write(json.dumps(record, indent=2) + "\n")
    return 0
