"""The PyTorch workload on one GPU (`cpu.device: cuda`): the shipped gpu.yaml, its command, and the
settings that cannot run refused with the field and what to write."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from benchbook.studies import commands, runner, study

ROOT = Path(__file__).resolve().parents[1]
GPU = ROOT / "params" / "resnet50_pytorch" / "gpu.yaml"


def test_gpu_study_runs_four_precisions_with_100_measured_iterations(tmp_path, monkeypatch):
    monkeypatch.setenv("BENCHBOOK_PYTHON_PYTORCH", "/usr/bin/python3")
    s = study.load(GPU)
    assert s.iterations - s.warmup_steps >= 100
    plan = runner.plan(s, tmp_path)
    assert [rid for rid, *_ in plan][:4] == [f"cuda_{p}_bs256_syn_r1" for p in ("fp32", "tf32", "amp", "bf16")]
    _rid, _dir, cfg, cmd = plan[2]
    assert cfg["gpus"] == 1 and cmd.argv[0] == "/usr/bin/python3"
    argv = cmd.argv
    assert argv[argv.index("--precision") + 1] == "amp" and argv[argv.index("--batch_size") + 1] == "256"
    assert argv[argv.index("--device") + 1] == "cuda" and "--channels_last" in argv
    assert commands.setup_steps(s) == ["the runs use /usr/bin/python3 (named by BENCHBOOK_PYTHON_PYTORCH), "
                                       "which must import pytorch"]


def _write(tmp_path: Path, **changes) -> Path:
    doc = yaml.safe_load(GPU.read_text())
    for key, value in changes.items():
        doc[key] = {**doc[key], **value} if isinstance(value, dict) and isinstance(doc.get(key), dict) else value
    path = tmp_path / "gpu.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


@pytest.mark.parametrize(("changes", "message"), [
    ({"model": "resnet50_tf"}, "only resnet50_pytorch has a GPU workload"),
    ({"sweep": {"gpus": 0}}, "cpu.device cuda runs the workload on one GPU: write gpus: 1"),
    ({"sweep": {"gpus": 2}}, "write gpus: 1"),
    ({"sweep": {"precision": "fp16"}}, "'fp16' is not available on cpu.device cuda; allowed: fp32, tf32, amp, bf16"),
    ({"cpu": {"device": "cpu"}}, "precision: 'tf32' is not available on runtime cpu"),
])
def test_settings_a_gpu_run_cannot_have_are_refused(tmp_path, changes, message):
    with pytest.raises(study.StudyError, match=message.replace("(", r"\(").replace(")", r"\)")):
        study.load(_write(tmp_path, **changes))
