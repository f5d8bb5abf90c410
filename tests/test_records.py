"""records.config_beside: the run record next to a log, read for its `config` alone."""

import json

from benchbook.studies import records


def test_config_beside_reads_the_config_alone(tmp_path):
    """The analysis reads a run record's `config`, never the analysis the runner wrote back into it."""
    log = tmp_path / "run.log"
    log.write_text("x\n")
    (tmp_path / "run.json").write_text(json.dumps({
        "config": {"gpus": 8, "batch_size": 256, "precision": "amp", "script": "train.py"},
        "analysis": {"gpus": 1, "batch_size": 2048, "precision": "fp32"}}))
    assert records.config_beside(log) == {"gpus": 8, "batch_size": 256, "precision": "amp"}


def test_config_beside_prefers_the_log_s_own_record_and_ignores_a_config_that_is_no_object(tmp_path):
    log = tmp_path / "a.log"
    log.write_text("x\n")
    (tmp_path / "run.json").write_text(json.dumps({"config": {"gpus": 8}}))
    (tmp_path / "a.log.run.json").write_text(json.dumps({"config": ["gpus", 2]}))
    assert records.config_beside(log) == {}
    (tmp_path / "a.log.run.json").write_text(json.dumps({"config": {"gpus": 2}}))
    assert records.config_beside(log) == {"gpus": 2}
    assert records.config_beside(tmp_path / "elsewhere.log") == {"gpus": 8}
