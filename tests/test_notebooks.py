"""The notebooks: text sources paired with thin .ipynb files without outputs; executed by papermill; published
as escaped HTML."""

import ast
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import jupytext
import nbformat
import papermill
import pytest

from benchbook import models
from benchbook.errors import BenchbookError
from benchbook.reports import publish
from benchbook.runfolder import records

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
FIXTURES = Path(__file__).parent / "fixtures"
MODELS = [spec.notebook for spec in models.specs() if spec.notebook]  # a model's notebook is named by its spec


def _cells(nb) -> list[tuple[str, str, list]]:
    """What a pair must agree on: each cell's type, source and tags (ids, outputs and counts aside)."""
    return [(c.cell_type, c.source, c.metadata.get("tags", [])) for c in nb.cells]


def _out_of_sync(py: Path) -> str:
    """Why `py` and its paired .ipynb differ (empty when they agree): the first cell that differs."""
    text, stored = jupytext.read(py), nbformat.read(py.with_suffix(".ipynb"), as_version=4)
    formats = stored.metadata.get("jupytext", {}).get("formats")
    if formats != "ipynb,py:percent":
        return f"{py.with_suffix('.ipynb').name}: jupytext formats {formats!r}, expected 'ipynb,py:percent'"
    a, b = _cells(text), _cells(stored)
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return f"{py.name} cell {i}: {x!r} != {y!r} in the .ipynb"
    return f"{py.name}: {len(a)} cells, its .ipynb {len(b)}" if len(a) != len(b) else ""


def test_every_notebook_is_a_text_source_paired_with_its_ipynb():
    """The .py is what people edit; the .ipynb papermill runs must hold the same cells
    (`jupytext --sync notebooks/NAME.py` after an edit)."""
    assert sorted(p.stem for p in NOTEBOOKS.glob("*.py")) == sorted(p.stem for p in NOTEBOOKS.glob("*.ipynb"))
    assert sorted(p.stem for p in NOTEBOOKS.glob("*.py")) == sorted([*MODELS, "compare", "mlperf"])
    assert not (ROOT / "tools" / "make_notebooks.py").exists()  # no generator: the notebooks are the sources
    for py in NOTEBOOKS.glob("*.py"):
        assert not _out_of_sync(py), f"{_out_of_sync(py)}: run `jupytext --sync {py.relative_to(ROOT)}`"


def test_a_pair_edited_on_one_side_only_is_out_of_sync(tmp_path):
    for name in ("resnet50_tf.py", "resnet50_tf.ipynb"):
        shutil.copy(NOTEBOOKS / name, tmp_path / name)
    py = tmp_path / "resnet50_tf.py"
    assert _out_of_sync(py) == ""
    anchor = 'page.show_all(\n'
    py.write_text(py.read_text().replace(anchor, 'page.show("runs")\n' + anchor))
    assert "cell " in _out_of_sync(py) and 'page.show("runs")' in _out_of_sync(py)
    shutil.copy(NOTEBOOKS / "resnet50_tf.py", py)
    py.write_text(py.read_text() + '\n# %%\npage.show("failures")\n')  # a cell added at the end
    assert "cells, its .ipynb" in _out_of_sync(py)
    nb = nbformat.read(tmp_path / "resnet50_tf.ipynb", as_version=4)
    del nb.metadata["jupytext"]
    nbformat.write(nb, tmp_path / "resnet50_tf.ipynb")
    assert "expected 'ipynb,py:percent'" in _out_of_sync(py)


@pytest.mark.parametrize("name", [*MODELS, "compare", "mlperf"])
def test_notebooks_are_thin_and_stored_without_outputs(name):
    nb = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(not c.outputs and c.execution_count is None for c in code), \
        f"notebooks/{name}.ipynb holds outputs (saved from JupyterLab?): `make clear-outputs` before a commit"
    params = [c for c in code if "parameters" in c.metadata.get("tags", [])]
    assert len(params) == 1 and code[0] is params[0]
    for c in code[1:]:
        tree = ast.parse(c.source.rstrip(";"))
        assert len(tree.body) <= 5, c.source  # library calls (a model's prose, as their text arguments, included)
        assert not [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef, ast.Lambda, ast.For,
                                                                  ast.While, ast.comprehension))], c.source
    # papermill documents every parameter from its comment (`papermill --help-notebook`).
    inferred = papermill.inspect_notebook(str(NOTEBOOKS / f"{name}.ipynb"))
    assert inferred and all(p["help"] for p in inferred.values())


