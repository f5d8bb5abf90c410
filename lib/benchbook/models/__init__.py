"""The model registry: one module per model, each registering a `ModelSpec` (see spec.py).

Adding a model is adding a module here (found and imported below), its study files under params/, its
references under params/references/, and its tests; nothing else in the library names a model.
"""

from __future__ import annotations

import importlib
import pkgutil

from ..core.catalog import Part
from .spec import (
    CommandBuilder,
    DataLayout,
    ModelSpec,
    ReferenceReport,
    flags,
    framework_workload,
    get,
    names,
    of_logs,
    register,
    specs,
    workload_script,
)

# Registration: every module of this package but the spec and the reference files' two registers its model, in
# name order (the order that error messages and choices list the models). A new model is a new module here, and
# no line elsewhere.
_NOT_MODELS = {"spec", "reference_schema", "reference_messages"}
for _module in sorted(m.name for m in pkgutil.iter_modules(__path__) if m.name not in _NOT_MODELS):
    importlib.import_module(f"{__name__}.{_module}")

REGISTERED = True  # every model is registered: the catalog may be built (core.catalog.default)


def catalog_part() -> Part:
    """What the models give the catalog, in their name order: their own axes, quality metrics and measures, what
    their logs call them, their headline metrics and sample units, under the analysis's `framework`/`model`."""
    all_specs = specs()
    return Part(axes=tuple(a for s in all_specs for a in s.axes),
                metrics=tuple(m for s in all_specs for m in s.quality),
                measures=tuple(m for s in all_specs for m in s.measures),
                arches=tuple((*s.log_names, arch) for s in all_specs for arch in s.log_arches),
                quality=tuple((*s.log_names, s.quality) for s in all_specs if s.quality),
                units=tuple((framework, s.log_names[1], s.unit) for s in all_specs
                            for framework in (s.log_names[0], *s.also_logged_by)),
                model_measures=tuple((framework, s.log_names[1], s.measures) for s in all_specs if s.measures
                                     for framework in (s.log_names[0], *s.also_logged_by)))


__all__ = ["CommandBuilder", "DataLayout", "ModelSpec", "ReferenceReport", "catalog_part", "flags",
           "framework_workload", "get", "names", "of_logs", "register", "specs", "workload_script"]
