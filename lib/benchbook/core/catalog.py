"""The catalog: everything the registries declare that the layers below them read, in one frozen value built
once: the configuration's axes (the common ones, then a model's own), the quality metrics, the measures, what
logs call their models, and which model and format own each metric.

Why a value: before it, models and formats added their axes and metrics to lists in `core.config` as they were
imported, so an analysis run with the models imported had columns (BERT's `seq_len`, `phase`) that one run
without them lacked. Now `default()` imports every registry (`PLUGINS`, found by name as entry points are: no
module of a layer above is imported by statement) and builds the catalog from what they declare; `analyze`
and every consumer read it, and nothing in `core/` changes after import.

A registry package gives its part through a function `catalog_part() -> Part`; `build` joins the parts in
the order of `PLUGINS` (the log formats', then the models', each in name order), refusing one key declared
twice differently.
"""

from __future__ import annotations

import functools
import importlib
import os
from collections.abc import Iterable
from dataclasses import dataclass

from .config import COMMON_AXES, Axis, Metric
from .measures import Measure

#: The registry packages the catalog is built from, in the order their parts join it; after them, the modules
#: named in `BENCHBOOK_PLUGINS` (comma-separated, importable), each with its own `catalog_part()`.
PLUGINS = ("benchbook.logs.parsers", "benchbook.models")
PLUGINS_VAR = "BENCHBOOK_PLUGINS"


@dataclass(frozen=True)
class Part:
    """What one registry declares: `axes` a configuration may have beyond the common ones, quality `metrics`,
    `measures`, `arches` ((framework, model column, a name its logs give it): a log naming that model is of
    it), `quality` ((framework, model column, its metrics, the headline first)), `units` ((framework, model
    column, its throughput unit, `ModelSpec.unit`)), `model_measures` ((framework, model column, the measures
    its runs have beyond their log format's, `ModelSpec.measures`))."""

    axes: tuple[Axis, ...] = ()
    metrics: tuple[Metric, ...] = ()
    measures: tuple[Measure, ...] = ()
    arches: tuple[tuple[str, str, str], ...] = ()
    quality: tuple[tuple[str, str, tuple[Metric, ...]], ...] = ()
    units: tuple[tuple[str, str, str], ...] = ()
    model_measures: tuple[tuple[str, str, tuple[Measure, ...]], ...] = ()


def _once(items: Iterable, key, what: str) -> tuple:
    """Each item once, in first-declared order; one key declared twice differently is a programming error."""
    seen: dict = {}
    for item in items:
        if seen.setdefault(key(item), item) != item:
            raise ValueError(f"{what} {key(item)!r} is declared twice, differently")
    return tuple(seen.values())


def plain(name: str) -> str:
    """A model's name without case or punctuation: `ResNet-50` and `resnet50` are one."""
    return "".join(c for c in name.lower() if c.isascii() and c.isalnum())


