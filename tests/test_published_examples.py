"""examples/published/: the public logs the repository ships, one archive per set with its NOTICE and the
published numbers, read in place by the reference checks (what `make reference` runs without ../shared);
params/published/: the entry of each set (studies.published)."""

from __future__ import annotations

import importlib.util
import lzma
import re

import pytest
import yaml

from benchbook.logs import archives
from benchbook.logs.analysis import analyze
from benchbook.studies import published as published_sets

SETS = {"ngc-tf1-resnet50": None, "ngc-mxnet-resnet50": None, "ngc-tf2-maskrcnn": None,
        "ngc-mxnet-resnet50-dllogger": None, "ngc-pytorch-resnet50": "perf"}  # set: the rule of its numbers
BERT_SETS = ("ngc-pytorch-bert", "ngc-tf1-bert")  # each cell names its rule (tools/check_bert_reference.py)
BERT_RULES = {"ngc-pytorch-bert": "nvidia", "ngc-tf1-bert": "perf"}  # the rule of each set's table


def _tool(repo_root, name):
    spec = importlib.util.spec_from_file_location(name, repo_root / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def published(repo_root):
    return repo_root / "examples" / "published"


def test_every_set_is_one_small_archive_with_its_notice_and_numbers(published):
    assert sorted(p.name for p in published.iterdir()) == sorted([*SETS, *BERT_SETS, "mlperf"])
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


@pytest.mark.parametrize("name", BERT_SETS)
def test_each_bert_set_gives_each_cell_by_its_rule_or_says_none_does(repo_root, published, name, monkeypatch):
    monkeypatch.syspath_prepend(str(repo_root / "tools"))  # (the tool imports check_reference_logs)
    tool = _tool(repo_root, "check_bert_reference")
    expected = yaml.safe_load((published / name / "expected.yaml").read_text(encoding="utf-8"))
    errors, lines = tool.check(published / name, expected)
    assert errors == []
    cells = [line for line in lines if " of published " in line or "no exact rule" in line]
    assert len(cells) == len(expected[name]["runs"]) == 10
    assert sum("no exact rule" in line for line in cells) == (2 if name == "ngc-tf1-bert" else 0)


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


def test_a_set_folder_is_analyzed_without_problems(published):
    result = analyze([published / "ngc-tf2-maskrcnn"])  # its NOTICE and expected.yaml are no logs
    assert not result.problems
    assert len(result.runs) == 8
    assert all(s.startswith(f"{published / 'ngc-tf2-maskrcnn' / 'logs.tar.xz'}!ngc-tf2-maskrcnn/tf_gpu")
               for s in result.runs["source"])


def test_every_entry_loads_and_points_at_the_shipped_set(repo_root, published):
    entries = published_sets.entries(repo_root / "params" / "published")
    assert sorted(e.name for e in entries) == sorted([*SETS, *BERT_SETS, "mlperf-resnet-maskrcnn"])
    for entry in entries:
        folder = entry.file("logs").parent
        assert folder.parent == published
        assert entry.file("notice") == folder / "NOTICE" and entry.file("expected") == folder / "expected.yaml"
        if entry.kind == "logs":
            assert list(yaml.safe_load(entry.file("expected").read_text(encoding="utf-8"))) == [entry.name]
            assert entry.rule == ({**SETS, **BERT_RULES}[entry.name] or "nvidia")


def _entry(tmp_path, **changes):
    (tmp_path / "logs.tar.xz").write_bytes(lzma.compress(b""))
    (tmp_path / "expected.yaml").write_text("a: 1\n")
    (tmp_path / "NOTICE").write_text("n\n")
    doc = {"schema_version": 1, "name": "s", "title": "t", "publisher": "p", "hardware": "h", "software": "s",
           "logs": "logs.tar.xz", "expected": "expected.yaml", "notice": "NOTICE", "model": "resnet50_pytorch",
           "rule": "perf", **changes}
    path = tmp_path / "entry.yaml"
    path.write_text(yaml.safe_dump({k: v for k, v in doc.items() if v is not None}, sort_keys=False))
    return path


def test_an_entry_is_checked_field_by_field_with_its_line(tmp_path):
    assert published_sets.load(_entry(tmp_path)).file("logs") == tmp_path / "logs.tar.xz"
    with pytest.raises(published_sets.PublishedError, match=r"entry\.yaml:11: rule = 'dlperf': not a rule of "
                                                            r"resnet50_pytorch's log formats; known: nvidia, perf"):
        published_sets.load(_entry(tmp_path, rule="dlperf"))
    with pytest.raises(published_sets.PublishedError, match=r"entry\.yaml:7: logs = 'gone.zip': .*gone\.zip: no such "
                                                            r"file \(paths are relative to the entry's folder\)"):
        published_sets.load(_entry(tmp_path, logs="gone.zip"))
    with pytest.raises(published_sets.PublishedError, match=r"entry\.yaml:7: logs = 'NOTICE': NOTICE: not an archive"):
        published_sets.load(_entry(tmp_path, logs="NOTICE"))
    with pytest.raises(published_sets.PublishedError, match=r"entry\.yaml:12:.*modle"):
        published_sets.load(_entry(tmp_path, modle="x"))
    with pytest.raises(published_sets.PublishedError, match=r"entry\.yaml:\d+: model = 'resnet99'"):
        published_sets.load(_entry(tmp_path, model="resnet99"))
    with pytest.raises(published_sets.PublishedError, match=r"rule: mlperf, no model nor reference"):
        published_sets.load(_entry(tmp_path, kind="mlperf"))


def test_an_entry_nested_too_deeply_is_a_clear_error(tmp_path):
    deep = tmp_path / "deep.yaml"
    deep.write_text("name: x\nlogs: " + "[" * 5000 + "]" * 5000 + "\n", encoding="utf-8")
    with pytest.raises(published_sets.PublishedError, match=r"deep\.yaml: the YAML is nested too deeply"):
        published_sets.load(deep)


def test_an_entry_that_cannot_be_read_or_is_no_mapping_is_named(tmp_path):
    with pytest.raises(published_sets.PublishedError, match=r"folder\.yaml: cannot read the published-set entry"):
        published_sets.load((tmp_path / "folder.yaml").mkdir() or tmp_path / "folder.yaml")
    (tmp_path / "list.yaml").write_text("- a\n- b\n", encoding="utf-8")
    with pytest.raises(published_sets.PublishedError, match=r"list\.yaml: a published-set entry is a YAML mapping"):
        published_sets.load(tmp_path / "list.yaml")
