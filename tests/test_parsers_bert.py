"""NGC BERT pre-training logs (PyTorch `run_pretraining.py`, TF1 `run_pretraining.py` under Horovod): runs,
metadata, the end-of-run figure and each named rule, on logs written here in the scripts' forms."""

from __future__ import annotations

import statistics

import pandas as pd
import pytest

from benchbook import analyze
from benchbook.logs.rules import Rule


def _namespace(**args) -> str:
    base = dict(allreduce_post_accumulation=True, amp=False, fp16=False, gradient_accumulation_steps=128,
                max_predictions_per_seq=20, max_seq_length=128, phase2=False, n_gpu=1, train_batch_size=64)
    base.update(args)
    inner = ", ".join(f"{k}={v!r}" if isinstance(v, str) else f"{k}={v}" for k, v in base.items())
    return f'PARAMETER Config : ["Namespace({inner})"] '


def _pytorch_run(t: int, namespace: str, losses: list[tuple[int, float]], rate: float) -> list[str]:
    lines = [f"DLL 2022-05-29 10:{t:02d}:00.000001 - {namespace}",
             f"DLL 2022-05-29 10:{t:02d}:00.000002 - PARAMETER batch_size_per_gpu : 64 "]
    for k, (iteration, loss) in enumerate(losses):
        stamp = f"2022-05-29 10:{t + 1 + 2 * k:02d}:30.000000"  # minutes apart, as 528 micro-batches are
        lines.append(f"Iteration:  {k}%|#   | {k}/100 [00:0{k}<01:00,  1.00it/s]\rDLL {stamp} - Training Epoch: 0 "
                     f"Training Iteration: {iteration}  average_loss : {loss}  step_loss : {loss}  "
                     "learning_rate : 0.001 ")
        if k < 3 and len(losses) > 3:  # the first steps overflow: the scaler halves, the step is skipped
            lines.append(f"DLL {stamp} - PARAMETER loss_scale : {65536.0 / 2 ** k} ")
    end = f"2022-05-29 10:{t + 2 * len(losses):02d}:40.000000"
    lines += [f"DLL {end} - Training Epoch: 0 Training Iteration: {losses[-1][0] + 1}  final_loss : 7.5 ",
              f"DLL {end} -  e2e_train_time : 600.5 s training_sequences_per_second : {rate} sequences/s "
              "final_loss : 7.5 None raw_train_time : 580.25 s"]
    return lines


def test_pytorch_log_of_two_phases_is_two_runs_with_their_metadata_and_figures(tmp_path):
    """run_pretraining.sh runs phase 1 then phase 2 into one log; the loss scaler's skipped steps make the
    counter go back minutes apart (1 then 0), which is no new run."""
    head = ["+ bash scripts/run_pretraining.sh 8192 6e-3 fp16 8 0.2843 7038 200 false true true 128",
            "+ python3 -m torch.distributed.launch --nproc_per_node=8 /workspace/bert/run_pretraining.py "
            "--train_batch_size=8192"]
    phase1 = _pytorch_run(0, _namespace(fp16=True), [(0, 11.2), (1, 11.1), (0, 11.0), (1, 10.9), (2, 10.5)],
                          4321.5)
    phase2 = _pytorch_run(30, _namespace(fp16=True, phase2=True, max_seq_length=512, train_batch_size=8,
                                         gradient_accumulation_steps=512), [(1, 8.0), (2, 7.9)], 987.25)
    log = tmp_path / "bert_lamb_pretraining.log"
    log.write_text("\n".join(head + phase1 + head[1:] + phase2) + "\n")

    result = analyze([log])

    assert result.problems == []
    runs = result.runs
    assert runs["format"].tolist() == ["ngc_bert_pytorch"] * 2
    assert runs["gpus"].tolist() == [8, 8]
    assert runs["batch_size"].tolist() == [64, 8]
    assert runs["precision"].tolist() == ["amp", "amp"]
    assert runs["seq_len"].tolist() == [128, 512]
    assert runs["phase"].tolist() == [1, 2]
    assert runs["global_batch_size"].tolist() == [8 * 64 * 128, 8 * 8 * 512]
    assert runs["reported_throughput"].tolist() == [4321.5, 987.25]
    assert runs["recomputed_throughput"].tolist() == [4321.5, 987.25]  # nvidia: the final printed figure
    assert runs["status"].tolist() == ["complete", "complete"]
    losses = result.iterations[(result.iterations["run"] == 0) & result.iterations["loss"].notna()]
    assert losses["loss"].tolist() == [11.2, 11.1, 11.0, 10.9, 10.5, 7.5]
    # its step lines log a loss and no rate, by design: no warning says so of every step
    assert [w for ws in runs["warnings"] for w in ws if "no throughput" in w] == []


