"""tools/check_reference_reports.py reads the reproduction table back out of a published page."""

import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import check_reference_reports as tool  # noqa: E402


def test_reads_the_reproduction_table_of_a_page():
    frame = pd.DataFrame({"gpus": [1, 8], "published": [381.46, 2948.2], "measured": [380.79, 2700.0],
                          "verdict": ["reproduced", "slower"]})
    page = "<html><body><table><tr><td>other</td></tr></table>" + frame.to_html() + "</body></html>"
    rows = tool.reproduction_table(page)
    assert [(r["published"], r["verdict"]) for r in rows] == [("381.46", "reproduced"), ("2948.20", "slower")]


def test_a_page_without_the_table_gives_no_rows():
    assert tool.reproduction_table("<table><tr><th>a</th></tr><tr><td>1</td></tr></table>") == []


def test_the_opening_must_come_first_and_cells_must_not_be_raw():
    good = ('<p class="bb-verdict">Reproduced: ...</p><table class="bb-table bb-headline"><tr><td>1</td></tr></table>'
            "<h2>1. Set-up</h2><table><tr><td>–</td></tr></table>")
    assert tool.opening_problems(good) == []
    late = "<h2>1. Set-up</h2>" + good.replace("<h2>1. Set-up</h2>", "")
    assert tool.opening_problems(late) == ["the verdict and the headline table are not the first thing on the page"]
    assert tool.opening_problems("<table><tr><td>x</td></tr></table>")[0] == "no verdict sentence or headline table"
    assert tool.opening_problems(good.replace("–", "NaN")) == ["raw values in table cells: NaN"]
