"""The LLM pre-training formats (issue 50): Megatron-LM and its forks' iteration lines read with their axes and
measures, each named rule's value against the arithmetic it cites (computed here, independently of the
library), and the real logs of ../shared/reference-logs-llm against their expected.yaml where that is present."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
import yaml

from benchbook import analyze
from benchbook.logs.rules import Rule

SHARED = Path(__file__).resolve().parents[1] / ".." / "shared" / "reference-logs-llm"

ARGS = """------------------------ arguments ------------------------
  bf16 ............................................ True
  context_parallel_size ........................... 2
  encoder_seq_length .............................. 8192
  expert_model_parallel_size ...................... 1
  fp8 ............................................. None
  global_batch_size ............................... 64
  micro_batch_size ................................ 1
  pipeline_model_parallel_size .................... 4
  seq_length ...................................... 4096
  tensor_model_parallel_size ...................... 2
  train_iters ..................................... {iters}
  world_size ...................................... 32
-------------------- end of arguments ---------------------
"""


def _times(n: int) -> list[float]:
    return [900.0 + 7.0 * ((i * 37) % 11) for i in range(n)]  # ms, varied


def megatron(n: int = 50, prefix: str = "", micro: bool = True, tflops: bool = True, twice: int | None = None,
             iters: int = 50) -> str:
    """A Megatron-LM log of `n` logged iterations (one-based, log interval 1) in training_log's layout."""
    lines = [prefix + line for line in ARGS.format(iters=iters).splitlines()]
    for i, ms in enumerate(_times(n), start=1):
        stamp = f"2026-08-22 15:{i // 60:02d}:{i % 60:02d}" + (".123456" if micro else "")
        line = (f"{prefix} [{stamp}] iteration {i:8d}/{iters:8d} | consumed samples: {64 * i:12d} | elapsed time per "
                f"iteration (ms): {ms:.1f} | "
                + (f"throughput per GPU (TFLOP/s/GPU): {ms / 3:.1f} | " if tflops else "")
                + f"learning rate: 1.000000E-04 | global batch size: {64:5d} | lm loss: {10 - i / 100:.6E} | loss "
                "scale: 1.0 | grad norm: 1.234 | number of skipped iterations:   0 | number of nan iterations:   0 |")
        lines.append(line)
        if twice == i:
            lines.append(line)
    return "\n".join(lines) + "\n"


def _run(tmp_path: Path, text: str, file: str = "log.txt", **rule):
    path = tmp_path / file
    path.write_text(text)
    result = analyze([path], Rule(**{"name": "all", **rule}))  # every logged record unless a rule is named
    assert not result.problems, result.problems
    measures = result.measures.set_index(["run", "measure"])["value"]
    return result.runs, measures


def test_megatron_axes_and_measures(tmp_path):
    runs, m = _run(tmp_path, megatron(prefix="0: [default0]:"))
    run = runs.iloc[0]
    assert run["format"] == "megatron_lm" and run["status"] == "complete"
    assert (run["gpus"], run["global_batch_size"], run["batch_size"], run["seq_len"]) == (32, 64, 1, 4096)
    assert (run["tensor_parallel"], run["pipeline_parallel"], run["context_parallel"], run["expert_parallel"]) == \
        (2, 4, 2, 1)
    assert run["precision"] == "bf16" and run["llm"] is None  # (no num_layers printed)
    times = [t / 1000 for t in _times(50)]
    step = sum(times) / 50
    assert m[(0, "step_time")] == pytest.approx(step, rel=1e-3)
    assert m[(0, "tokens_per_gpu")] == pytest.approx(4096 * 64 / step / 32, rel=1e-3)
    assert m[(0, "tflops_per_gpu")] == pytest.approx(sum(round(t / 3, 1) for t in _times(50)) / 50, rel=1e-3)
    assert m[(0, "loss")] == pytest.approx(sum(10 - i / 100 for i in range(1, 51)) / 50, rel=1e-3)


