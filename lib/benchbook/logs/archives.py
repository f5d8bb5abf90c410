"""Logs kept in archives (`.zip`, `.tar`, `.tar.gz`/`.tgz`, `.tar.xz`, `.tar.bz2`, `.gz`, `.xz`,
`.bz2`), read where they lie: streamed through the standard library, nothing extracted to disk.

An archive is listed once (`listing`); each member is an `ArchivePath`, a small read-only stand-in for
a `Path` whose name reads `archive.zip!folder/log.txt` (`outer.zip!inner.tar.gz!log.txt` one level
down). Opening a member streams the archive up to it (members read in archive order: the archive
once). Archives are hostile input: a member that inflates past `Limits.max_bytes` or past `max_ratio`
times the compressed bytes behind it, more than `max_members` members, an archive inside an archive
inside an archive, links, devices and sparse files in a tar (links, FIFOs and devices in a zip made on
Unix), an encrypted zip member, and names holding `..`, are refused with a `Problem` naming the archive
and member; of several members of one name the last is read, as `tar x` and `unzip` keep it, and that
is said; a corrupt or truncated archive keeps what was read before the fault. The caps and the metered
streams are `archive_meter`'s. The caps come from the environment
(`BENCHBOOK_ARCHIVE_MAX_BYTES`, `..._MAX_RATIO`, `..._MAX_MEMBERS`)."""

from __future__ import annotations

import bz2
import contextlib
import gzip
import io
import lzma
import os
import stat
import tarfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from ..core import userfiles
from ..errors import LogError
from .archive_meter import DAMAGED, RATIO_FROM, SEP, Limits, Meter, Refused

_COMPRESSED = {".gz": gzip.open, ".tgz": gzip.open, ".xz": lzma.open, ".txz": lzma.open, ".bz2": bz2.open,
               ".tbz2": bz2.open}
_TARS = (".tar", ".tar.gz", ".tgz", ".tar.xz", ".txz", ".tar.bz2", ".tbz2")
SUFFIXES = (".zip", *_TARS, *_COMPRESSED)  # the names that `kind` reads as archives (lower case)
def kind(name: str) -> str | None:
    """"zip", "tar" or "single" (one compressed file) by the name's suffix; None for any other file."""
    low = name.lower()
    if low.endswith(".zip"):
        return "zip"
    if low.endswith(_TARS):
        return "tar"
    return "single" if low.endswith(tuple(_COMPRESSED)) else None


@dataclass
class Problem:
    """A file, archive or member that could not be analyzed (whole or in part), and why."""

    source: str
    reason: str


@dataclass
class Listing:
    """One archive's regular members (name -> declared size, None when unknown) and its problems.
    `outer` is the listing this archive is a member of, `name` its member name there."""

    path: Path
    label: str
    files: dict[str, int | None] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    outer: Listing | None = None
    name: str = ""
    nested: dict[str, Listing] = field(default_factory=dict)  # members that are archives, listed
    copies: dict[str, int] = field(default_factory=dict)  # how many members have each name (one: most)
    offsets: dict[str, int] = field(default_factory=dict)  # a tar member's header offset: the one to read

    def refuse(self, member: str, reason: str) -> None:
        self.problems.append(Problem(f"{self.label}{SEP}{member}" if member else self.label, reason))


