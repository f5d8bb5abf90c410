"""The log formats: each format is a small module of this package that registers one LogFormat
(`registry.py`); the modules are found and imported below, as models are (`benchbook.models`).

Adding a format is adding a module that calls `registry.register`, and placing its name in
`registry.PRECEDENCE` (which format a head is in when several recognise it); nothing else changes.
"""

from __future__ import annotations

import importlib
import pkgutil

from .registry import FORMATS, PRECEDENCE, LogFormat, choose, detect, get, register, scan

__all__ = ["FORMATS", "PRECEDENCE", "LogFormat", "choose", "detect", "get", "register", "scan"]

# Registration: every module of this package but the shared pieces below registers its format, in name
# order (the order `benchbook formats` lists them).
_NOT_FORMATS = {"registry", "scanning", "dllogger"}
for _module in sorted(m.name for m in pkgutil.iter_modules(__path__) if m.name not in _NOT_FORMATS):
    importlib.import_module(f"{__name__}.{_module}")