def _code(name: str) -> list[str]:
    return [c.source for c in nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4).cells if c.cell_type == "code"]


def _prose(name: str) -> dict[str, dict[str, str]]:
    """What a model notebook gives `page.show_all`: section -> its texts by keyword."""
    call = ast.parse(_code(name)[2]).body[0].value
    assert ast.unparse(call.func) == "page.show_all", name
    return {k.arg: {kw.arg: ast.literal_eval(kw.value) for kw in k.value.keywords} for k in call.keywords}


def test_model_notebooks_show_their_page_by_one_call_in_the_one_order():
    """A model notebook is its parameters, the page made from them, the page shown by one call with the model's
    own prose, and `finish`: the order of the page is the library's (`Page.order`, the model's own sections
    declared by its spec), written nowhere else."""
    from benchbook.reports import sections
    for name in MODELS:
        code = _code(name)
        assert len(code) == 4 and code[1].startswith(f'from benchbook.reports.sections import model_page\n\npage = '
                                                     f'model_page(globals(), "{name}")'), name
        assert code[3].startswith("page.finish();")
        spec = models.get(name)
        order = sections.Page(None, name).order()
        assert order[:2] == ("opening", "reproduction_plot") and order[-4:] == sections.AFTER
        assert order == (*sections.BEFORE, *spec.page_sections, *sections.AFTER)
        assert set(_prose(name)) <= set(order), name  # prose only for sections of its page
        assert 'page.show("' not in "\n".join(code) and "## 2. Analysis" not in "\n".join(code)


def test_model_notebooks_differ_only_in_their_prose_and_their_model():
    """The same four cells in every model notebook but for the parameters' defaults, the model's name and its
    prose: the texts given to `show_all`, each model's own sections with their headings."""
    shapes = set()
    for name in MODELS:
        code = _code(name)[1:]
        tree = ast.parse(code[1])
        tree.body[0].value.keywords = []
        shapes.add((code[0].replace(f'"{name}"', '"MODEL"'), ast.dump(tree), code[2]))
        own = [s for s in models.get(name).page_sections if s != "time_to_train"]
        assert all("heading" in _prose(name).get(s, {}) for s in own), name
    assert len(shapes) == 1, shapes


@pytest.mark.parametrize(("name", "section", "heading"), [
    ("resnet50_tf", "time_to_train", "Time to train and top-1"),
    ("resnet50_mxnet", "epoch_rates", "Epoch rates"),
    ("resnet50_pytorch", "iteration_rates", "Per-iteration rates"),
    ("maskrcnn_tf2", "loss", "Loss"),
    ("maskrcnn_tf2", "loss_components", "Loss components"),
    ("bert_pytorch", "loss", "MLM loss"),
    ("bert_pytorch", "quality_by_step", "MLM accuracy by step"),
    ("bert_tf", "iteration_rates", "Per-step rates"),
    ("bert_tf", "quality_by_step", "Masked LM accuracy at evaluations")])
def test_each_model_notebook_shows_what_is_particular_to_its_logs(name, section, heading):
    """Each model's own section, declared by its spec, in its own words in its notebook and in no other."""
    assert section in models.get(name).page_sections and _prose(name)[section]["heading"] == heading
    assert not [m for m in MODELS if m != name and f'"{heading}"' in (NOTEBOOKS / f"{m}.py").read_text()]


@pytest.mark.parametrize("name", MODELS)
def test_parameters_carry_types_for_help_notebook(name):
    inferred = papermill.inspect_notebook(str(NOTEBOOKS / f"{name}.ipynb"))
    types = {k: p["inferred_type_name"] for k, p in inferred.items()}
    assert types["launch"] == "bool" and types["skip_records"] == "Optional[int]"
    assert types["log_dir"] == "Optional[str]"
    assert "None" not in types.values(), types
    defaults = {k: p["default"] for k, p in inferred.items()}
    unset = {k for k, v in defaults.items() if v == "None"}  # unset is None, never -1 or ""
    assert unset == {"log_dir", "reference", "skip_records", "method", "window", "tolerance", "rule", "interactive",
                     "out", "title"}, defaults
    assert types["window"] == "Optional[int]" and types["tolerance"] == "Optional[float]"  # every CLI rule option
    assert defaults["launch"] == "False"  # a notebook launches nothing unless asked
    assert not [v for v in defaults.values() if v in ("-1", '""', "''")], defaults


