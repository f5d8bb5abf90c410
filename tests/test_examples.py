"""The example logs of `make report`: up to date with their generator, and all analyzed as complete."""

from __future__ import annotations

import subprocess
import sys

from benchbook import analyze


def _files(folder):
    return {p.relative_to(folder).as_posix(): p for p in sorted(folder.rglob("*")) if p.is_file()}


def test_example_logs_are_what_the_generator_writes(repo_root, tmp_path):
    out = subprocess.run([sys.executable, str(repo_root / "tools" / "make_example_logs.py"), str(tmp_path)],
                         capture_output=True, text=True, check=False, timeout=120)
    assert out.returncode == 0, out.stderr
    committed, generated = _files(repo_root / "examples" / "logs"), _files(tmp_path)
    assert sorted(committed) == sorted(generated)
    stale = [name for name in committed if committed[name].read_bytes() != generated[name].read_bytes()]
    assert not stale, f"examples/logs differ from tools/make_example_logs.py output: {stale}"


def test_every_example_log_analyzes_as_complete(repo_root):
    result = analyze([repo_root / "examples" / "logs"])
    assert result.problems == []
    # 18 TF1 files of one run, 2 MXNet files of two runs (1 and 8 GPUs), 4 Mask R-CNN files.
    assert len(result.runs) == 18 + 2 * 2 + 4
    assert result.runs["status"].eq("complete").all()
    assert result.runs["recomputed_throughput"].notna().all()
    assert result.runs["reported_throughput"].notna().all()
    by_format = result.runs.groupby("format").size().to_dict()
    assert by_format == {"ngc_tf1_convnets": 18, "ngc_mxnet_resnet50": 4, "ngc_tf2_maskrcnn": 4}
    for column in ("gpus", "batch_size", "precision"):
        assert result.runs[column].notna().all(), column
    mx = result.runs[result.runs["format"] == "ngc_mxnet_resnet50"]
    assert mx["gpus"].tolist() == [1, 8, 1, 8]
    assert mx["batch_size"].tolist() == [96] * 4
