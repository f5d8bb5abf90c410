"""What `benchbook publish` writes and reads back in a reports folder, checked.

A reports folder may be shared: a link planted as `reports/<name>` or `reports/<name>/executed`
would send the writes of the next publish elsewhere, so such links are refused, naming them. Each
file is written whole or not at all (a temporary file, then `os.replace`, which replaces a planted
link instead of following it). Another report's `entry.json` is validated before the index reads
it: a wrong or hostile one is shown as unreadable, naming the file and the field, and blocks nothing
else. The listing of a report's inputs (what decides whether it runs again) never stops at a path it
cannot examine. File names are shown escaped: control characters, bidi controls and bytes that are not UTF-8
never reach the terminal as they are.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import io
import json
import os
import shutil
import socket
import stat
import tempfile
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..core import project
from ..errors import BenchbookError, shown
from ..runfolder import records

ROOT = project.ROOT  # the repository (or an installed copy of its files): the notebooks' paths are its


def portable(path: str | Path, home: bool = False) -> str:
    """`path` as a report writes it: relative to the repository when inside it (the notebooks' kernels run
    there, and a report is shared: no page or data file names the author's folders), else absolute, or
    under `~` with `home` (a path that is only shown, never opened by the kernel)."""
    absolute = Path(os.path.abspath(ROOT / Path(path).expanduser()))
    for base, prefix in ((ROOT, ""), *(((Path.home(), "~/"),) if home and str(Path.home()) != "/" else ())):
        try:
            return (prefix + str(absolute.relative_to(base))).rstrip("/") or "."
        except ValueError:
            continue
    return str(absolute)


class ReportFolderError(BenchbookError):
    """Raised when a report's folder (or a folder publish writes in it) is a symbolic link or no folder:
    publish writes only inside the real reports folder."""


def real_folder(reports: Path, *parts: str) -> Path:
    """`reports/<parts...>`, created, each level a real folder (never a link, which could send the
    writes anywhere); `reports` itself is the user's own choice and is taken as given (resolved)."""
    reports.mkdir(parents=True, exist_ok=True)
    folder = reports
    for part in parts:
        folder = folder / part
        if folder.is_symlink():
            raise ReportFolderError(f"{shown(str(folder))} is a symbolic link (to {shown(os.readlink(folder))}); "
                                    "publish writes only inside the real reports folder: remove the link")
        if folder.exists() and not folder.is_dir():
            raise ReportFolderError(f"{shown(str(folder))} is not a folder; remove it or publish elsewhere")
        folder.mkdir(exist_ok=True)
    return folder


@contextlib.contextmanager
def report_lock(folder: Path):
    """One publish of a report at a time: None when this one may go on, else who holds it."""
    try:
        handle = os.fdopen(os.open(folder / ".publish.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644), "r+")
    except OSError as exc:
        if exc.errno != errno.ELOOP:
            raise
        raise ReportFolderError(f"{shown(str(folder / '.publish.lock'))} is a symbolic link; publish writes only "
                                "inside the real reports folder: remove the link") from None
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            yield handle.read().strip() or "another publish"
            return
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()} on {socket.gethostname()}")
        handle.flush()
        yield None
    finally:
        handle.close()  # releases the lock


def write_text(path: Path, text: str) -> None:
    """Write `text` whole or not at all: a killed or disk-full publish leaves the old file, never half
    of the new one (nor writes through a link planted at `path`)."""
    write_stream(path, io.BytesIO(text.encode("utf-8")))


def write_stream(path: Path, stream) -> None:
    """The bytes of `stream` into `path`, whole or not at all, as `write_text` (a log copied beside its report)."""
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        os.fchmod(fd, 0o644)
        with os.fdopen(fd, "wb") as f:
            shutil.copyfileobj(stream, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        tmp = None
    finally:
        if tmp:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def portable_record(executed: Path, notebook: Path) -> None:
    """papermill records the notebook's and the record's own absolute paths in the executed notebook: it is
    shared with the report, so they are written as the repository's (the notebook) and the report's (the record)."""
    import nbformat

    nb = nbformat.read(executed, as_version=4)
    record = nb.metadata.get("papermill")
    if record is not None:
        record["input_path"] = portable(notebook)
        record["output_path"] = str(executed.relative_to(executed.parents[1]))
        write_text(executed, nbformat.writes(nb))


# --- what a report reads ----------------------------------------------------------------------------------

def input_files(target) -> dict[str, tuple[int, int]]:
    """Every file the report reads (study file, run folders, logs): path (`portable`) -> (size, mtime in
    ns); a path that cannot be examined (a link into a folder without permission) is listed as (-1, -1):
    the report shows it as a problem, the rest goes on. An input's relative path is the repository's."""
    out = {}
    for item in target.inputs:
        p = ROOT / item
        try:
            listed = sorted(p.rglob("*")) if p.is_dir() else [p]
        except OSError:
            listed = [p]
        for q in listed:
            try:
                st = q.stat()
            except FileNotFoundError:  # removed while listed, or never there
                continue
            except OSError:
                out[portable(q)] = (-1, -1)
                continue
            if stat.S_ISREG(st.st_mode):
                out[portable(q)] = (st.st_size, st.st_mtime_ns)
    return out


def changed_inputs(before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]]) -> str | None:
    """What changed between two listings, in words (a few paths), or None."""
    gone = [p for p in before if p not in after]
    new = [p for p in after if p not in before]
    modified = [p for p in before if p in after and before[p] != after[p]]
    parts = [f"{what}: {', '.join(paths[:3])}{f' and {len(paths) - 3} more' if len(paths) > 3 else ''}"
             for what, paths in (("removed", gone), ("added", new), ("modified", modified)) if paths]
    return "; ".join(parts) or None


# --- the notebook executed ------------------------------------------------------------------------------

#: The first characters of a line IPython runs as no Python (a shell command `!ls`, a magic `%run`, `%%bash`, help
#: `?x`): jupytext writes such a line in the text source as a comment (`# !ls`), which a reviewer reads as one.
_ESCAPES = ("!", "%", "?")


def pair_difference(notebook: Path) -> str | None:
    """Why `notebook` (.ipynb) may not be published beside its jupytext text source (the .py beside it, what a
    reviewer reads): it has none; a code cell holds a line IPython runs as a shell command or magic, which the
    .py shows as a comment; or the first cell whose type, source or tags differ. None when they agree."""
    text = notebook.with_suffix(".py")
    if not text.exists():
        return (f"{notebook.name} has no text source {text.name} beside it: what runs must be what a reviewer "
                "reads (jupytext --to py:percent writes one)")
    import jupytext
    import nbformat

    a, b = jupytext.read(text).cells, nbformat.read(notebook, as_version=4).cells
    for i, cell in enumerate(b):
        escaped = next((line for line in cell.source.splitlines() if line.lstrip().startswith(_ESCAPES)), None)
        if cell.cell_type == "code" and escaped is not None:
            return (f"{notebook.name} cell {i + 1} runs {shown(_short(escaped.strip()))}, an IPython shell command "
                    f"or magic that its text source {text.name} shows as a comment: write it as Python")
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if (x.cell_type, x.source, x.metadata.get("tags", [])) != (y.cell_type, y.source, y.metadata.get("tags", [])):
            return (f"{notebook.name} differs from its text source {text.name} at cell {i + 1} "
                    f"({shown(_short(x.source))} in the .py, {shown(_short(y.source))} in the .ipynb)")
    if len(a) != len(b):
        return f"{notebook.name} has {len(b)} cells, its text source {text.name} {len(a)}"
    return None


# --- entries of the index -------------------------------------------------------------------------------

class _Best(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)
    label: str = "-"
    value: float | str = "-"
    text: str | None = None
    unit: str | None = None


class _Summary(BaseModel):
    """The fields of a summary (`summary.Summary`) that the index reads, with their types."""

    model_config = ConfigDict(extra="allow", strict=True)
    schema_: int | None = Field(None, alias="schema")
    kind: str | None = None
    title: str = ""
    mode: str = "-"
    runs: int | str = "-"
    complete: int | str = "-"
    verdict: str = "-"
    best: _Best | None = None
    within: int | None = None  # published configurations that hold
    published: int | None = None
    tolerance: str | None = None
    deviation: str | None = None


class _Target(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)
    inputs: list[str] = []
    about: dict[str, str] = {}  # a published set's publisher, hardware, software, title


class _Entry(BaseModel):
    """The fields of `entry.json` that publish and the index read, with their types."""

    model_config = ConfigDict(extra="allow", strict=True)
    name: str
    status: str = "?"
    digest: str | None = None
    published_at: str = ""
    executed: str | None = None
    error: str | None = None
    summary: _Summary | None = None
    target: _Target | None = None
    data: list[str] = []  # the report's tables written beside its page (data_files.NAMES)


def read_entry(path: Path) -> dict:
    """A report's `entry.json`, its fields checked; RecordError names the file and the wrong field."""
    try:
        data = records.read_json(path)
    except RecursionError:
        raise records.RecordError(f"{path}: nested too deeply to be an entry") from None
    try:
        _Entry.model_validate(data)
    except ValidationError as exc:
        e = exc.errors()[0]
        field = ".".join(str(p) for p in e["loc"])
        raise records.RecordError(f"{path}: field {field}: {e['msg'].lower()} "
                                  f"(got {shown(_short(e.get('input')))})") from None
    except RecursionError:
        raise records.RecordError(f"{path}: nested too deeply to be an entry") from None
    return {**data, "name": path.parent.name}  # an entry's name is its folder's, whatever the file says


def _short(value) -> str:
    """A wrong value, briefly: its JSON text cut to 60 characters."""
    try:
        text = json.dumps(value)
    except (TypeError, ValueError, RecursionError):
        text = type(value).__name__
    return text if len(text) <= 60 else text[:57] + "..."


def unreadable(name: str, why: str) -> dict:
    """The index row of a report whose entry cannot be used: shown, never dropped."""
    return {"name": name, "status": "unreadable", "summary": {}, "error": why}


# --- names on the terminal ------------------------------------------------------------------------------
