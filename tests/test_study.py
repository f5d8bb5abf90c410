"""Study files: the shipped params load, bad files fail before anything runs, sweeps expand stably."""

from pathlib import Path

import pytest

from benchbook import models as registry
from benchbook.studies import study
from benchbook.studies.study import StudyError

ROOT = Path(__file__).resolve().parents[1]
# study files only: params/references/ holds published numbers, params/published/ the shipped logs' entries,
# params/mlperf/ the launch studies of submitters' implementations (benchbook mlperf run)
PARAMS = sorted(p for p in (ROOT / "params").rglob("*.yaml")
                if not {"references", "published", "mlperf"} & set(p.parts))

CPU = """\
schema_version: 1
model: resnet50_tf
runtime: cpu
sweep:
  batch_size: [8, 16]
  precision: [fp32, bf16]
repeats: 2
iterations: 12
warmup_steps: 4
"""

NGC = """\
schema_version: 1
model: resnet50_tf
runtime: ngc
code: {repository: https://github.com/NVIDIA/DeepLearningExamples, commit: 99b1c898cead5603c945721162270c2fe077b4a2}
container: {image: nvidia_rn50_tf}
data: {path: /data/tfrecords}
sweep:
  gpus: [1, 8]
  batch_size: 128
iterations: 100
warmup_steps: 10
"""


def write(tmp_path, text, name="study.yaml"):
    p = tmp_path / name
    p.write_text(text)
    return p


@pytest.mark.parametrize("path", PARAMS, ids=lambda p: str(p.relative_to(ROOT / "params")))
def test_shipped_studies_load_and_expand(path):
    s = study.load(path)
    runs = study.expand(s)
    assert runs and len({r.run_id for r in runs}) == len(runs)


def test_every_model_has_shipped_studies():
    models = {study.load(p).model for p in PARAMS}
    # (an analysis-only model, LLM pre-training, has a params folder and no study: nothing launches it yet)
    assert models == {spec.name for spec in registry.specs() if not spec.analysis_only}


def test_expand_orders_repeats_outermost(tmp_path):
    runs = study.expand(study.load(write(tmp_path, CPU)))
    assert [r.config["repeat"] for r in runs] == [1, 1, 1, 1, 2, 2, 2, 2]
    assert runs[0].run_id == "cpu_fp32_bs8_syn_r1" or runs[0].run_id == "cpu_fp32_bs8_r1"
    assert {r.config["gpus"] for r in runs} == {0}
    assert study.load(write(tmp_path, CPU)).name == tmp_path.name + "-study"


def test_dlperf_scaling_study_matches_the_published_plan():
    s = study.load(ROOT / "params/resnet50_tf/dlperf_scaling.yaml")
    runs = study.expand(s)
    # (5 counts x fp32) + (5 counts x amp x 2 xla) + (3 counts x 2 data) = 21 configurations, 5 repeats.
    assert len(runs) == 21 * 5
    cfg = {(r.config["gpus"], r.config["nodes"]) for r in runs}
    assert cfg == {(1, 1), (4, 1), (8, 1), (16, 2), (32, 4)}
    assert {r.config["batch_size"] for r in runs if r.config["precision"] == "fp32"} == {128}
    assert {r.config["batch_size"] for r in runs if r.config["precision"] == "amp"} == {224}


def test_mxnet_benchmark_runs_gpu_counts_in_one_invocation():
    runs = study.expand(study.load(ROOT / "params/resnet50_mxnet/ngc.yaml"))
    assert len(runs) == 4
    assert all(r.config["gpu_counts"] == [1, 8] and "gpus" not in r.config for r in runs)
    assert runs[0].run_id == "gpu1_gpu8_fp32_bs128_dali_r1"


def test_unknown_key_names_file_line_and_suggests(tmp_path):
    p = write(tmp_path, CPU.replace("  batch_size: [8, 16]", "  batch_size: [8, 16]\n  presicion: fp32"))
    with pytest.raises(StudyError) as e:
        study.load(p)
    msg = str(e.value)
    assert f"{p}:6:" in msg and "presicion" in msg and "did you mean 'precision'" in msg


