"""What every kind of report page is, and the one writer of a page's files.

A page (a model report's `sections.Page`, the MLPerf page `mlperf.page.MLPerfPage`, the comparison of
sources `compare.ComparisonPage`) answers four questions and writes nothing itself:

- `heading`: its title, decided once (the browser's title and the index's say the same);
- `sections()`: its sections in the page's order, each shown content (a section with nothing to show is left
  out);
- `tables()`: its tables as data (`data_files`: name -> frame, its columns in words, unit);
- `copies()`: the files it links beside itself (a log, a result file): (where the copy goes under the page's
  folder, the file to copy);
- `summary()`: its `Summary`, what the index shows of it.

`finish(page, out)` is the one call that writes: at a notebook's end, into `out` (`benchbook publish` runs the
kernel in the report's folder and passes "."), the data files, the copies, then `summary.json`, each file whole or
not at all; with no `out` (JupyterLab) it writes nothing. Showing the sections in any order, or not at all,
changes neither the page nor its summary.

Adding a kind of report: a class with these five members, a notebook that ends in `finish`, a maker of its
publish target (`targets.py`); ARCHITECTURE.md lists the places.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import LogError
from ..runfolder import records
from . import data_files, publish_files
from .summary import Summary

if TYPE_CHECKING:
    import pandas as pd

SUMMARY = "summary.json"  # the one file publish reads back of what a notebook wrote


class PageKind(Protocol):
    """The members `finish` and publish use of a page (see the module's docstring)."""

    @property
    def heading(self) -> str: ...
    def sections(self) -> list: ...
    def tables(self) -> dict[str, tuple[pd.DataFrame, dict[str, str], str | None]]: ...
    def copies(self) -> list[tuple[PurePosixPath, Any]]: ...
    def summary(self) -> Summary: ...


class NamedSections:
    """What a page whose sections are named in `SECTIONS` (and shown by its `show(name)`) shares: all its sections
    in order, and `finish` into its `out`."""

    SECTIONS: tuple[str, ...] = ()
    out: str | None = None

    def sections(self) -> list:
        return [c for c in (self.show(name) for name in self.SECTIONS) if c is not None]

    def finish(self) -> Summary:
        return finish(self, self.out)


def write_summary(path: Path, summary: Summary) -> None:
    """The one writer of a summary: whole or not at all (records.write), keys sorted."""
    records.write(Path(path), summary.as_dict())


def copy_files(folder: Path, copies: Iterable[tuple[PurePosixPath, Any]]) -> list[PurePosixPath]:
    """Each (name under `folder`, file) copied there through its own reader (an archive's member through the
    archive reader and its limits), in real folders only; the names copied. A name that would leave `folder`
    is never written; a file that cannot be read is left out (the page's problems name it)."""
    done = []
    for name, source in copies:
        if name.is_absolute() or any(part in ("", ".", "..") for part in name.parts):
            continue
        try:
            with source.open("rb") as stream:
                target = publish_files.real_folder(folder, *name.parent.parts)
                publish_files.write_stream(target / name.name, stream)
        except (OSError, LogError):  # a planted link in the reports folder (ReportFolderError) fails the page
            continue
        done.append(name)
    return done


def finish(page: PageKind, out: str | Path | None) -> Summary:
    """Write the page's files into `out`: its tables (`data_files`), its copies, then its summary, last, so that a
    summary on disk says everything before it was written. Nothing is written without `out`; the summary either way."""
    summary = page.summary()
    if out is None:
        return summary
    folder = Path(out)
    data_files.write(folder, page.tables())
    copy_files(folder, page.copies())
    write_summary(folder / SUMMARY, summary)
    return summary


def table_names(tables: dict) -> list[str]:
    """The tables `finish` writes of `tables` (those with a row), in `data_files.NAMES`' order: what a page links
    before they are written."""
    return [n for n in data_files.NAMES if n in tables and tables[n][0] is not None and not tables[n][0].empty]
