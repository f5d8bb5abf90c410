"""reports/compare.py: several folders of logs side by side, labelled and measured against a baseline."""

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from benchbook.errors import BenchbookError
from benchbook.reports import data_files
from benchbook.reports.compare import Comparison, ComparisonPage, ratio_interval

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
    assert list(ratios.columns) == ["first", "first: 95% interval", "first: told apart?"] and len(ratios) > 0
    assert (ratios["first"] == 1.0).all()  # the same logs in both folders


def test_labels_must_match_the_sources(two_folders):
    with pytest.raises(BenchbookError, match="1 labels for 2 sources"):
        Comparison([str(f) for f in two_folders], "only-one")


def _tf1_log(rate: float) -> str:
    """A TF1 ConvNets log of one run (1 GPU, AMP, batch 256) whose every record after warm-up is `rate`."""
    head = ("DLL 2021-03-02 08:00:00.000000 - PARAMETER arch : resnet50  mode : training_benchmark  batch_size : 256  "
            "num_iter : 8  iter_unit : batch  warmup_steps : 3  display_every : 1  use_xla : False  use_dali : False  "
            "use_tf_amp : True  precision : fp32 \nNum GPUs 1\nPer-GPU Batch Size 256\nStarting Model Training...\n")
    steps = "".join(f"DLL 2021-03-02 08:00:0{i}.000000 - (0, {i}) total_ips : {rate if i >= 3 else 10.0} \n"
                    for i in range(8))
    return (head + steps + "Ending Model Training ...\n"
            f"DLL 2021-03-02 08:00:09.000000 - () train_throughput : {rate} images/s \n")


def _sources(tmp_path, sides: dict[str, list[float]]) -> list[str]:
    """A folder of logs per side, one log per run with the given throughputs."""
    folders = []
    for label, rates in sides.items():
        folder = tmp_path / label
        folder.mkdir()
        for i, rate in enumerate(rates):
            (folder / f"tf_gpu1_amp_bs256_{i}.log").write_text(_tf1_log(rate))
        folders.append(str(folder))
    return folders


def test_the_ratio_interval_of_constructed_runs_has_known_bounds():
    # every resample's median of three distinct runs is one of them, each with probability 7/27 > 2.5 %
    assert ratio_interval([110, 120, 130], [100, 100, 100]) == pytest.approx((1.1, 1.3), abs=1e-12)
    assert ratio_interval([110, 111, 112], [100, 101, 102]) == pytest.approx((110 / 102, 112 / 100), abs=1e-12)
    assert ratio_interval([95, 105, 115], [90, 100, 110]) == pytest.approx((95 / 110, 115 / 90), abs=1e-12)
    assert np.isnan(ratio_interval([120], [100, 101])).all()  # a single run: no spread to resample
    assert ratio_interval([1, 2, 3, 4, 5], [2, 3, 4]) == ratio_interval([1, 2, 3, 4, 5], [2, 3, 4])  # fixed seed


def test_the_ratios_give_each_sides_spread_and_say_when_the_interval_includes_one(tmp_path):
    folders = _sources(tmp_path, {"base": [100, 101, 102], "apart": [110, 111, 112], "close": [95, 100, 115],
                                  "single": [150]})
    comparison = Comparison(folders)
    tidy = comparison.intervals().set_index("source")
    assert tidy.loc["apart", ["ratio", "low", "high"]].tolist() == pytest.approx([111 / 101, 110 / 102, 112 / 100])
    assert tidy.loc["apart", "verdict"] == "faster"
    assert tidy.loc["close", "verdict"] == "not told apart: the interval includes 1"
    assert tidy.loc["single", "verdict"] == "single runs: no spread to tell them apart"
    assert tidy.loc["apart", ["runs", "baseline_runs"]].tolist() == [3, 3]
    view = comparison.ratios()
    assert list(view.index.names) == ["GPUs", "per-GPU batch", "precision", "XLA"]
    assert list(view.columns)[:3] == ["apart", "apart: 95% interval", "apart: told apart?"]
    assert view["apart: 95% interval"].iloc[0] == "1.08–1.12"
    assert view["close: told apart?"].iloc[0].startswith("not told apart")
    assert list(comparison.table().index.names) == ["GPUs", "per-GPU batch", "precision", "XLA"]
    assert comparison.table()["base"].iloc[0] == 101.0


def test_a_published_comparison_writes_its_tables_as_data(tmp_path):
    folders = _sources(tmp_path, {"base": [100, 101, 102], "other": [110, 111, 112]})
    out = tmp_path / "reports" / "cmp"
    out.mkdir(parents=True)
    ComparisonPage(Comparison(folders), out=str(out)).finish()
    assert data_files.present(out) == ["configurations", "ratios"]
    ratios = pd.read_csv(out / "ratios.csv")
    row = [["other", "base", 111 / 101, "faster"]]
    assert ratios[["source", "baseline", "ratio", "verdict"]].values.tolist() == row
    assert ratios[["low", "high"]].values.tolist() == [pytest.approx([110 / 102, 112 / 100])]


def test_a_comparisons_page_links_its_data_where_it_is_published(tmp_path):
    folders = _sources(tmp_path, {"base": [100, 101, 102], "other": [110, 111, 112]})
    comparison = Comparison(folders)
    assert ComparisonPage(comparison).show("data") is None  # JupyterLab: no page, nothing written
    out = tmp_path / "reports" / "cmp"
    out.mkdir(parents=True)
    published = ComparisonPage(comparison, out=str(out))
    line = published.show("data")
    assert not any(out.iterdir())  # showing writes nothing: the page's finish does
    published.finish()
    assert '<a href="ratios.csv">ratios.csv</a>' in line.markup and line.plain.startswith("data: configurations.csv")
    assert data_files.present(out) == ["configurations", "ratios"]
