"""The shipped published sets agree with themselves (issue 39, item 9): each run's `published` number in a set's
expected.yaml is the number its reference table prints (params/references/<reference>.yaml, the publication's
digits: 979.091 where the script's 979.0916... is truncated, not rounded to 979.092)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).parent.parent
# The ResNet-50 and Mask R-CNN sets of logs (the MLPerf set's scores are checked by its own test; a BERT table has a
# sequence length beside GPUs, batch and precision).
SETS = [p for p in sorted((ROOT / "params" / "published").glob("*.yaml"))
        if yaml.safe_load(p.read_text(encoding="utf-8")).get("kind") != "mlperf" and "bert" not in p.stem]


def _published_rows(reference: str) -> dict[tuple, float]:
    doc = yaml.safe_load((ROOT / "params" / "references" / f"{reference}.yaml").read_text(encoding="utf-8"))
    return {(r["gpus"], r["batch_size"], r["precision"]): float(r["throughput"]) for r in doc["rows"]}


@pytest.mark.parametrize("entry", SETS, ids=[p.stem for p in SETS])
def test_each_expected_published_number_is_the_reference_tables(entry):
    doc = yaml.safe_load(entry.read_text(encoding="utf-8"))
    expected_file = (entry.parent / doc["expected"]).resolve()
    runs = yaml.safe_load(expected_file.read_text(encoding="utf-8"))[doc["name"]]["runs"]
    table = _published_rows(doc["reference"])
    differ = [f"{r['file']}:{r['run']}: expected.yaml {r['published']}, the table {table[key]}"
              for r in runs if "published" in r and (key := (r["gpus"], r["batch_size"], r["precision"])) in table
              and float(r["published"]) != table[key]]
    assert not differ, "\n".join(differ)
    assert any((r["gpus"], r["batch_size"], r["precision"]) in table for r in runs)


@pytest.mark.parametrize("entry", SETS, ids=[p.stem for p in SETS])
def test_each_reports_published_set_up_names_what_the_index_does(entry):
    """The index shows a set's `software` (its container and framework version); the report's published set-up
    (its reference's software) names the same, not only an image tag or a framework without its version."""
    from benchbook.reports import references

    doc = yaml.safe_load(entry.read_text(encoding="utf-8"))
    software = references.load(doc["reference"]).software
    assert software.container and software.container in doc["software"], (software.container, doc["software"])
    if "(" in doc["software"]:  # the index names the framework's version: so does the report
        version = software.framework_version
        assert version and f" {version})" in doc["software"], (version, doc["software"])
