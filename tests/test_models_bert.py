"""The BERT PyTorch model: its spec, the NGC commands of its studies (golden files, and the command
PaddlePaddle/Perf published for its NGC 21.11 runs), and its CPU workload's command line."""

import shlex
from pathlib import Path

import pytest
import yaml

from benchbook import models
from benchbook.core import catalog
from benchbook.models.bert_pytorch import BertStudyError
from benchbook.studies import commands, study
from test_commands import GOLDEN, dry_run, tokens

ROOT = Path(__file__).resolve().parents[1]
STUDIES = ["bert_pytorch/ngc", "bert_pytorch/ngc_slurm", "bert_tf/ngc"]
NGC = {"schema_version": 1, "model": "bert_pytorch", "runtime": "ngc",
       "code": {"repository": "https://github.com/NVIDIA/DeepLearningExamples", "commit": "a9e2c1d5",
                "subfolder": "PyTorch/LanguageModeling/BERT", "workdir": "/workspace/bert"},
       "container": {"image": "bert"}, "data": {"path": "/data/bert", "mount": "/workspace/bert/data"},
       "sweep": {"gpus": 1, "batch_size": 128, "precision": "tf32"}, "iterations": 20}


def _study(tmp_path, doc: dict):
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(doc))
    return study.load(path)


def _argv(s, index: int = 0) -> list[str]:
    run = study.expand(s)[index]
    return commands.builder(s)(s, run.config, Path("/runs/x"))


@pytest.mark.parametrize("name", STUDIES)
def test_dry_run_matches_golden(name, capsys, monkeypatch):
    out = dry_run(name, capsys, monkeypatch)
    assert out == (GOLDEN / (name.replace("/", "__") + ".txt")).read_text()


def test_the_spec_declares_its_unit_metric_and_axes():
    spec = models.get("bert_pytorch")
    assert (spec.unit, spec.framework, spec.cpu_script) == ("sequences/s", "pytorch", "bert_pytorch.py")
    assert spec.title == "BERT-base pre-training on PyTorch (NGC DeepLearningExamples)"
    assert [m.key for m in spec.quality] == ["mlm_accuracy"] and spec.quality[0].direction == "higher"
    known = catalog.default()
    assert {"seq_len", "phase"} <= set(known.run_keys()) and {"seq_len", "phase"} <= set(known.identity())


def test_paddle_perf_published_command_is_reproduced(tmp_path):
    # PaddlePaddle/Perf's NGC 21.11 A100 run (its log's `set -x` line): batch 128 on 1 GPU, 67584 sequences
    # a step, its `fp32` being TF32 on an A100 (the script's tf32 runs the same flags).
    s = _study(tmp_path, {**NGC, "options": {"global_batch_size": 67584}})
    published = "bash scripts/run_pretraining.sh 67584 6e-3 tf32 1 0.2843 20 200 false true true 528"
    assert _argv(s) == tokens(published)


def test_eight_gpus_split_the_global_batch_and_fp32_turns_tf32_off(tmp_path):
    doc = {**NGC, "sweep": {"gpus": 8, "batch_size": 96, "precision": ["fp32", "amp"]},
           "options": {"global_batch_size": 67584}}
    fp32, amp = _argv(_study(tmp_path, doc), 0), _argv(_study(tmp_path, doc), 1)
    assert fp32 == ["env", "NVIDIA_TF32_OVERRIDE=0", *tokens(
        "bash scripts/run_pretraining.sh 8448 6e-3 fp32 8 0.2843 20 200 false true true 88")]
    assert amp == tokens("bash scripts/run_pretraining.sh 8448 6e-3 fp16 8 0.2843 20 200 false true true 88")


def test_multi_node_runs_launch_each_node_with_its_rank_and_quote_the_study(tmp_path):
    doc = {**NGC, "sweep": {"gpus": "2x8", "batch_size": 128, "precision": "amp"}, "launcher": "slurm",
           "container": {"image": "nvcr.io#nvidia/pytorch:21.11-py3"},
           "data": {"path": "/d", "mount": "/mnt/it's data"}}
    argv = _argv(_study(tmp_path, doc))
    assert argv[:2] == ["bash", "-c"]
    line = shlex.split(argv[2])
    assert line[:8] == ["python", "-m", "torch.distributed.launch", "--nproc_per_node=8", "--nnodes=2",
                        "--node_rank=${SLURM_NODEID:-0}", "--master_addr=$SLURM_LAUNCH_NODE_IPADDR",
                        "--master_port=29500"]
    assert "--input_dir=/mnt/it's data" in line  # one word, quoted: the mount never splits or runs
    assert {"--train_batch_size=4096", "--gradient_accumulation_steps=32", "--fp16", "--amp"} <= set(line)