@pytest.mark.parametrize(("rule", "first", "last"), [("nvidia", 35, 44), ("dgxc_v25.05", 11, 44),
                                                     ("dgxc_v24.11", 50, 50)])
def test_dgxc_windows(tmp_path, rule, first, last):
    """Each dgxc-benchmarking release's window: the mean step time of its iterations (one-based for Megatron)."""
    _, m = _run(tmp_path, megatron(micro=False), name=rule)
    times = [t / 1000 for t in _times(50)][first - 1:last]
    assert m[(0, "step_time")] == pytest.approx(sum(times) / len(times), rel=1e-3)
    assert m[(0, "tokens_per_gpu")] == pytest.approx(4096 * 64 * len(times) / sum(times) / 32, rel=1e-3)


@pytest.mark.parametrize(("rule", "fraction"), [("bridge_skip0.70", 0.70), ("bridge_skip0.75", 0.75),
                                                ("bridge_skip0.1", 0.1)])
def test_bridge_skip_fractions(tmp_path, rule, fraction):
    _, m = _run(tmp_path, megatron(n=40, iters=40), name=rule)
    times = [t / 1000 for t in _times(40)][math.floor(fraction * 40):]
    assert m[(0, "step_time")] == pytest.approx(sum(times) / len(times), rel=1e-3)


def test_line_printed_twice_cut_off_and_skip_records(tmp_path):
    """A line two prefixes print is one record; a log cut off is incomplete; --skip-records applies."""
    runs, m = _run(tmp_path, megatron(n=30, twice=5, tflops=False, iters=100), skip_records=10)
    assert runs.iloc[0]["status"] == "incomplete" and runs.iloc[0]["iterations"] == 20
    times = [t / 1000 for t in _times(30)][10:]
    assert m[(0, "step_time")] == pytest.approx(sum(times) / 20, rel=1e-3)
    assert math.isnan(m[(0, "tflops_per_gpu")])  # --log-throughput off: none logged, and no shape to derive it


def test_primus_running_average_pairs(tmp_path):
    """AMD Primus prints `instant/running-average`: the instant is the record's."""
    text = megatron(n=5, tflops=False).replace("(ms): 9", "(ms): 9").splitlines()
    text = [t.replace("elapsed time per iteration (ms): ", "elapsed time per iteration (ms): ").replace(
        " | learning rate", "/999.9 | learning rate") if " iteration " in t else t for t in text]
    _, m = _run(tmp_path, "\n".join(text) + "\n")
    assert m[(0, "step_time")] == pytest.approx(sum(_times(5)) / 5 / 1000, rel=1e-3)


def test_deepspeed_fields_and_bridge_line(tmp_path):
    ds = megatron(n=4, tflops=False).replace("number of nan iterations:   0 |",
                                              "number of nan iterations:   0 | samples per second: 1.0 | "
                                              "tokens per gpu per second (tgs): 100.0 | TFLOPs: 7.50 |")
    runs, m = _run(tmp_path, ds, "ds.log")
    assert m[(0, "tflops_per_gpu")] == pytest.approx(7.5) and runs.iloc[0]["format"] == "megatron_deepspeed"
    bridge = "\n".join(line + ("\nStep Time : 2.50s GPU utilization: 600.0MODEL_TFLOP/s/GPU" if " iteration " in line
                               else "") for line in megatron(n=4, tflops=False).splitlines()) + "\n"
    _, m = _run(tmp_path, bridge, "bridge.log")
    assert m[(0, "step_time")] == pytest.approx(2.5) and m[(0, "tflops_per_gpu")] == pytest.approx(600.0)


def _expected():
    return yaml.safe_load((SHARED / "expected.yaml").read_text()) if (SHARED / "expected.yaml").exists() else {}