class ArchivePath:
    """A member of an archive, or a folder in it, with the few `Path` methods readers use."""

    def __init__(self, listing: Listing, inner: str = ""):
        self.listing, self.inner = listing, inner.strip("/")

    def __str__(self) -> str:
        return f"{self.listing.label}{SEP}{self.inner}"

    def __repr__(self) -> str:
        return f"ArchivePath({str(self)!r})"

    def __eq__(self, other) -> bool:
        return isinstance(other, ArchivePath) and self.listing is other.listing and self.inner == other.inner

    def __hash__(self) -> int:
        return hash((id(self.listing), self.inner))

    def __lt__(self, other: ArchivePath) -> bool:
        return str(self) < str(other)

    def __truediv__(self, name: str) -> ArchivePath:
        return ArchivePath(self.listing, f"{self.inner}/{name}" if self.inner else name)

    @property
    def name(self) -> str:
        return PurePosixPath(self.inner).name

    @property
    def parent(self) -> ArchivePath | Path:
        """The folder above in the archive; the archive's own folder above its top."""
        if not self.inner:
            return self.listing.path.parent
        return ArchivePath(self.listing, folder_of(self.inner))

    @property
    def parts(self) -> tuple[str, ...]:
        """The archive's path with its name, less the archive suffix, as a folder (nested archives' too),
        then the member's parts: what a file name's metadata and an MLPerf round are read from."""
        names, at = [], self.listing
        while at.outer is not None:
            names[:0] = PurePosixPath(_stem(at.name)).parts
            at = at.outer
        return (*at.path.parent.parts, _stem(at.path.name), *names, *PurePosixPath(self.inner).parts)

    def resolve(self) -> ArchivePath:
        return self

    @property
    def size(self) -> int | None:
        return self.listing.files.get(self.inner)

    def is_file(self) -> bool:
        return self.inner in self.listing.files

    def is_dir(self) -> bool:
        prefix = f"{self.inner}/" if self.inner else ""
        return any(n.startswith(prefix) for n in self.listing.files)

    def iterdir(self) -> Iterator[ArchivePath]:
        prefix = f"{self.inner}/" if self.inner else ""
        seen = dict.fromkeys(n[len(prefix):].split("/", 1)[0] for n in self.listing.files if n.startswith(prefix))
        return (self / n for n in seen)

    def open(self, mode: str = "r", encoding: str | None = None, errors: str | None = None):
        """The member's bytes ("rb") or text, streamed; FileNotFoundError for no such member."""
        if not self.is_file():
            raise FileNotFoundError(2, "no such member", str(self))
        stream = _open_member(self.listing, self.inner, Limits.from_env())
        return stream if mode == "rb" else io.TextIOWrapper(stream, encoding=encoding or "utf-8", errors=errors)

    def read_text(self, encoding: str | None = None, errors: str | None = None) -> str:
        with self.open(encoding=encoding, errors=errors) as f:
            return f.read()


def folder_of(member: str) -> str:
    """The folder of a member's name ("" at the archive's top)."""
    return member.rpartition("/")[0]


def _clean(name: str) -> str:
    """A member's name as listed: no leading `/` or `./`, no empty parts."""
    return "/".join(p for p in name.split("/") if p not in ("", "."))


def _stem(name: str) -> str:
    """An archive's name without its archive suffix (`r50_fp32.tar.gz` -> `r50_fp32`)."""
    low = name.lower()
    for suffix in (*_TARS, ".zip", *_COMPRESSED):
        if low.endswith(suffix):
            return name[: -len(suffix)]
    return name


def _tar(source, label: str, name: str, limits: Limits, stack: contextlib.ExitStack) -> tuple[tarfile.TarFile, Meter]:
    """A tar read as a stream (`r|`), inflated through a metered decompressor (caps enforced as it goes)."""
    raw = Meter(source, label)
    compressed = _COMPRESSED.get(os.path.splitext(name.lower())[1])
    inflated = stack.enter_context(compressed(raw, "rb")) if compressed else raw
    meter = Meter(inflated, label, limits, raw if compressed else None, sized=True)
    return stack.enter_context(tarfile.open(fileobj=meter, mode="r|")), meter


def listing(path: str | os.PathLike, limits: Limits | None = None) -> Listing:
    """The regular members of the archive at `path` (and of the archives in it, one level down),
    read once; what cannot be read is a problem of the listing, never an exception."""
    path = Path(path)
    found = Listing(path, str(path))
    try:
        with userfiles.open_regular(path) as f:  # (a FIFO, a link to /proc: never read)
            _list(found, f, limits or Limits.from_env(), depth=0)
    except OSError as exc:
        found.refuse("", f"cannot be read ({exc.strerror or exc})")
    return found


