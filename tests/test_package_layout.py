"""The folder tree is the architecture (issues 18 and 27): the stages are packages in layers that import
in one direction only, no module imports its way back to itself, and no shared module reaches 500
lines (a model's own workload may). Every import counts: module-level, inside functions and under
`if TYPE_CHECKING:` (a lazy import is still a dependency; it only runs later)."""

from __future__ import annotations

import ast
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pytest

from benchbook import models, workloads

LIB = Path(__file__).resolve().parents[1] / "lib" / "benchbook"
STAGES = ("core", "logs", "studies", "reports", "environment", "models", "workloads", "runfolder", "mlperf")
# Bottom to top: a module imports only from its own layer and those below it. `benchbook` is the
# package's `__init__` (its lazy `analyze` and `Rule` come from logs/).
LAYERS = ("errors", "core", "workloads", "runfolder", "logs", "environment", "models", "benchbook", "studies",
          "reports", "mlperf", "cli_env", "cli_explain", "cli", "__main__")


def module_name(path: Path, root: Path = LIB.parent) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _all_imports(tree: ast.Module):
    """Every import of a module: its top level, its functions', its try and TYPE_CHECKING blocks'."""
    return (node for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom)))


def imports(path: Path, known: set[str], root: Path = LIB.parent) -> set[str]:
    """The benchbook modules `path` imports, wherever the import stands (a name imported from a
    package counts as its submodule where there is one, else as the package)."""
    name, is_package = module_name(path, root), path.stem == "__init__"
    package = name.split(".") if is_package else name.split(".")[:-1]
    found = set()
    for node in _all_imports(ast.parse(path.read_text(encoding="utf-8"))):
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
    assert flat == ["__init__.py", "__main__.py", "cli.py", "cli_env.py", "cli_explain.py", "errors.py"]
    assert {p.name for p in LIB.iterdir() if (p / "__init__.py").is_file()} == set(STAGES)


def layer(module: str) -> int:
    """Where a module's stage stands in LAYERS: `benchbook.logs.parsers.ngc_tf1` -> that of logs."""
    parts = module.split(".")
    return LAYERS.index(parts[1] if len(parts) > 1 else "benchbook")


def back_edges(g: dict[str, set[str]]) -> set[tuple[str, str]]:
    return {(m, d) for m, deps in g.items() for d in deps if layer(d) > layer(m)}


def test_the_layers_import_in_one_direction_only():
    g = graph()
    assert "benchbook.runfolder.records" in g["benchbook.logs.analysis"]  # function-level imports are counted
    assert "benchbook.logs.parsers.registry" in g["benchbook.logs.rules"] or \
        "benchbook.logs.rules" in g["benchbook.logs.parsers.registry"]  # the graph is not vacuous
    assert back_edges(g) == set()
    stage = {m: m.split(".")[1] if "." in m else m for m in g}
    for low in ("logs", "environment", "models", "runfolder", "workloads"):
        assert not {d for m in g if stage[m] == low for d in g[m] if stage[d] == "studies"}, low
    assert not [d for m in g if stage[m] == "workloads" for d in g[m] if stage[d] != "workloads"]
    assert not {(m, d) for m in g if stage[m] == "reports" for d in g[m] if stage[d] in ("cli", "cli_env")}


def test_no_module_imports_its_way_back_to_itself():
    g = graph()
    TopologicalSorter(g).prepare()  # CycleError names the circle


def test_a_circle_and_a_lazy_import_against_the_layers_would_be_found(tmp_path):
    g = graph()
    g["benchbook.logs.parsers.registry"] = g["benchbook.logs.parsers.registry"] | {"benchbook.logs.parsers"}
    with pytest.raises(CycleError):
        TopologicalSorter(g).prepare()
    module = tmp_path / "benchbook" / "logs" / "lazy.py"
    module.parent.mkdir(parents=True)
    module.write_text("def f():\n    from ..studies import runner\n", encoding="utf-8")
    known = {"benchbook.studies.runner", "benchbook.logs.lazy"}
    assert imports(module, known, root=tmp_path) == {"benchbook.studies.runner"}
    assert back_edges({"benchbook.logs.lazy": {"benchbook.studies.runner"}}) == {
        ("benchbook.logs.lazy", "benchbook.studies.runner")}


def test_no_shared_module_reaches_500_lines():
    own = {workloads.HERE / spec.cpu_script for spec in models.specs() if spec.cpu_script}
    long = {str(p.relative_to(LIB)): n for p in LIB.rglob("*.py")
            if p not in own and (n := len(p.read_text(encoding="utf-8").splitlines())) >= 500}
    assert long == {}


def test_no_function_outside_the_workloads_and_plotting_is_longer_than_80_lines():
    """Issue 35: functions short enough to read (a figure's drawing code and a workload's training loop
    may be longer: they are one picture, one script)."""
    plotting = {"plots.py", "plots_runs.py", "plot_base.py"}
    long = []
    for path in sorted(LIB.rglob("*.py")):
        if "workloads" in path.parts or path.name in plotting:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno - node.lineno >= 80:
                long.append(f"{path.relative_to(LIB)}: {node.name} ({node.end_lineno - node.lineno + 1} lines)")
    assert long == []