@pytest.mark.skipif(not (SHARED / "expected.yaml").exists(), reason="../shared/reference-logs-llm absent")
@pytest.mark.parametrize("name", ["elena-attn-bench", "stark-megads", "primus-dsv4-p57"])
def test_shared_megatron_logs(name):
    """The real logs' step time, TFLOP/s/GPU and tokens/s/GPU over all logged iterations, and their axes."""
    entry = _expected()[name]
    for f in entry["files"]:
        result = analyze([SHARED / name / f["file"]], Rule(name="all"))
        assert not result.problems
        run = result.runs.iloc[0]
        m = result.measures.set_index(["run", "measure"])["value"]
        c = f["config"]
        assert run["format"] == entry["format"]
        assert (run["gpus"], run["global_batch_size"], run["batch_size"], run["seq_len"], run["tensor_parallel"],
                run["pipeline_parallel"]) == (c["gpus"], c["gbs"], c["mbs"], c["seq"], c["tp"], c["pp"])
        assert run["iterations"] == f["iterations_logged"]
        assert run["llm"] == f"{c['num_layers']} layers, hidden {c['hidden']}" if "hidden" in c else True
        assert m[(0, "step_time")] * 1000 == pytest.approx(f["step_ms_mean_all"], rel=1e-3)
        assert m[(0, "tflops_per_gpu")] == pytest.approx(f["tflops_per_gpu_mean_all"], rel=1e-3)
        assert m[(0, "tokens_per_gpu")] == pytest.approx(f["tokens_per_s_per_gpu_from_mean_step_all"], rel=1e-3)
        after = analyze([SHARED / name / f["file"]], Rule(name="all", skip_records=f["dropped_as_first_10pct"]))
        m = after.measures.set_index(["run", "measure"])["value"]  # after the first 10% of the iterations
        assert m[(0, "step_time")] * 1000 == pytest.approx(f["step_ms_mean_after10pct"], rel=1e-3)
        assert m[(0, "tflops_per_gpu")] == pytest.approx(f["tflops_per_gpu_mean_after10pct"], rel=1e-3)
        assert m[(0, "tokens_per_gpu")] == pytest.approx(f["tokens_per_s_per_gpu_from_mean_step_after10pct"], rel=1e-3)


def torchtitan(steps: int = 100, freq: int = 10, colour: bool = True, mfu: bool = True, start: int = 1) -> str:
    """A torchtitan log in train.py / metrics.py's layout, rank-prefixed as torchrun's `--local-ranks-filter 0`."""
    c = (lambda code: f"\x1b[{code}m") if colour else (lambda code: "")
    head = "[rank0]:[titan] 2026-03-24 10:00:{s:02d},100 - root - INFO - "
    lines = [head.format(s=0) + "Building device mesh with parallelism: pp=2, dp_replicate=1, dp_shard=4, cp=1, tp=2, "
                                "ep=1",
             head.format(s=1) + "CUDA capacity: NVIDIA H100 80GB HBM3 with 79.11GiB memory",
             head.format(s=1) + "Building llama3 8B",
             head.format(s=2) + "Trainer is initialized with local batch size 8, global batch size 32, gradient "
                                "accumulation steps 1, sequence length 8192, total steps 100 (warmup 20)",
             head.format(s=3) + f"Training starts at step {start}"]
    for k, step in enumerate(range(start - 1 + freq, steps + 1, freq)):
        tps, tflops = 8000 + 13 * k, 400.0 + k
        lines.append(f"[rank0]:[titan] 2026-03-24 10:{1 + k:02d}:00,000 - root - INFO - {c(31)}step: {step:2d}  "
                     f"{c(32)}loss: {9 - k / 10:8.5f}  {c(33)}grad_norm:  1.2345  {c(34)}memory: 61.80GiB(64.93%)  "
                     f"{c(35)}tps: {tps:,}  {c(36)}tflops: {tflops:.2f}  "
                     f"{c(37)}mfu: {f'{tflops / 9.89:.2f}%' if mfu else 'N/A'}{c(39)}")
    lines.append(head.format(s=59) + "Training completed")
    return "\n".join(lines) + "\n"


