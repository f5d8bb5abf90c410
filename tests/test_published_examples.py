"""examples/published/: the public logs the repository ships, one archive per set with its NOTICE and the
published numbers, read in place by the reference checks (what `make reference` runs without ../shared)."""

from __future__ import annotations

import importlib.util
import re

import pytest
import yaml

from benchbook.logs import archives

SETS = {"ngc-tf1-resnet50": None, "ngc-mxnet-resnet50": None, "ngc-tf2-maskrcnn": None,
        "ngc-mxnet-resnet50-dllogger": None, "ngc-pytorch-resnet50": "perf"}  # set: the rule of its numbers


def _tool(repo_root, name):
    spec = importlib.util.spec_from_file_location(name, repo_root / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def published(repo_root):
    return repo_root / "examples" / "published"


def test_every_set_is_one_small_archive_with_its_notice_and_numbers(published):
    assert sorted(p.name for p in published.iterdir()) == sorted([*SETS, "mlperf"])
    for folder in published.iterdir():
        archived = [p for p in folder.iterdir() if archives.kind(p.name)]
        assert len(archived) == 1 and archived[0].name.endswith(".tar.xz"), folder
        assert archived[0].stat().st_size < 1 << 20, archived[0]
        notice = (folder / "NOTICE").read_text(encoding="utf-8")
        assert re.search(r"https://github\.com/[\w.-]+/[\w.-]+ at commit [0-9a-f]{8}", notice), folder
        assert "Apache License, Version 2.0" in notice
        listing = archives.listing(archived[0])
        assert not listing.problems and listing.files
        assert yaml.safe_load((folder / "expected.yaml").read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", list(SETS))
def test_each_log_set_reproduces_its_published_numbers(repo_root, published, name, capsys):
    tool = _tool(repo_root, "check_reference_logs")
    expected = yaml.safe_load((published / name / "expected.yaml").read_text(encoding="utf-8"))
    assert list(expected) == [name]
    assert tool.check(published / name, expected, SETS[name]) == []
    listed = sum(len(s["runs"]) for s in expected.values())
    assert f"checked {listed} runs of {listed} listed; 0 mismatches" in capsys.readouterr().out


def test_the_mlperf_folders_score_as_published(repo_root, published):
    tool = _tool(repo_root, "check_mlperf_results")
    expected = yaml.safe_load((published / "mlperf" / "expected.yaml").read_text(encoding="utf-8"))
    assert {v["benchmark"] for v in expected.values()} == {"resnet", "maskrcnn"}
    assert tool.check(published / "mlperf", expected) == []