def test_pytorch_rank_tagged_tail_without_the_namespace_reads_and_says_what_it_lacks(tmp_path):
    tag = "Sun May 29 15:01:05 2022[1,0]<stdout>:"
    lines = [f"Iteration:  30%|##9  | 342/1147 [04:50<09:42,  1.38it/s]{tag}DLL 2022-05-29 15:01:05.292041 - "
             "Training Epoch: 0 Training Iteration: 29  average_loss : 8.12  step_loss : 8.04  learning_rate : 0.001 ",
             f"{tag}DLL 2022-05-29 15:01:05.292251 - PARAMETER checkpoint_step : 30 ",
             f"{tag}DLL 2022-05-29 15:01:07.641938 -  e2e_train_time : 2344.87  training_sequences_per_second : "
             "3496.9385  final_loss : 8.11  raw_train_time : 2319.19 "]
    log = tmp_path / "bert_pretraining_phase1_fp32_bs96_gpu32.log"
    log.write_text("\n".join(lines) + "\n")

    run = analyze([log]).runs.iloc[0]

    assert (run["format"], run["gpus"], run["batch_size"], run["precision"]) == ("ngc_bert_pytorch", 32, 96, "fp32")
    assert run["recomputed_throughput"] == 3496.9385
    # the step line after the progress bar: its rank unknown (textio keeps a lone mid-line tag), left out and said
    assert any(w.startswith("step lines after other text on their physical line") and "(line 1)" in w
               for w in run["warnings"])
    assert pd.isna(run["seq_len"]) and pd.isna(run["phase"])  # not guessed
    assert any("neither the sequence length nor the phase" in w for w in run["warnings"])


TF_RATES = [360.0, 1040.0, 1045.0, 730.0] + [1000.0 + k for k in range(12)]  # Iteration 1 x3, 2, then 3..14
TF_ITERATIONS = [1, 1, 1, 2] + list(range(3, 15))


def _tf_log(tmp_path, tagged: bool = False, summary: bool = True):
    lines = ["+ bash scripts/run_pretraining_lamb.sh 96 64 8 7.5e-4 5e-4 fp16 true 8 2000 200 50 200 88 512 base",
             "INFO:tensorflow:  max_seq_length: 128", "INFO:tensorflow:  train_batch_size: 96",
             "INFO:tensorflow:  num_accumulation_steps: 88", "INFO:tensorflow:  amp: True",
             "INFO:tensorflow:  output_dir: /results/tf_bert_pretraining_lamb_base_fp16_gbs1_gbs2/phase_1",
             "INFO:tensorflow:***** Running training *****"] if not tagged else []
    for k, (it, rate) in enumerate(zip(TF_ITERATIONS, TF_RATES, strict=True)):
        lines.append(f"DLL 2020-07-01 10:{k:02d}:00.000000 - Iteration: {it}  throughput_train : {rate} "
                     f"{'seq/s' if tagged else 'sequences/s'} mlm_loss : 10.4  nsp_loss : 0.69  total_loss : "
                     f"{11.0 - k / 100}  avg_loss_step : 11.1  learning_rate : 0.0  loss_scaler : 134217728 ")
    if summary:
        lines += ["INFO:tensorflow:Throughput Average (sentences/sec) = 862.99",
                  "DLL 2020-07-01 10:30:00.000000 -  throughput_train : 862.988 sequences/s",
                  "DLL 2020-07-01 10:30:00.000001 -  total_loss : 11.0307 ",
                  "INFO:tensorflow:Saving dict for global step 45: global_step = 45, loss = 11.02, "
                  "masked_lm_accuracy = 0.061, masked_lm_loss = 10.33"]
    if tagged:
        lines = [f"Sun May 29 09:24:{k % 60:02d} 2022[1,0]<stdout>:{line}" for k, line in enumerate(lines)]
    log = tmp_path / ("tf_bert_gpu32.log" if tagged else "tf_bert.log")
    log.write_text("\n".join(lines) + "\n")
    return log