def test_torchtitan_axes_measures_and_rules(tmp_path):
    runs, m = _run(tmp_path, torchtitan())
    run = runs.iloc[0]
    assert (run["format"], run["status"], run["gpus"], run["global_batch_size"], run["batch_size"]) == \
        ("torchtitan", "complete", 16, 32, 8)
    assert (run["seq_len"], run["tensor_parallel"], run["pipeline_parallel"]) == (8192, 2, 2)
    assert (run["gpu_type"], run["llm"]) == ("NVIDIA H100 80GB HBM3", "llama3 8B")
    tps = [8000 + 13 * k for k in range(10)]
    assert m[(0, "tokens_per_gpu")] == pytest.approx(sum(tps) / 10, rel=1e-3)
    assert m[(0, "throughput")] == pytest.approx(sum(tps) / 10 * 16 / 8192, rel=1e-3)  # tps x GPUs / sequence
    assert m[(0, "mfu")] == pytest.approx(sum((400 + k) / 9.89 for k in range(10)) / 10, rel=1e-3)
    _, m = _run(tmp_path, torchtitan(), name="torchtitan")  # the value logged at step 90
    assert m[(0, "tokens_per_gpu")] == pytest.approx(8000 + 13 * 8) and m[(0, "tflops_per_gpu")] == 408.0


def test_torchtitan_plain_na_mfu_and_resume(tmp_path):
    """No colours, `mfu: N/A` (no peak for FP8/MX): no MFU; a resume from step 51 reads its own steps."""
    runs, m = _run(tmp_path, torchtitan(colour=False, mfu=False, start=51))
    assert runs.iloc[0]["iterations"] == 5 and math.isnan(m[(0, "mfu")])  # (no precision logged: no peak either)
    assert m[(0, "tokens_per_gpu")] == pytest.approx(sum(8000 + 13 * k for k in range(5)) / 5, rel=1e-3)


@pytest.mark.skipif(not (SHARED / "expected.yaml").exists(), reason="../shared/reference-logs-llm absent")
def test_shared_torchtitan_log():
    entry = _expected()["torchtitan-qwen3-14b-run256"]
    f = entry["files"][0]
    path = SHARED / "torchtitan-qwen3-14b-run256" / f["file"]
    result = analyze([path], Rule(name="all"))
    m = result.measures.set_index(["run", "measure"])["value"]
    run, c = result.runs.iloc[0], f["config"]
    assert (run["gpus"], run["global_batch_size"], run["batch_size"], run["seq_len"]) == \
        (c["gpus"], c["gbs"], c["mbs"], c["seq"])
    assert (run["gpu_type"], run["llm"]) == ("NVIDIA B200", "qwen3 14B")
    assert m[(0, "tokens_per_gpu")] == pytest.approx(f["printed_tokens_per_s_per_gpu_mean_all"], rel=1e-3)
    assert m[(0, "tflops_per_gpu")] == pytest.approx(f["tflops_per_gpu_mean_all"], rel=1e-3)
    assert m[(0, "mfu")] == pytest.approx(f["mfu_pct_mean_all"], rel=1e-3)
    after = analyze([path], Rule(name="all", skip_records=f["dropped_as_first_10pct"]))
    m = after.measures.set_index(["run", "measure"])["value"]
    assert m[(0, "tokens_per_gpu")] == pytest.approx(f["printed_tokens_per_s_per_gpu_mean_after10pct"], rel=1e-3)
    assert m[(0, "mfu")] == pytest.approx(f["mfu_pct_mean_after10pct"], rel=1e-3)
    last = analyze([path], Rule(name="titan_last")).measures.set_index(["run", "measure"])["value"]
    assert last[(0, "tokens_per_gpu")] == pytest.approx(entry["files"][0]["published"]["tokens_per_sec"], rel=1e-3)
    assert last[(0, "mfu")] == pytest.approx(entry["files"][0]["published"]["mfu_percent"], rel=1e-3)