def test_a_wrong_typed_parameter_stops_the_notebook_before_anything_launches(tmp_path):
    """`-p launch notabool` launched the study (a non-empty string is true): now the first cell refuses it,
    naming the parameter, the value and what it expects."""
    study = tmp_path / "s.yaml"
    study.write_text("schema_version: 1\nname: s\nmodel: resnet50_tf\nruntime: cpu\nsweep: {batch_size: 8}\n"
                     "iterations: 4\nwarmup_steps: 1\n")
    runs = tmp_path / "runs"
    with pytest.raises(papermill.PapermillExecutionError) as err:
        papermill.execute_notebook(str(NOTEBOOKS / "resnet50_tf.ipynb"), str(tmp_path / "out.ipynb"),
                                   parameters={"study": str(study), "runs_dir": str(runs), "launch": "notabool"},
                                   kernel_name="python3", progress_bar=False, cwd=str(tmp_path))
    assert err.value.ename == "NotebookParameterError"
    assert "launch = 'notabool'" in err.value.evalue and "True or False" in err.value.evalue
    assert not runs.exists()  # nothing ran


@pytest.mark.parametrize(("name", "wrong", "known"), [("resnet50_tf", "logdir", "log_dir"),
                                                    ("compare", "source", "sources")])
def test_a_misspelled_papermill_parameter_is_refused_with_the_known_ones(tmp_path, name, wrong, known):
    """`-p logdir DIR` was ignored: the notebook ran with its defaults and launched the default CPU study."""
    with pytest.raises(papermill.PapermillExecutionError) as err:
        papermill.execute_notebook(str(NOTEBOOKS / f"{name}.ipynb"), str(tmp_path / "out.ipynb"),
                                   parameters={wrong: str(FIXTURES / "ngc_tf1")}, kernel_name="python3",
                                   progress_bar=False, cwd=str(tmp_path))
    assert err.value.ename == "NotebookParameterError"
    assert f"notebook parameter '{wrong}' is not one of" in err.value.evalue and known in err.value.evalue
    assert not (tmp_path / "runs").exists()


def test_a_notebook_run_with_its_defaults_launches_nothing(tmp_path):
    """papermill with no parameter: the default study is reported on, not run (its folder does not exist
    here), and the cell says so instead of starting training that outlives papermill."""
    with pytest.raises(papermill.PapermillExecutionError) as err:
        papermill.execute_notebook(str(NOTEBOOKS / "resnet50_tf.ipynb"), str(tmp_path / "out.ipynb"),
                                   kernel_name="python3", progress_bar=False, cwd=str(tmp_path),
                                   execution_timeout=120)
    assert "no such folder; run the study first" in err.value.evalue
    assert not (tmp_path / "runs").exists()


def test_interactive_is_on_only_in_a_live_notebook(monkeypatch):
    from benchbook.reports.notebook_params import NotebookParameterError, check, given
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    namespace = {"study": "params/resnet50_tf/cpu.yaml", "runs_dir": "runs", "In": [], "Out": {}, "_": None,
                 "Report": object, "check": check}
    assert check(**given(namespace)).interactive is False and check(**given(namespace)).launch is False
    with pytest.raises(NotebookParameterError, match="'logdir' is not one of study, log_dir"):
        given({**namespace, "logdir": "x"})
    monkeypatch.setenv("JPY_SESSION_NAME", "/home/u/resnet50_tf.ipynb")  # what jupyter_server gives its kernels
    assert check(**given(namespace)).interactive is True
    assert given({**namespace, "report": None}) == {"study": "params/resnet50_tf/cpu.yaml", "runs_dir": "runs"}


