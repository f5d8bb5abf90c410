"""A notebook's path parameters are found the same way wherever its kernel runs (issue 40): JupyterLab starts
it in notebooks/, papermill and `benchbook publish` at the repository root."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from benchbook.reports.notebook_params import ROOT, NotebookParameterError, check, located, show_errors_plainly

PUBLISHED = "examples/published/ngc-tf1-resnet50"


def test_from_notebooks_the_defaults_and_the_readmes_paths_are_the_repositorys(monkeypatch):
    monkeypatch.chdir(ROOT / "notebooks")
    p = check(study="params/resnet50_tf/cpu.yaml", runs_dir="runs", log_dir=PUBLISHED)
    assert p.log_dir == str(ROOT / PUBLISHED) and p.study is None
    p = check(study="params/resnet50_tf/cpu.yaml", runs_dir="runs", log_dir=None)
    assert p.study == str(ROOT / "params/resnet50_tf/cpu.yaml")


def test_a_path_of_the_current_folder_wins_and_an_unknown_one_stays_as_given(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "examples" / "published" / "ngc-tf1-resnet50").mkdir(parents=True)
    assert check(study="s.yaml", runs_dir="runs", log_dir=PUBLISHED).log_dir == PUBLISHED  # here, not the repo's
    (tmp_path / "runs").mkdir()
    assert check(study="s.yaml", runs_dir="runs").runs_dir == "runs"
    assert check(study="s.yaml", runs_dir="nowhere/runs").runs_dir == "nowhere/runs"
    assert Path(check(study="s.yaml", runs_dir="params").runs_dir) == ROOT / "params"  # only the repository has it


def _defaults(notebook: str) -> dict:
    """The parameters cell's values of notebooks/<notebook>.py, as the notebook starts with them."""
    text = (ROOT / "notebooks" / f"{notebook}.py").read_text(encoding="utf-8")
    cell = text.split('# %% tags=["parameters"]', 1)[1].split("# %%", 1)[0]
    return {node.target.id: ast.literal_eval(node.value) for node in ast.parse(cell).body
            if isinstance(node, ast.AnnAssign)}


@pytest.mark.parametrize("where", ["", "notebooks"])
def test_the_mlperf_notebooks_defaults_are_the_shipped_set_read_in_place(where, monkeypatch):
    """Its default was ../shared/mlperf-results, a folder no user has; now the set `benchbook publish`
    reads (params/published/*mlperf*.yaml), found from the root and from notebooks/."""
    monkeypatch.chdir(ROOT / where)
    entry = yaml.safe_load(next((ROOT / "params" / "published").glob("*mlperf*.yaml")).read_text(encoding="utf-8"))
    defaults = _defaults("mlperf")
    results = located(defaults["results"], "results", "results")
    expected = located(defaults["expected"], "expected", "expected.yaml")
    shipped = ROOT / "params" / "published"
    assert Path(results).resolve() == (shipped / entry["logs"]).resolve() and Path(results).is_file()
    assert Path(expected).resolve() == (shipped / entry["expected"]).resolve() and Path(expected).is_file()


def test_the_compare_default_without_runs_says_to_run_make_report_first(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    sources = _defaults("compare")["sources"]
    if all((ROOT / s).exists() for s in sources.split(",")):  # `make report` made them: found in the repository
        assert located(sources, "sources", "folders") == ",".join(str(ROOT / s) for s in sources.split(","))
        return
    with pytest.raises(NotebookParameterError) as caught:
        located(sources, "sources", "study folders")
    said = str(caught.value)
    assert "\n" not in said and said.startswith(f"notebook parameter sources = {sources!r}: no such file or folder: ")
    assert "expected study folders" in said and "run `make report` first" in said


def test_each_path_of_a_parameter_is_located_and_keeps_its_form(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "here").mkdir()
    assert located("here, params", "sources", "x") == f"here,{ROOT / 'params'}"
    assert located(["here", "params"], "sources", "x") == ["here", str(ROOT / "params")]
    for wrong in (None, 3, "", " , ", ["here", 3]):
        with pytest.raises(NotebookParameterError, match=r"^notebook parameter sources = .*expected folders"):
            located(wrong, "sources", "folders")
    with pytest.raises(NotebookParameterError) as caught:
        located("here,elsewhere/x", "sources", "folders")
    assert "no such file or folder: elsewhere/x (looked for in" in str(caught.value)
    assert "make report" not in str(caught.value)  # only runs/ is made by it


def _shell():
    from IPython.core.interactiveshell import InteractiveShell

    return InteractiveShell(colors="nocolor")


def test_a_benchbook_error_in_a_cell_shows_as_its_message_not_a_traceback(capsys, tmp_path, monkeypatch):
    """An error in the parameters cell surfaced as a 60-line traceback through library frames (issue 40)."""
    monkeypatch.chdir(tmp_path)
    shell = _shell()
    assert show_errors_plainly(shell)
    result = shell.run_cell("from benchbook.reports.notebook_params import located\n"
                            "located('nowhere', 'results', 'result folders')")
    shown = capsys.readouterr()
    assert isinstance(result.error_in_exec, NotebookParameterError)  # the cell failed: papermill stops there
    lines = [line for line in (shown.out + shown.err).splitlines() if line.strip()]
    assert lines[-1].endswith("NotebookParameterError: notebook parameter results = 'nowhere': no such file or "
                              f"folder: nowhere (looked for in {tmp_path}, then in {ROOT}); expected result folders")
    assert len(lines) == 2 and "%tb" in lines[0], lines  # and where the traceback is, for a bug report
    result = shell.run_cell("import json\njson.loads('{')")  # anything else, a bug, keeps its traceback
    shown = capsys.readouterr()
    assert "JSONDecodeError" in shown.out + shown.err and "json/decoder.py" in shown.out + shown.err


def test_outside_a_kernel_nothing_is_installed():
    assert show_errors_plainly() is False  # pytest is no IPython shell


def test_papermill_fails_with_the_one_line_and_the_notebook_keeps_it(tmp_path):
    """The same handler in a real kernel started by papermill: a non-zero exit, the message on the terminal,
    and the executed notebook's error output free of the library's frames."""
    import nbformat

    notebook = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell('results = "runs/nowhere"', metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell("from benchbook.reports import notebook_params\n"
                                  "notebook_params.located(results, 'results', 'result folders')")])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    nbformat.write(notebook, tmp_path / "in.ipynb")
    r = subprocess.run([str(Path(sys.executable).parent / "papermill"), "in.ipynb", "out.ipynb"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=180)
    assert r.returncode != 0
    said = "NotebookParameterError: notebook parameter results = 'runs/nowhere': no such file or folder: runs/nowhere"
    assert said in r.stderr and "run `make report` first" in r.stderr, r.stderr[-2000:]
    [error] = [o for c in nbformat.read(tmp_path / "out.ipynb", as_version=4).cells if c.cell_type == "code"
               for o in c.get("outputs", []) if o.output_type == "error"]
    assert error.ename == "NotebookParameterError" and "\n".join(error.traceback).count("\n") <= 3, error.traceback
    assert "benchbook/reports" not in "\n".join(error.traceback)
