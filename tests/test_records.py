"""records.config_beside: the run record next to a log, read for its `config` alone."""

import json

from benchbook.runfolder import records


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


def test_config_beside_is_empty_for_a_record_it_cannot_read(tmp_path, monkeypatch):
    """A record beside a log that cannot be read (a folder's permissions; root ignores chmod, so the refusal
    is simulated), is a link, or is not a regular file gives no metadata: never an error that stops the
    analysis of the log."""
    import errno
    import os

    log = tmp_path / "a.log"
    log.write_text("x\n")
    record = tmp_path / "a.log.run.json"
    record.write_text(json.dumps({"config": {"gpus": 2}}))
    real_stat, real_open = os.stat, os.open

    def refused(real):
        def call(path, *args, **kwargs):
            if os.fspath(path) == str(record):
                raise PermissionError(errno.EACCES, "Permission denied", str(path))
            return real(path, *args, **kwargs)
        return call

    monkeypatch.setattr(os, "stat", refused(real_stat))
    monkeypatch.setattr(os, "open", refused(real_open))
    assert records.config_beside(log) == {}
    monkeypatch.undo()
    assert records.config_beside(log) == {"gpus": 2}
    record.unlink()
    (tmp_path / "elsewhere.json").write_text(json.dumps({"config": {"gpus": 4}}))
    record.symlink_to(tmp_path / "elsewhere.json")
    assert records.config_beside(log) == {}


def test_a_fifo_named_run_json_is_a_problem_not_a_hang(tmp_path):
    """A received study folder with a FIFO for a record: reading it blocked `status` for ever."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    run = tmp_path / "s" / "r1"
    run.mkdir(parents=True)
    (run / "r1.log").write_text("x\n")
    os.mkfifo(run / records.RECORD)
    lib = str(Path(__file__).resolve().parents[1] / "lib")
    r = subprocess.run([sys.executable, "-m", "benchbook", "status", str(tmp_path / "s")], capture_output=True,
                       text=True, timeout=60, env={**os.environ, "PYTHONPATH": lib})
    assert r.returncode == 1, r.stdout + r.stderr
    (problem,) = records.table(tmp_path / "s")["problem"]  # it returned: in this process too
    assert problem == f"{run / records.RECORD}: not a readable run record: not a regular file"


def test_clean_writes_strict_json_for_every_non_finite_number():
    """A run record is strict JSON: NaN and both infinities become null, nested or not."""
    import json
    import math

    import numpy as np

    from benchbook.runfolder.records import clean

    value = clean({"a": math.inf, "b": [-math.inf, np.float64("nan"), 1.5], "c": np.float32(2.0)})
    assert value == {"a": None, "b": [None, None, 1.5], "c": 2.0}
    json.dumps(value, allow_nan=False)  # raises on Infinity or NaN
