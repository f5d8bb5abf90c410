"""The model code's checkout: repository (without credentials), commit, branch, and the local patch
with its hash, so that a run on modified code says so.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

try:
    from .probe import CUT, Absent, Probe
except ImportError:  # run as plain files (python3 capture/): siblings are top-level modules
    from probe import CUT, Absent, Probe


def _sanitize_url(url: str) -> str:
    """A remote URL without the user:token@ part that https remotes sometimes carry."""
    return re.sub(r"^(\w[\w+.-]*://)[^/@]+@", r"\1", url.strip())


PATCH_LIMIT = 256 * 1024  # bytes of local patch kept in the record; its hash always covers all of it


def read_code(p: Probe, code_dir: Path | None) -> dict[str, Any]:
    if code_dir is None:
        raise Absent("no model code folder given")
    folder = Path(code_dir).resolve()
    if not folder.is_dir():
        raise Absent(f"{folder} is not a folder")

    def git(*args):
        # safe.directory: in a container the checkout is often owned by another user, which
        # git >= 2.35.2 otherwise refuses to read.
        return p.run(["git", "-c", "safe.directory=*", "-C", str(folder), *args])

    try:
        top = git("rev-parse", "--show-toplevel").strip()
    except Absent as exc:
        raise Absent(f"{folder} is not in a git repository ({exc})") from None

    def maybe(*args):
        try:
            return git(*args).strip() or None
        except Absent:
            return None

    try:
        status = git("status", "--porcelain", "--untracked-files=normal")  # "XY path": not stripped
    except Absent:
        status = ""

    remotes = (maybe("remote") or "").split()
    remote = "origin" if "origin" in remotes else (remotes[0] if remotes else None)
    url = maybe("remote", "get-url", remote) if remote else None
    changed = [line[3:] for line in status.splitlines() if not line.startswith("??")]
    untracked = [line[3:] for line in status.splitlines() if line.startswith("??")]
    commit = maybe("rev-parse", "HEAD")
    patch, patch_sha256 = "", None
    if commit and changed:
        try:
            patch = git("diff", "HEAD", "--binary", "--no-color", "--no-ext-diff")
        except Absent:
            pass
    cut = CUT.search(patch)  # past the probe's OUTPUT_LIMIT: the marker holds the whole patch's size and hash
    size = int(cut.group("size")) if cut else len(patch.encode("utf-8"))
    if cut:
        patch_sha256 = cut.group("sha256")
    elif patch:
        patch_sha256 = hashlib.sha256(patch.encode("utf-8")).hexdigest()
    return {"path": str(folder), "root": top, "repository": _sanitize_url(url) if url else None,
            "commit": commit, "branch": maybe("rev-parse", "--abbrev-ref", "HEAD"),
            "describe": maybe("describe", "--tags", "--always"), "dirty": bool(changed), "changed_files": changed,
            "untracked_files": len(untracked),
            "patch_sha256": patch_sha256, "patch": patch if size <= PATCH_LIMIT else None,
            "patch_truncated": size > PATCH_LIMIT}