def test_tf1_log_metadata_figures_and_evaluation(tmp_path):
    result = analyze([_tf_log(tmp_path)])

    assert result.problems == []
    run = result.runs.iloc[0]
    assert run["format"] == "ngc_bert_tf1"
    assert (run["gpus"], run["batch_size"], run["precision"], run["seq_len"], run["phase"]) == (8, 96, "amp", 128, 1)
    assert run["global_batch_size"] == 8 * 96 * 88
    assert run["reported_throughput"] == 862.988
    assert run["recomputed_throughput"] == 862.988  # nvidia: the script's own end-of-run figure
    assert run["final_mlm_accuracy"] == pytest.approx(6.1)


@pytest.mark.parametrize(("rule", "expected"), [
    ("perf", statistics.fmean(TF_RATES)),  # every record, warm-up included
    ("perf_from_3", statistics.fmean(TF_RATES[4:])),  # from the first `Iteration: 3`
    ("steady", len(TF_RATES[11:]) / sum(1 / r for r in TF_RATES[11:])),  # from iteration 10, harmonic
])
def test_tf1_named_rules_read_the_per_step_records(tmp_path, rule, expected):
    run = analyze([_tf_log(tmp_path)], rule=Rule(name=rule)).runs.iloc[0]

    assert run["recomputed_throughput"] == pytest.approx(expected, rel=1e-12)


def test_tf1_rank_tagged_tail_without_summary_reads_its_records(tmp_path):
    log = _tf_log(tmp_path, tagged=True, summary=False)

    default = analyze([log]).runs.iloc[0]
    perf = analyze([log], rule=Rule(name="perf")).runs.iloc[0]

    assert default["format"] == "ngc_bert_tf1"
    assert pd.isna(default["recomputed_throughput"])  # no end-of-run figure: the nvidia rule gives none
    assert default["status"] == "incomplete"
    assert perf["recomputed_throughput"] == pytest.approx(statistics.fmean(TF_RATES), rel=1e-12)


def _older_tf_phase(phase: int, seq_len: int, rates: list[float], minute: int) -> list[str]:
    """A run of a release whose hook logs on every rank (`Rank : N`), with `--manual_fp16` and no AMP."""
    lines = ["INFO:tensorflow:***** Running training *****", f"INFO:tensorflow:  max_seq_length: {seq_len}",
             "INFO:tensorflow:  manual_fp16: True", "INFO:tensorflow:  train_batch_size: 16",
             f"INFO:tensorflow:  output_dir: /results/tf_bert_pretraining_lamb_large_fp16/phase_{phase}",
             "INFO:tensorflow:  use_fp16: False"]
    for k, rate in enumerate(rates):
        for rank in (0, 1):
            lines.append(f"DLL 2019-12-01 10:{minute + k:02d}:00.00000{rank} - Iteration: {k + 1}  Rank : {rank}  "
                         f"throughput_train : {rate + rank * 3} seq/s mlm_loss : 9.1  nsp_loss : 0.6  "
                         "total_loss : 9.7  avg_loss_step : 9.8  learning_rate : 1e-05  loss_scaler : 32768 ")
    return lines


