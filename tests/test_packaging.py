"""pyproject.toml and environment.yml name the same packages with the same version bounds."""

from __future__ import annotations

import re
import tomllib

import yaml

_REQ = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?\s*(.*?)\s*$")


def _requirement(text: str) -> tuple[str, str]:
    """(normalised name, version bounds without spaces, sorted) of `name[extras] >=1.0,<2`."""
    m = _REQ.match(text.split(";")[0])
    assert m, f"not a requirement: {text!r}"
    name = re.sub(r"[-_.]+", "-", m.group(1)).lower()
    bounds = ",".join(sorted(b.strip().replace(" ", "") for b in m.group(3).split(",") if b.strip()))
    return name, bounds


def _pyproject(root) -> dict[str, str]:
    project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    reqs = [*project["dependencies"], *project["optional-dependencies"]["test"]]
    return dict(_requirement(r) for r in reqs)


def _conda(root) -> dict[str, str]:
    env = yaml.safe_load((root / "environment.yml").read_text(encoding="utf-8"))
    deps = [d for d in env["dependencies"] if isinstance(d, str)]
    # what conda-forge lacks is installed by pip from the environment's pip section
    deps += [d for s in env["dependencies"] if isinstance(s, dict) for d in s.get("pip", []) if d != "-e ."]
    # conda writes `pkg>=1.0` or `pkg >=1.0` or `pkg=1.0` (conda's own `=` means a version prefix)
    out = dict(_requirement(d) for d in deps)
    return {name: bounds for name, bounds in out.items() if name not in ("python", "pip")}


def test_requirement_parsing():
    assert _requirement("PyYAML >= 6.0") == ("pyyaml", ">=6.0")
    assert _requirement("ruff>=0.4,<1") == ("ruff", "<1,>=0.4")
    assert _requirement("jupyter_server") == ("jupyter-server", "")


def test_pyproject_and_environment_yml_agree(repo_root):
    pip, conda = _pyproject(repo_root), _conda(repo_root)
    assert pip, "no dependencies found in pyproject.toml"
    only_pip = {k: v for k, v in pip.items() if k not in conda}
    only_conda = {k: v for k, v in conda.items() if k not in pip}
    assert not only_pip and not only_conda, f"only in pyproject.toml: {only_pip}; only in environment.yml: {only_conda}"
    differ = {k: (pip[k], conda[k]) for k in pip if pip[k] != conda[k]}
    assert not differ, f"version bounds differ (pyproject.toml, environment.yml): {differ}"


def test_environment_yml_installs_the_package_itself(repo_root):
    env = yaml.safe_load((repo_root / "environment.yml").read_text(encoding="utf-8"))
    pip_sections = [d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d]
    assert any("-e ." in section for section in pip_sections)


def test_the_lock_pins_every_dependency_within_its_bounds(repo_root):
    """constraints.txt (make lock) pins each package pyproject.toml names, at a version its bounds admit:
    a dependency added or re-bounded without `make lock` fails here, not in a fresh set-up."""
    from packaging.specifiers import SpecifierSet

    pins = {}
    for number, line in enumerate((repo_root / "constraints.txt").read_text(encoding="utf-8").splitlines(), 1):
        if line.strip() and not line.startswith("#"):
            name, sep, version = line.partition("==")
            assert sep and version, f"constraints.txt line {number}: {line!r} is no `name==version` pin"
            pins[re.sub(r"[-_.]+", "-", name).lower()] = version.strip()
    for name, bounds in _pyproject(repo_root).items():
        assert name in pins, f"{name} is not pinned in constraints.txt: run `make lock`"
        assert pins[name] in SpecifierSet(bounds), f"constraints.txt pins {name}=={pins[name]}, outside {bounds}"