@pytest.mark.parametrize(("options", "message"), [
    ({"num_gpus": 8}, "options num_gpus: scripts/run_pretraining.sh takes positional arguments"),
    ({"learning_rate": "6e-3; rm -rf /"}, "options.learning_rate: '6e-3; rm -rf /' is not a positive number"),
    ({"warmup_proportion": -0.1}, "options.warmup_proportion: -0.1 is not a positive number"),
    ({"global_batch_size": 1000}, "options.global_batch_size 1000 is not a multiple of batch_size x gpus (128 x 1)"),
    ({"save_checkpoint_steps": 2.5}, "options.save_checkpoint_steps: 2.5 is not a positive whole number"),
])
def test_options_the_script_cannot_take_are_refused_by_name(tmp_path, options, message):
    with pytest.raises(BertStudyError) as err:
        _argv(_study(tmp_path, {**NGC, "options": options}))
    assert message in str(err.value)


def test_the_cpu_command_is_the_workloads_own(tmp_path):
    s = study.load(ROOT / "params" / "bert_pytorch" / "cpu.yaml")
    assert [r.run_id for r in study.expand(s)] == ["cpu_fp32_bs8_r1"]  # one run: make report's time
    assert _argv(s, 0) == ["--train_batch_size", "8", "--max_steps", "150", "--warmup_steps", "4", "--precision",
                           "fp32", "--threads", "1", "--seed", "1", "--seq-len=128", "--eval_every=30"]
    cmd = commands.command(s, study.expand(s)[0].config, Path("/runs/x"), python="/py")
    assert cmd.argv[:2] == ["/py", str(models.workload_script("pytorch", "bert_pytorch"))]


def test_synthetic_data_is_refused_on_the_cpu(tmp_path):
    doc = yaml.safe_load((ROOT / "params" / "bert_pytorch" / "cpu.yaml").read_text())
    doc["sweep"]["data"] = "synthetic"
    with pytest.raises(BertStudyError, match="data: synthetic: the CPU BERT trains on the standard library"):
        _argv(_study(tmp_path, doc))


def test_the_cpu_smoke_study_loads():
    s = study.load(ROOT / "params" / "bert_pytorch" / "cpu_smoke.yaml")
    assert [r.run_id for r in study.expand(s)] == ["cpu_fp32_bs4_r1"]


TF = {**NGC, "model": "bert_tf", "code": {**NGC["code"], "subfolder": "TensorFlow/LanguageModeling/BERT"},
      "sweep": {"gpus": [1, 8], "batch_size": 96, "precision": "amp", "xla": True}}


def test_tf_paddle_perf_published_commands_are_reproduced(tmp_path):
    # PaddlePaddle/Perf's NGC 20.06-tf1 V100 runs (their logs' `set -x` lines): batch 96, 67584 sequences a step.
    s = _study(tmp_path, {**TF, "options": {"global_batch_size": 67584}})
    assert _argv(s, 0) == tokens("bash scripts/run_pretraining_lamb.sh 96 64 8 7.5e-4 5e-4 fp16 true 1 2000 200 20 200 "
                                 "704 512 base")
    assert _argv(s, 1) == tokens("bash scripts/run_pretraining_lamb.sh 96 64 8 7.5e-4 5e-4 fp16 true 8 2000 200 20 200 "
                                 "88 512 base")


def test_tf_spec_and_what_its_studies_cannot_ask(tmp_path):
    spec = models.get("bert_tf")
    assert (spec.unit, spec.log_names, spec.cpu_script, spec.ngc_script) == (
        "sequences/s", ("tensorflow", "bert"), None, "scripts/run_pretraining_lamb.sh")
    assert spec.quality == models.get("bert_pytorch").quality and spec.axes == models.get("bert_pytorch").axes
    with pytest.raises(BertStudyError, match="not a multiple of batch_size x gpus"):
        _argv(_study(tmp_path, TF))  # NVIDIA's 65536 is no multiple of 96
    with pytest.raises(BertStudyError, match="options learning_rate_phase2: scripts/run_pretraining_lamb.sh takes"):
        _argv(_study(tmp_path, {**TF, "options": {"learning_rate_phase2": "5e-4"}}))
    with pytest.raises(BertStudyError, match="over 2 nodes: scripts/run_pretraining_lamb.sh runs on one node"):
        _argv(_study(tmp_path, {**TF, "sweep": {**TF["sweep"], "gpus": "2x8"}, "gpus_per_node": 8,
                                "launcher": {"name": "slurm", "slurm": {"partition": "gpu"}},
                                "options": {"global_batch_size": 67584}}))