def test_tf1_older_release_two_phases_every_rank_logging_and_fp16_by_hand(tmp_path):
    log = tmp_path / "tf_bert_large.log"
    log.write_text("\n".join(_older_tf_phase(1, 128, [100.0, 200.0, 300.0], 0)
                             + _older_tf_phase(2, 512, [40.0, 50.0], 30)) + "\n")

    runs = analyze([log], rule=Rule(name="perf")).runs

    assert runs["format"].tolist() == ["ngc_bert_tf1"] * 2
    assert runs["precision"].tolist() == ["fp16", "fp16"]
    assert runs["seq_len"].tolist() == [128, 512]
    assert runs["phase"].tolist() == [1, 2]
    assert runs["batch_size"].tolist() == [16, 16]
    assert runs["recomputed_throughput"].tolist() == [200.0, 45.0]  # rank 0's records alone
    assert [any(w.startswith("records of ranks other than 0") and f": {n} (line" in w for w in ws)
            for ws, n in zip(runs["warnings"], (3, 2), strict=True)] == [True, True]


def test_pytorch_gpus_of_a_multi_node_launch_are_its_nodes_times_its_processes(tmp_path):
    head = ["+ torchrun --nnodes=4 --nproc_per_node=8 --rdzv_backend=c10d /workspace/bert/run_pretraining.py "
            "--train_batch_size=8192"]
    log = tmp_path / "bert.log"
    log.write_text("\n".join(head + _pytorch_run(0, _namespace(amp=True), [(1, 9.0), (2, 8.5)], 20000.0)) + "\n")

    run = analyze([log]).runs.iloc[0]

    assert (run["gpus"], run["precision"], run["seq_len"], run["phase"]) == (32, "amp", 128, 1)
    assert run["global_batch_size"] == 32 * 64 * 128


def test_a_rate_or_loss_that_is_no_number_keeps_its_record_and_is_said(tmp_path):
    tf_log = _tf_log(tmp_path)
    tf_log.write_text(tf_log.read_text().replace("throughput_train : 1005.0 ", "throughput_train : nan "))
    pt_log = tmp_path / "bert.log"
    pt_log.write_text("\n".join(_pytorch_run(0, _namespace(), [(1, 9.0), (2, 8.5)], 500.0)).replace(
        "average_loss : 8.5 ", "average_loss : nan ") + "\n")

    tf = analyze([tf_log], rule=Rule(name="perf"))
    pt = analyze([pt_log])

    tf_run = tf.runs.iloc[0]
    assert len(tf.iterations) == len(TF_RATES) + 1  # the record is kept, without a rate (+ the end-of-run one)
    rates = [r for r in TF_RATES if r != 1005.0]
    assert tf_run["recomputed_throughput"] == pytest.approx(statistics.fmean(rates), rel=1e-12)
    assert any("no throughput" in w and "NaN" in w for w in tf_run["warnings"])
    losses = pt.iterations["loss"].tolist()
    assert len(losses) == 4 and losses[0] == 9.0 and losses[1] != losses[1]  # 9.0, NaN, the final 7.5, the figure


def test_end_of_run_lines_as_dllogger_prints_an_empty_step_and_keys_in_another_order(tmp_path):
    """DLLogger's own step format prints `tuple()` as `()`; a release may order the figures differently."""
    lines = _pytorch_run(0, _namespace(), [(1, 9.0)], 500.0)
    lines[-1] = ("DLL 2020-06-01 10:10:00.000000 - () training_sequences_per_second : 612.5 sequences/s "
                 "e2e_train_time : 700.0 s final_loss : 7.5 ")
    pt_log = tmp_path / "bert.log"
    pt_log.write_text("\n".join(lines) + "\n")
    tf_log = _tf_log(tmp_path)
    tf_log.write_text(tf_log.read_text().replace(" -  throughput_train : 862.988", " - () throughput_train : 862.988"))

    pt, tf = analyze([pt_log]).runs.iloc[0], analyze([tf_log]).runs.iloc[0]

    assert (pt["reported_throughput"], pt["recomputed_throughput"]) == (612.5, 612.5)
    assert (tf["reported_throughput"], tf["recomputed_throughput"]) == (862.988, 862.988)


