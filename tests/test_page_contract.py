"""One page contract (issue 47): sections that only show, in any order the same page and summary, nothing written
until the page's `finish`, which writes the tables, the copies and one summary of one schema."""

import json
import random
import shutil
from pathlib import Path

import pytest

from benchbook.reports import page_contract, summary
from benchbook.reports.compare import Comparison, ComparisonPage
from benchbook.reports.notebook_params import NotebookParameterError, check_comparison, check_mlperf
from benchbook.reports.report import Report
from benchbook.reports.sections import Page

FIXTURES = Path(__file__).parent / "fixtures"


PROSE = {"about": {"rule": "the rule", "dlperf": "DLPerf's", "cpu": "our workload"},
         "time_to_train": {"heading": "Time to train", "intro": "as the notebook says it"}}


def _shown(page: Page, names) -> dict[str, str]:
    out = {}
    for name in names:
        content = page.show(name, **PROSE.get(name, {}))
        parts = content if isinstance(content, tuple) else (content,)
        out[name] = "\n".join(p.plain if hasattr(p, "plain") else type(p).__name__ for p in parts if p is not None)
    return out


@pytest.mark.parametrize("seed", range(2))  # reversed, then shuffled
def test_each_order_of_the_sections_gives_the_same_page_and_summary_and_writes_nothing(tmp_path, seed):
    logs = tmp_path / "logs"
    shutil.copytree(FIXTURES / "ngc_tf1", logs)
    here = tmp_path / "reports" / "tf1"
    here.mkdir(parents=True)

    def page():
        return Page(Report(log_dir=logs, reference="ngc_tf1_resnet50"), "resnet50_tf", out=str(here))

    first = page()
    order = first.order()
    expected = _shown(first, order)
    names = list(order)
    random.Random(seed).shuffle(names)
    if seed == 0:
        names.reverse()
    other = page()
    assert _shown(other, names) == expected
    assert not any(here.iterdir()) and sorted(p.name for p in logs.iterdir()) == sorted(
        p.name for p in (FIXTURES / "ngc_tf1").iterdir())  # nothing written, the logs untouched
    assert other.summary() == first.summary()
    written = other.finish()
    assert written == first.summary()
    assert json.loads((here / page_contract.SUMMARY).read_text()) == written.as_dict()
    assert (here / "runs.csv").is_file() and any((here / "logs").iterdir())


def test_one_summary_schema_for_every_kind_with_its_keys_sorted(tmp_path):
    model = Page(Report(log_dir=FIXTURES / "ngc_mxnet"), "resnet50_mxnet").summary().as_dict()
    folders = []
    for name in ("a", "b"):
        shutil.copytree(FIXTURES / "ngc_mxnet", tmp_path / name)
        folders.append(str(tmp_path / name))
    comparison = ComparisonPage(Comparison(folders)).summary().as_dict()
    assert model.keys() == comparison.keys() and list(model) == sorted(model)
    assert (model["kind"], comparison["kind"]) == ("model", "comparison") and model["schema"] == summary.SCHEMA
    with pytest.raises(Exception, match="summary kind 'llm'"):
        summary.Summary(kind="llm", title="t", verdict="v", mode="m")


def test_the_summary_names_no_folder_of_the_machine():
    shown = Page(Report(log_dir=Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "ngc_mxnet"),
                 "resnet50_mxnet").summary()
    assert shown.source == "tests/fixtures/ngc_mxnet"  # relative to the repository, as every page writes it


@pytest.mark.parametrize(("check", "values", "said"), [
    (check_mlperf, {"results": "examples/published/mlperf/results.tar.xz", "check": "notabool"},
     "check = 'notabool': expected True or False"),
    (check_mlperf, {"results": "examples/published/mlperf/results.tar.xz", "interactive": "yes"},
     "interactive = 'yes': expected True or False or None"),
    (check_mlperf, {"results": "examples/published/mlperf/results.tar.xz", "resluts": "x"},
     "'resluts' is not one of results"),
    (check_comparison, {"sources": "tests/fixtures/ngc_tf1,tests/fixtures/ngc_mxnet", "baseline": "0"},
     "baseline = '0': expected a whole number"),
    (check_comparison, {"sources": "tests/fixtures/ngc_tf1,tests/fixtures/ngc_mxnet", "out": 3},
     "out = 3: expected text or None"),
])
def test_the_mlperf_and_comparison_notebooks_check_their_parameters_by_type(check, values, said):
    with pytest.raises(NotebookParameterError) as err:
        check(**values)
    assert said in str(err.value)


def test_a_checked_notebook_parameter_finds_its_paths_in_the_repository_first_where_the_page_writes(tmp_path,
                                                                                                    monkeypatch):
    """A publish runs the kernel in the report's folder, which holds its own `logs/`: the repository's paths win."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tests" / "fixtures" / "ngc_tf1").mkdir(parents=True)  # a same-named folder here
    both = "tests/fixtures/ngc_tf1,tests/fixtures/ngc_mxnet"
    published = check_comparison(sources=both, out=".").sources
    assert published.split(",")[0] == str(FIXTURES / "ngc_tf1")
    assert check_comparison(sources=both).sources.split(",")[0] == "tests/fixtures/ngc_tf1"  # JupyterLab: here first