@pytest.mark.parametrize(("given", "expected"), [
    (["-p", "skip_records", "3"], {"skip_records": 3, "method": None, "reference": None}),
    (["-p", "skip_records", "None", "-p", "method", "median"],
     {"skip_records": None, "method": "median", "reference": None}),
    (["-p", "skip_records", "0", "-p", "reference", "ngc_tf1_resnet50"],
     {"skip_records": 0, "reference": "ngc_tf1_resnet50"}),
])
def test_papermill_p_reaches_the_typed_check_and_none_stays_unset(given, expected, tmp_path):
    """`papermill -p skip_records 3` arrives as the int 3 and `-p skip_records None` as None (papermill's own parsing of
    -p values): the parameters cell, papermill's injected cell and the check cell run as the kernel would."""
    out = tmp_path / "prepared.ipynb"
    subprocess.run([sys.executable, "-m", "papermill", "--prepare-only", str(NOTEBOOKS / "resnet50_tf.ipynb"),
                    str(out), "-p", "log_dir", str(FIXTURES / "ngc_tf1"), *given], check=True, capture_output=True)
    code = [c for c in nbformat.read(out, as_version=4).cells if c.cell_type == "code"]
    assert "injected-parameters" in code[1].metadata.get("tags", []) and "model_page(" in code[2].source
    from benchbook.reports.notebook_params import check, given
    namespace: dict = {}
    for cell in code[:2]:
        exec(cell.source, namespace)  # noqa: S102 -- the project's own notebook, as papermill prepared it
    p = check(**given({k: v for k, v in namespace.items() if k != "__builtins__"}))  # what model_page checks
    assert {k: getattr(p, k) for k in expected} == expected
    assert p.study is None and p.log_dir == str(FIXTURES / "ngc_tf1") and p.out is None


@pytest.mark.parametrize(("change", "expected"), [
    ({"launch": "notabool"}, "launch = 'notabool': expected True or False"),
    ({"skip_records": "ten"}, "skip_records = 'ten': expected a whole number or None"),
    ({"skip_records": True}, "skip_records = True: expected a whole number or None"),
    ({"skip_records": -5}, "skip_records = -5"),
    ({"skip_records": -1}, "skip_records = -1"),  # no longer a sentinel: None leaves the rule's warm-up
    ({"reference": ""}, "reference = '': expected text or None"),  # nor is "": write None
    ({"method": ""}, "method = ''"),
    ({"method": "average"}, "method = 'average'"),
    ({"log_dir": 3}, "log_dir = 3: expected text or None"),
    ({"runs_dir": None}, "runs_dir = None: expected text ("),
    ({"rule": "dlpref"}, "rule = 'dlpref': expected a format's named rule (benchbook formats)"),
])
def test_notebook_parameters_are_checked_on_entry(change, expected):
    from benchbook.errors import BenchbookError
    from benchbook.reports.notebook_params import NotebookParameterError, check
    good = {"study": "params/resnet50_tf/cpu.yaml", "log_dir": None, "runs_dir": "runs", "launch": True,
            "reference": None, "skip_records": None, "method": None, "interactive": False, "out": None}
    assert check(**good).launch is True and check(**good).skip_records is None
    assert check(**{**good, "skip_records": 0}).skip_records == 0  # 0 is a real value: skip nothing
    with pytest.raises(NotebookParameterError) as err:
        check(**{**good, **change})
    assert expected in str(err.value) and isinstance(err.value, BenchbookError)
    assert check(**{**good, "rule": "dlperf"}).rule == "dlperf"


def test_log_dir_makes_the_study_ignored_wherever_the_notebook_runs(tmp_path, monkeypatch):
    from benchbook.reports.notebook_params import check
    monkeypatch.chdir(tmp_path)  # another folder: the default study path does not exist here
    p = check(study="params/resnet50_tf/cpu.yaml", log_dir=str(FIXTURES / "ngc_tf1"), runs_dir="runs", launch=True,
              reference=None, skip_records=None, method=None, interactive=False, out=None)
    assert p.study is None and p.launch is False
    q = check(study="params/resnet50_tf/cpu.yaml", log_dir=None, runs_dir="runs", launch=False, reference=None,
              skip_records=None, method=None, interactive=False, out=None)
    assert Path(q.study) == ROOT / "params" / "resnet50_tf" / "cpu.yaml"  # found from the repository


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    """Analysis-only reports of the project's fixture logs, one per model notebook, plus a comparison."""
    tmp = tmp_path_factory.mktemp("pub")
    reports = tmp / "reports"
    logs = {}
    for model, folder in (("resnet50_tf", "ngc_tf1"), ("resnet50_mxnet", "ngc_mxnet"),
                          ("maskrcnn_tf2", "ngc_maskrcnn"), ("resnet50_pytorch", "ngc_pytorch")):
        logs[model] = tmp / folder
        shutil.copytree(FIXTURES / folder, logs[model])
    targets = [publish.for_logs(logs["resnet50_tf"], "resnet50_tf", "tf1", "dlperf_tf1_resnet50"),
               publish.for_logs(logs["resnet50_mxnet"], "resnet50_mxnet", "mxnet", "ngc_mxnet_resnet50"),
               publish.for_logs(logs["maskrcnn_tf2"], "maskrcnn_tf2", "maskrcnn", "ngc_tf2_maskrcnn"),
               publish.for_logs(logs["resnet50_pytorch"], "resnet50_pytorch", "pytorch", "ngc_pytorch_resnet50_v100"),
               publish.for_comparison([str(logs["resnet50_tf"]), str(logs["resnet50_mxnet"])], ["tf", "mx"], "cmp")]
    entries = publish.publish(targets, reports, jobs=2, progress=False)
    return reports, entries, targets


