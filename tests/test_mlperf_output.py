"""What `benchbook mlperf score` shows a reader (issue 37, item 6): accelerators by vendor, model and memory
(the raw name kept), accelerator-minutes, the scaling factor to 4 digits, and which run failed and why."""

from __future__ import annotations

import argparse
import io

import pytest
from rich.console import Console

from benchbook.mlperf import accelerators, cli, results
from test_mlperf_score import SYSTEM, repository


@pytest.mark.parametrize(("raw", "memory", "want"), [
    ("NVIDIA A100-SXM4-40GB (400W)", "40 GB", ("NVIDIA", "A100", "NVIDIA A100 (40 GB)")),
    ("A100-SXM-80GB", None, ("NVIDIA", "A100", "NVIDIA A100")),
    ("nvidia a100 80gb pcie", "80 GB", ("NVIDIA", "A100", "NVIDIA A100 (80 GB)")),
    ("Tesla V100-SXM2-32GB", "32 GB", ("NVIDIA", "V100", "NVIDIA V100 (32 GB)")),
    ("NVIDIA H100-SXM5-80GB", "81559 MiB", ("NVIDIA", "H100", "NVIDIA H100 (81559 MiB)")),
    ("NVIDIA GeForce RTX 4090", "24GB", ("NVIDIA", "RTX 4090", "NVIDIA RTX 4090 (24GB)")),
    ("tpu-v3", "32 GB", ("Google", "TPU v3", "Google TPU v3 (32 GB)")),
    ("TPU v4", None, ("Google", "TPU v4", "Google TPU v4")),
    ("AMD Instinct MI300X", "192GB", ("AMD", "MI300X", "AMD MI300X (192GB)")),
    ("Habana Gaudi 2", None, ("Intel Habana", "Gaudi2", "Intel Habana Gaudi2")),
    ("N/A", "N/A", (None, None, "-")),
    ("Widget W1", None, (None, "Widget W1", "Widget W1")),
])
def test_an_accelerator_is_named_by_vendor_model_and_memory(raw, memory, want):
    found = accelerators.normalise(raw, memory)
    assert (found["vendor"], found["model"], accelerators.label(found)) == want and found["raw"] == raw


def test_the_table_shows_accelerator_minutes_scaling_and_the_failed_run(tmp_path):
    folder = repository(tmp_path, (10, 11, 12, 13, 14), scaling=1.03125, overrides={4: {"status": "aborted"}},
                        system={**SYSTEM, "accelerator_model_name": "NVIDIA A100-SXM4-80GB",
                                "accelerator_memory_capacity": "80 GB"})
    (found,) = results.score([folder])
    assert (found.accelerator, found.accelerator_vendor, found.accelerator_model, found.accelerator_memory) == \
        ("NVIDIA A100-SXM4-80GB", "NVIDIA", "A100", "80 GB")
    wide = Console(width=400, file=io.StringIO())  # one line per row
    args = argparse.Namespace(paths=[str(folder)], round=None, check=False, json=False)
    assert cli.cmd_score(args, wide, Console(file=io.StringIO())) == 0
    row = next(line for line in wide.file.getvalue().splitlines() if "box8" in line)
    cells = [c.strip() for c in row.strip("│ ").split("│")]
    minutes = 12.0 * 1.03125
    assert cells[4:] == ["16 x NVIDIA A100 (80 GB)", "PyTorch 2.0", f"{minutes:.4f}", f"{minutes * 16:.4f}", "yes",
                         "4/5", "1.0312", "result_4.txt: run_stop status 'aborted' (line 38), not 'success'"]


@pytest.mark.parametrize(("system_name", "implementation", "want"), [
    ("dgxa100_ngc22.09_pytorch", None, "PyTorch NVIDIA Release 22.09"),
    ("box8", "mxnet", "MXNet NVIDIA Release 22.09"),
    ("box8", None, "PyTorch NVIDIA Release 22.09, MXNet NVIDIA Release 22.09, TensorFlow NVIDIA Release 22.09"),
])
def test_the_framework_is_the_benchmarks_of_the_systems_list(tmp_path, system_name, implementation, want):
    listed = "PyTorch NVIDIA Release 22.09, MXNet NVIDIA Release 22.09, TensorFlow NVIDIA Release 22.09"
    folder = repository(tmp_path, system={**SYSTEM, "framework": listed})
    folder = folder.parent.rename(folder.parents[1] / system_name) / "resnet"
    (folder.parents[2] / "systems" / "box8.json").rename(folder.parents[2] / "systems" / f"{system_name}.json")
    if implementation:
        (folder.parents[2] / "benchmarks" / "resnet" / "implementations" / implementation).mkdir(parents=True)
    (found,) = results.score([folder])
    assert found.framework == want and found.frameworks_listed == listed
