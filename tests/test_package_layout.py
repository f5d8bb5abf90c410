"""The folder tree is the architecture (issue 18): the stages are packages, no module imports its way
back to itself (module-level imports, a package's `__init__` and its registering modules included),
and no shared module reaches 500 lines (a model's own workload may)."""

from __future__ import annotations

import ast
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pytest

from benchbook import models, workloads

LIB = Path(__file__).resolve().parents[1] / "lib" / "benchbook"
STAGES = ("logs", "studies", "reports", "environment", "models", "workloads")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(LIB.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _top_level_imports(tree: ast.Module):
    """The imports a module runs when it is imported: its top level and its try blocks, not those
    under `if TYPE_CHECKING:` nor inside functions."""
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif isinstance(node, ast.Try):
            yield from (n for n in node.body if isinstance(n, (ast.Import, ast.ImportFrom)))


def imports(path: Path, known: set[str]) -> set[str]:
    """The benchbook modules `path` imports at import time (a name imported from a package counts as
    its submodule where there is one, else as the package)."""
    name, is_package = module_name(path), path.stem == "__init__"
    package = name.split(".") if is_package else name.split(".")[:-1]
    found = set()
    for node in _top_level_imports(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
            continue
        base = ".".join(package[: len(package) - node.level + 1] + [node.module or ""]).strip(".")
        base = base if node.level else node.module or ""
        for alias in node.names:
            found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base)
    return {m for m in found if m in known and m != name}


def graph() -> dict[str, set[str]]:
    files = sorted(LIB.rglob("*.py"))
    known = {module_name(p) for p in files}
    return {module_name(p): imports(p, known) for p in files}


def test_the_stages_are_packages():
    for stage in STAGES:
        assert (LIB / stage / "__init__.py").is_file(), stage
    flat = sorted(p.name for p in LIB.glob("*.py"))
    assert flat == ["__init__.py", "__main__.py", "cli.py", "cli_env.py", "errors.py"]


def test_no_module_imports_its_way_back_to_itself():
    g = graph()
    assert "benchbook.logs.parsers.registry" in g["benchbook.logs.parsers.ngc_tf1"]  # the graph is not vacuous
    TopologicalSorter(g).prepare()  # CycleError names the circle


def test_a_circle_would_be_found():
    g = graph()
    g["benchbook.logs.parsers.registry"] = g["benchbook.logs.parsers.registry"] | {"benchbook.logs.parsers"}
    with pytest.raises(CycleError):
        TopologicalSorter(g).prepare()


def test_no_shared_module_reaches_500_lines():
    own = {workloads.HERE / spec.cpu_script for spec in models.specs() if spec.cpu_script}
    long = {str(p.relative_to(LIB)): n for p in LIB.rglob("*.py")
            if p not in own and (n := len(p.read_text(encoding="utf-8").splitlines())) >= 500}
    assert long == {}