def test_every_notebook_executes_in_analysis_only_mode(published):
    reports, entries, _ = published
    assert [e["status"] for e in entries] == ["ok"] * 5, [e.get("error") for e in entries]
    for e in entries:
        out = reports / e["name"]
        executed = nbformat.read(out / e["executed"], as_version=4)
        errors = [o for c in executed.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
        assert not errors
        page = (out / "report.html").read_text()
        assert "<img" in page or e["name"] == "cmp" or "data:image/png;base64" in page
        assert "highlight hl-ipython3" not in page  # code hidden in the report view...
        assert "highlight hl-ipython3" in (out / "code.html").read_text()  # ...shown in the code view
        assert 'href="configurations.csv"' in page, e["name"]  # its tables as data, linked from the page


@pytest.mark.parametrize(("name", "section", "shown"), [
    ("tf1", "Time to train and top-1", "final_top1"),  # train_and_evaluate_gpu1_amp_bs256.log evaluates
    ("mxnet", "Epoch rates", "harmonic mean of the used"),
    ("pytorch", "Per-iteration rates", "rate of the first iteration"),
    ("maskrcnn", "Loss", "last loss"),
])
def test_each_model_report_has_its_own_section(published, name, section, shown):
    reports, _, _ = published
    page = (reports / name / "report.html").read_text()
    assert f">{section}<" in page and shown in page[page.index(f">{section}<"):]


def _cpu_bert_log(folder: Path) -> Path:
    """A log in the CPU BERT workload's form (run_pretraining.py's DLLogger lines and its mlm_accuracy lines)."""
    folder.mkdir()
    ns = ("Namespace(train_batch_size=8, max_seq_length=128, max_steps=6, precision='fp32', phase2=False, "
          "device='cpu', n_gpu=0, gradient_accumulation_steps=1, fp16=False, amp=False, bf16=False)")
    lines = [f'DLL 2026-01-01 10:00:00.000000 - PARAMETER Config : ["{ns}"] ',
             "DLL 2026-01-01 10:00:00.100000 - PARAMETER batch_size_per_gpu : 8 "]
    for step in range(7):
        if step:
            key = "final_loss" if step == 6 else "average_loss"
            lines.append(f"DLL 2026-01-01 10:00:0{step}.000000 - Training Epoch: 0 Training Iteration: {step}  "
                         f"{key} : {7.0 - step / 4} ")
        if step % 3 == 0:
            lines.append(f"DLL 2026-01-01 10:00:0{step}.500000 - Training Epoch: 0 Training Iteration: {step}  "
                         f"mlm_accuracy : {0.05 * step} ")
    lines.append("DLL 2026-01-01 10:00:07.000000 -  e2e_train_time : 7.0 s training_sequences_per_second : 24.5 "
                 "sequences/s final_loss : 5.5 None raw_train_time : 1.3 s")
    (folder / "bert_cpu.log").write_text("\n".join(lines) + "\n")
    return folder


def test_the_bert_report_shows_the_loss_and_the_mlm_accuracy_by_step(tmp_path):
    target = publish.for_logs(_cpu_bert_log(tmp_path / "logs"), "bert_pytorch", "bert")
    [entry] = publish.publish([target], tmp_path / "reports", jobs=1, progress=False)
    assert entry["status"] == "ok", entry.get("error")
    page = (tmp_path / "reports" / "bert" / "report.html").read_text()
    accuracy = page[page.index(">MLM accuracy by step<"):]
    assert "bert_cpu.log:0 (CPU, fp32, bs 8) | 3 | 0 | 0.00 | 6 | 30.00" in _plain(accuracy) and "<img" in accuracy
    assert "(CPU, fp32, bs 8) | 6 | 1 | 6.7500 | 6 | 5.5000" in _plain(page[page.index(">MLM loss<"):])


def _plain(html: str) -> str:
    """A page's tables as text rows, cells joined by ' | '."""
    import re

    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", html, flags=re.S)
    return "\n".join(" | ".join(re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", r,
                                                                                     flags=re.S)) for r in rows)


