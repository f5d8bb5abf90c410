"""Published sets (`params/published/<set>.yaml`): the study-like entry of a set of public logs the
repository ships (`examples/published/`), that a report reproduces from its logs alone.

An entry names the logs (an archive, read in place), the benchbook model whose notebook reads them,
the published reference (`params/references/`) where one holds its numbers, the named rule that
printed them, and the set's expected.yaml and NOTICE. Paths are relative to the entry's folder and
must name existing regular files. Errors read `file:line: field = value: what is allowed`.

A user names a set by its name (`ngc-tf1-resnet50`, as the index shows it), its file's name
(`ngc_tf1_resnet50.yaml`) or a path: `locate` finds it, in the current folder or in the project's files,
which an installed benchbook carries (an empty folder has no params/published/)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ..core import project, yamlfile
from ..errors import BenchbookError

SCHEMA_VERSION = 1
MAX_YAML_NODES = 10_000
ROOT = project.PUBLISHED
SET_NAME = re.compile(r"[a-z0-9][a-z0-9_-]*")  # a set's name or its file's stem: a name, never a path


class PublishedError(BenchbookError, ValueError):
    """An entry of params/published/ that cannot be used as written; the message says where and what."""


class PublishedSet(BaseModel):
    """One published set: what was measured, by whom, where its logs and numbers are."""

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[1]
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]*$", description="the report's name")
    kind: Literal["logs", "mlperf"] = Field("logs", description="training logs, or MLPerf result folders")
    title: str = Field(min_length=1)
    publisher: str = Field(min_length=1, description="who published the logs and numbers (repository)")
    hardware: str = Field(min_length=1)
    software: str = Field(min_length=1, description="framework and container")
    logs: str = Field(description="the archive of the logs, relative to this file")
    expected: str = Field(description="expected.yaml: the published numbers, relative to this file")
    notice: str = Field(description="the NOTICE of the logs' origin and licence, relative to this file")
    model: str | None = Field(None, description="benchbook model whose notebook reads the logs (kind logs)")
    reference: str | None = Field(None, description="name of a file in params/references/ with the numbers")
    rule: str = Field(description="the named rule that printed the published numbers (`mlperf` for kind mlperf)")
    path: Path = Field(exclude=True)

    def file(self, field: str) -> Path:
        """The path a field names, resolved from the entry's folder."""
        return (self.path.parent / getattr(self, field)).resolve()


def _rules_of(model: str) -> list[str]:
    """The named rules of the log formats of a benchbook model."""
    from .. import models
    from ..logs import parsers

    names = models.get(model).log_names
    return sorted({r.name for f in parsers.FORMATS.values() if (f.framework, f.model) == names for r in f.rules})


def _problems(entry: PublishedSet) -> list[tuple[str, str]]:
    """(field, what is wrong) of the fields that name files, models, references and rules."""
    from .. import models
    from ..logs import archives

    out = []
    for field in ("logs", "expected", "notice"):
        target = entry.file(field)
        if not target.is_file():
            out.append((field, f"{target}: no such file (paths are relative to the entry's folder)"))
        elif field == "logs" and not archives.kind(target.name):
            out.append((field, f"{target.name}: not an archive benchbook reads (.zip, .tar, .tar.gz, .tar.xz, ...)"))
    if entry.kind == "mlperf":
        if entry.rule != "mlperf" or entry.model or entry.reference:
            out.append(("rule", "an mlperf set is scored by the MLPerf rule: rule: mlperf, no model nor reference"))
        return out
    if entry.model is None:
        return [*out, ("model", f"a set of logs names the model whose notebook reads them: one of "
                                f"{', '.join(m.name for m in models.specs())}")]
    try:
        known = _rules_of(entry.model)
    except BenchbookError as exc:
        return [*out, ("model", str(exc))]
    if entry.rule not in known:
        out.append(("rule", f"not a rule of {entry.model}'s log formats; known: {', '.join(known)}"))
    if entry.reference:
        from ..models import reference_schema

        try:
            reference_schema.load(entry.reference)
        except BenchbookError as exc:
            out.append(("reference", str(exc)))
    return out


def load(path: str | Path) -> PublishedSet:
    """Read and validate one entry; every problem is reported at once, with file and line."""
    path = Path(path)
    doc = yamlfile.read_mapping(path, PublishedError, "published-set entry",
                                "schema_version, name, logs, model, rule, ...", MAX_YAML_NODES)
    entry = yamlfile.validated(doc, path, PublishedSet, PublishedError)
    if problems := _problems(entry):
        raise PublishedError("\n".join(f"{path}:{doc.lines.get(field)}: {field} = {getattr(entry, field)!r}: {why}"
                                       for field, why in problems))
    return entry


def entries(root: str | Path | None = None) -> list[PublishedSet]:
    """Every entry of params/published/ (or `root`), in name order."""
    return [load(p) for p in sorted(Path(root or ROOT).glob("*.yaml"))]


def names(root: str | Path | None = None) -> list[str]:
    """The names of the shipped sets (an entry's name is its file's stem, `-` for `_`)."""
    return sorted(p.stem.replace("_", "-") for p in Path(root or ROOT).glob("*.yaml"))


def locate(given: str | Path, root: str | Path | None = None) -> Path:
    """The file `benchbook publish` was given: a path from the current folder, else from the project's
    folder (`params/published/x.yaml` from anywhere), else a shipped set named by its name or file name.
    Nothing found: an error that lists the shipped sets."""
    path = project.locate(given)
    if path.exists() or path.is_absolute():
        return path
    stem = str(given).removesuffix(".yaml").replace("-", "_")
    if SET_NAME.fullmatch(stem) and (entry := Path(root or ROOT) / f"{stem}.yaml").is_file():
        return entry
    raise PublishedError(f"{given}: no such study file, nor a published set of that name; the published sets "
                         f"(a name, or its file in {Path(root or ROOT)}): {', '.join(names(root)) or '(none)'}")