def test_unknown_top_level_key(tmp_path):
    p = write(tmp_path, CPU + "repeat: 3\n")
    with pytest.raises(StudyError, match=r"study.yaml:10: unknown key 'repeat'; did you mean 'repeats'"):
        study.load(p)


def test_wrong_type_names_field_and_value(tmp_path):
    p = write(tmp_path, CPU.replace("repeats: 2", "repeats: many"))
    with pytest.raises(StudyError, match=r"study.yaml:7: repeats = 'many'"):
        study.load(p)


def test_sixteen_gpus_on_one_node_is_refused_with_the_fix(tmp_path):
    p = write(tmp_path, NGC.replace("gpus: [1, 8]", "gpus: [1, 16]"))
    with pytest.raises(StudyError) as e:
        study.load(p)
    assert "16 GPUs on one node" in str(e.value) and "2x8" in str(e.value) and f"{p}:8:" in str(e.value)


def test_multi_node_needs_a_multi_node_launcher_and_hosts(tmp_path):
    p = write(tmp_path, NGC.replace("gpus: [1, 8]", "gpus: 2x8"))
    with pytest.raises(StudyError, match="spans 2 nodes but launcher local runs on this node; choose launcher mpirun"):
        study.load(p)
    p = write(tmp_path, NGC.replace("gpus: [1, 8]", "gpus: 2x8") + "launcher: mpirun\n")
    with pytest.raises(StudyError, match="needs 2 hosts but `hosts` lists 0"):
        study.load(p)
    # Slurm picks the nodes itself: no host list
    p = write(tmp_path, NGC.replace("gpus: [1, 8]", "gpus: 2x8") + "launcher: {name: slurm, slurm: {partition: gpu}}\n")
    assert study.load(p).launcher.slurm.partition == "gpu"


def test_unknown_launcher_is_named_with_the_known_ones(tmp_path):
    p = write(tmp_path, NGC + "launcher: pbs\n")
    with pytest.raises(StudyError, match=r"launcher.name = 'pbs': must be one of 'local', 'mpirun', 'horovodrun'"):
        study.load(p)


def test_processes_are_a_cpu_axis(tmp_path):
    p = write(tmp_path, NGC.replace("gpus: [1, 8]", "gpus: 1\n  processes: 2"))
    with pytest.raises(StudyError, match="processes: NGC runs start one process per GPU"):
        study.load(p)


@pytest.mark.parametrize("change, message", [
    (("runtime: cpu", "runtime: cpu\nmode: train_and_evaluate"), "needs target_accuracy"),
    (("precision: [fp32, bf16]", "precision: [fp32, amp]"), "'amp' is not available on runtime cpu"),
    (("batch_size: [8, 16]", "batch_size: [8, 16]\n  gpus: 8"), "CPU runs use no GPU"),
    (("model: resnet50_tf\nruntime: cpu", "model: maskrcnn_tf2\nruntime: cpu\nmode: train_and_evaluate"),
     "the CPU Mask R-CNN workload measures throughput only"),
    (("  precision: [fp32, bf16]", "  precision: fp32\n  data: real"), None),
    (("model: resnet50_tf", "model: resnet50_mxnet"), None),
    (("model: resnet50_tf", "model: resnet5O_tf"), "model = 'resnet5O_tf': must be one of"),
    (("warmup_steps: 4", "warmup_steps: 12"), "warmup_steps (12) must be below iterations (12)"),
    (("schema_version: 1", "schema_version: 2"), "schema_version 2 is not supported"),
    (("schema_version: 1\n", ""), "schema_version is missing"),
])
def test_bad_cpu_studies(tmp_path, change, message):
    p = write(tmp_path, CPU.replace(*change))
    if message is None:
        assert study.load(p).model in ("resnet50_mxnet", "resnet50_tf")
        return
    with pytest.raises(StudyError) as e:
        study.load(p)
    assert message in str(e.value) and str(p) in str(e.value)


