"""The log formats: each format is a small module that registers one LogFormat (`registry.py`).

Adding a format is adding a module that calls `registry.register` and importing it at the bottom of
this file; nothing else changes.
"""

from __future__ import annotations

from .registry import FORMATS, LogFormat, choose, detect, get, register, scan

__all__ = ["FORMATS", "LogFormat", "choose", "detect", "get", "register", "scan"]

from . import benchbook_cpu, mllog, ngc_maskrcnn, ngc_mxnet, ngc_pytorch, ngc_tf1  # noqa: E402,F401  (fill the registry)