def test_epoch_rates_only_where_the_rule_is_per_epoch(published):
    """MXNet's published number is made of epoch rates: its report shows them; no other report has the section."""
    reports, entries, _ = published
    assert ">Epoch rates<" in (reports / "mxnet" / "report.html").read_text()
    for name in ("tf1", "pytorch", "maskrcnn"):
        assert ">Epoch rates<" not in (reports / name / "report.html").read_text()


def test_reports_embed_everything_and_load_nothing_from_the_network(published):
    reports, entries, _ = published
    for e in entries:
        page = (reports / e["name"] / "report.html").read_text()
        assert not re.search(r'<(?:script|link)[^>]+(?:src|href)="https?://', page)
        assert 'src="data:image/png;base64,' in page or e["name"] == "cmp"


def test_the_page_without_code_opens_with_the_title_not_empty_cells(published):
    """The parameters and imports show nothing: on report.html they are left out (each was an empty
    cell's margins above the title); code.html keeps every cell."""
    reports, entries, _ = published
    for e in entries:
        page = (reports / e["name"] / "report.html").read_text()
        body = page[page.index("<main>"):]
        assert 'jp-mod-noOutputs' not in body and "celltag_parameters" not in body, e["name"]
        assert "celltag_parameters" in (reports / e["name"] / "code.html").read_text()


def test_index_lists_every_report_with_status_and_verdict(published):
    reports, entries, _ = published
    index = (reports / "index.html").read_text()
    for e in entries:
        assert f'href="{e["name"]}/report.html"' in index
        assert (reports / e["name"] / "summary.json").is_file()
    mxnet = records.read_json(reports / "mxnet" / "summary.json")
    assert mxnet["mode"] == "analysis-only" and mxnet["runs"] >= 2 and mxnet["reference"] == "ngc_mxnet_resnet50"


def test_unchanged_reports_are_not_executed_again(published):
    reports, entries, targets = published
    again = publish.publish(targets[:1], reports, progress=False)
    assert again[0].get("skipped") and again[0]["executed"] == entries[0]["executed"]
    log = next(Path(targets[0].inputs[0]).glob("*.log"))
    log.write_text(log.read_text() + "\n")  # a log changed: the report is executed again
    third = publish.publish(targets[:1], reports, progress=False)
    assert not third[0].get("skipped") and third[0]["status"] == "ok"
    assert len(list((reports / "tf1" / "executed").glob("*.ipynb"))) >= 1


def test_a_failing_notebook_is_published_with_its_error(tmp_path):
    with pytest.raises(BenchbookError, match="no_such_reference"):  # the CLI's path refuses it up front
        publish.for_logs(FIXTURES / "ngc_tf1", "resnet50_tf", "broken", "no_such_reference")
    target = publish.for_logs(FIXTURES / "ngc_tf1", "resnet50_tf", "broken")
    target.parameters["reference"] = "no_such_reference"  # a notebook that fails when it runs
    (entry,) = publish.publish([target], tmp_path / "reports", progress=False)
    assert entry["status"] == "failed" and "no_such_reference" in entry["error"]
    assert "no_such_reference" in (tmp_path / "reports" / "broken" / "report.html").read_text()
    index = (tmp_path / "reports" / "index.html").read_text()
    assert 'class="failed"' in index


def test_log_content_in_reports_is_escaped(tmp_path):
    """A log line holding <script> shows as text, in the failures table of a launched study."""
    study = tmp_path / "evil.yaml"
    study.write_text("schema_version: 1\nname: evil\nmodel: resnet50_tf\nruntime: cpu\nsweep: {batch_size: 8}\n"
                     "iterations: 4\nwarmup_steps: 1\n")
    run = tmp_path / "runs" / "evil" / "cpu_fp32_bs8_r1"
    run.mkdir(parents=True)
    evil = '<script>document.title="pwned"</script>'
    (run / "cpu_fp32_bs8_r1.log").write_text(f"Traceback (most recent call last):\nRuntimeError: {evil}\n")
    records.write(run / "run.json", {"run_id": "cpu_fp32_bs8_r1", "status": "failed", "config": {"batch_size": 8},
                                     "log": "cpu_fp32_bs8_r1.log", "ended_at": "x",
                                     "failure": {"cause": "crash", "detail": f"exit code 1: {evil}",
                                                 "last_lines": [f"RuntimeError: {evil}"]}})
    (entry,) = publish.publish([publish.for_study(study, tmp_path / "runs")], tmp_path / "reports", progress=False)
    page = (tmp_path / "reports" / "evil" / "report.html").read_text()
    assert entry["status"] == "ok", entry.get("error")
    assert "&lt;script&gt;document.title" in page and evil not in page


