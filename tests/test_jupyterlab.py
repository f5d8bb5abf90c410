"""Every notebook of notebooks/ in JupyterLab, as a user meets it (issue 40): the project's JupyterLab with the
settings `make lab` installs (a notebook's .py opens as a notebook, jupytext's viewer), each opened and "Run
All" in headless Chromium driven by Playwright; no cell may end with an error or write to stderr, the model
notebooks' ipywidgets explorer must render and redraw its figure when a widget changes.

The notebooks run in a copy of notebooks/ (the kernel's folder) beside small folders of fixture logs: the
model notebooks analysis-only (`log_dir`, the only parameter changed; the BERT ones on the shipped sets, as
the README's path form), `compare` on its default runs/ (fixture logs there) and `mlperf` on its default, the
shipped set. No framework runs. The kernels run side by side (CI's 2 cores: about a minute in all).
Skipped without playwright or chromium, unless BENCHBOOK_REQUIRE_BROWSER=1 (CI), as test_browser.py is."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from conftest import FIXTURES, ROOT
from test_browser import CHROMIUM, _need_browser

NOTEBOOKS = ROOT / "notebooks"
LOG_DIRS = {"resnet50_tf": "logs/ngc_tf1", "resnet50_mxnet": "logs/ngc_mxnet", "resnet50_pytorch": "logs/ngc_pytorch",
            "maskrcnn_tf2": "logs/ngc_maskrcnn", "bert_pytorch": "examples/published/ngc-pytorch-bert/logs.tar.xz",
            "bert_tf": "examples/published/ngc-tf1-bert/logs.tar.xz"}
COMPARED = {"runs/resnet50_tf-cpu": "ngc_tf1", "runs/resnet50_mxnet-cpu": "ngc_mxnet"}  # compare's default sources
UNSET_LOG_DIR = "log_dir: Optional[str] = None"
START_S, RUN_S = 90, 240  # JupyterLab's start; every notebook's Run All, side by side

# Each open notebook, from JupyterLab's own models (the app exposed by --LabApp.expose_app_in_browser): its
# code cells, how many ran, the errors and stderr they show, the widgets they display, the kernel's state.
STATE_JS = """() => [...window.jupyterapp.shell.widgets('main')].filter(w => w.content && w.content.model
    && w.content.model.cells).map(w => {
  const cells = [...w.content.model.cells].filter(c => c.type === 'code');
  const outputs = cells.flatMap(c => Array.from({length: c.outputs.length}, (_, i) => c.outputs.get(i)));
  const said = outputs.filter(o => o.type === 'error' || o.type === 'stream').map(o => o.toJSON())
    .filter(o => o.output_type === 'error' || o.name === 'stderr');
  const kernel = w.sessionContext.session && w.sessionContext.session.kernel;
  return {path: w.context.path, notebook: w.hasClass('jp-NotebookPanel'), cells: cells.length,
          ran: cells.filter(c => c.executionCount !== null).length, kernel: kernel ? kernel.status : 'none',
          errors: said.map(o => o.output_type === 'error' ? o.ename + ': ' + o.evalue
                                                            : 'stderr: ' + [].concat(o.text).join('').slice(0, 300)),
          widgets: outputs.filter(o => o.data['application/vnd.jupyter.widget-view+json']).length};
})"""
# The figure of the explorer (the VBox holding selects) in notebook `path`; its src.
FIGURE_JS = """path => {
  const w = [...window.jupyterapp.shell.widgets('main')].find(w => w.context && w.context.path === path);
  const boxes = w ? [...w.node.querySelectorAll('.jupyter-widgets.widget-vbox')] : [];
  const explorer = boxes.find(b => b.querySelector('select'));
  const img = explorer && explorer.querySelector('.widget-output img');
  return img ? img.src : null;
}"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _workspace(root: Path) -> list[str]:
    """The notebooks' .py copied into `root` (the kernels' folder) with the logs they read; their names."""
    names = sorted(p.stem for p in NOTEBOOKS.glob("*.py"))
    for name in names:
        text = (NOTEBOOKS / f"{name}.py").read_text(encoding="utf-8")
        if name in LOG_DIRS:
            assert text.count(UNSET_LOG_DIR) == 1, f"notebooks/{name}.py: no `{UNSET_LOG_DIR}` line to set"
            text = text.replace(UNSET_LOG_DIR, f"log_dir: Optional[str] = {LOG_DIRS[name]!r}")
        (root / f"{name}.py").write_text(text, encoding="utf-8")
    for folder in ("ngc_tf1", "ngc_mxnet", "ngc_pytorch", "ngc_maskrcnn"):
        shutil.copytree(FIXTURES / folder, root / "logs" / folder)
    for source, folder in COMPARED.items():
        shutil.copytree(FIXTURES / folder, root / source)
    return names


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """(the JupyterLab URL with its token, the folder it serves, the notebooks' names); the server stopped after."""
    _need_browser()
    tmp = tmp_path_factory.mktemp("lab")
    root, settings = tmp / "root", tmp / "settings"
    root.mkdir()
    names = _workspace(root)
    settings.mkdir()
    shutil.copy(NOTEBOOKS / "jupyterlab-settings.json", settings / "overrides.json")  # what `make lab` installs
    port, token = _free_port(), secrets.token_hex(16)
    env = {**os.environ, "JUPYTERLAB_SETTINGS_DIR": str(tmp / "user-settings"),
           "JUPYTERLAB_WORKSPACES_DIR": str(tmp / "workspaces"), "JUPYTER_RUNTIME_DIR": str(tmp / "runtime")}
    log = open(tmp / "jupyterlab.log", "w")  # noqa: SIM115 -- closed after the server
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root", f"--ServerApp.port={port}",
         "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
         f"--LabApp.app_settings_dir={settings}", "--LabApp.expose_app_in_browser=True",
         "--LabApp.news_url=None", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"],
        cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_S
        while True:
            try:
                with urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=5):
                    break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"JupyterLab did not start: {(tmp / 'jupyterlab.log').read_text()[-3000:]}")
                time.sleep(0.5)
        yield url, token, root, names
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()


