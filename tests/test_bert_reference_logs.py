"""The real NVIDIA BERT logs of ../shared/reference-logs-bert: every published cell recomputed by its rule
(within 0.2%), the 32-GPU TF cells by no rule, the log's own figure as `reported`, and each run's metadata."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest
import yaml

from benchbook import analyze
from benchbook.logs.rules import Rule

SHARED = Path(__file__).resolve().parents[2] / "shared" / "reference-logs-bert"
RULES = {"final training_sequences_per_second (the log's own end-of-run DLL line)": "nvidia",
         "arithmetic mean of every per-iteration throughput_train record, warm-up included": "perf"}
TOLERANCE = 0.002

pytestmark = pytest.mark.skipif(not (SHARED / "expected.yaml").is_file(), reason="../shared is absent")


@pytest.fixture(scope="module")
def expected():
    return yaml.safe_load((SHARED / "expected.yaml").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def by_rule():
    """The runs of both sets by each rule name, keyed by (set/file, run)."""
    out = {}
    for name in ("nvidia", "perf", "perf_from_3", "steady"):
        paths = [SHARED / "ngc-tf1-bert"] + ([SHARED / "ngc-pytorch-bert"] if name == "nvidia" else [])
        runs = analyze(paths, rule=Rule(name=name)).runs
        out[name] = {(str(Path(s).relative_to(SHARED)), r): row for s, r, row in
                     zip(runs["source"], runs["run"], runs.to_dict("records"), strict=True)}
    return out


def _cells(expected):
    return [(group, run) for group in ("ngc-pytorch-bert", "ngc-tf1-bert") for run in expected[group]["runs"]]


def test_every_published_cell_follows_from_its_rule_or_from_none(expected, by_rule):
    exact, none = 0, 0
    for group, want in _cells(expected):
        key = (f"{group}/{want['file']}", want["run"])
        published = float(want["published"])
        if want["rule"] == "none exact":
            none += 1
            distances = {name: abs(runs[key]["recomputed_throughput"] - published) / published
                         for name, runs in by_rule.items() if key in runs
                         and not pd.isna(runs[key]["recomputed_throughput"])}
            assert distances["perf"] > TOLERANCE, key  # the era's rule does not give it
            assert want["check"]["by_rule"] == pytest.approx(by_rule["perf"][key]["recomputed_throughput"], rel=1e-6)
            continue
        got = by_rule[RULES[want["rule"]]][key]["recomputed_throughput"]
        assert abs(got - published) / published <= TOLERANCE, (key, got, published)
        assert got == pytest.approx(want["check"]["by_rule"], rel=1e-8)
        exact += 1
    assert (exact, none) == (18, 2)


def test_every_run_reports_the_log_s_own_figure(expected, by_rule):
    for group, want in _cells(expected):
        got = by_rule["nvidia"][(f"{group}/{want['file']}", want["run"])]
        if want["reported"] is None:
            assert pd.isna(got["reported_throughput"])
        else:
            assert math.isclose(got["reported_throughput"], want["reported"], rel_tol=1e-12)


def test_every_run_s_metadata_is_the_table_s_where_the_log_names_it(expected, by_rule):
    unknown = []
    for group, want in _cells(expected):
        got = by_rule["nvidia"][(f"{group}/{want['file']}", want["run"])]
        assert (got["gpus"], got["batch_size"], got["precision"]) == (want["gpus"], want["batch_size"],
                                                                        want["precision"]), want["file"]
        if pd.isna(got["seq_len"]):  # a multi-node tail: said, not guessed
            assert any("neither the sequence length nor the phase" in w for w in got["warnings"])
            unknown.append(want["file"])
            continue
        assert (got["seq_len"], got["phase"]) == (want["seq_len"], want["phase"]), want["file"]
    assert len(unknown) == 4 and all("gpu32" in f for f in unknown)