def test_cli_publish_logs(tmp_path):
    env_bin = Path(sys.executable).parent
    r = subprocess.run([str(env_bin / "benchbook"), "publish", "--logs", str(FIXTURES / "ngc_mxnet"), "--model",
                        "resnet50_mxnet", "--name", "mx", "--reports", str(tmp_path), "--quiet"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert json.loads((tmp_path / "mx" / "entry.json").read_text())["status"] == "ok"


def test_the_publishing_process_reads_targets_pairs_and_records_without_pandas_or_jupyter_server(tmp_path):
    """`benchbook publish` itself only finds targets, checks each notebook against its text source and
    writes entries: pandas (0.2 s) is imported by the kernel that runs the cells, and jupytext's
    JupyterLab contents managers (jupyter_server, 0.1 s) by nothing, as each report waits on them."""
    code = ("import sys\nfrom pathlib import Path\nfrom benchbook.reports import publish, publish_files\n"
            "from benchbook.runfolder import records\n"
            f"t = publish.for_logs({str(FIXTURES / 'ngc_mxnet')!r}, 'resnet50_mxnet', reference='ngc_mxnet_resnet50')\n"
            "assert publish_files.pair_difference(t.notebook) is None\n"
            f"records.write(Path({str(tmp_path / 'entry.json')!r}), {{'throughput': float('nan')}})\n"
            "print(sorted(m for m in ('pandas', 'jupyter_server') if sys.modules.get(m)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines()[-1] == "[]"
    assert json.loads((tmp_path / "entry.json").read_text()) == {"throughput": None}


def test_the_html_exporter_made_ahead_writes_what_a_new_one_writes():
    """The exporter `publish` makes while the kernel runs has converted a sample notebook already;
    the pages it then writes are those of an exporter that converted nothing before."""
    from nbconvert import HTMLExporter

    v4 = nbformat.v4
    table = "<table><tr><th>GPUs</th><td>7,799.02</td></tr></table>"
    nb = v4.new_notebook(cells=[v4.new_markdown_cell("# Title\n\nA *verdict*, `code` and a link <a href='x'>x</a>."),
                                v4.new_code_cell("print(1)", outputs=[
                                    v4.new_output("stream", name="stdout", text="1\n"),
                                    v4.new_output("display_data", data={"text/html": table})])],
                         metadata={"language_info": {"name": "python", "pygments_lexer": "ipython3"}})
    made_ahead = publish._html_exporter()
    for hide in (True, False):
        fresh = HTMLExporter(template_name="lab", embed_images=True)
        for exporter in (made_ahead, fresh):
            exporter.exclude_input = exporter.exclude_input_prompt = exporter.exclude_output_prompt = hide
        resources = {"metadata": {"name": "t"}}
        assert made_ahead.from_notebook_node(nb, resources=dict(resources))[0] == \
            fresh.from_notebook_node(nb, resources=dict(resources))[0]


def test_a_kernel_that_does_not_start_is_started_again_but_a_failing_cell_is_not(tmp_path, monkeypatch):
    calls = []

    def execute(source, executed, **kw):
        calls.append(source)
        if len(calls) == 1:  # what a kernel whose port another worker took gives
            raise RuntimeError("Kernel didn't respond in 60 seconds")
        if len(calls) == 2:
            Path(executed).write_text(Path(source).read_text())
            return
        raise papermill.PapermillExecutionError(0, 1, "boom", "ValueError", "bad input", [])

    monkeypatch.setattr(papermill, "execute_notebook", execute)
    target = publish.Target("t", NOTEBOOKS / "compare.ipynb", {"sources": "a,b"})
    job = publish.write_job(target, tmp_path, "s1")  # one notebook, as a worker or a Slurm job runs it
    assert publish.run_job(job)["status"] == "ok" and len(calls) == 2
    assert json.loads(job.with_suffix(".result.json").read_text())["status"] == "ok"
    assert (tmp_path / "t" / "report.html").is_file()  # the executed notebook was converted
    failed = publish.run_job(publish.write_job(target, tmp_path, "s2"))
    assert failed["status"] == "failed" and failed["error"] == "ValueError: bad input" and len(calls) == 3


def test_a_reading_report_stops_its_kernel_at_once_and_a_launching_one_lets_it_exit(tmp_path, monkeypatch):
    """The kernel of an analysis-only report is stopped as soon as its last cell answered (its exit hooks
    cost 0.4 s of each publish); a notebook that launches its study gets the kernel's own exit."""
    asked = []

    def execute(source, executed, **kw):
        asked.append(kw["shutdown_kernel"])
        Path(executed).write_text(Path(source).read_text())

    monkeypatch.setattr(papermill, "execute_notebook", execute)
    reading = publish.for_logs(FIXTURES / "ngc_mxnet", "resnet50_mxnet")
    launching = publish.for_study(ROOT / "params" / "resnet50_mxnet" / "cpu_smoke.yaml", tmp_path / "runs", launch=True)
    for target in (reading, launching, publish.for_study(ROOT / "params" / "resnet50_mxnet" / "cpu_smoke.yaml")):
        assert publish._execute(target, tmp_path / target.name, "s")["status"] == "ok"
    assert asked == ["immediate", "graceful", "immediate"]


PAPERMILL_LOGS = {"resnet50_tf": "ngc_tf1", "resnet50_mxnet": "ngc_mxnet", "resnet50_pytorch": "ngc_pytorch",
                  "maskrcnn_tf2": "ngc_maskrcnn"}


def test_papermill_as_the_readme_shows_it_never_hangs_and_never_launches(tmp_path):
    """`papermill notebooks/<model>.ipynb out.ipynb -p log_dir DIR`, its other parameters left to their
    defaults, once per model notebook of these logs: each run ends (the ipywidgets explorer, whose comm
    messages could leave nbclient waiting, is off outside a live JupyterLab, so that nothing is left to
    chance: 10 runs found no more than 4 do, at 25 s of CI each), within its timeout, with the report and no
    study launched."""
    names = list(PAPERMILL_LOGS)
    for i in range(len(names)):
        name = names[i % len(names)]
        out = tmp_path / f"{i}.ipynb"
        start = time.monotonic()
        papermill.execute_notebook(str(NOTEBOOKS / f"{name}.ipynb"), str(out), kernel_name="python3",
                                   parameters={"log_dir": str(FIXTURES / PAPERMILL_LOGS[name])},
                                   progress_bar=False, cwd=str(tmp_path), execution_timeout=60)
        assert time.monotonic() - start < 90, f"run {i} of {name} took too long"
        text = out.read_text()
        assert "bb-verdict" in text and "Explore" not in text and "started: " not in text
    assert not (tmp_path / "runs").exists()


def test_a_papermill_command_as_the_readme_shows_it_prints_no_kernel_warning(tmp_path):
    """`papermill notebooks/X.ipynb out.ipynb -p log_dir DIR` from the repository: the kernel, configured by
    the environment `make setup` made (notebooks/ipython/), keeps its TCP warning off the terminal."""
    papermill_cli = Path(sys.executable).parent / "papermill"
    r = subprocess.run([str(papermill_cli), "notebooks/resnet50_mxnet.ipynb", str(tmp_path / "out.ipynb"),
                        "-p", "log_dir", str(FIXTURES / "ngc_mxnet")], cwd=ROOT, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    said = [line for line in r.stderr.splitlines() if "IPKernelApp" in line or "WARNING" in line]
    assert not said, said
    assert "bb-verdict" in (tmp_path / "out.ipynb").read_text()


def test_publish_progress_in_a_log_is_a_plain_line_per_report(tmp_path, capsys):
    """Into a log or a pipe (`make report > log`): no bar redrawn with carriage returns, but each report's
    line says how many of how many are done and how long the publish has taken so far."""
    target = publish.for_logs(str(FIXTURES / "ngc_mxnet"), "resnet50_mxnet", "mx", None)
    publish.publish([target], tmp_path, progress=True)
    out = capsys.readouterr()
    assert "\r" not in out.out + out.err
    assert re.search(r"^\[1/1\] mx: ok, \d+ s$", out.out, re.MULTILINE), out.out
    publish.publish([target], tmp_path / "quiet", progress=False)
    assert capsys.readouterr().out == "mx: ok\n"  # --quiet: the report's status alone, as before
