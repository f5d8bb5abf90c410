"""reports/compare.py: several folders of logs side by side, labelled and measured against a baseline."""

import shutil
from pathlib import Path

import pytest

from benchbook.errors import BenchbookError
from benchbook.reports.compare import Comparison

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def two_folders(tmp_path):
    """The same MXNet logs in two folders named like two machines' study folders."""
    folders = [tmp_path / "dgx1", tmp_path / "dgx2"]
    for folder in folders:
        shutil.copytree(FIXTURES / "ngc_mxnet", folder)
    return folders


@pytest.mark.parametrize("labels", [None, "", []])
def test_unset_labels_are_the_folder_names(two_folders, labels):
    comparison = Comparison(",".join(map(str, two_folders)), labels)
    assert comparison.labels == ["dgx1", "dgx2"]
    assert list(comparison.describe()["label"]) == ["dgx1", "dgx2"]
    assert list(comparison.table().columns) == ["dgx1", "dgx2"]


def test_labels_name_the_sources_in_order_and_ratios_are_against_the_baseline(two_folders):
    comparison = Comparison([str(f) for f in two_folders], "first, second", baseline=1)
    assert comparison.labels == ["first", "second"]
    ratios = comparison.ratios()
    assert list(ratios.columns) == ["first"] and len(ratios) > 0
    assert (ratios["first"] == 1.0).all()  # the same logs in both folders


def test_labels_must_match_the_sources(two_folders):
    with pytest.raises(BenchbookError, match="1 labels for 2 sources"):
        Comparison([str(f) for f in two_folders], "only-one")