@dataclass(frozen=True)
class Catalog:
    """The axes, metrics and measures every layer reads, and the names and units of the models; see the
    module's docstring. Its query methods are what `core.config`'s module functions were."""

    axes: tuple[Axis, ...]
    metrics: tuple[Metric, ...]
    measures: tuple[Measure, ...] = ()
    arches: tuple[tuple[str, str, str], ...] = ()
    quality: tuple[tuple[str, str, tuple[Metric, ...]], ...] = ()
    units: tuple[tuple[str, str, str], ...] = ()
    model_measures: tuple[tuple[str, str, tuple[Measure, ...]], ...] = ()

    # -------------------------------------------------------------- the configuration's axes
    def run_keys(self) -> list[str]:
        """Every axis, in order: the configuration part of a run's row."""
        return [a.key for a in self.axes]

    def identity(self) -> list[str]:
        """The keys that tell configurations apart: what statistics over repeats group by."""
        return [a.key for a in self.axes if a.role in ("identity", "scale", "flag")]

    def baseline(self) -> list[str]:
        """The identity without what a configuration scales over: its 1-GPU baseline shares these."""
        return [a.key for a in self.axes if a.role in ("identity", "flag")]

    def flags(self) -> list[str]:
        """The on/off axes (XLA, DALI, synthetic data...): said in a label where they vary."""
        return [a.key for a in self.axes if a.role == "flag"]

    def labelled(self) -> list[str]:
        """The axes a grid's column label names where they vary: the flags, and the identities a model adds (a
        sequence length); GPUs, batch and precision are the grid's rows and columns themselves."""
        return [a.key for a in self.axes if a.role == "flag" or (a.role == "identity" and a.labelled)]

    def own(self) -> list[str]:
        """The axes a model adds to the common ones (BERT's sequence length and phase)."""
        common = {a.key for a in COMMON_AXES}
        return [a.key for a in self.axes if a.key not in common]

    def compared(self) -> list[str]:
        """The keys configurations of several sources are matched on."""
        return [a.key for a in self.axes if a.compared]

    def of_kind(self, kind: type) -> list[str]:
        """The axes of one type (the analysis makes its int axes nullable integers)."""
        return [a.key for a in self.axes if a.kind is kind]

    def recorded(self) -> list[str]:
        """The keys a run record's `config` gives a log's runs (where the log does not)."""
        return [a.key for a in self.axes if a.recorded]

    def axis(self, key: str) -> Axis:
        """The axis of `key`; KeyError names the known ones."""
        for a in self.axes:
            if a.key == key:
                return a
        raise KeyError(f"no configuration axis {key!r} (known: {', '.join(self.run_keys())})")

    def headers(self) -> dict[str, str]:
        """Each axis's key -> its name in a table's header ("gpus" -> "GPUs")."""
        return {a.key: a.header for a in self.axes}

    def flag_words(self) -> dict[str, dict]:
        """Each flag -> its words for on, off and unknown ("XLA", "no XLA", "XLA unknown")."""
        return {a.key: a.words for a in self.axes if a.role == "flag"}

    # -------------------------------------------------------------- quality metrics
    def metric(self, key: str) -> Metric | None:
        return next((m for m in self.metrics if m.key == key), None)

    def finals(self) -> list[str]:
        """The run columns of the metrics whose last value a run keeps (`final_<key>`)."""
        return [m.final_key for m in self.metrics if m.final]

    def quality_of(self, model: str, framework: str | None = None) -> tuple[Metric, ...]:
        """A model's quality metrics (the analysis's `model` and `framework` columns), its headline first."""
        return next((metrics for f, m, metrics in self.quality if m == model and framework in (None, f)), ())

    def headline_metric(self, models: Iterable[tuple[str, str | None]]) -> Metric | None:
        """The headline quality metric of runs of these (model, framework) pairs: their models' own first
        metric where they share one, else None (runs of models that measure quality differently)."""
        found = {(self.quality_of(m, f) or (None,))[0] for m, f in models}
        return found.pop() if len(found) == 1 else None

    def unit_of(self, model: str, framework: str | None = None) -> str | None:
        """The unit of a model's throughput (`ModelSpec.unit`), None where no model declares it."""
        return next((u for f, m, u in self.units if m == model and framework in (None, f)), None)

    def unit(self, measure: Measure, model: str, framework: str | None = None) -> str:
        """A measure's unit for runs of a model: its own (tokens/s), else the model's throughput unit."""
        return measure.unit or self.unit_of(model, framework) or "samples/s"

    # -------------------------------------------------------------- what logs call their models
    def arch(self, framework: str, logged: str) -> tuple[str, str] | None:
        """(the `model` column, the name as declared) of a model whose `framework` logs call it `logged`."""
        return next(((model, name) for f, model, name in self.arches if f == framework and plain(name) == plain(
            logged)), None)

    def arch_names(self, framework: str) -> list[str]:
        return sorted(name for f, _, name in self.arches if f == framework)

    # -------------------------------------------------------------- measures
    def measures_of(self, framework, model) -> tuple[Measure, ...]:
        """The measures a model's runs have beyond those of their log format (none for most)."""
        return next((m for f, name, m in self.model_measures if f == framework and name == model), ())

    def measure(self, key: str) -> Measure:
        for m in self.measures:
            if m.key == key:
                return m
        raise KeyError(f"no measure {key!r} (known: {', '.join(m.key for m in self.measures)})")


def build(parts: Iterable[Part]) -> Catalog:
    """The catalog of these parts: the common axes first, then each part's in order, each key once."""
    parts = list(parts)
    arches: dict[tuple[str, str], tuple[str, str, str]] = {}
    for framework, model, name in (a for p in parts for a in p.arches):
        first = arches.setdefault((framework, plain(name)), (framework, model, name))
        if first[1] != model:
            raise ValueError(f"{framework} logs' arch {name!r} is declared for {first[1]!r} and {model!r}")
    return Catalog(
        axes=_once((*COMMON_AXES, *(a for p in parts for a in p.axes)), lambda a: a.key, "configuration axis"),
        metrics=_once((m for p in parts for m in p.metrics), lambda m: m.key, "quality metric"),
        measures=_once((m for p in parts for m in p.measures), lambda m: m.key, "measure"),
        arches=tuple(arches.values()),
        quality=_once((q for p in parts for q in p.quality), lambda q: q[:2], "a model's quality"),
        units=_once((u for p in parts for u in p.units), lambda u: u[:2], "a model's unit"),
        model_measures=_once((m for p in parts for m in p.model_measures), lambda m: m[:2], "a model's measures"),
    )


@functools.cache
def default() -> Catalog:
    """The catalog of every registry (`PLUGINS`), built once: the same whatever was imported before.

    Asked for while a registry is still being imported (a module-level use in a model's or a format's module),
    it would be built from part of the registry and kept: RuntimeError names the package instead."""
    parts = []
    for name in (*PLUGINS, *filter(None, os.environ.get(PLUGINS_VAR, "").split(","))):
        package = importlib.import_module(name)
        if name in PLUGINS and not getattr(package, "REGISTERED", False):
            raise RuntimeError(f"the catalog was asked for while {name} was being imported: a module it imports "
                               "reads the catalog at its top level; read it inside a function")
        parts.append(package.catalog_part())
    return build(parts)