def test_the_old_warmup_key_names_its_new_name_and_line(tmp_path):
    """`warmup` now names only the records analysis skips (issue 18): a study that still says `warmup:` is
    refused at its line, with the key to write instead, not taken for analysis warm-up nor dropped."""
    p = write(tmp_path, CPU.replace("warmup_steps: 4", "warmup: 4"))
    with pytest.raises(StudyError) as e:
        study.load(p)
    assert str(e.value) == (f"{p}:9: `warmup` was renamed to `warmup_steps` (iterations the training script "
                            "skips, its --warmup_steps); write warmup_steps: 4")
    assert study.load(write(tmp_path, CPU)).warmup_steps == 4


def test_the_runs_pass_warmup_steps_to_the_script(tmp_path):
    s = study.load(write(tmp_path, CPU.replace("warmup_steps: 4", "warmup_steps: 7")))
    assert {r.config["warmup_steps"] for r in study.expand(s)} == {7}
    assert all("warmup" not in r.config for r in study.expand(s))


def test_xla_on_mxnet_is_impossible(tmp_path):
    p = write(tmp_path, CPU.replace("model: resnet50_tf", "model: resnet50_mxnet").replace(
        "  precision: [fp32, bf16]", "  precision: fp32\n  xla: true"))
    with pytest.raises(StudyError, match="resnet50_mxnet has no XLA"):
        study.load(p)


def test_ngc_needs_code_and_container(tmp_path):
    p = write(tmp_path, NGC.replace("container: {image: nvidia_rn50_tf}\n", ""))
    with pytest.raises(StudyError, match="runtime ngc needs `code`"):
        study.load(p)


def test_every_problem_is_reported_at_once(tmp_path):
    p = write(tmp_path, CPU.replace("repeats: 2", "repeats: 0").replace("iterations: 12", "iterations: -1"))
    with pytest.raises(StudyError) as e:
        study.load(p)
    assert "repeats" in str(e.value) and "iterations" in str(e.value)


def test_invalid_yaml_and_missing_file(tmp_path):
    with pytest.raises(StudyError, match=r"study.yaml:\d+: not valid YAML"):
        study.load(write(tmp_path, "schema_version: 1\nsweep: [a, b\n"))
    with pytest.raises(StudyError, match="no such study file"):
        study.load(tmp_path / "nope.yaml")
    with pytest.raises(StudyError, match="a study file is a YAML mapping"):
        study.load(write(tmp_path, "- 1\n- 2\n"))
    (tmp_path / "latin1.yaml").write_bytes(b"schema_version: 1\nname: caf\xe9\n")
    with pytest.raises(StudyError, match=r"latin1.yaml: cannot read the study file \(.*utf-8"):
        study.load(tmp_path / "latin1.yaml")


@pytest.mark.parametrize("text, seconds", [(90, 90), ("90s", 90), ("30m", 1800), ("2h", 7200), ("1h30m", 5400)])
def test_durations(text, seconds):
    assert study.seconds(text) == seconds


@pytest.mark.parametrize("bad", ["soon", "", "-5m", 0])
def test_bad_durations(bad):
    with pytest.raises(ValueError):
        study.seconds(bad)


def test_parse_gpus():
    assert study.parse_gpus(8, 8) == (1, 8)
    assert study.parse_gpus("4x8", 8) == (4, 8)
    assert study.parse_gpus("16", 8) == (1, 16)
    with pytest.raises(ValueError, match="nodes x GPUs per node"):
        study.parse_gpus("eight", 8)


def test_cpu_mask_rcnn_trains_on_generated_data(tmp_path):
    ok = CPU.replace("model: resnet50_tf", "model: maskrcnn_tf2").replace("  precision: [fp32, bf16]",
                                                                          "  precision: fp32\n  data: synthetic")
    assert study.load(write(tmp_path, ok)).model == "maskrcnn_tf2"
    with pytest.raises(StudyError, match="generated images with boxes and masks"):
        study.load(write(tmp_path, ok.replace("data: synthetic", "data: real")))


# ---------------------------------------------------------------- issue 26: cross-field errors at their field


def _lines(message: str, path) -> list[str]:
    return [line.removeprefix(f"{path}:") for line in message.splitlines()]


