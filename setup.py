"""The wheel carries the project's files that benchbook reads when it runs (the notebooks, params/, the published
sets' logs and NOTICEs, the kernel's configuration, the LICENSE) inside the package, as `benchbook/_project/`,
where `benchbook.core.project` finds them: an installed benchbook publishes a shipped set from any folder.
They are copied at build time, so that the checkout keeps its layout (and an editable install reads the
checkout itself). The rest of the configuration is in pyproject.toml; MANIFEST.in puts the same files in
the sdist."""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

# Keep in sync with MANIFEST.in (tests/test_packaging.py checks the wheel holds them).
SHIPPED = ("LICENSE", "notebooks", "params", "examples/published")
LEFT_OUT = shutil.ignore_patterns("__pycache__", "*.pyc", ".ipynb_checkpoints")


class BuildWithProjectFiles(build_py):
    """build_py, then the project's files copied into the built package (not for an editable install)."""

    def run(self):
        super().run()
        if self.editable_mode:
            return
        here = Path(__file__).resolve().parent
        target = Path(self.build_lib) / "benchbook" / "_project"
        shutil.rmtree(target, ignore_errors=True)  # a file removed from the checkout leaves the next wheel
        for name in SHIPPED:
            if (here / name).is_dir():
                shutil.copytree(here / name, target / name, ignore=LEFT_OUT)
            else:
                (target / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(here / name, target / name)


setup(cmdclass={"build_py": BuildWithProjectFiles})