def _list(found: Listing, source, limits: Limits, depth: int) -> None:
    name = found.path.name if found.outer is None else found.name
    how = kind(name)
    try:
        with contextlib.ExitStack() as stack:
            if how == "zip":  # (its declared compressed sizes count for no more than the archive holds)
                held = found.outer.files.get(found.name) if found.outer else os.fstat(source.fileno()).st_size
                _list_zip(found, stack.enter_context(zipfile.ZipFile(source)), limits, held or 1)
            elif how == "tar":
                tar, meter = _tar(source, found.label, name, limits, stack)
                _list_tar(found, tar, meter, limits)
            else:  # one compressed file: its size is known once read (the reading enforces the caps)
                found.files[_stem(PurePosixPath(name).name)] = None
    except Refused as exc:
        found.problems.append(Problem(exc.path, exc.reason + (f"; the {len(found.files)} members before are read"
                                                              if found.files else "")))
    except LogError as exc:  # damaged in a member: what comes before the fault is read
        found.problems.append(Problem(exc.path, f"{exc.reason}: what comes before the fault is read"))
    except DAMAGED as exc:
        done = f" after {len(found.files)} members (what comes before the fault is read)" if found.files else ""
        found.refuse("", f"the archive is damaged or cut short{done} ({type(exc).__name__}: {exc})")
    _say_copies(found)
    for member in [m for m in found.files if kind(m)]:
        del found.files[member]
        if depth:
            found.refuse(member, "an archive inside an archive inside an archive: not read (one level is)")
            continue
        inner = Listing(found.path, f"{found.label}{SEP}{member}", outer=found, name=member)
        found.nested[member] = inner
        try:
            with _open_member(found, member, limits) as stream:
                if kind(member) == "zip" and not stream.seekable():
                    inner.refuse("", "a zip inside a compressed tar cannot be streamed (a zip is read from its "
                                     "end): extract it, or keep it in a zip")
                else:
                    _list(inner, stream, limits, depth + 1)
        except LogError as exc:
            inner.problems.append(Problem(exc.path, exc.reason))
        found.problems.extend(inner.problems)


def _say_copies(found: Listing) -> None:
    """Each name several members have, said: the last is the one read (`tar x` and `unzip` each write the
    members in order, the last of a name overwriting the ones before)."""
    for member, count in found.copies.items():
        if count > 1:
            before = "the one before is" if count == 2 else f"the {count - 1} before are"
            found.refuse(member, f"{count} members of this name: the last one is read, as `tar x` and `unzip` keep "
                                 f"it; {before} not")


def _admit(found: Listing, member: str, size: int, limits: Limits, compressed: int | None = None,
           irregular: str = "", offset: int | None = None) -> bool:
    """List a member of a zip or tar unless a cap refuses it (a problem naming it); False where the
    listing stops there. Past the member count the rest are not read; `irregular` (what a tar member
    that is no regular file is) is refused; past max_bytes a member is refused, and in a tar (no
    `compressed` size) so are the members after it: stepping over it would inflate it; past max_ratio
    times its `compressed` bytes a zip's member is refused as a bomb."""
    if len(found.files) >= limits.max_members:
        found.refuse("", f"more than {limits.max_members} members (BENCHBOOK_ARCHIVE_MAX_MEMBERS): the rest "
                         "are not read")
        return False
    name = _clean(member)
    found.copies[name] = found.copies.get(name, 0) + 1
    found.files.pop(name, None)  # (a later member of the name replaces it, and takes its place in the order)
    if irregular == "encrypted":
        found.refuse(member, "encrypted (a password is needed to read it): not read")
    elif irregular:
        found.refuse(member, f"{irregular} inside the archive: refused (only regular files are read)")
    elif ".." in member.split("/"):
        found.refuse(member, "a name that climbs out of the archive (`..`): refused (a log has a name inside it)")
    elif size > limits.max_bytes:
        found.refuse(member, f"inflates to {size} bytes, past the cap of {limits.max_bytes} "
                             "(BENCHBOOK_ARCHIVE_MAX_BYTES): refused"
                             + ("; the members after it are not read" if compressed is None else ""))
        return compressed is not None
    elif compressed is not None and size > RATIO_FROM and size > limits.max_ratio * compressed:
        found.refuse(member, f"inflates {size / compressed:.0f} times its compressed size, past "
                             f"{limits.max_ratio:g} (BENCHBOOK_ARCHIVE_MAX_RATIO): refused as a bomb")
    else:
        found.files[name] = size
        if offset is not None:
            found.offsets[name] = offset
    return True


