"""What the files of one result folder must agree on: one division (the folder's, its systems file's), runs
that are independent (no two files the same bytes), a systems file that describes this system (its names,
plausible counts). Named where they do not, for `results.score_files`."""

from __future__ import annotations

import hashlib
import re

from ..errors import LogError
from ..logs.archives import ArchivePath


def division(system: dict, systems_path: str, runs: list, problems: list[str]) -> str | None:
    """The folder's one division: its systems file's, else what its runs log (the closed division's rules where
    they disagree); a run whose submission_division differs is named, and the folder's rules applied to it
    (a forged `open` turns no quality target off)."""
    said = system.get("division")
    own = str(said).strip().lower() if isinstance(said, str) and said.strip() else None
    logged = {r.path: str(r.submission["division"]).strip().lower() for r in runs if r.submission.get("division")}
    if own is None and len(set(logged.values())) > 1:
        problems.append(f"the result files log different divisions ({', '.join(sorted(set(logged.values())))}) "
                        "and no systems file says the folder's: the closed division's rules are applied")
        return "closed"
    for path, theirs in logged.items():
        if own is not None and theirs != own:
            problems.append(f"{path}: submission_division {theirs!r}, but the folder is {own!r} ({systems_path}): "
                            f"one division per folder, the {own} division's rules applied")
    return own or next(iter(logged.values()), None)


def identical(files: list) -> list[tuple]:
    """Pairs (first, copy) of result files with the same bytes: compared where their sizes are equal."""
    by_size: dict[int, list] = {}
    for path in files:
        try:
            size = path.size if isinstance(path, ArchivePath) else path.stat().st_size
        except OSError:
            continue
        if size is not None:
            by_size.setdefault(size, []).append(path)
    pairs = []
    for group in (g for g in by_size.values() if len(g) > 1):
        seen: dict[str, object] = {}
        for path in group:
            try:
                digest = hashlib.sha256()
                with path.open("rb") as f:
                    for block in iter(lambda f=f: f.read(1 << 20), b""):
                        digest.update(block)
                digest = digest.hexdigest()
            except (OSError, LogError):
                continue
            if digest in seen:
                pairs.append((seen[digest], path))
            else:
                seen[digest] = path
    return pairs


# An accelerator model that says there is none: a CPU-only system's 0 accelerators per node.
NO_ACCELERATOR = {"", "n/a", "na", "none", "-", "null", "cpu"}


def implausible_counts(system: dict, per_node: int, nodes: int) -> str | None:
    """Why a systems file's counts cannot be one system's: no node, or 0 accelerators per node beside a named
    accelerator (a CPU-only system names none)."""
    if nodes == 0:
        return "number_of_nodes = 0: a system has at least one node"
    model = str(system.get("accelerator_model_name") or "").strip().lower()
    if per_node == 0 and model not in NO_ACCELERATOR:
        return (f"accelerators_per_node = 0 beside accelerator_model_name {system.get('accelerator_model_name')!r}: "
                "a system with that accelerator has at least one per node")
    return None


_WORD = re.compile(r"[a-z0-9]+")


def _agree(a: str, b: str) -> bool:
    """Two names of one thing as submitters write them: one inside the other (punctuation aside), a word of
    three or more characters in common, or one the initials of the other (smc, Sustainable Metal Cloud)."""
    wa, wb = _WORD.findall(a.lower()), _WORD.findall(b.lower())
    ja, jb = "".join(wa), "".join(wb)
    if not ja or not jb or ja in jb or jb in ja:
        return True
    if {w for w in wa if len(w) >= 3} & {w for w in wb if len(w) >= 3}:
        return True
    return ja == "".join(w[0] for w in wb) or jb == "".join(w[0] for w in wa)


def names_differ(system: dict, systems_path: str, system_name: str, submitter: str | None) -> list[str]:
    """Where the systems file names another system or submitter than its folder's (a file copied from
    another system describes that one: its accelerators and framework are not this result's)."""
    out = []
    for field, folder_name, what in (("system_name", system_name, "system"), ("submitter", submitter, "submitter")):
        said = system.get(field)
        if isinstance(said, str) and folder_name and not _agree(said, folder_name):
            out.append(f"{systems_path}: {field} {said[:80]!r} is not the folder's {what} {folder_name!r}: a "
                       "systems file of another system? (its accelerators and framework are read as this result's)")
    return out
