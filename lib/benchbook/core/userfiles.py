"""The user's folders walked, and their files judged before a byte of them is read.

A shared cluster's folders are hostile input: a link in a log folder may point at `/proc/kmsg` (as
root, reading it consumes the kernel's messages, then blocks for good), a FIFO waits for a writer for
ever, a device's bytes are no log. So what a path is is judged by what it names, its links followed:
only a regular file on a disk file system is read (`refusal`, `open_regular`), and a folder tree is
walked without recursion (`walk`: Python 3.11's `os.walk` and `Path.rglob` recurse, and end a
command with RecursionError past about 1,000 levels).
"""

from __future__ import annotations

import functools
import os
import re
import stat
from collections.abc import Callable, Iterator

# The file systems whose files are the kernel's state, not files written (procfs files report a size
# of 0 and reading some has effects: /proc/kmsg consumes the kernel's messages). Linux's names, as
# /proc/self/mounts spells them (fs/proc/root.c, fs/sysfs/mount.c, ... of torvalds/linux). autofs is
# left out: a stat of its mount point would mount it.
PSEUDO_FILE_SYSTEMS = frozenset(("proc", "sysfs", "devtmpfs", "devpts", "cgroup", "cgroup2", "debugfs", "tracefs",
                                 "securityfs", "pstore", "bpf", "configfs", "fusectl", "mqueue", "hugetlbfs",
                                 "binfmt_misc", "efivarfs", "rpc_pipefs", "nsfs", "selinuxfs"))
MOUNTS = "/proc/self/mounts"  # Linux's mount table: device, mount point (octal escapes), type, ...


class NotRegular(OSError):
    """A path that names no regular file on a disk file system: not opened, the reason its message."""


def pseudo_devices() -> dict[int, str]:
    """The devices (`st_dev`) of the pseudo file systems mounted, with their type; none where the
    mount table cannot be read (not Linux). Each call reads the table (it may change), the mount
    points are looked at once per table."""
    try:
        with open(MOUNTS, "rb") as f:
            table = f.read()
    except OSError:
        return {}
    return dict(_devices(table))


@functools.lru_cache(maxsize=4)
def _devices(table: bytes) -> tuple[tuple[int, str], ...]:
    """(st_dev, type) of the pseudo file systems a mount table names (its mount points looked at)."""
    found = {}
    for fields in map(bytes.split, table.splitlines()):
        if len(fields) > 2 and fields[2].decode(errors="replace") in PSEUDO_FILE_SYSTEMS:
            point = re.sub(rb"\\([0-7]{3})", lambda m: bytes([int(m[1], 8)]), fields[1])
            try:
                found[os.stat(point).st_dev] = fields[2].decode()
            except OSError:
                continue
    return tuple(found.items())


def pseudo_note(kind: str) -> str:
    """Why a path on a pseudo file system of `kind` (proc, sysfs) is not read."""
    return f"on the {kind} pseudo file system (the kernel's state, not logs): skipped, nothing in it read"


def kind_of(mode: int) -> str:
    """What a file that is no regular file is, in words."""
    return "a folder" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else \
        "a socket" if stat.S_ISSOCK(mode) else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else \
        "a special file"


def refusal(st: os.stat_result, pseudo: dict[int, str], folder_too: bool = False) -> str | None:
    """Why a file of this stat (its links followed) is not read: None for a regular file (a folder
    too where `folder_too`) on a disk file system. Reading a FIFO waits for a writer, a device's
    bytes are no log, a pseudo file system's files are the kernel's state."""
    if st.st_dev in pseudo:
        return pseudo_note(pseudo[st.st_dev])
    if stat.S_ISREG(st.st_mode) or (folder_too and stat.S_ISDIR(st.st_mode)):
        return None
    return f"{kind_of(st.st_mode)}, not a regular file: skipped"


def linked(path: str | os.PathLike) -> str:
    """What a message adds where `path` is a symbolic link, " (a link to <target>)", else "": a skipped
    link says what it names."""
    try:
        return f" (a link to {os.path.realpath(path)})" if os.path.islink(path) else ""
    except (OSError, ValueError):
        return ""


def open_regular(path: str | os.PathLike):
    """`path` opened for reading in binary, when it names a regular file on a disk file system (its
    links followed); NotRegular, an OSError, names what it is otherwise. Judged before the open (a
    device's open may act) and again on the descriptor (a file swapped for a FIFO in between is
    refused: the open does not wait, O_NONBLOCK)."""
    pseudo = pseudo_devices()
    why = refusal(os.stat(path), pseudo)
    if why:
        raise NotRegular(f"{why}{linked(path)}")
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        why = refusal(os.fstat(fd), pseudo)
        if why:
            raise NotRegular(f"{why}{linked(path)}")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def walk(top: str | os.PathLike, onerror: Callable[[OSError], object] | None = None
         ) -> Iterator[tuple[str, list[str], list[str]]]:
    """`os.walk(top, onerror=onerror)` top-down, links to folders listed but never entered, without
    recursion: a tree of any depth is walked (a path past PATH_MAX is a folder that cannot be
    listed, told to `onerror`). The caller may prune or order the folders' list in place."""
    pending = [os.fspath(top)]
    while pending:
        root = pending.pop()
        folders, files = [], []
        try:
            with os.scandir(root) as entries:
                for entry in entries:
                    try:
                        is_folder = entry.is_dir()
                    except OSError:
                        is_folder = False
                    (folders if is_folder else files).append(entry.name)
        except OSError as exc:
            if onerror is not None:
                onerror(exc)
            continue
        yield root, folders, files
        below = [os.path.join(root, name) for name in folders]
        pending += reversed([p for p in below if not os.path.islink(p)])
