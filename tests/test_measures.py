"""Issue 46: measures with units. Each run of `analyze --json` carries `measures` ({key: {value, unit, rule}}):
throughput in its model's unit for every run, tokens/s (the same records, each sample its sequence length) for a
model with a sequence length; `Analysis.measures` is the long frame of them."""

from __future__ import annotations

import json

from benchbook import analyze
from benchbook.cli import main
from benchbook.logs.frames import MEASURE_COLUMNS
from test_parsers_bert import _namespace, _pytorch_run


def _bert_logs(tmp_path):
    known = _pytorch_run(0, _namespace(fp16=True, n_gpu=8, max_seq_length=512, phase2=True), [(1, 8.0)], 1234.5)
    unknown = [line for line in _pytorch_run(0, _namespace(n_gpu=8), [(1, 8.0)], 999.0) if "Namespace" not in line]
    (tmp_path / "phase2_gpu8.log").write_text("\n".join(known) + "\n")
    (tmp_path / "noconfig_gpu8.log").write_text("\n".join(unknown) + "\n")
    return tmp_path


def test_a_bert_run_measures_sequences_and_tokens_a_second(tmp_path, capsys):
    assert main(["analyze", str(_bert_logs(tmp_path)), "--json"]) == 0
    runs = {r["source"].rsplit("/", 1)[-1]: r for r in map(json.loads, capsys.readouterr().out.splitlines())}
    two = runs["phase2_gpu8.log"]
    assert two["seq_len"] == 512 and two["phase"] == 2
    assert two["measures"]["throughput"] == {"value": 1234.5, "unit": "sequences/s", "rule": two["rule"]}
    tokens = two["measures"]["tokens_per_s"]
    assert (tokens["value"], tokens["unit"]) == (1234.5 * 512, "tokens/s")
    assert tokens["rule"].startswith(two["rule"]) and "sequence length" in tokens["rule"]
    # no sequence length in the log: tokens/s is not made up, throughput stands
    assert list(runs["noconfig_gpu8.log"]["measures"]) == ["throughput"]


def test_a_resnet_run_measures_images_a_second(fixtures):
    result = analyze([fixtures / "ngc_tf1" / "tf_gpu1_amp_bs256.log"])
    assert list(result.measures.columns) == list(MEASURE_COLUMNS)
    row = result.measures.iloc[0]
    assert (row["measure"], row["unit"]) == ("throughput", "images/s") and len(result.measures) == len(result.runs)
    assert row["value"] == result.runs["recomputed_throughput"].iloc[0]
