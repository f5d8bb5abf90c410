"""What the result files of one folder must agree on: one division (the folder's, its systems file's) and
runs that are independent (no two files the same bytes). Named where they do not, for `results.score_files`."""

from __future__ import annotations

import hashlib

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