def _list_zip(found: Listing, zf: zipfile.ZipFile, limits: Limits, held: int) -> None:
    for info in zf.infolist():
        compressed = max(min(info.compress_size, held), 1)
        if not info.is_dir() and not _admit(found, info.filename, info.file_size, limits, compressed,
                                            irregular=_zip_kind(info)):
            return


def _zip_kind(info: zipfile.ZipInfo) -> str:
    """What a zip member made on Unix is when no regular file ("" for one): its mode is the high half
    of its external attributes (Info-ZIP's unzip makes a link of S_IFLNK, zipinfo.c's "l"); or
    "encrypted" (bit 0 of its flags, APPNOTE.TXT 4.4.4: zipfile refuses it without a password)."""
    if info.flag_bits & 0x1:
        return "encrypted"
    mode = info.external_attr >> 16 if info.create_system == 3 else 0
    if not stat.S_IFMT(mode) or stat.S_ISREG(mode) or stat.S_ISDIR(mode):  # (zipfile's writestr: no type)
        return ""
    return "a link" if stat.S_ISLNK(mode) else userfiles.kind_of(mode)


def _list_tar(found: Listing, tar: tarfile.TarFile, meter: Meter, limits: Limits) -> None:
    try:
        for info in tar:
            meter.member, meter.start = info.name, meter.count
            if info.isdir():
                continue
            irregular = "" if info.isfile() and not info.issparse() else (
                "a link" if info.issym() or info.islnk() else "a device or FIFO" if info.isdev()
                else "a sparse file" if info.issparse() else "not a regular file")
            if not _admit(found, info.name, info.size, limits, irregular=irregular, offset=info.offset):
                return
    except Refused:  # a cap passed while stepping over a member: it is not read
        found.files.pop(_clean(meter.member), None)
        raise


def _open_member(found: Listing, member: str, limits: Limits) -> io.BufferedReader:
    """A stream of one member's bytes, its caps enforced: from the archive's start, or, in a tar whose
    member before it was read last, from there (members read in archive order stream it once)."""
    stack = contextlib.ExitStack()
    try:
        name = found.path.name if found.outer is None else found.name
        how = kind(name)
        resumed = _resume(found, member) if how == "tar" else None
        if resumed:
            tar, meter, stack = resumed
        elif how != "zip":
            source = stack.enter_context(_open_member(found.outer, found.name, limits) if found.outer
                                         else userfiles.open_regular(found.path))
        park = None
        if how == "zip":
            opened = _zip_of(found, limits)
            info = opened.members.get(member)
            if info is None:
                raise LogError(f"{found.label}{SEP}{member}", "no longer in the archive")
            try:
                data = stack.enter_context(opened.zf.open(info))
            except (RuntimeError, NotImplementedError) as exc:  # (a password, a compression zipfile lacks)
                raise LogError(f"{found.label}{SEP}{member}", f"cannot be read ({exc})") from None
            opened.reading += 1
            stack.callback(opened.done)
            stream = Meter(data, found.label, limits)
        elif how == "tar":
            if not resumed:
                tar, meter = _tar(source, found.label, name, limits, stack)
            for info in tar:
                meter.member = info.name
                meter.start = meter.count
                if _clean(info.name) == member and info.offset == found.offsets.get(member, info.offset) \
                        and info.isfile() and not info.issparse():  # (of several of a name, the one listed)
                    data = tar.extractfile(info)
                    break
            else:
                raise LogError(f"{found.label}{SEP}{member}", "no longer in the archive")
            stream, park = Meter(data, found.label), (found, member, tar, meter)
        else:
            raw = Meter(source, found.label)
            inflated = stack.enter_context(_COMPRESSED[os.path.splitext(name.lower())[1]](raw, "rb"))
            stream = Meter(inflated, found.label, limits, raw)
        stream.member = member
        reader = _Closing(stream, stack, park)
        stack = contextlib.ExitStack()  # handed over to the reader, which closes (or parks) it
        return reader
    except LogError:
        raise
    except DAMAGED as exc:
        raise LogError(f"{found.label}{SEP}{member}", f"the archive is damaged ({type(exc).__name__}: {exc})") \
            from None
    finally:
        stack.close()


