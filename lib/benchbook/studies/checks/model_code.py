"""The model code: a clone given with `--code DIR` is at the study's commit and has its subfolder."""

from __future__ import annotations

import shlex
from pathlib import Path

from .. import commands
from ..study import Study
from .probes import Check, Probes, first_line


def code_checkout(p: Probes, study: Study, code_dir: str | Path | None) -> Check:
    code = study.code
    steps = "\n".join(s for s in commands.setup_steps(study) if not s.startswith("docker build"))
    label = f"{code.repository} at {code.commit[:12]}" + (f", {code.subfolder}" if code.subfolder else "")
    if code_dir is None:
        return Check("code", None, f"{label}: not checked (give --code DIR to compare a clone)", steps)
    folder = Path(code_dir)
    rc, out, err = p.call(["git", "-C", str(folder), "rev-parse", "HEAD"])
    if rc != 0:
        return Check("code", False, f"{folder} is not a git clone ({first_line(err, out) or 'git failed'})", steps)
    head = out.strip()
    if not head or not head.startswith(code.commit):
        folder_q = shlex.quote(str(folder))
        return Check("code", False, f"{folder} is at {head[:12]}, the study needs {code.commit[:12]}",
                     f"git -C {folder_q} fetch && git -C {folder_q} checkout {code.commit} --")
    if code.subfolder and not (folder / code.subfolder).is_dir():
        return Check("code", False, f"{folder} at {head[:12]} has no {code.subfolder}", steps)
    return Check("code", True, f"{folder} at {head[:12]}" + (f"; patches to apply: {', '.join(code.patches)}"
                                                             if code.patches else ""))
