"""tools/check_reference_logs.py on a tiny reference folder built from the fixtures.

The folder has the layout of ../shared/reference-logs: a folder per group and an expected.yaml listing,
per group, the runs of each file in file order with GPUs, per-GPU batch, precision, XLA and the
reported throughput.
"""

from __future__ import annotations

import copy
import subprocess
import sys

import pytest
import yaml

# The layout and names of the published reference logs: one group per format.
PUBLISHED_LAYOUT = {
    "ngc-tf1-resnet50": {
        "files": {"tf_gpu1_amp_bs256.txt": "ngc_tf1/tf_gpu1_amp_bs256.log"},
        "runs": [{"file": "tf_gpu1_amp_bs256.txt", "run": 0, "gpus": 1, "batch_size": 256, "precision": "amp",
                  "xla": False, "reported": 1055.5, "published": 1055.5}],
    },
    "ngc-mxnet-resnet50": {
        "files": {"mxnet_gpu1_gpu4_amp_bs64.txt": "ngc_mxnet/mxnet_gpu1_gpu4_amp_bs64.txt"},
        "runs": [
            {"file": "mxnet_gpu1_gpu4_amp_bs64.txt", "run": 0, "gpus": 1, "batch_size": 64, "precision": "amp",
             "xla": False, "reported": 605.07, "published": 605.07},
            {"file": "mxnet_gpu1_gpu4_amp_bs64.txt", "run": 1, "gpus": 4, "batch_size": 64, "precision": "amp",
             "xla": False, "reported": 2336.8, "published": 2336.8},
        ],
    },
    "ngc-tf2-maskrcnn": {
        "files": {"tf_gpu8_amp_bs2.txt": "ngc_maskrcnn/hook_running_mean_amp_bs2.txt"},
        "runs": [{"file": "tf_gpu8_amp_bs2.txt", "run": 0, "gpus": 8, "batch_size": 2, "precision": "amp",
                  "xla": True, "reported": 46.8, "published": 46.8}],
    },
}


def _build(tmp_path, fixtures, spec, change=None):
    folder = tmp_path / "reference-logs"
    expected = {}
    for group, entry in spec.items():
        for name, src in entry["files"].items():
            target = folder / group / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes((fixtures / src).read_bytes())
        expected[group] = {"source": "written for the benchbook tests", "runs": copy.deepcopy(entry["runs"])}
    if change:
        change(expected)
    (folder / "expected.yaml").write_text(yaml.safe_dump(expected, sort_keys=False))
    return folder


def _check(repo_root, folder):
    out = subprocess.run([sys.executable, str(repo_root / "tools" / "check_reference_logs.py"), str(folder)],
                         capture_output=True, text=True, check=False, timeout=120)
    return out.returncode, out.stdout + out.stderr


def _set(group, index, field, value):
    def change(expected):
        expected[group]["runs"][index][field] = value
    return change


def test_checker_passes_within_0_2_percent_of_the_published_value(tmp_path, fixtures, repo_root):
    # 606.2 is 0.187% above the recomputed 605.07: inside the tolerance.
    change = _set("ngc-mxnet-resnet50", 0, "published", 606.2)
    code, output = _check(repo_root, _build(tmp_path, fixtures, PUBLISHED_LAYOUT, change))
    assert code == 0, output


def test_checker_checks_only_the_groups_named(tmp_path, fixtures, repo_root):
    folder = _build(tmp_path, fixtures, PUBLISHED_LAYOUT, _set("ngc-tf1-resnet50", 0, "gpus", 8))
    out = subprocess.run([sys.executable, str(repo_root / "tools" / "check_reference_logs.py"), str(folder),
                          "--group", "ngc-mxnet-resnet50"], capture_output=True, text=True, check=False, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "checked 2 runs of 2 listed" in out.stdout


def test_checker_passes_when_every_value_matches(tmp_path, fixtures, repo_root):
    code, output = _check(repo_root, _build(tmp_path, fixtures, PUBLISHED_LAYOUT))
    assert code == 0, output
    assert "checked 4 runs of 4 listed; 0 mismatches" in output
    assert "MISMATCH" not in output


@pytest.mark.parametrize("change, words", [
    (_set("ngc-mxnet-resnet50", 1, "gpus", 8), ["mxnet_gpu1_gpu4_amp_bs64.txt run 1", "gpus is 4, expected 8"]),
    (_set("ngc-tf1-resnet50", 0, "precision", "fp32"), ["tf_gpu1_amp_bs256.txt run 0", "precision"]),
    (_set("ngc-tf2-maskrcnn", 0, "xla", False), ["tf_gpu8_amp_bs2.txt run 0", "xla"]),
    (_set("ngc-tf2-maskrcnn", 0, "reported", 46.9), ["reported_throughput is 46.8, expected 46.9"]),
    # 0.2%: benchmark.py prints 5 significant digits, 605.07; 606.3 is 0.203% away.
    (_set("ngc-mxnet-resnet50", 0, "published", 606.3), ["recomputed_throughput", "not within 0.2%", "606.3"]),
    (_set("ngc-tf1-resnet50", 0, "run", 1), ["tf_gpu1_amp_bs256.txt run 1", "not found"]),
])
def test_checker_fails_when_one_value_is_off(tmp_path, fixtures, repo_root, change, words):
    code, output = _check(repo_root, _build(tmp_path, fixtures, PUBLISHED_LAYOUT, change))
    assert code == 1
    mismatches = [line for line in output.splitlines() if line.startswith("MISMATCH")]
    assert mismatches, output
    assert any(all(w in line for w in words) for line in mismatches), output
    assert "0 mismatches" not in output


def test_checker_recomputes_by_the_named_rule_that_printed_the_published_number(tmp_path, fixtures, repo_root):
    # main.py's Summary is the mean of every iteration (5378.33); a report that skipped the first ten
    # iterations published 5810.0: only `--rule perf` reproduces it.
    layout = {"ngc-pytorch-resnet50": {
        "files": {"pytorch_gpu8_amp_bs256.txt": "ngc_pytorch/pytorch_gpu8_amp_bs256.txt"},
        "runs": [{"file": "pytorch_gpu8_amp_bs256.txt", "run": 0, "gpus": 8, "batch_size": 256, "precision": "amp",
                  "reported": 5378.33, "published": 5810.0}]}}
    folder = _build(tmp_path, fixtures, layout)
    code, output = _check(repo_root, folder)
    assert code == 1 and "not within 0.2% of the published 5810" in output
    out = subprocess.run([sys.executable, str(repo_root / "tools" / "check_reference_logs.py"), str(folder),
                          "--rule", "perf"], capture_output=True, text=True, check=False, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
