"""Finding the logs to analyze, and what their names say.

`log_files`: files named and files under folders (walked without recursion: `core.userfiles.walk`),
and the members of the archives among them (`archives`). A path that cannot be read (a folder that
cannot be listed, a stat refused: a link into a folder of another user; an archive member refused),
a file that is no regular file (a FIFO, a device) and a pseudo file system's (`/proc`, `/sys`: the
kernel's state, never read; a link judged by what it names) are problems of their own, never ones
that stop the others.

`from_path`: run metadata read from a log's path, the second source after the log itself. Published
logs encode their configuration in names: `tf_gpu8_amp_bs256.txt`, `mxnet_gpu1_gpu8_fp32_bs128.txt`
(two runs, in that order), `1n8g/r50_b128_fp32_3.log` (one node of eight GPUs, batch 128, FP32,
repeat 3). In an archive the member's path is read, below the archive's name as a folder
(`logs.tar.gz!1n8g/r50_b128_fp32_3.log` reads as `logs/1n8g/...`). The run record written by
`benchbook run` is the third source; records.py reads it (`records.config_beside`).
"""

from __future__ import annotations

import errno
import functools
import os
import re
import stat
from collections.abc import Iterable
from pathlib import Path, PurePath

from ..core import userfiles
from ..runfolder import MLLOG
from . import archives
from .archives import ArchivePath, Problem

_NOT_LOGS = (".run.json", ".json", ".yaml", ".yml", ".ipynb", ".html", ".sbatch")  # .sbatch: Slurm job scripts
_LEGAL = ("NOTICE", "LICENSE")  # beside published logs (examples/published/)
_RECORD = "run.json"  # runfolder.records.RECORD (that module imports pandas; this one is read by every command)


def log_files(paths: Iterable[str | os.PathLike]) -> tuple[list[Path | ArchivePath], list[Problem]]:
    """Files named and files found under folders (recursively, sorted), and the paths that do not
    exist or cannot be read (a folder that cannot be listed, a path whose stat is refused), or that
    name no regular file on a disk file system, a link judged by what it names (`userfiles.refusal`).

    In folders, hidden files and folders, earlier attempts of a run (`attempts/`, kept by the
    runner), files that are not logs (records, studies, notebooks, reports, a NOTICE or LICENSE)
    and a run folder's `runfolder.MLLOG` (beside its `run.json`: the MLPerf lines of the run its
    log holds) are passed over; a file named explicitly is always analyzed. An archive, named or found, stands
    for its members (in archive order, passed over by the same rules as a folder's files).
    """
    files: list[Path | ArchivePath] = []
    problems: list[Problem] = []
    pseudo = userfiles.pseudo_devices()

    def unlisted(exc: OSError) -> None:
        problems.append(Problem(str(exc.filename), f"folder cannot be listed ({exc.strerror or exc})"))

    def passed_over(folder: Path) -> bool:
        """Whether a folder found is hidden, earlier attempts, or a pseudo file system's (noted)."""
        hidden = folder.name.startswith(".") or folder.name == "attempts"
        return hidden or not _readable(folder, pseudo, problems, folder_too=True)

    for raw in paths:
        p = Path(raw)
        try:
            mode = p.stat().st_mode
        except OSError as exc:
            missing = exc.errno in (errno.ENOENT, errno.ENOTDIR)
            problems.append(Problem(str(p), "no such file or folder" if missing else
                                    f"cannot be read ({exc.strerror or exc})"))
            continue
        if not _readable(p, pseudo, problems, folder_too=True):
            continue
        if stat.S_ISDIR(mode):
            found = []
            for root, folders, names in userfiles.walk(p, onerror=unlisted):
                folders[:] = [f for f in folders if not passed_over(Path(root, f))]
                run_folder = _RECORD in names  # its MLLOG is its log again, as MLPerf lines: not a second run
                found += [Path(root, n) for n in names if not n.startswith(".") and not n.endswith(_NOT_LOGS)
                          and n not in _LEGAL and not (run_folder and n == MLLOG)]
            files.extend(sorted(q for q in found if _readable(q, pseudo, problems)))
        else:
            files.append(p)
    logs: list[Path | ArchivePath] = []
    for f in files:  # an archive stands for its members
        if f.name.lower().endswith(archives.SUFFIXES):
            logs += _members(f, problems)
        else:
            logs.append(f)
    return logs, problems


