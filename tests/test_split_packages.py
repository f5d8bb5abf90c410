"""The set-up checks, the environment capture and the workloads' shared code are split into modules by
purpose (issue 18): each module stays under 500 lines, and their sibling imports form no circle, those
that the capture and workload files make as plain files (`from probe import ...`) included."""

from __future__ import annotations

import ast
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pytest

LIB = Path(__file__).resolve().parents[1] / "lib" / "benchbook"
LIMIT = 500
# (folder, the files of the split): every module of a package, or the workloads' shared parts.
SPLITS = {
    "checks": sorted((LIB / "studies" / "checks").glob("*.py")),
    "capture": sorted((LIB / "environment" / "capture").glob("*.py")),
    "workloads common": sorted((LIB / "workloads").glob("_common*.py")),
}


def _siblings_imported(path: Path, siblings: set[str]) -> set[str]:
    """The sibling modules `path` imports: `from . import x`, `from .x import y`, and as plain files
    `import x`, `from x import y`."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module is None:
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level in (0, 1) and node.module:
            found.add(node.module.split(".")[0])
        elif isinstance(node, ast.Import):
            found.update(a.name.split(".")[0] for a in node.names)
    return found & siblings


def graph(files: list[Path]) -> dict[str, set[str]]:
    """Module -> the sibling modules it imports; a package's __init__ is left out (it imports them all)."""
    modules = {p.stem: p for p in files if p.stem != "__init__"}
    return {name: _siblings_imported(path, set(modules) - {name}) for name, path in modules.items()}


@pytest.mark.parametrize("split", sorted(SPLITS))
def test_every_module_of_the_split_is_under_500_lines(split):
    files = SPLITS[split]
    assert len(files) >= 5, files
    long = {p.name: n for p in files if (n := len(p.read_text(encoding="utf-8").splitlines())) >= LIMIT}
    assert long == {}


@pytest.mark.parametrize("split", sorted(SPLITS))
def test_the_split_imports_without_a_circle(split):
    g = graph(SPLITS[split])
    assert any(g.values()), g  # the modules do import each other: the graph is not vacuous
    TopologicalSorter(g).prepare()  # CycleError names the circle


def test_a_circle_would_be_found():
    g = graph(SPLITS["workloads common"])
    assert "_common_data" in g["_common_loop"] and "_common_data" in g["_common_mpi"]
    with pytest.raises(CycleError):
        TopologicalSorter({**g, "_common_data": g["_common_data"] | {"_common_loop"}}).prepare()
    capture = graph(SPLITS["capture"])
    assert {"probe", "gpus"} <= capture["record"] and "probe" in capture["gpus"]
