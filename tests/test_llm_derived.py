"""What the LLM logs do not print, derived by a named source (issue 50): MFU from the GPU peak table, TFLOP/s/GPU
by Megatron-LM's FLOPs formula for a dense model (never a mixture of experts), the FLOPs formulas against
arithmetic written here independently, and the run's status as dgxc-benchmarking's rules define it."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from benchbook import analyze
from benchbook.core import flops, peaks
from benchbook.logs.rules import Rule
from test_parsers_llm import SHARED, _times, megatron, nemo2, torchtitan

# ------------------------------------------------------------------------------------- the peak table


def test_the_shipped_peak_table_has_every_gpu_and_names_its_sources():
    table = peaks.load()
    assert [g.name for g in table.gpus] == ["H100 SXM", "H200", "GB300", "GB200", "B300", "B200"]
    assert all(g.source.startswith("https://www.nvidia.com/") for g in table.gpus)
    assert "nvfp4" not in peaks.gpu("NVIDIA H100 80GB HBM3").peaks  # Hopper has no FP4 tensor cores
    assert all(set(g.peaks) == {"bf16", "fp8", "nvfp4"} for g in table.gpus if g.name.startswith(("GB", "B")))
    for gpu in table.gpus:  # dense FP8 is twice dense BF16 on every GPU listed (the datasheets' ratio)
        assert gpu.peaks["fp8"] == 2 * gpu.peaks["bf16"]


@pytest.mark.parametrize(("named", "gpu"), [
    ("NVIDIA H100 80GB HBM3", "H100 SXM"), ("DGX-H100", "H100 SXM"), ("NVIDIA H200", "H200"),
    ("NVIDIA B200", "B200"), ("DGX-GB200", "GB200"), ("NVIDIA GB300", "GB300"), ("NVIDIA B300 SXM6 AC", "B300"),
    ("NVIDIA H100 PCIe", None), ("NVIDIA H100 NVL", None), ("AMD Instinct MI355X", None), (None, None)])
def test_a_gpu_type_as_logged_finds_its_row(named, gpu):
    found = peaks.gpu(named)
    assert (found.name if found else None) == gpu


def test_peaks_by_precision_and_why_there_is_none():
    assert peaks.peak("NVIDIA H100 80GB HBM3", "bf16")[0] == 989.5
    assert peaks.peak("NVIDIA H100 80GB HBM3", "fp16")[0] == 989.5  # FP16 at BF16's rate
    assert peaks.peak("DGX-GB200", "mxfp8")[0] == 5000.0  # MXFP8 at FP8's
    assert peaks.peak("NVIDIA B200", "nvfp4")[0] == 9000.0
    top, why = peaks.peak("NVIDIA H100 80GB HBM3", "nvfp4")
    assert top is None and why == "the peak table has no dense NVFP4 peak for H100 SXM"
    assert peaks.peak("AMD Instinct MI355X", "bf16")[1].startswith("no GPU of the peak table")
    assert peaks.peak(None, "bf16")[1] == "the log names no GPU type"
    assert peaks.peak("NVIDIA B200", "fp32")[1] == "the run's precision (fp32) has no column in the peak table"
    value, words = peaks.mfu(494.75, "NVIDIA H100 80GB HBM3", "bf16")
    assert value == pytest.approx(50.0) and "H100 SXM dense BF16 peak 989.5 TFLOP/s" in words


@pytest.mark.parametrize(("text", "field"), [
    ("schema_version: 1\ngpus:\n  - {name: X, pattern: X, peaks: {fp64: 1.0}, source: https://example.com/x}\n",
     "fp64"),
    ("schema_version: 1\ngpus:\n  - {name: X, pattern: '(', peaks: {bf16: 1.0}, source: https://example.com/x}\n",
     "pattern"),
    ("schema_version: 1\ngpus:\n  - {name: X, pattern: X, peaks: {bf16: 1.0}}\n", "source"),
    ("schema_version: 1\ngpus:\n  - {name: X, pattern: X, peaks: {bf16: -3}, source: https://example.com/x}\n",
     "bf16"),
])
def test_a_bad_peak_table_is_refused_naming_the_field_and_line(tmp_path, text, field):
    path = tmp_path / "peaks.yaml"
    path.write_text(text)
    with pytest.raises(peaks.PeakTableError) as err:
        peaks.load(path)
    assert f"{path}:3" in str(err.value) and field in str(err.value)


# ------------------------------------------------------------------------------------- FLOPs formulas


def test_megatron_formula_against_the_classic_closed_form():
    """Without GQA and SwiGLU, ffn 4h: 72 L h^2 (1 + s / 12h + V / 12 L h) a token (the causal half of the
    attention scores: s / 12h where the paper's form, counting them whole, has s / 6h)."""
    layers, hidden, heads, vocab, seq = 24, 2048, 16, 50304, 2048
    closed = 72 * layers * hidden ** 2 * (1 + seq / (12 * hidden) + vocab / (12 * layers * hidden))
    assert flops.megatron(layers, hidden, heads, vocab, seq) == pytest.approx(closed, rel=1e-12)


def test_megatron_formula_with_gqa_and_swiglu_counts_each_gemm():
    """Llama 3 8B's shape: each GEMM's multiply-adds counted here by hand, times 2 FLOPs and 3 passes."""
    layers, hidden, ffn, heads, groups, vocab, seq = 32, 4096, 14336, 32, 8, 128256, 8192
    head = hidden // heads
    q, kv = heads * head, groups * head
    per_layer = hidden * q + 2 * hidden * kv + q * hidden + seq / 2 * q * 2 + 3 * hidden * ffn
    expected = 6 * (layers * per_layer + hidden * vocab)
    assert flops.megatron(layers, hidden, heads, vocab, seq, ffn, groups, swiglu=True) == pytest.approx(expected)


def test_torchtitan_and_6n_formulas():
    params, layers, heads, head_dim, seq = 7_000_000_000, 32, 32, 128, 8192
    assert flops.torchtitan(params, layers, heads, head_dim, seq) == 6 * params + 12 * layers * heads * head_dim * seq
    assert flops.six_n(params) == 6 * params


SHAPE = """  num_layers ...................................... 24
  hidden_size ..................................... 2048
  num_attention_heads ............................. 16
  padded_vocab_size ............................... 50304
"""


def _analyze(tmp_path: Path, text: str, rule: str = "all", record: dict | None = None, file: str = "log.txt"):
    path = tmp_path / file
    path.write_text(text)
    if record is not None:
        (tmp_path / f"{file}.run.json").write_text(json.dumps({"config": record}))
    result = analyze([path], Rule(name=rule))
    assert not result.problems, result.problems
    return result.runs.iloc[0], result.measures.set_index("measure")


def test_tflops_derived_by_megatrons_formula_where_the_log_prints_none(tmp_path):
    text = megatron(tflops=False).replace("  seq_length", SHAPE + "  seq_length")
    _, m = _analyze(tmp_path, text)
    step = sum(_times(50)) / 50 / 1000
    tokens = 4096 * 64 / step / 32
    per_token = 72 * 24 * 2048 ** 2 * (1 + 4096 / (12 * 2048) + 50304 / (12 * 24 * 2048))
    assert m.loc["tokens_per_gpu", "value"] == pytest.approx(tokens, rel=1e-3)
    assert m.loc["tflops_per_gpu", "value"] == pytest.approx(per_token * tokens / 1e12, rel=1e-3)
    assert "by Megatron-LM's formula (24 layers, hidden 2048" in m.loc["tflops_per_gpu", "rule"]
    assert "NVIDIA/Megatron-LM megatron/training/training.py@" in m.loc["tflops_per_gpu", "rule"]


def test_padded_vocab_line_and_a_mixture_of_experts_gets_no_derived_figure(tmp_path):
    shape = SHAPE.replace("50304", "None")
    text = megatron(tflops=False).replace("  seq_length", shape + "  seq_length")
    text = text.replace("-------------------- end", " > padded vocab (size: 50257) with 47 dummy tokens (new size: "
                                                      "50304)\n-------------------- end")
    _, m = _analyze(tmp_path, text)
    assert m.loc["tflops_per_gpu", "value"] > 0  # the vocabulary from the padded-vocab line
    moe = text.replace("  seq_length", "  num_experts ..................................... 8\n  seq_length")
    _, m = _analyze(tmp_path, moe, file="moe.txt")
    assert math.isnan(m.loc["tflops_per_gpu", "value"]) and math.isnan(m.loc["mfu", "value"])
    assert "not derived: a mixture-of-experts model (8 experts)" in m.loc["tflops_per_gpu", "rule"]


# ------------------------------------------------------------------------------------- MFU


def test_mfu_from_the_peak_table_for_a_megatron_log(tmp_path):
    """Megatron prints no MFU and names no GPU: a run record beside the log names it (or the reference)."""
    _, m = _analyze(tmp_path, megatron(), record={"gpu_type": "NVIDIA H100 80GB HBM3"})
    tflops = sum(round(t / 3, 1) for t in _times(50)) / 50
    assert m.loc["mfu", "value"] == pytest.approx(100 * tflops / 989.5, rel=1e-3)
    assert "MFU = TFLOP/s/GPU over the H100 SXM dense BF16 peak 989.5 TFLOP/s" in m.loc["mfu", "rule"]
    assert m.loc["mfu", "unit"] == "%"


def test_no_mfu_for_nvfp4_on_an_h100_and_the_reason_is_in_analyze_json(tmp_path, capsys):
    from benchbook.cli import main

    text = megatron().replace("  fp8 ...", "  fp4 ............................................. True\n  fp8 ...")
    path = tmp_path / "fp4.txt"
    path.write_text(text)
    (tmp_path / "fp4.txt.run.json").write_text(json.dumps({"config": {"gpu_type": "NVIDIA H100 80GB HBM3"}}))
    assert main(["analyze", "--json", "--rule", "all", str(path)]) == 0
    run = json.loads(capsys.readouterr().out)
    assert run["precision"] == "nvfp4" and run["measures"]["mfu"]["value"] is None
    assert run["measures"]["mfu"]["rule"].endswith("MFU not computed: the peak table has no dense NVFP4 peak for "
                                                   "H100 SXM")


def test_torchtitan_fp8_mfu_na_is_derived_from_its_tflops(tmp_path):
    """torchtitan prints `mfu: N/A` under float8 (it has no FP8 peak): the table's FP8 peak gives it."""
    text = torchtitan(mfu=False).replace("Training starts", "--model.converters float8\n[titan] 2026-03-24 10:00:03,"
                                                            "100 - root - INFO - Training starts", 1)
    run, m = _analyze(tmp_path, text)
    assert run["precision"] == "fp8"
    assert m.loc["mfu", "value"] == pytest.approx(100 * sum(400.0 + k for k in range(10)) / 10 / 1979.0, rel=1e-3)
    logged, m = _analyze(tmp_path, torchtitan(), file="logged.txt")  # its own MFU where it prints one
    assert m.loc["mfu", "value"] == pytest.approx(sum((400 + k) / 9.89 for k in range(10)) / 10, rel=1e-3)
    assert "MFU =" not in m.loc["mfu", "rule"]


# ------------------------------------------------------------------------------------- the rule's status


def test_dgxc_status_success_incomplete_and_invalid_grad_norm(tmp_path):
    run, _ = _analyze(tmp_path, megatron(), rule="nvidia")
    assert run["rule_status"] == "SUCCESS" and not any("dgxc" in w for w in run["warnings"])
    cut, _ = _analyze(tmp_path, megatron(n=41, iters=100), rule="nvidia", file="cut.txt")
    assert cut["rule_status"] == "INCOMPLETE"
    assert "dgxc-benchmarking: INCOMPLETE, iterations 42-44 of its window 35-44 have no step time; its last planned " \
           "iteration (100) was not logged (the last timed: 41)" in cut["warnings"]
    short, _ = _analyze(tmp_path, megatron(n=50, iters=100), rule="nvidia", file="short.txt")
    assert short["rule_status"] == "INCOMPLETE"  # the window whole, the run not
    nan = megatron().replace("grad norm: 1.234 | number of skipped iterations:   0 | number of nan iterations:   0",
                             "grad norm: nan | number of skipped iterations:   1 | number of nan iterations:   1", 1)
    bad, _ = _analyze(tmp_path, nan, rule="nvidia", file="nan.txt")
    assert bad["rule_status"] == "INVALID_GRAD_NORM"
    assert any(w.startswith("dgxc-benchmarking: INVALID_GRAD_NORM (a grad norm of NaN, line ") for w in
               bad["warnings"])
    other, _ = _analyze(tmp_path, megatron(), rule="bridge_skip0.70", file="other.txt")
    assert other["rule_status"] is None  # a rule that defines no status


def test_dgxc_status_of_each_release_and_nemo2_counting_from_zero(tmp_path):
    assert _analyze(tmp_path, megatron(), rule="dgxc_v24.11")[0]["rule_status"] == "SUCCESS"
    early, _ = _analyze(tmp_path, megatron(n=30, iters=30), rule="dgxc_v25.05", file="early.txt")
    assert early["rule_status"] == "INCOMPLETE"  # iterations 31-44 of 11-44 never ran
    assert _analyze(tmp_path, nemo2(), rule="nvidia", file="nemo.txt")[0]["rule_status"] == "SUCCESS"
    cut, _ = _analyze(tmp_path, nemo2(n=60).replace("/59 |", "/99 |"), rule="nvidia", file="nemo_cut.txt")
    assert cut["rule_status"] == "INCOMPLETE"
    assert any("its last planned iteration (99) was not logged (the last timed: 59)" in w for w in cut["warnings"])


def test_rule_status_and_megatrons_counters_reach_analyze_json_and_the_iterations(tmp_path, capsys):
    from benchbook.cli import main

    path = tmp_path / "log.txt"
    path.write_text(megatron().replace("number of skipped iterations:   0", "number of skipped iterations:   2", 1))
    assert main(["analyze", "--json", str(path)]) == 0  # the default rule, dgxc-benchmarking's v25.08
    run = json.loads(capsys.readouterr().out)
    assert run["rule_status"] == "SUCCESS"
    iterations = analyze([path]).iterations
    assert iterations["skipped_iterations"].sum() == 2 and iterations["nan_grad_norm"].sum() == 0


def test_a_command_lines_flag_without_value_is_on(tmp_path):
    text = megatron(tflops=False).replace("  seq_length", SHAPE + "  seq_length")
    end = "-------------------- end of arguments ---------------------\n"
    text = text.replace(end, end + "launch: python pretrain_gpt.py --swiglu --normalization RMSNorm\n")
    run, _ = _analyze(tmp_path, text)
    assert run["meta"]["arg_swiglu"] == "True"


@pytest.mark.skipif(not (SHARED / "elena-attn-bench").is_dir(), reason="../shared/reference-logs-llm absent")
def test_megatrons_formula_gives_a_real_logs_own_tflops(tmp_path):
    """A real Megatron-LM log (GQA, SwiGLU, padded vocabulary) with its TFLOP/s fields taken out: the TFLOP/s/GPU
    derived from its arguments is the one Megatron printed (their harmonic mean over the same records), within
    0.01%: the formula is Megatron's own."""
    import re

    import numpy as np

    path = SHARED / "elena-attn-bench" / "2256081.out"
    logged = analyze([path], Rule(name="all"))
    measured = logged.iterations[logged.iterations["measured"]]
    harmonic = len(measured) / np.sum(1 / measured["tflops_per_gpu"].to_numpy())
    bare = tmp_path / "bare.out"
    bare.write_text(re.sub(r" throughput per GPU \(TFLOP/s/GPU\): [0-9.]+ \|", "", path.read_text()))
    _, m = _analyze(tmp_path, bare.read_text(), file="bare2.out")
    assert m.loc["tflops_per_gpu", "value"] == pytest.approx(harmonic, rel=1e-4)
    assert "32 heads, 8 query groups, vocabulary 32896, sequence 2048, SwiGLU" in m.loc["tflops_per_gpu", "rule"]