def _open(page, name: str) -> None:
    """Open <name>.py (the copy of notebooks/<name>.py) as a double-click does, or bring it to the front."""
    page.evaluate("path => window.jupyterapp.commands.execute('docmanager:open', {path}).then(() => null)",
                  f"{name}.py")


def _run_all(page, names: list[str]) -> dict[str, float]:
    """Open every notebook as JupyterLab opens a double-clicked file (their kernels start side by side), then
    start "Run All" in each once its kernel is there (run earlier, JupyterLab asks which kernel to start);
    the time each started."""
    for name in names:
        _open(page, name)
    started = {}
    for name in names:
        _open(page, name)  # to the front: the command runs the current notebook
        page.wait_for_function("path => window.jupyterapp.shell.currentWidget.context.path === path",
                               arg=f"{name}.py")
        page.evaluate("() => window.jupyterapp.shell.currentWidget.sessionContext.ready.then(() => null)")
        # not awaited: the command's promise settles when the last cell has run, and the next notebook starts now
        page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); return null; }")
        started[name] = time.monotonic()
    return started


def _wait(page, started: dict[str, float]) -> tuple[dict[str, dict], dict[str, float]]:
    """Each notebook's state once every one has run to its end (or stopped at an error); the seconds each took."""
    seconds: dict[str, float] = {}
    deadline = time.monotonic() + RUN_S
    while True:
        time.sleep(1)
        states = {Path(s["path"]).stem: s for s in page.evaluate(STATE_JS)}
        for name, s in states.items():
            if name not in seconds and s["kernel"] == "idle" and (s["ran"] == s["cells"] or s["errors"]):
                seconds[name] = time.monotonic() - started[name]
        if len(seconds) == len(started) or time.monotonic() > deadline:
            return states, seconds


