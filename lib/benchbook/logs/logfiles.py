"""Finding the logs to analyze, and what their names say.

`log_files`: files named and files under folders, and the members of the archives among them
(`archives`). A path that cannot be read (a folder that cannot be listed, a stat refused: a link into
a folder of another user; an archive member refused), a file that is no regular file (a FIFO, a
device) and a pseudo file system (`/proc`, `/sys`: the kernel's state, never read) are problems of
their own, never ones that stop the others.

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

from ..runfolder import MLLOG
from . import archives
from .archives import ArchivePath, Problem

_NOT_LOGS = (".run.json", ".json", ".yaml", ".yml", ".ipynb", ".html", ".sbatch")  # .sbatch: Slurm job scripts
_LEGAL = ("NOTICE", "LICENSE")  # beside published logs (examples/published/)
_RECORD = "run.json"  # runfolder.records.RECORD (that module imports pandas; this one is read by every command)


def log_files(paths: Iterable[str | os.PathLike]) -> tuple[list[Path | ArchivePath], list[Problem]]:
    """Files named and files found under folders (recursively, sorted), and the paths that do not
    exist or cannot be read (a folder `os.walk` cannot list, a path whose stat is refused).

    In folders, hidden files and folders, earlier attempts of a run (`attempts/`, kept by the
    runner), files that are not logs (records, studies, notebooks, reports, a NOTICE or LICENSE)
    and a run folder's `runfolder.MLLOG` (beside its `run.json`: the MLPerf lines of the run its
    log holds) are passed over; a file named explicitly is always analyzed. An archive, named or found, stands
    for its members (in archive order, passed over by the same rules as a folder's files).
    """
    files: list[Path | ArchivePath] = []
    problems: list[Problem] = []
    pseudo = _pseudo_devices()

    def unlisted(exc: OSError) -> None:
        problems.append(Problem(str(exc.filename), f"folder cannot be listed ({exc.strerror or exc})"))

    def passed_over(folder: Path) -> bool:
        """Whether a folder found is hidden, earlier attempts, or a pseudo file system's (noted)."""
        return folder.name.startswith(".") or folder.name == "attempts" or _on_pseudo(folder, pseudo, problems)

    for raw in paths:
        p = Path(raw)
        try:
            mode = p.stat().st_mode
        except OSError as exc:
            missing = exc.errno in (errno.ENOENT, errno.ENOTDIR)
            problems.append(Problem(str(p), "no such file or folder" if missing else
                                    f"cannot be read ({exc.strerror or exc})"))
            continue
        if _on_pseudo(p, pseudo, problems):
            continue
        if stat.S_ISDIR(mode):
            found = []
            for root, folders, names in os.walk(p, onerror=unlisted):
                folders[:] = [f for f in folders if not passed_over(Path(root, f))]
                run_folder = _RECORD in names  # its MLLOG is its log again, as MLPerf lines: not a second run
                found += [Path(root, n) for n in names if not n.startswith(".") and not n.endswith(_NOT_LOGS)
                          and n not in _LEGAL and not (run_folder and n == MLLOG)]
            files.extend(sorted(q for q in found if _is_file(q, problems)))
        elif stat.S_ISREG(mode):
            files.append(p)
        else:
            problems.append(Problem(str(p), _irregular(mode)))
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


def _is_file(path: Path, problems: list[Problem]) -> bool:
    """Whether a path found in a folder is a regular file (a link to one too); a stat refused and
    a file that is no regular file (a FIFO, a socket, a device) are problems, a link to nothing is
    passed over."""
    try:
        mode = path.stat().st_mode
    except (FileNotFoundError, NotADirectoryError):
        return False
    except OSError as exc:
        problems.append(Problem(str(path), f"cannot be read ({exc.strerror or exc})"))
        return False
    if not stat.S_ISREG(mode):
        problems.append(Problem(str(path), _irregular(mode)))
    return stat.S_ISREG(mode)


def _irregular(mode: int) -> str:
    """Why a file that is neither a folder nor a regular file is not read (reading a FIFO waits for
    a writer, a device's bytes are no log)."""
    what = "a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else \
        "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "not a regular file"
    return f"{what}, not a regular file: skipped"


# The file systems whose files are the kernel's state, not files written (procfs files report a size
# of 0 and reading some has effects: /proc/kmsg consumes the kernel's messages). autofs is left out:
# a stat of its mount point would mount it.
PSEUDO_FILE_SYSTEMS = frozenset(("proc", "sysfs", "devtmpfs", "devpts", "cgroup", "cgroup2", "debugfs", "tracefs",
                                 "securityfs", "pstore", "bpf", "configfs", "fusectl", "mqueue", "hugetlbfs",
                                 "binfmt_misc", "efivarfs", "rpc_pipefs", "nsfs", "selinuxfs"))
MOUNTS = "/proc/self/mounts"  # Linux's mount table: device, mount point (octal escapes), type, ...


def _pseudo_devices() -> dict[int, str]:
    """The devices (`st_dev`) of the pseudo file systems mounted, with their type; none where the
    mount table cannot be read (not Linux)."""
    try:
        with open(MOUNTS, "rb") as f:
            table = f.read().splitlines()
    except OSError:
        return {}
    found = {}
    for fields in map(bytes.split, table):
        if len(fields) > 2 and fields[2].decode(errors="replace") in PSEUDO_FILE_SYSTEMS:
            point = re.sub(rb"\\([0-7]{3})", lambda m: bytes([int(m[1], 8)]), fields[1])
            try:
                found[os.stat(point).st_dev] = fields[2].decode()
            except OSError:
                continue
    return found


def _on_pseudo(path: Path, pseudo: dict[int, str], problems: list[Problem]) -> bool:
    """Whether `path` lies on a pseudo file system (a problem saying so, once for a whole folder)."""
    if not pseudo:
        return False
    try:
        kind = pseudo.get(path.stat().st_dev)
    except OSError:
        return False
    if kind:
        problems.append(Problem(str(path), f"on the {kind} pseudo file system (the kernel's state, not logs): "
                                           "skipped, nothing in it read"))
    return kind is not None


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
