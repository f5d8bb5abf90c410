"""The log formats: each format is a small module of this package that registers one LogFormat
(`registry.py`); the modules are found and imported below, as models are (`benchbook.models`).

Adding a format is adding a module that calls `registry.register`, and placing its name in
`registry.PRECEDENCE` (which format a head is in when several recognise it); nothing else changes.
"""

from __future__ import annotations

import importlib
import pkgutil

from ...core.catalog import Part
from .registry import FORMATS, PRECEDENCE, LogFormat, choose, detect, get, register, scan

__all__ = ["FORMATS", "PRECEDENCE", "LogFormat", "catalog_part", "choose", "detect", "get", "register", "scan"]

# Registration: every module of this package but the shared pieces below registers its format, in name
# order (the order `benchbook formats` lists them).
_NOT_FORMATS = {"registry", "scanning", "dllogger"}
for _module in sorted(m.name for m in pkgutil.iter_modules(__path__) if m.name not in _NOT_FORMATS):
    importlib.import_module(f"{__name__}.{_module}")
REGISTERED = True  # every format is registered: the catalog may be built (core.catalog.default)


def catalog_part() -> Part:
    """What the formats give the catalog: the axes no model declares (the LLM logs'), the quality metrics their
    evaluations carry and the measures of their runs, in the formats' name order."""
    formats = list(FORMATS.values())
    return Part(axes=tuple(a for f in formats for a in f.axes),
                metrics=tuple(m for f in formats for m in f.quality),
                measures=tuple(m for f in formats for m in f.measures))