def _redraws(page, names: list[str], shots: Path) -> dict[str, bool]:
    """In each notebook of `names`: whether choosing another plot in the explorer replaced its figure (the
    choices made in every notebook first, their kernels redrawing side by side); a screenshot of each."""
    before = {}
    for name in names:
        _open(page, name)
        page.wait_for_function(FIGURE_JS, arg=f"{name}.py", timeout=30_000)
        before[name] = page.evaluate(FIGURE_JS, f"{name}.py")
        panel = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)")
        plot = panel.locator(".jupyter-widgets.widget-vbox .widget-dropdown", has_text="plot").locator("select")
        plot.scroll_into_view_if_needed()
        plot.select_option("throughput over time")
    redrawn = {}
    for name in names:
        _open(page, name)
        page.wait_for_function(f"([path, was]) => {{ const src = ({FIGURE_JS})(path); return src && src !== was; }}",
                               arg=[f"{name}.py", before[name]], timeout=60_000)
        redrawn[name] = page.evaluate(FIGURE_JS, f"{name}.py") not in (None, before[name])
        page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jupyter-widgets.widget-vbox").filter(
            has=page.locator("select")).first.screenshot(path=str(shots / f"{name}-explorer.png"))
    return redrawn


def test_every_notebook_runs_all_in_jupyterlab_and_the_explorer_redraws(lab, tmp_path):
    from playwright.sync_api import sync_playwright

    url, token, _root, names = lab
    shots = Path(os.environ.get("BENCHBOOK_SCREENSHOTS", tmp_path / "screenshots"))
    shots.mkdir(parents=True, exist_ok=True)
    begun = time.monotonic()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=[
            "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
            "--disable-component-update", "--disable-sync"])
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        problems: list[str] = []
        page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
        page.goto(f"{url}/lab?token={token}", wait_until="load")
        page.wait_for_function("() => window.jupyterapp", timeout=60_000)
        page.evaluate("() => window.jupyterapp.restored.then(() => null)")  # every plugin activated
        phases = {"JupyterLab loaded": time.monotonic()}
        started = _run_all(page, names)
        states, seconds = _wait(page, started)
        phases["every notebook run"] = time.monotonic()
        redrawn = _redraws(page, [name for name in names if name in LOG_DIRS], shots)
        phases["explorers redrawn"] = time.monotonic()
        for name in names:
            _open(page, name)
            page.screenshot(path=str(shots / f"{name}.png"))
        browser.close()
    print(f"\nJupyterLab, {len(names)} notebooks run side by side: {time.monotonic() - begun:.0f} s in all, "
          + ", ".join(f"{what} at {at - begun:.0f} s" for what, at in phases.items()) + f" (screenshots: {shots})")
    for name in names:
        s = states.get(name, {})
        print(f"  {name:18} cells {s.get('ran', 0)}/{s.get('cells', 0)}  "
              f"errors {len(s.get('errors', []))}  widgets {s.get('widgets', 0)}  "
              f"{'redraws' if redrawn.get(name) else '':8} {seconds.get(name, float('nan')):5.1f} s")
    assert not problems, problems
    for name in names:
        s = states[name]
        assert s["notebook"], f"{name}.py did not open as a notebook"
        assert name in seconds, f"{name}: still running after {RUN_S} s: {json.dumps(s)}"
        assert not s["errors"], f"{name}: {s['errors']}"
        assert s["ran"] == s["cells"] > 0, s
    for name in LOG_DIRS:
        assert states[name]["widgets"] >= 1, f"{name}: the explorer was not displayed"
        assert redrawn[name], f"{name}: the explorer's figure did not change with the plot chosen"
    assert states["mlperf"]["widgets"] >= 1  # the round's filters
