"""The launchers package imports without circles: every `import` and `from ... import` of its
modules, those under `if TYPE_CHECKING:` too, form a graph with no cycle."""

from __future__ import annotations

import ast
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "lib" / "benchbook" / "studies" / "launchers"


def _imports(path: Path) -> set[str]:
    """The sibling modules `path` imports (`from . import x`, `from .x import y`)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module:
                names.add(node.module.split(".")[0])
            else:
                names.update(a.name for a in node.names)
    return names


def graph() -> dict[str, set[str]]:
    """Module -> the sibling modules it imports (the package's __init__ left out: it imports them all)."""
    modules = {p.stem: p for p in PACKAGE.glob("*.py") if p.stem != "__init__"}
    return {name: {m for m in _imports(path) if m in modules} for name, path in modules.items()}


def test_launcher_modules_import_without_a_circle():
    g = graph()
    assert {"base", "process", "command"} <= set(g)
    TopologicalSorter(g).prepare()  # CycleError names the circle


def test_a_circle_would_be_found():
    # process.py reads Command under TYPE_CHECKING: that edge is in the graph, and a way back fails.
    g = graph()
    assert "command" in g["process"]
    with pytest.raises(CycleError):
        TopologicalSorter({**g, "command": g["command"] | {"process"}}).prepare()