@dataclass
class _OpenZip:
    """A zip left open for its next member (`zf`, its members by name), `reading` of them open now."""

    listing: Listing
    zf: zipfile.ZipFile
    members: dict[str, zipfile.ZipInfo]
    stack: contextlib.ExitStack
    reading: int = 0

    def done(self) -> None:
        self.reading -= 1


_zips: list[_OpenZip] = []  # the zip read last (and the zip it is a member of), left open


def _zip_of(found: Listing, limits: Limits) -> _OpenZip:
    """The zip of `found`, open: opening one reads its whole central directory, so the members read
    one after another share one opening (one each made N members cost N**2: bench/bench_archives.py).
    Opening another closes those no member is read from (the innermost first)."""
    for opened in _zips:
        if opened.listing is found:
            return opened
    for opened in reversed(list(_zips)):
        if not opened.reading:
            _zips.remove(opened)
            opened.stack.close()
    with contextlib.ExitStack() as stack:
        source = stack.enter_context(_open_member(found.outer, found.name, limits) if found.outer
                                     else userfiles.open_regular(found.path))
        zf = stack.enter_context(zipfile.ZipFile(source))
        members: dict[str, zipfile.ZipInfo] = {}
        for info in zf.infolist():
            if not info.is_dir():
                members[_clean(info.filename)] = info  # (the last of a name, as listed)
        _zips.append(_OpenZip(found, zf, members, stack.pop_all()))
    return _zips[-1]


_parked: list[tuple] = []  # the tar whose member was read last, left open: (listing, member, tar, meter, stack)


def _resume(found: Listing, member: str) -> tuple | None:
    """The parked tar of `found` when `member` comes after the member read last; else None, the parked
    tar closed."""
    if not _parked:
        return None
    listing, last, tar, meter, stack = _parked.pop()
    order = list(found.files)
    if listing is found and last in found.files and member in found.files and order.index(member) > order.index(last):
        return tar, meter, stack
    stack.close()
    return None


class _Closing(io.BufferedReader):
    """A member's buffered stream that closes the archive behind it when closed, or parks a tar's
    (`park`: listing, member, tar, meter) for a later member to go on from."""

    def __init__(self, raw: Meter, stack: contextlib.ExitStack, park: tuple | None = None):
        super().__init__(raw, buffer_size=1 << 20)
        self._stack, self._park = stack, park

    @property
    def fault(self) -> LogError | None:
        """Why the member ended early (its archive damaged or cut), once its last bytes were read."""
        return self.raw.fault

    def close(self) -> None:
        try:
            with contextlib.suppress(*DAMAGED):
                super().close()
        finally:
            if self._park and not self.raw.fault and not _parked:
                _parked.append((*self._park, self._stack))
            else:
                self._stack.close()
