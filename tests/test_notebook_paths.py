"""A notebook's path parameters are found the same way wherever its kernel runs (issue 40): JupyterLab starts
it in notebooks/, papermill and `benchbook publish` at the repository root."""

from __future__ import annotations

from pathlib import Path

from benchbook.reports.notebook_params import ROOT, check

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
