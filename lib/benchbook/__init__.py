"""benchbook: reproducible deep-learning training benchmarks, from logs to published reports."""

from __future__ import annotations

import importlib

__version__ = "0.1.0"
__all__ = ["Analysis", "Rule", "analyze", "__version__"]

# Loaded on first use, so that `benchbook --help` does not import numpy, pandas and pydantic.
_LAZY = {"Analysis": "logs.analysis", "analyze": "logs.analysis", "Rule": "logs.rules"}


def __getattr__(name: str):
    if name in _LAZY:  # (the analysis's axes and metrics come from core.catalog, whatever is imported)
        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
