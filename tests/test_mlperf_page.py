"""The MLPerf report's first screen (issue 39, item 3): the set's title, a verdict sentence with its size, links
to the index, the code view, every result file (copied beside the page) and the results repositories; no empty
"checks" section where none ran; figures that describe themselves."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd

from benchbook.mlperf import explore, page
from benchbook.mlperf.report import MLPerfReport
from test_mlperf_score import repository

ROOT = Path(__file__).parent.parent


class _Hrefs(HTMLParser):
    def __init__(self):
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.hrefs += [v for k, v in attrs if k == "href" and v]


def _source(tmp_path) -> Path:
    root = tmp_path / "results"
    repository(root, (10, 30, 12, 11, 13))
    return root


def test_the_opening_has_the_sets_title_a_verdict_and_a_link_to_each_result_file(tmp_path):
    expected = tmp_path / "expected.yaml"
    expected.write_text("training_results_v0.7/Acme/results/box8/resnet:\n  score_minutes: 12.0\n", encoding="utf-8")
    report = MLPerfReport(str(_source(tmp_path)), expected=str(expected), title="A set of results")
    here = tmp_path / "reports" / "set"
    here.mkdir(parents=True)
    mlperf = page.MLPerfPage(report, out=str(here), title=report.title)
    shown = mlperf.show("opening")
    assert not any(here.iterdir())  # showing writes nothing: the page's finish does
    mlperf.finish()
    assert shown.markup.startswith('<h1 id="a-set-of-results">A set of results</h1>')
    assert re.search(r"Consistent: 1 of 1 published scores follow from their result files by the MLPerf rule, "
                     r"within 0\.0001 minutes .*1 result folder of resnet \(v0\.7\), 5 runs, 1 valid\.", shown.plain)
    parser = _Hrefs()
    parser.feed(shown.markup)
    assert parser.hrefs[:2] == ["../index.html", "code.html"]
    files = [h for h in parser.hrefs if h.startswith("logs/")]
    assert len(files) == 5
    for href in files:  # each copy is the result file, byte for byte
        original = tmp_path / "results" / "training_results_v0.7" / href.removeprefix("logs/")
        assert (here / href).read_bytes() == original.read_bytes()
    assert mlperf.summary().title == "A set of results"


def test_without_a_published_page_or_score_the_opening_says_so_and_links_nothing(tmp_path):
    report = MLPerfReport(str(_source(tmp_path)))
    shown = page.MLPerfPage(report).show("opening")
    assert shown.plain.startswith("MLPerf Training results\n\n1 result folder of resnet (v0.7)")
    assert "no published score to compare with" in shown.plain and "href" not in shown.markup


def test_the_results_repositories_are_linked_at_the_commit_read():
    compared = pd.DataFrame({"source": ["mlcommons/training_results_v0.6@f312518c:NVIDIA/results/dgx1/resnet",
                                        "mlcommons/training_results_v0.6@f312518c:NVIDIA/results/dgx1/mask",
                                        "expected.yaml: training_results_v2.1/Azure"]})
    assert page.source_links(compared) == [("mlcommons/training_results_v0.6@f312518c",
                                            "https://github.com/mlcommons/training_results_v0.6/tree/f312518c")]


def test_no_checks_section_where_no_check_ran_and_figures_describe_themselves(tmp_path):
    report = MLPerfReport(str(_source(tmp_path)))
    assert report.checks_section() is None
    for figure in (report.curves(), explore.best_plot(report.folders)):
        alt = re.search(r'alt="([^"]*)"', figure._repr_html_())[1]
        assert alt.startswith(("Convergence: quality against epoch", "Best valid time to train")), alt
