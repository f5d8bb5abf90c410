"""tools/check_reference_reports.py reads the reproduction table back out of a published page."""

import sys
from pathlib import Path

from benchbook.reports.references import Row

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import check_reference_reports as tool  # noqa: E402

GRID = ('<div class="bb-scroll"><table class="bb-table bb-headline"><caption>images/s</caption><thead><tr>'
        '<th rowspan="2">GPUs</th><th colspan="3">FP32 bs128</th><th colspan="3">AMP bs256</th></tr><tr>'
        + "<th>published</th><th>measured</th><th>Δ %</th>" * 2 + "</tr></thead><tbody>"
        '<tr><td>1</td><td class="num">381.46</td><td class="num">380.79</td>'
        '<td class="num bb-reproduced" title="consistent">-0.18</td><td class="num">1412</td>'
        '<td class="num">1412</td><td class="num bb-reproduced" title="consistent">0.00</td></tr>'
        '<tr><td>8</td><td class="num">2948.2</td><td class="num">2700.0</td>'
        '<td class="num bb-off" title="slower">-8.42</td><td class="num">–</td><td class="num">–</td>'
        '<td class="num">–</td></tr></tbody></table></div>')


def test_reads_the_published_grid_of_a_page():
    page = "<html><body><table><tr><td>other</td></tr></table>" + GRID + "</body></html>"
    rows = tool.grid_cells(page)
    assert [(r["GPUs"], r["column"], r["published"], r["measured"], r["verdict"]) for r in rows] == [
        ("1", "FP32 bs128", "381.46", "380.79", "consistent"), ("1", "AMP bs256", "1412", "1412", "consistent"),
        ("8", "FP32 bs128", "2948.2", "2700.0", "slower")]


def test_a_page_without_the_grid_gives_no_rows():
    assert tool.grid_cells("<table><tr><th>a</th></tr><tr><td>1</td></tr></table>") == []


def test_the_opening_must_come_first_and_cells_must_not_be_raw():
    good = ('<p class="bb-verdict">Reproduced: ...</p><table class="bb-table bb-headline"><tr><td>1</td></tr></table>'
            "<h2>1. Set-up</h2><table><tr><td>–</td></tr></table>")
    assert tool.opening_problems(good) == []
    late = "<h2>1. Set-up</h2>" + good.replace("<h2>1. Set-up</h2>", "")
    assert tool.opening_problems(late) == ["the verdict and the headline table are not the first thing on the page"]
    assert tool.opening_problems("<table><tr><td>x</td></tr></table>")[0] == "no verdict sentence or headline table"
    assert tool.opening_problems(good.replace("–", "NaN")) == ["raw values in table cells: NaN"]


def _published(throughput: float, printed: str | None = None) -> Row:
    return Row(gpus=1, batch_size=128, precision="fp32", throughput=throughput,
               printed={"throughput": printed} if printed else {})


def test_a_published_number_is_matched_by_the_digits_the_publication_printed():
    # A report printing 3 decimals, trailing zeros included (wanghuancoder/PerformanceReport's TensorFlow
    # README prints 3038.730): the cell must read as printed, a float's 3038.73 is a mismatch.
    rows = [{"published": "3038.730", "measured": "3040.112", "verdict": "consistent"}]
    assert tool.published_problems(rows, [_published(3038.73, "3038.730")]) == []
    lost = [{**rows[0], "published": "3038.73"}]
    assert tool.published_problems(lost, [_published(3038.73, "3038.730")]) == [
        "published 3038.730 is not in the report's grid (shown as 3038.73)"]
    assert tool.published_problems(rows, [_published(2948.2)]) == [
        "published 2948.2 is not in the report's grid"]


def test_a_published_number_must_be_reproduced_and_every_row_shown():
    rows = [{"published": "381.46", "measured": "360.00", "verdict": "slower"}]
    assert tool.published_problems(rows, [_published(381.46), _published(2948.2)]) == [
        "1 published cells in the grid, 2 published",
        "published 381.46: verdict 'slower', measured 360.00",
        "published 2948.2 is not in the report's grid"]
    # "reproduced" is our own runs' word: on a publication's own logs the report must say "consistent"
    assert tool.published_problems([{**rows[0], "verdict": "reproduced"}], [_published(381.46)]) == [
        "published 381.46: verdict 'reproduced', measured 360.00"]
