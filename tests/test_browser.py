"""The published reports in a real browser (headless Chromium driven by Playwright): the index and
every report open with no console error, every figure loads, the tables are there; screenshots are
saved (to $BENCHBOOK_SCREENSHOTS when set). CI installs Chromium and sets BENCHBOOK_REQUIRE_BROWSER=1,
so that a missing browser fails there instead of skipping."""

import functools
import http.server
import os
import shutil
import threading
from pathlib import Path

import pytest

from benchbook.reports import publish

FIXTURES = Path(__file__).parent / "fixtures"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
REQUIRED = os.environ.get("BENCHBOOK_REQUIRE_BROWSER") == "1"


def _need_browser():
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        if REQUIRED:
            raise
        pytest.skip("playwright is not installed (pip install playwright)")
    if not CHROMIUM:
        if REQUIRED:
            pytest.fail("BENCHBOOK_REQUIRE_BROWSER=1 but no chromium on the PATH (apt-get install chromium)")
        pytest.skip("no chromium on the PATH (apt-get install chromium)")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    _need_browser()
    reports = tmp_path_factory.mktemp("site") / "reports"
    targets = [publish.for_logs(FIXTURES / "ngc_mxnet", "resnet50_mxnet", "mxnet", "ngc_mxnet_resnet50"),
               publish.for_logs(FIXTURES / "ngc_maskrcnn", "maskrcnn_tf2", "maskrcnn", "ngc_tf2_maskrcnn")]
    entries = publish.publish(targets, reports, progress=False)
    assert all(e["status"] == "ok" for e in entries), [e.get("error") for e in entries]
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(reports))
    handler.log_message = lambda *a, **k: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}", reports, entries
    server.shutdown()


@pytest.fixture(scope="module")
def browser(site):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=[
            "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
            "--disable-component-update", "--disable-sync"])
        yield b
        b.close()


def visit(browser, url: str, shot: Path):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors: list[str] = []
    page.on("console", lambda m: errors.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(f"page error: {e}"))
    page.on("requestfailed", lambda r: errors.append(f"request failed: {r.url}"))
    response = page.goto(url, wait_until="load")
    assert response and response.ok, url
    shot.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(shot), full_page=True)
    return page, errors


def test_index_and_reports_render_without_errors(site, browser, tmp_path):
    base, reports, entries = site
    shots = Path(os.environ.get("BENCHBOOK_SCREENSHOTS", tmp_path / "screenshots"))
    page, errors = visit(browser, f"{base}/index.html", shots / "index.png")
    assert not errors, errors
    rows = page.locator("table#reports tbody tr:not(.error)")
    assert rows.count() == len(entries)
    links = [a.get_attribute("href") for a in page.locator("table#reports tbody tr td:first-child a").all()]
    assert links == [f"{e['name']}/report.html" for e in sorted(entries, key=lambda e: e["name"])]
    page.close()
    for href in links:
        name = href.split("/")[0]
        page, errors = visit(browser, f"{base}/{href}", shots / f"{name}.png")
        assert not errors, errors
        images = page.locator("img")
        assert images.count() >= 3, f"{href}: expected the report's figures"
        broken = page.evaluate("() => [...document.images].filter(i => !i.complete || i.naturalWidth === 0)"
                               ".map(i => i.alt || i.src.slice(0, 40))")
        assert not broken, f"{href}: figures that did not load: {broken}"
        assert page.locator("table").count() >= 4, f"{href}: expected the run, summary and reproduction tables"
        assert page.get_by_text("3. Reproduction").count() >= 1
        page.close()
        page, errors = visit(browser, f"{base}/{name}/code.html", shots / f"{name}-code.png")
        assert not errors, errors
        assert page.locator(".jp-CodeCell .highlight").count() >= 4  # the code view shows the notebook's cells
        page.close()
    assert len(list(shots.glob("*.png"))) == 1 + 2 * len(links)


def test_reproduction_verdicts_are_visible(site, browser, tmp_path):
    base, _reports, _entries = site
    page, errors = visit(browser, f"{base}/maskrcnn/report.html", tmp_path / "m.png")
    text = page.inner_text("body")
    assert "verdict" in text and ("consistent" in text or "not measured" in text)
    # The grid's Δ cells carry their verdict (colour and title); the line under the grid names the tolerance,
    # the grid's caption the unit, and the line under the reproduction table the tolerance again.
    headers = page.evaluate("() => [...document.querySelectorAll('table.bb-headline th')].map(c => c.innerText)")
    assert "Δ %" in headers and "published" in headers, headers
    titles = page.evaluate("() => [...document.querySelectorAll('table.bb-headline td[title]')].map(c => c.title)")
    assert "slower" in titles and set(titles) <= {"consistent", "slower", "faster", "not measured"}, titles
    assert page.locator("table.bb-headline caption").first.inner_text() == "samples/s"
    assert "within ±5%" in text and "within 1 ± 5%" in text
    # navigation: the report's own title, a link back to the index and to each log
    assert page.title().startswith("Mask R-CNN on TensorFlow 2") and page.title() != "Notebook"
    assert page.locator('a[href="../index.html"]').count() == 1
    assert page.locator('.bb-nav a[href$=".txt"], .bb-nav a[href$=".log"]').count() >= 1
    page.close()


RAW = ("None", "NaN", "nan", "<NA>", "NaT", "[]", "?")


@pytest.mark.parametrize("name", ["mxnet", "maskrcnn"])
def test_the_first_screen_shows_the_verdict_and_the_headline_table(site, browser, tmp_path, name):
    """At 1400x900, without scrolling: the verdict sentence and the whole published-form table; no cell of
    any table cut (its text wider than its box) and no raw None/NaN/<NA> as a cell's text."""
    base, _reports, _entries = site
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.goto(f"{base}/{name}/report.html", wait_until="load")
    page.screenshot(path=str(Path(os.environ.get("BENCHBOOK_SCREENSHOTS", tmp_path)) / f"{name}-first-screen.png"))
    for selector in (".bb-verdict", "table.bb-headline"):
        box = page.locator(selector).first.bounding_box()
        assert box is not None, f"{name}: no {selector}"
        assert box["y"] >= 0 and box["y"] + box["height"] <= 900, f"{name}: {selector} not on the first screen: {box}"
        assert box["x"] >= 0 and box["x"] + box["width"] <= 1400, f"{name}: {selector} wider than the screen: {box}"
    verdict = page.locator(".bb-verdict").first.inner_text().lower()
    # the fixture logs are re-read, not re-run: "consistent" (its size follows), never "reproduced"
    assert verdict.startswith(("consistent", "partly consistent", "not consistent", "not measured")), verdict
    assert "ratio" in verdict or "not measured" in verdict, verdict
    cut = page.evaluate("() => [...document.querySelectorAll('td, th')].filter(c => c.scrollWidth > c.clientWidth + 1)"
                        ".map(c => c.innerText.slice(0, 60))")
    assert not cut, f"{name}: cells whose text is cut: {cut}"
    raw = page.evaluate("() => [...document.querySelectorAll('td, th')].map(c => c.innerText.trim())")
    assert not [t for t in raw if t in RAW], f"{name}: raw missing values in cells"
    assert page.evaluate("() => [...document.images].every(i => (i.alt || '').length > 10)"), "a figure has no alt text"
    page.close()
