"""The CPU BERT workload: its corpus and vocabulary (deterministic, held-out text apart), its DLLogger lines in
run_pretraining.py's form, and real short runs where BENCHBOOK_TEST_PYTORCH_PYTHON names a Python with torch:
the MLM accuracy rises, a seed repeats its run, the ngc_bert_pytorch format reads the log (its evaluations, the
CPU, bf16)."""

from __future__ import annotations

import os
import re
import subprocess
from datetime import datetime

import numpy as np
import pytest

from benchbook import analyze, models
from benchbook.logs.frames import one_metric
from benchbook.workloads import _bert_corpus as corpus
from benchbook.workloads import bert_pytorch as workload
from conftest import framework_python

VAR = "BENCHBOOK_TEST_PYTORCH_PYTHON"
SCRIPT = models.workload_script("pytorch", "bert_pytorch")
STAMP = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6}"
SHORT = ["--max_steps", "60", "--eval_every", "20", "--threads", "1"]


def _run(python, argv, tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    return subprocess.run([python, str(SCRIPT), *argv], capture_output=True, text=True, cwd=tmp_path, env=env,
                          timeout=900)


@pytest.fixture
def python():
    return framework_python(VAR, "a Python that has torch to run this test")


def test_the_corpus_is_the_same_text_every_time_and_holds_its_evaluation_text_apart():
    first, second = corpus.docstrings(), corpus.docstrings()
    assert first == second and len(first) > 1000 and len(set(first)) == len(first)
    data = corpus.load(128, 1000)
    assert data.train.shape[1] == 128 and len(data.train) > 500 and len(data.held_out) >= workload.EVAL_SEQUENCES
    assert (data.train[:, 0] == corpus.CLS).all() and (data.train[:, -1] == corpus.SEP).all()
    assert len(data.vocab) == 1000 and data.vocab[:5] == list(corpus.SPECIAL)
    assert corpus.load(128, 1000).vocab == data.vocab  # no ties left to chance
    held = {tuple(r) for r in data.held_out}
    assert not held & {tuple(r) for r in data.train}


def test_wordpiece_splits_what_the_vocabulary_lacks_greedily():
    tokenize = corpus.tokenizer([*corpus.SPECIAL, "return", "re", "##turn", "##s", "##ed", "r"])
    ids = [tokenize.encode(word, add_special_tokens=False).ids for word in ("return", "returns", "reed", "xyz")]
    assert ids == [[5], [5, 8], [6, 9], [corpus.UNK]]
    assert corpus.words("Return a NEW list, café.") == ["return", "a", "new", "list", ",", "cafe", "."]
    assert corpus.words("foo_bar") == ["foo", "_", "bar"]  # BERT's punctuation, not the \w of a regular expression


def test_encoding_puts_a_separator_after_each_text():
    vocab = corpus.build_vocab(["a b a", "b c"], 100)
    assert vocab[5:] == ["a", "b", "c", "##a", "##b", "##c"]
    index = {piece: i for i, piece in enumerate(vocab)}
    assert corpus.encode(["a b a", "b c"], vocab).tolist() == [index["a"], index["b"], index["a"], corpus.SEP,
                                                              index["b"], index["c"], corpus.SEP]


def test_masking_is_berts_and_seeded():
    rows = np.tile(np.arange(10, 138), (4, 1))
    inputs, positions, labels = corpus.mask(rows, 20, 1000, np.random.default_rng(0))
    again = corpus.mask(rows, 20, 1000, np.random.default_rng(0))
    assert all((a == b).all() for a, b in zip((inputs, positions, labels), again, strict=True))
    assert positions.shape == (4, 19) and (positions > 0).all() and (positions < 127).all()  # 15% of 126
    assert (labels == np.take_along_axis(rows, positions, 1)).all()
    assert (np.take_along_axis(inputs, positions, 1) == corpus.MASK).mean() > 0.6
    assert (inputs[:, 0] == rows[:, 0]).all()  # [CLS] and [SEP] are never masked


def test_lines_are_dlloggers_as_run_pretraining_prints_them():
    # DLLogger's StdOutBackend: `DLL <datetime> - <step> ` then `key : value unit` joined by one space; no unit is
    # an empty one (two spaces between such pairs); final_loss's declared unit None prints as None.
    step = workload.dll_line((0, 3), {"average_loss": 8.25, "learning_rate": 0.001, "skipped_steps": 0})
    assert re.fullmatch(rf"DLL {STAMP} - Training Epoch: 0 Training Iteration: 3  average_loss : 8.25  "
                        r"learning_rate : 0.001  skipped_steps : 0 ", step)
    assert re.fullmatch(rf"DLL {STAMP} - Training Epoch: 0 Training Iteration: 20  final_loss : 6.5 None",
                        workload.dll_line((0, 20), {"final_loss": 6.5}))
    end = workload.dll_line((), {"e2e_train_time": 12.5, "training_sequences_per_second": 300.25,
                                 "final_loss": 6.5, "raw_train_time": 4.0})
    assert re.fullmatch(rf"DLL {STAMP} -  e2e_train_time : 12.5 s training_sequences_per_second : 300.25 "
                        r"sequences/s final_loss : 6.5 None raw_train_time : 4.0 s", end)
    assert re.fullmatch(rf"DLL {STAMP} - PARAMETER SEED : 42 ", workload.dll_line("PARAMETER", {"SEED": 42}))
    assert datetime.strptime(step[4:30], "%Y-%m-%d %H:%M:%S.%f")


@pytest.mark.parametrize(("argv", "message"), [
    (["--warmup_steps", "60", "--max_steps", "60"], "--warmup_steps (60) must be below --max_steps (60)"),
    (["--hidden_size", "66", "--num_attention_heads", "4"], "--hidden_size 66 is not a multiple"),
    (["--train_batch_size", "0"], "--train_batch_size must be at least 1, not 0"),
    (["--precision", "amp"], "invalid choice: 'amp'"),
])
def test_bad_settings_end_the_run_before_it_starts(argv, message):
    with pytest.raises(SystemExit) as stop:
        workload.parse_args(argv)
    assert stop.value.code == 2


def _values(log: str, key: str) -> list[float]:
    return [float(v) for v in re.findall(rf" {key} : ([0-9.e+-]+)", log)]


def test_a_run_learns_and_logs_what_nvidias_script_logs(short_run):
    log = short_run.read_text()
    lines = log.splitlines()
    assert re.match(rf'DLL {STAMP} - PARAMETER Config : \["Namespace\(.*max_seq_length=128, .*\)"\] $', lines[0])
    assert "train_batch_size=8" in lines[0] and "phase2=False" in lines[0] and "precision='fp32'" in lines[0]
    assert [re.sub(rf"DLL {STAMP} - ", "", line) for line in lines[1:5]] == [
        "PARAMETER SEED : 42 ", "PARAMETER train_start : True ", "PARAMETER batch_size_per_gpu : 8 ",
        "PARAMETER learning_rate : 0.002 "]
    steps = [int(s) for s in re.findall(r"Training Iteration: (\d+)  average_loss", log)]
    assert steps == list(range(1, 60))
    accuracy = _values(log, "mlm_accuracy")
    assert len(accuracy) == 4  # steps 0, 20, 40, 60
    # Rises from chance, and holds what it learned (a 60-step run's held-out accuracy wavers by a point or so).
    assert accuracy[-1] > accuracy[0] + 0.02 and accuracy[-1] > accuracy[1] - 0.01
    losses = _values(log, "average_loss")
    assert _values(log, "final_loss")[0] < np.mean(losses[:5]) - 1.0
    end = lines[-1]
    rate, raw = _values(end, "training_sequences_per_second")[0], _values(end, "raw_train_time")[0]
    assert rate == pytest.approx(8 * (60 - 4) / raw, rel=1e-9)  # NVIDIA's figure: its first 4 steps left out
    assert _values(end, "e2e_train_time")[0] > raw


def test_a_seed_repeats_its_run_and_another_seed_does_not(python, tmp_path):
    argv = ["--max_steps", "12", "--eval_every", "6", "--threads", "1", "--seed", "7"]
    runs = [_run(python, argv, tmp_path), _run(python, argv, tmp_path),
            _run(python, [*argv[:-1], "8"], tmp_path)]
    assert all(r.returncode == 0 for r in runs), runs[0].stderr[-3000:]
    curves = [_values(r.stdout, "average_loss") + _values(r.stdout, "mlm_accuracy") for r in runs]
    assert curves[0] == curves[1] and curves[0] != curves[2]


def test_bf16_autocast_runs(python, tmp_path):
    done = _run(python, ["--max_steps", "8", "--eval_every", "4", "--threads", "1", "--precision", "bf16"], tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "bf16=True" in done.stdout and "precision='bf16'" in done.stdout
    assert len(_values(done.stdout, "training_sequences_per_second")) == 1


@pytest.fixture(scope="module")
def short_run(tmp_path_factory):
    """One short run's log (60 steps), for the tests that read it."""
    python = framework_python(VAR, "a Python that has torch to run this test")
    folder = tmp_path_factory.mktemp("bert")
    done = _run(python, SHORT, folder)
    assert done.returncode == 0, done.stderr[-3000:]
    (folder / "run.log").write_text(done.stdout)
    return folder / "run.log"


def test_the_ngc_bert_pytorch_format_reads_the_log(short_run):
    text = short_run.read_text()
    run = analyze([short_run]).runs.iloc[0]
    assert (run["format"], run["framework"], run["model"]) == ("ngc_bert_pytorch", "pytorch", "bert")
    assert (run["batch_size"], run["seq_len"], run["phase"], run["precision"]) == (8, 128, 1, "fp32")
    figure = _values(text.splitlines()[-1], "training_sequences_per_second")[0]
    assert run["reported_throughput"] == run["recomputed_throughput"] == pytest.approx(figure)  # NVIDIA's rule
    assert run["reported"]["final_loss"] == _values(text, "final_loss")[0]
    assert models.of_logs(run["model"]).name == "bert_pytorch"


def test_the_ngc_bert_pytorch_format_reads_the_mlm_accuracy(short_run):
    result = analyze([short_run])
    accuracy = _values(short_run.read_text(), "mlm_accuracy")
    logged = one_metric(result.evaluations, "mlm_accuracy")  # the long frame: one row per evaluation and metric
    assert logged["mlm_accuracy"].tolist() == pytest.approx([100 * a for a in accuracy])
    assert set(logged["unit"]) == {"%"}
    assert result.runs.iloc[0]["final_mlm_accuracy"] == pytest.approx(100 * accuracy[-1])


def test_the_ngc_bert_pytorch_format_reads_the_cpu_and_bf16(python, tmp_path):
    done = _run(python, ["--max_steps", "6", "--eval_every", "3", "--threads", "1", "--precision", "bf16"], tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    (tmp_path / "bf16.log").write_text(done.stdout)
    run = analyze([tmp_path / "bf16.log"]).runs.iloc[0]
    assert (run["gpus"], run["precision"]) == (0, "bf16")
