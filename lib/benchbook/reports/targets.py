"""What `benchbook publish` publishes: a `Target` per report (a notebook, its parameters, the inputs whose
change re-executes it), made from a study file, a folder of logs, a published set
(`params/published/<set>.yaml`) or study folders to compare. `publish.py` executes them and re-exports
these makers as its public entry point."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .. import models
from ..core import project
from ..errors import BenchbookError
from ..studies import study as studies
from .publish_files import portable, shown

NOTEBOOKS = project.NOTEBOOKS


@dataclass
class Target:
    """One report to publish: a notebook, its parameters, and the inputs whose change re-executes it."""

    name: str
    notebook: Path
    parameters: dict
    inputs: list[str] = field(default_factory=list)
    default_name: bool = False  # named after its folder: another folder of that name must not replace it
    about: dict = field(default_factory=dict)  # a published set's publisher, hardware, software (the index)


def for_study(path: str | Path, runs_dir: str | Path = "runs", launch: bool = False) -> Target:
    s = studies.load(path)
    folder = Path(runs_dir).resolve() / s.name
    return Target(s.name, NOTEBOOKS / f"{models.get(s.model).notebook}.ipynb",
                  {"study": portable(Path(path).resolve()), "runs_dir": portable(Path(runs_dir).resolve()),
                   "launch": launch, "log_dir": None},
                  [portable(Path(path).resolve()), portable(folder)])


def for_logs(log_dir: str | Path, model: str, name: str | None = None, reference: str | None = None,
             rule: str | None = None) -> Target:
    notebook = models.get(model).notebook  # UnknownNameError lists the known models
    folder = Path(log_dir).resolve()
    if not folder.exists():
        raise BenchbookError(f"{shown(str(log_dir))}: no such folder of logs")
    if reference:  # a bad name fails here, not later as a failed notebook (the schema alone: no pandas to import)
        from ..models import reference_schema
        reference_schema.load(reference)
    return Target(name or folder.name, NOTEBOOKS / f"{notebook}.ipynb",
                  {"study": None, "log_dir": portable(folder), "launch": False, "reference": reference}
                  | ({"rule": rule} if rule else {}),
                  [portable(folder)], default_name=name is None)


def is_published_set(path: str | Path) -> bool:
    """Whether a file of `benchbook publish` is a published set's entry (`params/published/<set>.yaml`)
    rather than a study: the entries live in a folder named `published`."""
    return Path(path).resolve().parent.name == "published"


def for_published(path: str | Path) -> Target:
    """The reproduction report of a published set (`params/published/<set>.yaml`): its shipped logs
    analysed by the rule that printed its numbers, or its MLPerf result folders scored and compared with
    their published scores; nothing is run."""
    from ..studies import published

    entry, path = published.load(path), Path(path).resolve()
    if entry.kind == "mlperf":
        logs, expected = portable(entry.file("logs")), portable(entry.file("expected"))
        target = Target(entry.name, NOTEBOOKS / "mlperf.ipynb", {"results": logs, "expected": expected,
                                                                 "title": entry.title}, [logs, expected])
    else:
        target = for_logs(entry.file("logs"), entry.model, entry.name, entry.reference,
                          None if entry.rule == "nvidia" else entry.rule)
        target.parameters["title"] = entry.title  # the page's title is the set's, as the index shows it
    target.inputs.append(portable(path))
    target.about = {"publisher": entry.publisher, "hardware": entry.hardware, "software": entry.software,
                    "title": entry.title, "entry": portable(path)}
    return target


def for_comparison(sources: list[str], labels: list[str] | None, name: str | None = None) -> Target:
    """The sources and labels reach the notebook as lists: a comma in a path stays part of it. What the
    notebook would refuse (one source, a missing folder, a label count that is not the sources') is
    refused here, before a kernel starts or the index gains a failed report."""
    if len(sources) < 2:
        raise BenchbookError(f"--compare {shown(' '.join(sources))}: a comparison needs at least two folders")
    missing = [s for s in sources if not Path(s).is_dir()]
    if missing:
        raise BenchbookError(f"--compare: no such folder: {shown(', '.join(missing))}")
    if labels is not None:
        if len(labels) != len(sources):
            raise BenchbookError(f"--labels: {len(labels)} labels for {len(sources)} --compare folders; give one "
                                 "label per folder, in their order")
        blank = [i + 1 for i, label in enumerate(labels) if not label.strip()]
        if blank or len({label.strip() for label in labels}) != len(labels):
            raise BenchbookError(f"--labels {shown(' '.join(map(repr, labels)))}: "
                                 + (f"label {blank[0]} is empty" if blank else "two folders have the same label")
                                 + "; each folder needs its own label (its column in the tables)")
    resolved = [portable(Path(s).resolve()) for s in sources]
    return Target(name or "comparison", NOTEBOOKS / "compare.ipynb",
                  {"sources": resolved, "labels": list(labels) if labels else None}, resolved,
                  default_name=name is None)


def default_targets(params: Path = project.PARAMS, runs_dir: Path = Path("runs")) -> list[Target]:
    """Every study in params/ that has a study folder under runs_dir."""
    out = []
    for p in sorted(params.rglob("*.yaml")):
        if "references" in p.parts:
            continue
        try:
            s = studies.load(p)
        except BenchbookError:
            continue
        if (runs_dir / s.name).exists():
            out.append(for_study(p, runs_dir))
    return out
