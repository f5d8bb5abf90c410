"""The environment a benchmark ran on: capture it, and say what differs.

`capture.capture()` makes the record (`capture` is the subpackage: `from benchbook.environment
import capture; capture.capture(python=...)`); `diff`, `drift` and `load` compare records.
The `capture` package is standalone (standard library, Python 3.8 syntax) so that it also runs
inside a container with the container's interpreter: `SCRIPT` is its folder, which launchers copy
there whole and run as `python3 FOLDER [--code DIR] [--image NAME]` (its `__main__.py`).
"""

from __future__ import annotations

from pathlib import Path

from . import capture
from .capture import SCHEMA_VERSION, SECTIONS, Probe
from .diff import CATEGORIES, Difference, Entry, Loaded, Varies, consensus, describe, diff, drift, load, view

SCRIPT = Path(__file__).with_name("capture")

__all__ = ["CATEGORIES", "SCHEMA_VERSION", "SCRIPT", "SECTIONS", "Difference", "Entry", "Loaded", "Probe", "Varies",
           "capture", "consensus", "describe", "diff", "drift", "load", "view"]
