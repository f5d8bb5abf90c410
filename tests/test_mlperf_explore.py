"""mlperf.explore: a round's results by benchmark, the filters, the best per accelerator count and per round."""

from __future__ import annotations

import pytest

from benchbook.mlperf import explore, results
from test_mlperf_score import SYSTEM, repository


@pytest.fixture
def folders(tmp_path):
    """v0.7 ResNet on 16 accelerators (12 minutes) and 8 (24), v1.0 ResNet on 8 (20), v0.7 BERT short of runs."""
    repository(tmp_path / "a", (10, 11, 12, 13, 14))
    repository(tmp_path / "b", (22, 23, 24, 25, 26), system={**SYSTEM, "number_of_nodes": "1",
                                                             "accelerator_model_name": "NVIDIA A100-SXM4-40GB"})
    repository(tmp_path / "c", (18, 19, 20, 21, 22), version="v1.0", system={**SYSTEM, "number_of_nodes": "1"})
    repository(tmp_path / "d", (30, 31, 32), benchmark="bert")
    return results.score([tmp_path])


def test_the_round_table_by_benchmark(folders):
    table = explore.round_table(folders)
    assert table[["round", "benchmark", "accelerators"]].values.tolist() == [
        ["v0.7", "bert", 16], ["v0.7", "resnet", 16], ["v0.7", "resnet", 8], ["v1.0", "resnet", 8]]
    assert table["minutes"].tolist()[1:] == [12.0, 24.0, 20.0] and table["minutes"].isna().tolist()[0]
    assert table["valid"].tolist()[0] == "no: 3 of the 10 result files bert needs"
    assert set(table["accelerator"]) == {"Widget W1", "NVIDIA A100"}


def test_filters(folders):
    table = explore.round_table(folders)
    assert len(explore.filtered(table, benchmark="resnet")) == 3
    assert explore.filtered(table, accelerator="NVIDIA A100")["minutes"].tolist() == [24.0]
    assert len(explore.filtered(table, division="closed", benchmark="bert")) == 1
    shown = []
    box = explore.filters(table, shown.append)
    box.children[0].children[0].value = "resnet"  # the benchmark dropdown
    assert [len(f) for f in shown] == [4, 3]


def test_the_filtered_table_is_displayed(folders, capsys):
    """What `show` returns is displayed (the notebook's `display.table`), not dropped in the callback."""
    from benchbook.reports import display

    box = explore.filters(explore.round_table(folders), lambda rows: display.table(rows, empty="no result"))
    box.children[0].children[2].value = "closed"  # the division dropdown
    printed = capsys.readouterr().out  # (outside a kernel, IPython's display prints)
    assert printed.count("round | benchmark") == 2 and "bert" in printed.split("round | benchmark")[1]


def test_the_best_per_accelerator_count_and_per_round(folders):
    by_count = explore.best(folders, "accelerators")
    assert by_count[["benchmark", "accelerators", "minutes", "round"]].values.tolist() == [
        ["resnet", 8, 20.0, "v1.0"], ["resnet", 16, 12.0, "v0.7"]]
    by_round = explore.best(folders, "round")
    assert by_round[["benchmark", "round", "minutes"]].values.tolist() == [["resnet", "v0.7", 12.0],
                                                                            ["resnet", "v1.0", 20.0]]
    assert explore.best_plot(folders) is not None
    assert explore.best_plot([f for f in folders if not f.valid]) is None


def test_the_round_view_is_the_whole_table_where_no_widget_can_be_shown(folders, monkeypatch):
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)  # papermill, nbclient: not a live notebook
    shown = explore.round_view(folders)
    assert "<th>division</th>" in shown.markup and shown.plain.count("\n") == 4  # the header and 4 results
    monkeypatch.setenv("JPY_SESSION_NAME", "mlperf.ipynb")  # a notebook open in JupyterLab
    assert type(explore.round_view(folders)).__name__ == "VBox"
    assert type(explore.round_view(folders, interactive=False)).__name__ == "Html"