def test_the_cpu_workloads_log_gives_its_evaluations_the_cpu_and_bf16(tmp_path):
    """workloads/bert_pytorch.py's additions to NVIDIA's lines: `mlm_accuracy` (a fraction) on step lines of its
    own, one evaluation each, and a Namespace that names the CPU (`device='cpu', n_gpu=0`) and bf16 autocast."""
    lines = _pytorch_run(0, _namespace(device="cpu", n_gpu=0, precision="bf16", bf16=True, amp=False,
                                       gradient_accumulation_steps=1, train_batch_size=8), [(1, 9.0), (2, 8.5)], 40.0)
    scores = [(0, 0.0), (2, 0.125), (3, 0.3125)]
    evaluations = [f"DLL 2022-05-29 10:0{k}:45.000000 - Training Epoch: 0 Training Iteration: {step}  "
                   f"mlm_accuracy : {accuracy} " for k, (step, accuracy) in enumerate(scores)]
    lines = [*lines[:2], evaluations[0], *lines[2:4], evaluations[1], lines[4], evaluations[2], lines[5]]
    log = tmp_path / "run.log"
    log.write_text("\n".join(lines) + "\n")

    result = analyze([log])

    run = result.runs.iloc[0]
    assert (run["gpus"], run["processes"], run["precision"], run["batch_size"]) == (0, 1, "bf16", 8)
    assert result.evaluations["metric"].tolist() == ["mlm_accuracy"] * 3
    assert result.evaluations["value"].tolist() == [0.0, 12.5, 31.25]  # in percent, the metric's unit
    assert result.evaluations["line"].tolist() == [3, 8, 10]  # (a progress bar's \r ends a line)
    assert run["final_mlm_accuracy"] == 31.25
    assert result.iterations["loss"].dropna().tolist() == [9.0, 8.5, 7.5]  # no evaluation taken for a step


@pytest.mark.parametrize(("args", "precision"), [
    (dict(fp16=True, amp=True), "amp"), (dict(bf16=True), "bf16"), (dict(precision="fp32", bf16=False), "fp32"),
    (dict(), "fp32")])
def test_the_namespaces_precision(tmp_path, args, precision):
    log = tmp_path / "run.log"
    log.write_text("\n".join(_pytorch_run(0, _namespace(**args), [(1, 9.0)], 40.0)) + "\n")
    run = analyze([log]).runs.iloc[0]
    assert run["precision"] == precision
    assert pd.isna(run["gpus"])  # NVIDIA's Namespace names no device: its GPUs come from the launch