def _members(path: Path, problems: list[Problem]) -> list[Path | ArchivePath]:
    """The log members of an archive (and of those in it), in archive order (a compressed tar is
    streamed once so)."""
    listing = archives.listing(path)
    problems.extend(listing.problems)
    found = []
    for each in (listing, *(inner for name, inner in listing.nested.items() if _is_log(name))):
        records = {name.rpartition("/")[0] for name in each.files if name.rpartition("/")[2] == _RECORD}
        found += [ArchivePath(each, name) for name in each.files if _is_log(name)
                  and not (name.rpartition("/")[2] == MLLOG and name.rpartition("/")[0] in records)]
    return found


def _is_log(member: str) -> bool:
    """Whether a member would be analyzed were the archive a folder."""
    *folders, name = member.split("/")
    return not (name.startswith(".") or name.endswith(_NOT_LOGS) or name in _LEGAL
                or any(f.startswith(".") or f == "attempts" for f in folders))


def _readable(path: Path, pseudo: dict[int, str], problems: list[Problem], folder_too: bool = False) -> bool:
    """Whether a path is a regular file (a folder too where `folder_too`)
    on a disk file system, its links followed; a stat refused and anything else (a FIFO, a socket, a
    device, a pseudo file system's file or folder: /proc, /sys) are problems naming it, a link to
    nothing is passed over."""
    try:
        st = path.stat()
    except (FileNotFoundError, NotADirectoryError):
        return False
    except OSError as exc:
        problems.append(Problem(str(path), f"cannot be read ({exc.strerror or exc})"))
        return False
    why = userfiles.refusal(st, pseudo, folder_too=folder_too)
    if why:
        problems.append(Problem(str(path), why + userfiles.linked(path)))
    return why is None


_NODES = re.compile(r"(?<![a-z0-9])(\d+)n(\d+)g(?![a-z0-9])")
_GPUS = re.compile(r"(?<![a-z])(?:gpus?|g)(\d+)(?![0-9])|(?<![a-z0-9])(\d+)gpus?(?![a-z0-9])")
_BATCH = re.compile(r"(?<![a-z])(?:bs|b|batch)(\d+)(?![0-9])")
_PRECISION = re.compile(r"(?<![a-z0-9])(fp32|fp16|amp|tf32|bf16)(?![a-z0-9])")
_REPEAT = re.compile(r"[_-](\d+)$")


def from_path(path: str | Path | ArchivePath, run_index: int = 0) -> dict:
    """Metadata the path names for the `run_index`-th run of the file (keys absent when unknown)."""
    nodes, gpus, rest = _parse(str(PurePath(*path.parts)) if isinstance(path, ArchivePath) else str(path))
    meta = dict(nodes)
    if gpus and "gpus" not in meta:
        # One GPU token per run when a file holds several runs (mxnet_gpu1_gpu8_...).
        meta["gpus"] = gpus[min(run_index, len(gpus) - 1)]
    meta.update(rest)
    return meta


@functools.lru_cache(maxsize=1024)
def _parse(path: str) -> tuple[dict, tuple[int, ...], dict]:
    """What a path names, read once per path (every run of a file asks): nodes and GPUs of an
    `NnMg` part, the GPU tokens in order, and the rest. The dicts are shared: copy, never change."""
    p = Path(path)
    stem = p.stem.lower()
    nodes: dict = {}
    for part in [q.lower() for q in p.parent.parts[-2:]] + [stem]:
        m = _NODES.search(part)
        if m:
            nodes["nodes"], nodes["gpus"] = int(m.group(1)), int(m.group(1)) * int(m.group(2))
    tokens = re.split(r"[_\-.]", stem)
    gpus = tuple(int(a or b) for t in tokens for a, b in _GPUS.findall(t) if not _NODES.fullmatch(t))
    meta: dict = {}
    for token in tokens:
        if "batch_size" not in meta and (m := _BATCH.fullmatch(token)):
            meta["batch_size"] = int(m.group(1))
        if "precision" not in meta and (m := _PRECISION.fullmatch(token)):
            meta["precision"] = "amp" if m.group(1) == "fp16" else m.group(1)
    if "xla" in tokens:
        meta["xla"] = True
    if "noxla" in tokens:
        meta["xla"] = False
    if "dali" in tokens:
        meta["dali"] = True
    if {"syn", "synthetic", "synth"} & set(tokens):
        meta["synthetic"] = True
    m = _REPEAT.search(stem)
    if m and not _BATCH.fullmatch(tokens[-1]) and not _GPUS.fullmatch(tokens[-1]):
        meta["repeat"] = int(m.group(1))
    return nodes, gpus, meta
