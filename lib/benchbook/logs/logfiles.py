"""Finding the logs to analyze: files named and files under folders, and the members of the archives
among them (`archives`). A path that cannot be read (a folder that cannot be listed, a stat refused: a
link into a folder of another user, `/proc`; an archive member refused) is a problem of its own, never
one that stops the others."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterable
from pathlib import Path

from . import archives
from .archives import ArchivePath, Problem

_NOT_LOGS = (".run.json", ".json", ".yaml", ".yml", ".ipynb", ".html", ".sbatch")  # .sbatch: Slurm job scripts
_LEGAL = ("NOTICE", "LICENSE")  # beside published logs (examples/published/)


def log_files(paths: Iterable[str | os.PathLike]) -> tuple[list[Path | ArchivePath], list[Problem]]:
    """Files named and files found under folders (recursively, sorted), and the paths that do not
    exist or cannot be read (a folder `os.walk` cannot list, a path whose stat is refused).

    In folders, hidden files and folders, earlier attempts of a run (`attempts/`, kept by the
    runner) and files that are not logs (records, studies, notebooks, reports, a NOTICE or LICENSE)
    are passed over; a file named explicitly is always analyzed. An archive, named or found, stands
    for its members (in archive order, passed over by the same rules as a folder's files).
    """
    files: list[Path | ArchivePath] = []
    problems: list[Problem] = []

    def kind(p: Path) -> str | None:  # "dir", "file", or None with a problem (a stat refused raises)
        try:
            mode = p.stat().st_mode
        except OSError as exc:
            missing = exc.errno in (errno.ENOENT, errno.ENOTDIR)
            problems.append(Problem(str(p), "no such file or folder" if missing else
                                    f"cannot be read ({exc.strerror or exc})"))
            return None
        return "dir" if stat.S_ISDIR(mode) else "file" if stat.S_ISREG(mode) else "other"

    def unlisted(exc: OSError) -> None:
        problems.append(Problem(str(exc.filename), f"folder cannot be listed ({exc.strerror or exc})"))

    for raw in paths:
        p = Path(raw)
        what = kind(p)
        if what == "dir":
            found = []
            for root, folders, names in os.walk(p, onerror=unlisted):
                folders[:] = [f for f in folders if not f.startswith(".") and f != "attempts"]
                found += [Path(root, n) for n in names if not n.startswith(".") and not n.endswith(_NOT_LOGS)
                          and n not in _LEGAL]
            files.extend(sorted(q for q in found if _is_file(q, problems)))
        elif what == "file":
            files.append(p)
        elif what == "other":
            problems.append(Problem(str(p), "no such file or folder"))
    return [m for f in files for m in _members(f, problems)], problems


def _members(path: Path, problems: list[Problem]) -> list[Path | ArchivePath]:
    """The log members of an archive (and of those in it), in archive order (a compressed tar is
    streamed once so); a file that is no archive, itself."""
    if not archives.kind(path.name):
        return [path]
    listing = archives.listing(path)
    problems.extend(listing.problems)
    found = []
    for each in (listing, *(inner for name, inner in listing.nested.items() if _is_log(name))):
        found += [ArchivePath(each, name) for name in each.files if _is_log(name)]
    return found


def _is_log(member: str) -> bool:
    """Whether a member would be analyzed were the archive a folder."""
    *folders, name = member.split("/")
    return not (name.startswith(".") or name.endswith(_NOT_LOGS) or name in _LEGAL
                or any(f.startswith(".") or f == "attempts" for f in folders))


def _is_file(path: Path, problems: list[Problem]) -> bool:
    """Whether a path found in a folder is a regular file (a link to one too); a stat refused is a
    problem, a link to nothing is passed over."""
    try:
        return stat.S_ISREG(path.stat().st_mode)
    except (FileNotFoundError, NotADirectoryError):
        return False
    except OSError as exc:
        problems.append(Problem(str(path), f"cannot be read ({exc.strerror or exc})"))
        return False