def nemo2(n: int = 100, tflops_key: str = "TFLOPS_per_GPU", tokens: bool = False) -> str:
    """A NeMo 2 log: the recipe's reprs, Lightning's members line, zero-based progress lines."""
    lines = ["Initializing distributed: GLOBAL_RANK: 0, MEMBER: 1/64",
             "ParallelismConfig(tensor_model_parallel_size=4, pipeline_model_parallel_size=2, "
             "context_parallel_size=1, expert_model_parallel_size=1), seq_length=8192, micro_batch_size=1, "
             "global_batch_size=128, fp8='hybrid', fp8_recipe='mxfp8'"]
    for i in range(n):
        t = _times(n)[i] / 100  # s
        lines.append(f"Training epoch 0, iteration {i}/{n - 1} | lr: 1.5e-05 | global_batch_size: 128 | global_step: "
                     f"{i} | reduced_train_loss: {11 - i / 50:.4f} | train_step_timing in s: {t:.3f}"
                     + (f" | {tflops_key}: {t * 100:.1f}" if i else "")  # the first step logs no TFLOP/s
                     + (" | tokens_per_sec_per_gpu: 2000.0" if tokens else "")
                     + f" | consumed_samples: {128 * (i + 1)}")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("key", ["TFLOPS_per_GPU", "tflops_per_sec_per_gpu"])
def test_nemo2_axes_and_dgxc_zero_based_window(tmp_path, key):
    runs, m = _run(tmp_path, nemo2(tflops_key=key), name="nvidia")
    run = runs.iloc[0]
    assert (run["format"], run["status"], run["gpus"], run["global_batch_size"], run["seq_len"]) == \
        ("nemo2", "complete", 64, 128, 8192)
    assert (run["tensor_parallel"], run["pipeline_parallel"], run["precision"]) == (4, 2, "mxfp8")
    times = [round(t / 100, 3) for t in _times(100)][35:45]  # iterations 35-44 as printed, zero-based
    assert m[(0, "step_time")] == pytest.approx(sum(times) / 10, rel=1e-3)
    assert m[(0, "tokens_per_gpu")] == pytest.approx(8192 * 128 * 10 / sum(times) / 64, rel=1e-3)
    assert m[(0, "tflops_per_gpu")] == pytest.approx(sum(round(t * 100, 1) for t in times) / 10, rel=1e-3)


def test_nemo2_flops_callback_second_half_and_cut_off(tmp_path):
    runs, m = _run(tmp_path, nemo2(n=60).replace("/59 |", "/99 |"), name="second_half")
    assert runs.iloc[0]["status"] == "incomplete"
    times = [round(t / 100, 3) for t in _times(60)][30:]
    assert m[(0, "step_time")] == pytest.approx(sum(times) / 30, rel=1e-3)


def test_megatron_resume_is_another_run_and_nan_grad_norm_is_said(tmp_path):
    """A job resumed from a checkpoint prints its arguments again and counts on: two runs; a NaN grad norm warns."""
    first = megatron(n=20, iters=40)
    second = re.sub(r"iteration +([0-9]+)/", lambda g: f"iteration {int(g.group(1)) + 20:8d}/",
                    megatron(n=20, iters=40))
    second = second.replace("grad norm: 1.234 | number of skipped iterations:   0",
                            "grad norm: nan | number of skipped iterations:   1", 1)
    runs, m = _run(tmp_path, first + second + "\n")
    assert len(runs) == 2 and list(runs["status"]) == ["incomplete", "complete"]
    assert any("INVALID_GRAD_NORM" in w for w in runs.iloc[1]["warnings"])
    assert not any("INVALID_GRAD_NORM" in w for w in runs.iloc[0]["warnings"])
    assert m[(1, "step_time")] == pytest.approx(sum(_times(20)) / 20 / 1000, rel=1e-3)