def _line_bench():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "bench" / "bench_line_length.py"
    spec = importlib.util.spec_from_file_location("bench_line_length", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


LINE_BENCH = _line_bench()


@pytest.mark.parametrize(("name", "prefix"), [
    (name, prefix) for name in ("ngc_bert_pytorch", "ngc_bert_tf1", "ngc_mxnet_resnet50")
    for prefix in LINE_BENCH.PREFIXES[name]])
def test_a_256_kib_line_of_a_formats_openings_is_read_in_well_under_a_second(tmp_path, name, prefix):
    # Issue 49 cause 3 (the BERT formats, and MXNet's epoch line): lazy `[^\n]*?key` scans and `[^\n]*`
    # backing off to a literal, retried from each candidate on the line, took 18.2 s at 256 KiB (torchrun's
    # opening: minutes). Now about 0.05 s.
    from benchbook.core import catalog
    from benchbook.logs.parsers import registry

    catalog.default()
    path = tmp_path / "line.log"
    LINE_BENCH.write_line(path, prefix, 256)
    assert LINE_BENCH.timed(path, registry.get(name), 5.0) < 1.0


# --- issue 49 cause 14: BERT values checked ------------------------------------------------------------------

@pytest.mark.parametrize("seq_len", ["0", "1000000000000"])
def test_a_sequence_length_of_zero_or_absurd_size_is_left_out_and_said_with_its_line(tmp_path, seq_len):
    pt_log = tmp_path / "bert.log"
    pt_log.write_text("\n".join(_pytorch_run(0, _namespace(max_seq_length=int(seq_len)), [(1, 9.0)], 500.0)) + "\n")
    tf_log = _tf_log(tmp_path)
    tf_log.write_text(tf_log.read_text().replace("max_seq_length: 128", f"max_seq_length: {seq_len}")
                      + f"INFO:tensorflow:  name = input_ids, shape = (96, {seq_len})\n")
    for log, lines in ((pt_log, "line 1"), (tf_log, "line 2, 28")):
        run = analyze([log]).runs.iloc[0]
        assert pd.isna(run["seq_len"]), log
        said = [w for w in run["warnings"] if w.startswith(f"a sequence length of {seq_len} ")]
        assert said and f"({lines})" in said[0] and "left out" in said[0], run["warnings"]
        assert run["recomputed_throughput"] > 0  # (the rest of the run is read)


def test_a_tf1_precision_no_launch_script_takes_is_said_with_its_line_not_taken(tmp_path):
    tf_log = _tf_log(tmp_path)
    tf_log.write_text(tf_log.read_text().replace("512 5e-4 fp16 true", "512 5e-4 <script> true", 1)
                      .replace("7.5e-4 5e-4 fp16 true", "7.5e-4 5e-4 <script> true", 1)
                      .replace("INFO:tensorflow:  amp: True\n", ""))
    run = analyze([tf_log]).runs.iloc[0]
    assert run["precision"] != "<script>"
    said = [w for w in run["warnings"] if w.startswith("a precision no launch script takes")]
    assert said and "'<script>'" in said[0] and "(line 1)" in said[0], run["warnings"]


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_a_nan_or_infinite_loss_at_every_step_is_said_a_diverged_run_and_the_rates_are_kept(tmp_path, value):
    pt_log = tmp_path / "bert.log"
    pt_log.write_text("\n".join(_pytorch_run(0, _namespace(), [(1, 9.0), (2, 8.5), (3, 8.0)], 500.0))
                      .replace("average_loss : 9.0 ", f"average_loss : {value} ")
                      .replace("average_loss : 8.5 ", f"average_loss : {value} ")
                      .replace("average_loss : 8.0 ", f"average_loss : {value} ") + "\n")
    tf_log = _tf_log(tmp_path)
    text = tf_log.read_text()
    for k in range(len(TF_RATES)):
        text = text.replace(f"total_loss : {11.0 - k / 100} ", f"total_loss : {value} ")
    tf_log.write_text(text)
    pt, tf = analyze([pt_log]), analyze([tf_log], rule=Rule(name="perf"))
    for result, steps in ((pt, 3), (tf, len(TF_RATES))):
        run = result.runs.iloc[0]
        said = [w for w in run["warnings"] if w.startswith("steps whose loss is NaN or infinite (the run diverged")]
        assert said and said[0].rsplit(": ", 1)[1].startswith(f"{steps} (line "), run["warnings"]
    assert pt.runs.iloc[0]["recomputed_throughput"] == 500.0
    assert len(pt.iterations) == 5  # the three steps, the final loss, the figure
    assert tf.runs.iloc[0]["recomputed_throughput"] == pytest.approx(statistics.fmean(TF_RATES), rel=1e-12)
    assert len(tf.iterations) == len(TF_RATES) + 1  # every step's rate kept (+ the end-of-run one)
