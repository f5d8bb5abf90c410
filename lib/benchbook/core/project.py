"""Where benchbook's own files are: the notebooks, params/ (studies, references, published sets) and the
published sets' logs (examples/published/). The one place that knows it; every other module asks here.

In a checkout (`make setup`'s editable install) they are the checkout's own folders. A wheel
(`pip install .`) carries a copy of them inside the package, as `benchbook/_project/` (setup.py copies
them at build time; the checkout never holds that folder), so that an installed benchbook publishes a
shipped set from any folder. Those files are read only: what benchbook writes goes to the user's folders.
"""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]  # lib/benchbook, or site-packages/benchbook
SHIPPED = PACKAGE / "_project"  # what the wheel carries (setup.py: SHIPPED)
CHECKOUT = PACKAGE.parents[1]  # the repository, where lib/benchbook lives in one
INSTALLED = SHIPPED.is_dir()
ROOT = SHIPPED if INSTALLED else CHECKOUT
NOTEBOOKS = ROOT / "notebooks"
PARAMS = ROOT / "params"
REFERENCES = PARAMS / "references"
PUBLISHED = PARAMS / "published"  # the published sets' entries; their logs are under examples/published/


def locate(given: str | Path, here_first: bool = True) -> Path:
    """A path as named: from the current folder where it is there, else from the project's folder where it is
    there (a notebook run in notebooks/, an installed benchbook run from any folder), else as given. With
    `here_first` False the project's folder is looked in first (a kernel `benchbook publish` runs in a report's
    folder, its paths the repository's: the report's own `logs/` is never taken for a folder named so there)."""
    path = Path(given).expanduser()
    if path.is_absolute():
        return path
    if not here_first and (ROOT / path).exists():
        return ROOT / path
    if path.exists() or not (ROOT / path).exists():
        return path
    return ROOT / path