@pytest.mark.parametrize("change, at", [
    # (line numbers of the CPU study above, after the change)
    (("warmup_steps: 4", "warmup_steps: 12"), "9: warmup_steps: warmup_steps (12) must be below iterations (12)"),
    (("runtime: cpu", "runtime: cpu\nmode: train_and_evaluate"), "4: mode: mode train_and_evaluate on the CPU "
                                                                 "needs target_accuracy"),
    (("runtime: cpu", "runtime: cpu\ncpu:\n  device: cuda"), "5: cpu.device: cpu.device cuda: only "),
    (("runtime: cpu", "runtime: cpu\npython: /usr/bin/python3\nlauncher: slurm\nclean: [a, ../b]"),
     "6: clean.1: clean: '../b' leaves the run folder"),
    (("runtime: cpu", "runtime: ngc"), "3: runtime: runtime ngc needs `code`"),
])
def test_cross_field_errors_point_at_the_field_concerned(tmp_path, change, at):
    """Issue 26 (13): these errors pointed at line 1, `(top level)`."""
    p = write(tmp_path, CPU.replace(*change))
    with pytest.raises(StudyError) as e:
        study.load(p)
    assert any(line.startswith(at) for line in _lines(str(e.value), p)), str(e.value)


def test_a_container_error_points_at_its_key_and_every_problem_is_told(tmp_path):
    text = NGC.replace("container: {image: nvidia_rn50_tf}", "container:\n  image: nvidia_rn50_tf\n  mode: exec")
    p = write(tmp_path, text)
    with pytest.raises(StudyError) as e:
        study.load(p)
    assert _lines(str(e.value), p) == ["7: container.mode: container.mode exec needs container.name (the running "
                                       "container to exec into)"]
    p = write(tmp_path, NGC + "clean: [/data, ../x]\n")
    with pytest.raises(StudyError) as e:
        study.load(p)
    assert [line.split(": ")[:2] for line in _lines(str(e.value), p)] == [["12", "clean.0"], ["12", "clean.1"]]


def test_the_caps_point_at_the_sweep(tmp_path):
    p = write(tmp_path, CPU.replace("repeats: 2", "repeats: 1000"))
    with pytest.raises(StudyError) as e:
        study.load(p)
    assert str(e.value).startswith(f"{p}:4: the sweep plans 4000 runs")
    p = write(tmp_path, CPU.replace("batch_size: [8, 16]", "batch_size: [8, 16]\n  processes: 2000"))
    with pytest.raises(StudyError) as e:
        study.load(p)
    assert str(e.value).startswith(f"{p}:6: processes: 2000 starts 2000 processes")


# ---------------------------------------------------------------- issue 26: the reference, checked at load


def test_a_reference_that_does_not_exist_is_refused_at_load_with_its_line(tmp_path):
    p = write(tmp_path, NGC + "reference: ngc_tf1_resnet5O\n")
    with pytest.raises(StudyError) as e:
        study.load(p)
    assert str(e.value).startswith(f"{p}:12: reference = 'ngc_tf1_resnet5O': unknown reference")
    assert "ngc_tf1_resnet50" in str(e.value)  # the known names are listed
    p = write(tmp_path, NGC + "reference: ../resnet50_tf/ngc_throughput\n")
    with pytest.raises(StudyError, match=r"study.yaml:12: reference = '../resnet50_tf/ngc_throughput': "):
        study.load(p)
    assert study.load(write(tmp_path, NGC + "reference: ngc_tf1_resnet50\n")).reference == "ngc_tf1_resnet50"


def test_a_reference_file_that_does_not_load_is_refused_at_load(tmp_path, monkeypatch):
    refs = tmp_path / "refs"
    refs.mkdir()
    (refs / "broken.yaml").write_text("schema_version: 1\ntitle: [not, a, title\n")
    monkeypatch.setenv("BENCHBOOK_REFERENCES", str(refs))
    p = write(tmp_path, NGC + "reference: broken\n")
    with pytest.raises(StudyError) as e:
        study.load(p)
    assert str(e.value).startswith(f"{p}:12: reference = 'broken': ") and "broken.yaml" in str(e.value)