def test_nemo2_two_runs_in_one_file(tmp_path):
    runs, m = _run(tmp_path, nemo2(n=10) + nemo2(n=20))
    assert len(runs) == 2 and list(runs["iterations"]) == [10, 20]


def test_method_applies_to_logged_measures(tmp_path):
    import statistics

    _, m = _run(tmp_path, megatron(n=21, iters=21), method="median")
    assert m[(0, "step_time")] == pytest.approx(statistics.median(_times(21)) / 1000, rel=1e-3)


def test_analyze_json_gives_the_measures_and_axes_under_the_catalog_names(tmp_path, capsys):
    import json

    from benchbook.cli import main

    path = tmp_path / "megatron.log"
    path.write_text(megatron(n=50))
    assert main(["analyze", "--json", "--rule", "nvidia", "--skip-records", "4", str(path)]) == 0
    run = json.loads(capsys.readouterr().out)
    assert (run["gpus"], run["global_batch_size"], run["seq_len"], run["tensor_parallel"], run["pipeline_parallel"],
            run["context_parallel"], run["expert_parallel"]) == (32, 64, 4096, 2, 4, 2, 1)
    times = [t / 1000 for t in _times(50)][38:44]  # the window of iterations 35-44, its first 4 records skipped
    assert run["measures"]["step_time"]["value"] == pytest.approx(sum(times) / 6, rel=1e-3)
    assert run["measures"]["step_time"]["unit"] == "s" and "mean of the logged step_time" in \
        run["measures"]["step_time"]["rule"]
    assert set(run["measures"]) == {"throughput", "step_time", "tokens_per_gpu", "tflops_per_gpu", "mfu", "loss"}
    assert run["measures"]["mfu"]["value"] is None and "MFU not computed: the log names no GPU type" in \
        run["measures"]["mfu"]["rule"]  # (a Megatron log names none: MFU is said not computed, and why)
    assert run["measures"]["tokens_per_gpu"]["unit"] == "tokens/s/GPU"


def test_torchtitan_older_layout(tmp_path):
    """Before the parallelism line and `tps`: `Building 1-D device mesh with ['dp'], [8]` and `wps`."""
    text = torchtitan(colour=False).replace("tps:", "wps:").replace(
        "Building device mesh with parallelism: pp=2, dp_replicate=1, dp_shard=4, cp=1, tp=2, ep=1",
        "Building 1-D device mesh with ['dp'], [8]")
    runs, m = _run(tmp_path, text)
    assert runs.iloc[0]["gpus"] == 8
    assert m[(0, "tokens_per_gpu")] == pytest.approx(sum(8000 + 13 * k for k in range(10)) / 10, rel=1e-3)


def test_a_reports_iterations_keep_the_fields_an_llm_log_states_each_record(tmp_path):
    """What a Megatron log states per record (step time, TFLOP/s/GPU) stays in `report.iterations` and its data
    file, documented in the data dictionary; a ResNet-50 report's iterations have none of these columns."""
    from benchbook.logs.frames import LOGGED_COLUMNS
    from benchbook.reports import data_files, dictionary
    from benchbook.reports.report import Report

    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "log.txt").write_text(megatron())
    report = Report(log_dir=tmp_path / "logs")
    shown = report.iterations
    assert {"step_time", "tflops_per_gpu"} <= set(shown.columns) and shown["step_time"].notna().all()
    (tmp_path / "out").mkdir()
    data_files.write(tmp_path / "out", data_files.report_tables(report))
    assert "step_time" in data_files.load(tmp_path / "out" / "iterations.csv").columns
    documented = {row["column"] for row in dictionary.rows() if row["frame"] == "iterations"}
    assert set(LOGGED_COLUMNS) <= documented
