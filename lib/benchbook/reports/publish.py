"""`benchbook publish`: execute each study's notebook with papermill, convert it to self-contained
HTML with nbconvert, and write `reports/index.html`.

Per report, `reports/<name>/` holds `executed/<time>.ipynb` (the immutable record of each
execution), `report.html` (code hidden), `code.html` (code shown), the report's tables as CSV and JSON
(`data_files`: runs, configurations, the comparison with the published numbers), `summary.json` (the headline
numbers the notebook wrote) and `entry.json` (what the index shows, with the digest of the inputs).
A report whose inputs (notebook, study file, parameters, logs and run records, benchbook's code)
did not change is not executed again. A notebook that fails is still published, error visible,
and marked failed in the index.

Executors: `local` runs the notebooks in a pool of fresh processes on this machine; `slurm`
submits one job per notebook (`python -m benchbook.reports.publish JOB.json` on a node, with this
Python and the reports folder on a shared file system), follows the jobs, then writes the index
here, so that a large publish spreads over a cluster.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import datetime as dt
import hashlib
import json
import multiprocessing
import os
import re
import shlex
import sys
import threading
import time
import uuid
from dataclasses import asdict
from pathlib import Path

from tqdm.auto import tqdm

from .. import __version__
from ..core import project
from ..errors import BenchbookError, ReportNameError
from ..runfolder import records
from . import data_files
from .index_page import write_index
from .page_contract import SUMMARY
from .publish_files import (
    changed_inputs,
    input_files,
    pair_difference,
    portable,
    portable_record,
    read_entry,
    real_folder,
    report_lock,
    shown,
    unreadable,
    write_text,
)
from .targets import (  # noqa: F401 -- the makers of targets, publish's public entry point
    NOTEBOOKS,
    Target,
    default_targets,
    for_comparison,
    for_logs,
    for_published,
    for_study,
    is_published_set,
)

# Imports that a package makes when they are installed and that publishing never uses; None in sys.modules
# makes them fail, and the package goes without (both catch the ImportError):
# - jsonschema imports rfc3987-syntax (0.9 s: it builds a grammar) for an "iri" format check nbformat's
#   schema never asks for;
# - jupytext imports jupyter_server (0.1 s) for its JupyterLab contents managers; the pair check only reads.
# Set before anything here reads a notebook (the pair check of each report does, then papermill, nbconvert).
_UNNEEDED = ("rfc3987_syntax", "jupyter_server")
for _name in _UNNEEDED:
    sys.modules.setdefault(_name, None)

REPORT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
SLURM_VALUE = re.compile(r"[A-Za-z0-9_.,-]+")  # a partition or account name: nothing a job script would read
PACKAGE = Path(__file__).resolve().parents[1]  # the whole benchbook package: a report depends on all of it
ROOT = project.ROOT  # the checkout, or an installed copy of its files: the paths a notebook is given are its


def check_name(name: str) -> str:
    """A report name is one folder of --reports: letters, digits, `.`, `_` and `-`."""
    if not REPORT_NAME.fullmatch(name or ""):
        raise ReportNameError(f"report name {name!r}: a report is a folder of --reports; its name is letters, "
                              "digits, '.', '_' and '-', starting with a letter or a digit (give --name NAME)")
    if name.lower().endswith((".html", ".lock")):  # index.html is the folder's own page
        raise ReportNameError(f"report name {name!r}: a report is a folder of --reports, and names ending in "
                              "'.html' or '.lock' are kept for the index page (give --name NAME)")
    return name


def digest(target: Target, files: dict[str, tuple[int, int]] | None = None) -> str:
    """What the report depends on; any change means the notebook runs again."""
    h = hashlib.sha256()
    h.update(json.dumps(target.parameters, sort_keys=True).encode())
    h.update(target.notebook.read_bytes())
    h.update(__version__.encode())
    for p in sorted(PACKAGE.rglob("*.py")):
        h.update(p.read_bytes())
    for q, (size, mtime) in (input_files(target) if files is None else files).items():
        h.update(os.fsencode(q) + f"\0{size}\0{mtime}\n".encode())  # a name need not be UTF-8
    return h.hexdigest()[:20]


# Kernels of parallel workers pick their TCP ports independently, and one can take a port that
# another has just picked ("Address already in use", then no reply): such a kernel is started again.
KERNEL_STARTS = 3
_NOT_STARTED = ("Kernel didn't respond", "Kernel died before replying to kernel_info")


@contextlib.contextmanager
def _stderr_to(path: Path):
    """This process's stderr (file descriptor 2, which the kernels it starts inherit) into `path`:
    the kernel's start-up chatter ("[IPKernelApp] WARNING | Kernel is running over TCP without
    encryption") stays out of the terminal and is kept beside the executed notebook."""
    sys.stderr.flush()
    saved = os.dup(2)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o644)
    try:
        os.dup2(fd, 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        os.close(fd)


def _execute(target: Target, out: Path, stamp: str) -> dict:
    """Run the notebook (in a worker process); return status and error, never raise for a notebook error.

    Each execution has its own file, `executed/<time>-<random>.ipynb` (two publishes in one second
    do not share one), and its kernel's messages in `executed/<same>.kernel.log`."""
    executed = real_folder(out, "executed") / f"{stamp}-{uuid.uuid4().hex[:8]}.ipynb"
    with _stderr_to(executed.with_suffix(".kernel.log")):
        return _execute_quietly(target, out, executed)


def _execute_quietly(target: Target, out: Path, executed: Path) -> dict:
    import papermill

    (out / SUMMARY).unlink(missing_ok=True)
    data_files.clear(out)  # the page's `finish` writes this execution's tables; none of an earlier one stays linked
    # The kernel runs in the report's folder, and the page's `finish` writes its files there ("."): no page, the
    # executed notebook and code.html included, names a folder of the machine that published it.
    params = dict(target.parameters, out=".")
    if "sources" not in params:
        params["interactive"] = False
    # A report that only reads has nothing left to do once its last cell has answered: its kernel is stopped
    # at once rather than asked to exit (0.4 s of the kernel's own exit hooks). One that launches its study
    # is asked, and given the time to end what it started.
    shutdown = "graceful" if params.get("launch") else "immediate"
    exporter = _in_background(_html_exporter)  # nbconvert's imports and templates while the kernel runs the cells
    for attempt in range(1, KERNEL_STARTS + 1):
        try:
            papermill.execute_notebook(  # saved once at the end (and on an error), not after every cell
                str(target.notebook), str(executed), parameters=params, kernel_name="python3",
                progress_bar=False, cwd=str(out), request_save_on_cell_execute=False, shutdown_kernel=shutdown)
            status, error = "ok", None
        except papermill.PapermillExecutionError as exc:
            status, error = "failed", f"{exc.ename}: {exc.evalue}"
        except Exception as exc:  # the kernel died, the notebook is unreadable...
            status, error = "failed", f"{type(exc).__name__}: {exc}"
            if attempt < KERNEL_STARTS and str(exc).startswith(_NOT_STARTED):
                continue  # no cell ran: start a new kernel
        break
    if executed.exists():
        portable_record(executed, target.notebook)
        _convert(executed, out, exporter.result())
    return {"status": status, "error": error, "executed": str(executed.relative_to(out))}


def _in_background(make) -> cf.Future:
    """`make()` in a daemon thread, its result when asked for: a Ctrl-C never waits for it. A KeyboardInterrupt in
    an import of the main thread (papermill's, as the kernel starts) can leave CPython's import lock held (between
    importlib's `_imp.acquire_lock()` and its `try`), and a thread that imports then waits forever: a pool's thread,
    joined on the way out (at its `with`, at the interpreter's exit), hung publish there (issue 38)."""
    future: cf.Future = cf.Future()

    def run():
        try:
            future.set_result(make())
        except BaseException as exc:  # noqa: BLE001 -- raised again by future.result(), in the main thread
            future.set_exception(exc)

    threading.Thread(target=run, name=f"background {make.__name__}", daemon=True).start()
    return future


def _html_exporter():
    """nbconvert's HTML exporter, made while the kernel runs the cells and used for both pages.

    It has converted a small notebook of the report's kinds of cell (Markdown, highlighted code, an HTML
    table, an image) already, so that what nbconvert does only once (0.7 s of imports, compiling its
    Jinja templates, its Markdown parser, the code lexer and its BeautifulSoup selectors) is not done
    after the last cell, when the pages are all that is left to make."""
    import nbformat
    from nbconvert import HTMLExporter

    exporter = HTMLExporter(template_name="lab", embed_images=True)
    v4 = nbformat.v4
    outputs = [v4.new_output("display_data", data={"text/html": "<table><tr><td>1</td></tr></table>",
                                                   "image/png": "iVBORw0KGgo="})]
    sample = v4.new_notebook(cells=[v4.new_markdown_cell("# A\n\n| a |\n|---|\n| 1 |"),
                                    v4.new_code_cell("x = 1", outputs=outputs)],
                             metadata={"language_info": {"name": "python", "pygments_lexer": "ipython3"}})
    exporter.from_notebook_node(sample)
    return exporter


def _convert(executed: Path, out: Path, exporter=None) -> None:
    """The executed notebook as two self-contained HTML pages: report (no code) and code."""
    import nbformat

    exporter = exporter or _html_exporter()
    nb = nbformat.read(executed, as_version=4)
    try:  # the browser's title: the report's own (its summary), not nbconvert's "Notebook"
        title = str(records.read_json(out / SUMMARY).get("title") or out.name)
    except (OSError, records.RecordError):
        title = out.name
    # Without the code, a code cell that shows nothing (the parameters, the imports) would be an empty
    # cell's margins: four of them put 80 px of blank page above the title.
    showing = nbformat.from_dict(dict(nb, cells=[c for c in nb.cells if c.cell_type != "code" or c.get("outputs")]))
    for name, page, hide in (("report.html", showing, True), ("code.html", nb, False)):
        exporter.exclude_input = exporter.exclude_input_prompt = exporter.exclude_output_prompt = hide
        body, _ = exporter.from_notebook_node(page, resources={"metadata": {"name": title}})
        write_text(out / name, _offline(body))


_EXTERNAL_SCRIPT = re.compile(r'<script[^>]*\bsrc="https?://[^"]*"[^>]*>\s*</script>', re.IGNORECASE)
_MATHJAX = re.compile(r"<!-- Load mathjax -->.*?<!-- End of mathjax configuration -->", re.DOTALL)


def _offline(body: str) -> str:
    """Drop the CDN scripts nbconvert's template links (require.js, MathJax): a report must open
    offline, with everything it shows embedded, and load nothing from the network."""
    body = _EXTERNAL_SCRIPT.sub("", _MATHJAX.sub("", body))
    # no favicon request either; a phone lays the page out at its own width (issue 39, item 11)
    return body.replace("<head>", '<head><meta name="viewport" content="width=device-width, initial-scale=1">'
                        '<link rel="icon" href="data:,">', 1)


def _work(args) -> dict:
    return _execute(args[0], Path(args[1]), args[2])


def _local(todo: list[tuple[Target, str]], reports: Path, stamp: str, jobs: int, slurm: dict):
    """(target, digest, result) as each notebook finishes, in a pool of fresh interpreters here (one report
    alone in this process: a pool would start an interpreter and import everything again)."""
    if len(todo) == 1:
        yield *todo[0], _guarded(lambda: _execute(todo[0][0], reports / todo[0][0].name, stamp))
        return
    ctx = multiprocessing.get_context("spawn")  # a clean interpreter per notebook run
    with cf.ProcessPoolExecutor(max_workers=max(1, jobs), mp_context=ctx) as pool:
        futures = {pool.submit(_work, (t, str(reports / t.name), stamp)): (t, d) for t, d in todo}
        for fut in cf.as_completed(futures):
            yield *futures[fut], _guarded(fut.result)


def _guarded(result) -> dict:  # result(), or the failed result that says why
    try:
        return result()
    except Exception as exc:  # noqa: BLE001 -- this report's own error; the others go on
        return {"status": "failed", "error": f"{type(exc).__name__}: {exc}", "executed": None}


def _slurm(todo: list[tuple[Target, str]], reports: Path, stamp: str, jobs: int, slurm: dict):
    """(target, digest, result) as each notebook's Slurm job ends; Ctrl-C cancels the jobs.

    Each job runs `python -m benchbook.reports.publish JOB.json` (this Python, from the repository), which
    executes the one notebook as a pool worker does and writes its result beside JOB.json, in
    `reports/<name>/job/`; a job that ends without a result is a failed report with its state,
    exit code and the last line of its output."""
    from ..studies.launchers import slurm as sl

    pending: dict[str, tuple[Target, str, Path, Path]] = {}
    try:
        for t, d in todo:
            try:
                job = write_job(t, reports, stamp)
            except (BenchbookError, OSError) as exc:  # this report's folder: the others go on
                yield t, d, {"status": "failed", "error": str(exc), "executed": None}
                continue
            folder = job.parent
            result = folder / f"{stamp}.result.json"
            output = folder / f"{stamp}.out"
            lines = ["#!/bin/bash", f"#SBATCH --job-name=publish.{t.name}", "#SBATCH --nodes=1",
                     "#SBATCH --ntasks=1", f"#SBATCH --time={sl.slurm_time(slurm.get('time') or 3600)}"]
            lines += [f"#SBATCH --partition={slurm['partition']}"] if slurm.get("partition") else []
            lines += [f"#SBATCH --account={slurm['account']}"] if slurm.get("account") else []
            lines += [f"cd {shlex.quote(str(ROOT))}",
                      shlex.join([sys.executable, "-m", "benchbook.reports.publish", str(job)])]
            script = folder / f"{stamp}.sbatch"
            write_text(script, "\n".join(lines) + "\n")
            try:
                pending[sl.submit(script, output)] = (t, d, result, output)
            except sl.SlurmError as exc:
                yield t, d, {"status": "failed", "error": str(exc), "executed": None}
        while pending:
            time.sleep(1.0)
            try:
                still = sl.queued(list(pending))  # one squeue for all of them
            except sl.SlurmError:
                continue  # the controller restarts: ask again
            for job_id in [j for j in pending if j not in still]:
                t, d, result, output = pending.pop(job_id)
                if result.exists():
                    yield t, d, records.read_json(result)
                    continue
                try:
                    state, code, sig = sl.job_state(job_id)
                except sl.SlurmError:
                    state, code, sig = None, None, None
                last = output.read_text(errors="replace").strip().splitlines()[-1:] if output.exists() else []
                how = f"{state} (exit code {code}{f', signal {sig}' if sig else ''})" if state else "(state unknown)"
                yield t, d, {"status": "failed", "executed": None,
                             "error": f"Slurm job {job_id} ended {how} without a result; its output is "
                                      f"{output}" + (f": {last[0]}" if last else "")}
    except KeyboardInterrupt:
        for job_id in pending:
            sl.cancel(job_id)
        raise


EXECUTORS = {"local": _local, "slurm": _slurm}


def write_job(target: Target, reports: str | Path, stamp: str) -> Path:
    """One notebook to execute elsewhere (a Slurm job): `reports/<name>/job/<stamp>.json`, which
    `run_job` (`python -m benchbook.reports.publish JOB.json`) executes, its result in `<stamp>.result.json`."""
    out = real_folder(Path(reports).resolve(), target.name)
    job = real_folder(out, "job") / f"{stamp}.json"
    records.write(job, {"target": asdict(target) | {"notebook": str(target.notebook)}, "out": str(out),
                        "stamp": stamp, "result": str(job.with_suffix(".result.json"))})
    return job


def run_job(job_file: str | Path) -> dict:
    """One notebook of a `--executor slurm` publish, on the node the job landed on: executed into
    `executed/<stamp>-<random>.ipynb` as a pool worker does (a kernel that does not start is started
    again, a failing cell is not), converted, its result written where the job file says."""
    job = records.read_json(Path(job_file))
    t = job["target"]
    target = Target(t["name"], Path(t["notebook"]), t["parameters"], t["inputs"])
    try:
        result = _execute(target, Path(job["out"]), job["stamp"])
    except Exception as exc:
        result = {"status": "failed", "error": f"{type(exc).__name__}: {exc}", "executed": None}
    records.write(Path(job["result"]), result)
    return result


def publish(targets: list[Target], reports: str | Path = "reports", jobs: int = 2, force: bool = False,
            progress: bool = True, executor: str = "local", slurm: dict | None = None) -> list[dict]:
    """Execute and convert every target whose inputs changed, then rewrite the index; the entries.

    `executor`: `local` (a process pool of `jobs` workers) or `slurm` (one job per notebook;
    `slurm` gives `partition`, `account` and `time` in seconds). Every path reaches the notebooks
    relative to the repository (where their kernels run), whatever the current folder; a report that
    cannot be published (a link planted in the reports folder, a notebook that differs from its text
    source, any error of its own) is refused or failed alone, the others go on."""
    if executor not in EXECUTORS:
        raise BenchbookError(f"unknown executor {executor!r}; known: {', '.join(EXECUTORS)}")
    for key in ("partition", "account"):
        value = (slurm or {}).get(key)
        if value and not SLURM_VALUE.fullmatch(str(value)):
            raise BenchbookError(f"--slurm-{key} {shown(repr(value))}: expected letters, digits, '_', '.', ',' "
                                 "and '-' only (it is written into the job script)")
    reports = Path(reports).resolve()
    reports.mkdir(parents=True, exist_ok=True)
    names = [check_name(t.name) for t in targets]
    if len(set(names)) != len(names):
        raise BenchbookError(f"two reports would have the same name: {sorted(n for n in names if names.count(n) > 1)}")
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    with contextlib.ExitStack() as locks:
        todo, entries, refused, before = [], {}, {}, {}
        for t in targets:
            try:
                prepared = _prepare(t, reports, stamp, force, locks)
            except Exception as exc:  # noqa: BLE001 -- this report's own error; the others go on
                why = str(exc) if isinstance(exc, BenchbookError | OSError) else f"{type(exc).__name__}: {exc}"
                prepared = {"name": t.name, "status": "failed", "summary": {}, "error": shown(why)}
            if isinstance(prepared, tuple):
                todo.append(prepared[:2])
                before[t.name] = prepared[2]
            elif prepared.get("skipped"):
                entries[t.name] = prepared
            else:
                refused[t.name] = prepared
        _execute_all(todo, entries, reports, stamp, jobs, executor, slurm, progress, before)
    for p in sorted(reports.glob("*/entry.json")):  # reports published earlier stay in the index
        name = p.parent.name
        if name in entries:
            continue
        if p.parent.is_symlink() or p.is_symlink():
            entries[name] = unreadable(name, f"{shown(str(p))}: a symbolic link, not followed")
            continue
        try:
            entries[name] = read_entry(p)
        except records.RecordError as exc:  # shown, never dropped
            entries[name] = unreadable(name, f"{shown(str(exc))}; publish it again (--force) to replace it")
    write_index(reports, list(entries.values()))
    return [refused.get(n) or entries[n] for n in names]


def _prepare(t: Target, reports: Path, stamp: str, force: bool, locks: contextlib.ExitStack):
    """(target, digest, input listing) when `t` is to be executed (its folder locked and its entry
    marked `publishing`), its old entry when unchanged, else the entry that says why not."""
    out = real_folder(reports, t.name)
    why = pair_difference(t.notebook)
    if why:
        return {"name": t.name, "status": "failed", "summary": {},
                "error": f"{why}: run `jupytext --sync` on it (a reviewer reads the text source), then publish again"}
    holder = locks.enter_context(report_lock(out))
    if holder:
        return {"name": t.name, "status": "busy", "summary": {},
                "error": f"being published by {holder}; publish it again when that one ends"}
    entry_path = out / "entry.json"
    listing = input_files(t)
    d = digest(t, listing)
    try:
        old = read_entry(entry_path) if entry_path.exists() else None
    except records.RecordError:
        old = None  # a corrupt entry: the report is published again over it
    was = ((old or {}).get("target") or {}).get("inputs")
    if t.default_name and was and was != t.inputs:
        return {"name": t.name, "status": "refused", "summary": {},
                "error": f"{shown(str(out))} holds the report of {shown(', '.join(was))}, another folder of the same "
                         "name: give --name NAME to publish this one beside it"}
    if old and old.get("digest") == d and not force and all((out / f).exists() for f in ("report.html", "code.html")):
        return dict(old, skipped=True)
    # Until this publish ends, the entry says so: one that is killed is executed again by the next.
    records.write(entry_path, {"name": t.name, "status": "publishing", "digest": None, "published_at": stamp,
                               "summary": {}, "target": asdict(t) | {"notebook": portable(t.notebook)},
                               "error": f"a publish began at {stamp} and has not ended; if none runs, it was "
                                        "interrupted: publish again"})
    return t, d, listing


def _execute_all(todo, entries, reports, stamp, jobs, executor, slurm, progress, before) -> None:
    """Execute the notebooks to publish; each one's entry.json written as it ends. A report whose
    inputs changed while its notebook ran (a log removed, a record rewritten) is marked failed:
    it may show what is no longer there; a notebook that launches its study changes them on purpose."""
    bar = tqdm(total=len(todo), unit="report", desc="publish", disable=not progress or not todo
               or not sys.stderr.isatty())
    counted = progress and bar.disable  # a log or a pipe: each line says how far, as no bar is drawn
    began = time.monotonic()
    if todo:
        for done, (t, d, result) in enumerate(EXECUTORS[executor](todo, reports, stamp, jobs, slurm or {}), 1):
            try:
                entries[t.name] = _record(t, d, result, reports / t.name, stamp, before[t.name])
            except Exception as exc:  # noqa: BLE001 -- a full disk, this report alone: the others go on
                entries[t.name] = {"name": t.name, "status": "failed", "summary": {},
                                   "error": shown(f"{type(exc).__name__}: {exc}")}
            bar.update(1)
            e = entries[t.name]
            line = shown(f"{t.name}: {e['status']}" + (f" ({e['error']})" if e.get("error") else ""))
            if counted:  # flushed: a pipe (`make report | tee`) shows it now, not when its buffer fills
                print(f"[{done}/{len(todo)}] {line}, {time.monotonic() - began:.0f} s", flush=True)
            else:
                bar.write(line)
    bar.close()


def _record(t: Target, d: str, result: dict, out: Path, stamp: str, before: dict) -> dict:
    """The entry of a report whose notebook ran, written to its entry.json."""
    try:
        summary = records.read_json(out / SUMMARY) if (out / SUMMARY).exists() else {}
    except records.RecordError as exc:
        summary, result = {}, dict(result, status="failed", error=str(exc))
    moved = None if t.parameters.get("launch") else changed_inputs(before, input_files(t))
    if moved and result.get("status") == "ok":
        result = dict(result, status="failed", error=f"the inputs changed while the notebook ran ({moved}); "
                                                     "publish again")
    entry = {"name": t.name, "digest": d, "published_at": stamp, "notebook": t.notebook.name,
             "parameters": t.parameters, "benchbook_version": __version__, **result, "summary": summary,
             "data": data_files.present(out),
             "target": asdict(t) | {"notebook": portable(t.notebook)}}
    records.write(out / "entry.json", entry)
    return entry


if __name__ == "__main__":  # a Slurm job of `benchbook publish --executor slurm`
    sys.exit(0 if run_job(sys.argv[1])["status"] == "ok" else 1)
