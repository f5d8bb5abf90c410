"""pyproject.toml and environment.yml name the same packages with the same version bounds; the project's files
are found in one place (`benchbook.core.project`); the wheel carries them, and an installed benchbook publishes
a shipped set, named by its name, from an empty folder without writing into its own environment."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from pathlib import Path

import pytest
import yaml

from benchbook import cli
from benchbook.core import project
from benchbook.studies import published

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


# --- where the project's files are ------------------------------------------------------------------------

# Modules that still find the repository by climbing from their own file: the kernels' working folder and the
# form of the paths a report shows (`portable`), which must agree with each other. Their owners move them to
# `project.ROOT` together; any other module asks `benchbook.core.project`.
CLIMBING: set[str] = set()


def test_a_checkout_reads_its_own_files(repo_root):
    from benchbook.mlperf import published as mlperf_published
    from benchbook.mlperf import rules, rulesdata
    from benchbook.models import reference_schema
    from benchbook.reports import targets

    assert not project.INSTALLED and project.ROOT == repo_root.resolve()
    assert (published.ROOT, reference_schema.DEFAULT_ROOT, targets.NOTEBOOKS) == (
        repo_root.resolve() / "params" / "published", repo_root.resolve() / "params" / "references",
        repo_root.resolve() / "notebooks")
    for path in (mlperf_published.ROOT, rules.RULES, rulesdata.DATA):
        assert path.exists() and path.is_relative_to(project.REFERENCES), path


def test_no_other_module_finds_the_project_by_climbing_from_its_file(repo_root):
    lib = repo_root / "lib" / "benchbook"
    climbing = {str(p.relative_to(lib)) for p in lib.rglob("*.py")
                if re.search(r"__file__\)(\.resolve\(\))?\.parents\[[2-9]\]", p.read_text(encoding="utf-8"))}
    assert climbing - CLIMBING == set(), "ask benchbook.core.project where the project's files are"


def test_an_installed_benchbook_does_not_write_its_own_files(monkeypatch, capsys):
    from benchbook.mlperf import rulesdata

    monkeypatch.setattr(project, "INSTALLED", True)
    monkeypatch.setattr(rulesdata, "_package", lambda: pytest.fail("read mlperf-logging before refusing"))
    with pytest.raises(SystemExit) as stopped:
        rulesdata.main(["--write"])
    assert stopped.value.code == 2
    assert "--write updates a checkout's params/references/mlperf/rules/training.yaml" in capsys.readouterr().err


# --- naming a published set -------------------------------------------------------------------------------

def test_a_published_set_is_found_by_name_file_name_or_path(repo_root, tmp_path, monkeypatch):
    entry = (repo_root / "params" / "published" / "ngc_tf1_resnet50.yaml").resolve()
    monkeypatch.chdir(tmp_path)  # an empty folder: no params/ here
    for given in ("ngc-tf1-resnet50", "ngc_tf1_resnet50", "ngc_tf1_resnet50.yaml",
                  "params/published/ngc_tf1_resnet50.yaml", str(entry)):
        assert published.locate(given).resolve() == entry, given
    mine = tmp_path / "ngc-tf1-resnet50"  # a file or folder of the current folder comes first
    mine.mkdir()
    assert published.locate("ngc-tf1-resnet50") == Path("ngc-tf1-resnet50")


def test_every_set_is_named_as_its_file(repo_root):
    """The index shows an entry's `name`; `locate` finds it by its file's stem: the two must agree."""
    for path in sorted((repo_root / "params" / "published").glob("*.yaml")):
        name = yaml.safe_load(path.read_text(encoding="utf-8"))["name"]
        assert name == path.stem.replace("_", "-"), f"{path.name}: name {name!r}"
    assert "ngc-tf1-resnet50" in published.names()


@pytest.mark.parametrize("given", ["ngc-tf9-resnet50", "../published/ngc_tf1_resnet50", "NGC-TF1-RESNET50",
                                   "params/published/nosuch.yaml"])
def test_an_unknown_set_is_refused_listing_the_shipped_ones(given, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert cli.main(["publish", given]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert f"{given}: no such study file, nor a published set of that name" in err
    assert "ngc-tf1-resnet50, ngc-tf2-maskrcnn" in err
    assert not (tmp_path / "reports").exists()


def test_publish_takes_a_set_by_its_name(tmp_path, monkeypatch):
    from benchbook.reports import publish

    given = []
    monkeypatch.setattr(publish, "publish", lambda targets, *a, **k: given.extend(targets) or [])
    monkeypatch.chdir(tmp_path)
    assert cli.main(["publish", "ngc-tf2-maskrcnn", "mlperf_resnet_maskrcnn.yaml"]) == 0
    assert [(t.name, t.notebook.name) for t in given] == [("ngc-tf2-maskrcnn", "maskrcnn_tf2.ipynb"),
                                                          ("mlperf-resnet-maskrcnn", "mlperf.ipynb")]


# --- the wheel ----------------------------------------------------------------------------------------------

# What a build needs of the checkout (what pyproject.toml, setup.py and MANIFEST.in name); a copy is built, so
# that the build writes nothing into the checkout.
BUILD_INPUTS = ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "LICENSE", "lib", "notebooks", "params",
                "examples/published")
UNBUILT = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", ".ipynb_checkpoints")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """benchbook's wheel, built from a copy of the checkout by this environment's setuptools, offline."""
    import setuptools

    assert int(setuptools.__version__.split(".")[0]) >= 77, "the build needs setuptools>=77: run `make setup`"
    root, tmp = Path(__file__).resolve().parents[1], tmp_path_factory.mktemp("wheel")
    (tmp / "src").mkdir()
    for name in BUILD_INPUTS:
        if (root / name).is_dir():
            shutil.copytree(root / name, tmp / "src" / name, ignore=UNBUILT)
        else:
            shutil.copy2(root / name, tmp / "src" / name)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                    "--no-index", "-w", str(tmp / "dist"), str(tmp / "src")], check=True, timeout=300)
    return next((tmp / "dist").glob("benchbook-*.whl"))


def _project_files(root: Path) -> set[str]:
    """The files the wheel must carry as `benchbook/_project/...`: the notebooks, params/, the published sets."""
    found = {"LICENSE"}
    for folder in ("notebooks", "params", "examples/published"):
        found |= {str(p.relative_to(root)) for p in (root / folder).rglob("*") if p.is_file()
                  and not {"__pycache__", ".ipynb_checkpoints"} & set(p.parts) and p.suffix != ".pyc"}
    return found


def test_the_wheel_carries_the_project_files(wheel, repo_root):
    names = set(zipfile.ZipFile(wheel).namelist())
    shipped = {n.removeprefix("benchbook/_project/") for n in names if n.startswith("benchbook/_project/")}
    expected = _project_files(repo_root)
    assert {"notebooks/resnet50_tf.ipynb", "notebooks/ipython/ipython_kernel_config.py",
            "params/published/ngc_tf1_resnet50.yaml", "params/references/ngc_tf1_resnet50.yaml",
            "examples/published/mlperf/NOTICE", "examples/published/ngc-tf1-resnet50/logs.tar.xz"} <= expected
    assert expected - shipped == set() and shipped - expected == set()
    sets = {p.parent.name for p in (repo_root / "examples" / "published").glob("*/NOTICE")}
    assert len(sets) == len(list((repo_root / "examples" / "published").iterdir()))  # every set has its NOTICE
    lib = repo_root / "lib"
    workloads = {str(p.relative_to(lib)) for p in (lib / "benchbook" / "workloads").rglob("*")
                 if p.is_file() and "__pycache__" not in p.parts}
    assert workloads - names == set() and any(n.endswith("requirements/mxnet.txt") for n in workloads)
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)


def _files(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()}


def test_an_installed_benchbook_publishes_a_set_from_an_empty_folder(wheel, tmp_path):
    """The wheel installed into a fresh environment (its dependencies this one's, through a .pth file: nothing is
    downloaded); `benchbook publish <set name>` from an empty folder writes the report and the index there, and
    nothing into the environment."""
    venv, work = tmp_path / "venv", tmp_path / "empty"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    purelib = Path(subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                  check=True, capture_output=True, text=True).stdout.strip())
    ours = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (purelib / "dependencies.pth").write_text("".join(f"{p}\n" for p in sorted(ours)), encoding="utf-8")
    subprocess.run([python, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", "--ignore-installed",
                    str(wheel)], check=True, timeout=300)
    # nbconvert's templates are data files of this environment (share/jupyter), not of the new one
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "BENCHBOOK_REFERENCES")}
    env["JUPYTER_PATH"] = str(Path(sysconfig.get_paths()["data"]) / "share" / "jupyter")
    where = subprocess.run([python, "-c", "import benchbook.core.project as p; print(p.ROOT)"], check=True,
                           capture_output=True, text=True, env=env, cwd=tmp_path).stdout.strip()
    assert Path(where) == purelib / "benchbook" / "_project"
    before = _files(venv)
    work.mkdir()
    unknown = subprocess.run([venv / "bin" / "benchbook", "publish", "nosuch"], capture_output=True, text=True,
                             env=env, cwd=work, timeout=120)
    assert unknown.returncode == 2 and "ngc-tf1-resnet50" in unknown.stderr and f"{purelib}" in unknown.stderr
    done = subprocess.run([venv / "bin" / "benchbook", "publish", "ngc-tf1-resnet50", "--quiet"],
                          capture_output=True, text=True, env=env, cwd=work, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    report = work / "reports" / "ngc-tf1-resnet50"
    assert (report / "report.html").is_file() and "ngc-tf1-resnet50" in (work / "reports" / "index.html").read_text()
    entry = json.loads((report / "entry.json").read_text(encoding="utf-8"))
    assert entry["status"] == "ok" and entry["summary"]["verdict"] == "consistent", entry
    assert {p.name for p in work.iterdir()} == {"reports"}
    assert _files(venv) == before, "publish wrote into the environment benchbook is installed in"
    # the pages name the shipped logs as the project does (examples/published/...), not where pip put them
    assert "examples/published/ngc-tf1-resnet50" in (report / "code.html").read_text(encoding="utf-8")
    for page in report.rglob("*.*ml"):
        assert str(purelib) not in page.read_text(encoding="utf-8") and "site-packages" not in page.read_text(), page
