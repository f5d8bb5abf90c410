"""The exact commands of the shipped studies: golden files, and the published commands they reproduce.

Regenerate the golden files after an intended change with `BENCHBOOK_UPDATE_GOLDEN=1 pytest tests/test_commands.py`
and review the diff.
"""

import os
import re
import shlex
from pathlib import Path

import pytest

from benchbook import cli
from benchbook.studies import commands, runner, study

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "golden"
NGC_STUDIES = ["resnet50_tf/ngc_throughput", "resnet50_tf/dlperf_scaling", "resnet50_tf/ngc_slurm",
               "resnet50_tf/ngc_time_to_train",
               "resnet50_tf/ngc_accuracy", "resnet50_mxnet/ngc", "maskrcnn_tf2/ngc",
               "resnet50_pytorch/ngc", "resnet50_pytorch/ngc_v100", "resnet50_pytorch/ngc_slurm",
               "resnet50_pytorch/ngc_mpirun"]


def dry_run(name, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("BENCHBOOK_ENVS", "/envs")
    assert cli.main(["run", f"params/{name}.yaml", "--dry-run", "--out", "/runs"]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("name", NGC_STUDIES)
def test_dry_run_matches_golden(name, capsys, monkeypatch):
    out = dry_run(name, capsys, monkeypatch)
    golden = GOLDEN / (name.replace("/", "__") + ".txt")
    if os.environ.get("BENCHBOOK_UPDATE_GOLDEN"):
        golden.write_text(out)
    assert out == golden.read_text()


def tokens(line: str) -> list[str]:
    """A command's tokens with `--k=v` split as `--k v`, so that both spellings compare equal."""
    out = []
    for t in shlex.split(line):
        out += t.split("=", 1) if re.match(r"--\w+=", t) else [t]
    return out


def inner(study_name: str, run_id: str) -> list[str]:
    """The command inside the container for one run of a shipped study, results dir dropped."""
    s = study.load(ROOT / "params" / f"{study_name}.yaml")
    for rid, _dir, _cfg, cmd in runner.plan(s, Path("/runs")):
        if rid == run_id:
            argv = cmd.argv[cmd.argv.index(s.container.image) + 1:] if s.container.mode == "run" else cmd.argv
            t = tokens(shlex.join(argv))
            i = t.index("--results_dir") if "--results_dir" in t else None
            return t[:i] + t[i + 2:] if i is not None else t
    raise AssertionError(f"no run {run_id}")


TF1 = ("python3 main.py --mode=training_benchmark --use_xla --warmup_steps 200 --num_iter 500 --iter_unit batch "
       "--batch_size {b} --data_dir=/data/tfrecords")
AMP = " --use_tf_amp --use_static_loss_scaling --loss_scale=128"


@pytest.mark.parametrize("run_id, published", [
    ("1n1g_fp32_bs128_xla_r1", TF1.format(b=128)),
    ("1n1g_amp_bs256_xla_r1", TF1.format(b=256) + AMP),
    ("1n8g_amp_bs128_xla_r1", "mpiexec --allow-run-as-root --bind-to socket -np 8 " + TF1.format(b=128) + AMP),
])
def test_tf1_throughput_commands_are_the_published_ones(run_id, published):
    assert sorted(inner("resnet50_tf/ngc_throughput", run_id)) == sorted(tokens(published))
    assert inner("resnet50_tf/ngc_throughput", run_id)[:2] == tokens(published)[:2]


def test_tf1_time_to_train_command_is_the_published_one():
    published = """python3 main.py --arch=resnet50 \
      --mode=train_and_evaluate --iter_unit=epoch --num_iter=120 \
      --batch_size=256 --warmup_steps=100 --use_cosine --label_smoothing 0.1 \
      --lr_init=0.256 --lr_warmup_epochs=8 --momentum=0.875 --weight_decay=3.0517578125e-05 \
      --use_tf_amp --use_static_loss_scaling --loss_scale 128 \
      --data_dir=/data/tfrecords --data_idx_dir=/data/dali_idx \
      --results_dir=/workspace/rn50v15_tf/results --weight_init=fan_in"""
    published_tokens = tokens(published)
    i = published_tokens.index("--results_dir")
    del published_tokens[i:i + 2]
    assert sorted(inner("resnet50_tf/ngc_time_to_train", "1n1g_amp_bs256_r1")) == sorted(published_tokens)
    acc = inner("resnet50_tf/ngc_accuracy", "1n1g_amp_bs256_r1")
    assert acc[acc.index("--num_iter") + 1] == "250"


def test_dlperf_commands():
    t = inner("resnet50_tf/dlperf_scaling", "1n8g_fp32_bs128_dali_r1")
    assert t[:8] == ["docker", "exec", "-w", "/workspace/rn50v15", "-e", "NCCL_DEBUG=INFO", "--", "tf_resnet"]
    for flag in (["--warmup_steps", "20"], ["--num_iter", "120"], ["--display_every", "1"], ["--use_dali"],
                 ["--data_idx_dir", "/data/dali_idx"], ["--batch_size", "128"]):
        assert " ".join(flag) in " ".join(t)
    multi = inner("resnet50_tf/dlperf_scaling", "4n8g_amp_bs224_xla_dali_r3")
    line = " ".join(multi)
    assert "mpirun --allow-run-as-root --tag-output -np 32 -H 10.11.0.2:8,10.11.0.3:8,10.11.0.4:8,10.11.0.5:8" in line
    assert "--mca plm_rsh_args -p 10000" in line and "--use_xla" in line and "--use_tf_amp" in line
    syn = inner("resnet50_tf/dlperf_scaling", "1n4g_amp_bs224_xla_syn_r1")
    assert "--data_dir" not in syn and "--use_dali" not in syn


@pytest.mark.parametrize("run_id, published", [
    ("gpu1_gpu8_fp32_bs128_dali_r1", "python3 benchmark.py -n 1,8 -b 128 --dtype float32 -i 500 -e 3 -w 1 "
                                     "--num-examples 32000 --mode train"),
    ("gpu1_gpu8_amp_bs256_dali_r1", "python3 benchmark.py -n 1,8 -b 256 --dtype float16 -i 500 -e 3 -w 1 "
                                    "--num-examples 32000 --mode train"),
])
def test_mxnet_commands_are_the_published_ones(run_id, published):
    assert inner("resnet50_mxnet/ngc", run_id) == tokens(published)


@pytest.mark.parametrize("run_id, published", [
    ("1n1g_fp32_bs2_r1", "python3 scripts/benchmark_training.py --gpus 1 --batch_size 2"),
    ("1n8g_amp_bs4_r1", "python3 scripts/benchmark_training.py --gpus 8 --batch_size 4 --amp"),
])
def test_maskrcnn_commands_clear_the_model_folder(run_id, published):
    t = inner("maskrcnn_tf2/ngc", run_id)
    assert t[:4] == ["bash", "-c", "rm", "-rf"] or t[:2] == ["bash", "-c"]
    assert t[2] == "rm -rf -- /tmp/model && " + published


def test_docker_run_wraps_with_gpus_ipc_mounts_and_workdir():
    s = study.load(ROOT / "params/resnet50_tf/ngc_throughput.yaml")
    _rid, run_dir, _cfg, cmd = runner.plan(s, Path("/runs"))[0]
    assert cmd.argv[:6] == ["docker", "run", "--rm", "--gpus", "all", "--ipc=host"]
    line = shlex.join(cmd.argv)
    assert f"-v /data/imagenet/tfrecords:/data/tfrecords -v {run_dir}:/results" in line
    assert "-w /workspace/rn50v15_tf -- nvidia_rn50_tf python3 main.py" in line


def test_inside_the_container_commands_run_directly(tmp_path):
    text = (ROOT / "params/resnet50_tf/ngc_throughput.yaml").read_text().replace(
        "  image: nvidia_rn50_tf\n", "  image: nvidia_rn50_tf\n  mode: inside\n")
    p = tmp_path / "inside.yaml"
    p.write_text(text)
    _rid, _dir, _cfg, cmd = runner.plan(study.load(p), Path("/runs"))[0]
    assert cmd.argv[:2] == ["python3", "main.py"] and cmd.cwd == "/workspace/rn50v15_tf"


def test_setup_steps_clone_checkout_patch_build(monkeypatch):
    monkeypatch.chdir(ROOT)
    steps = commands.setup_steps(study.load(Path("params/resnet50_tf/ngc_time_to_train.yaml")))
    assert steps[0] == "git clone -- https://github.com/NVIDIA/DeepLearningExamples DeepLearningExamples"
    assert steps[1].endswith("git checkout 99b1c898cead5603c945721162270c2fe077b4a2 --")
    assert steps[2] == ("git -C DeepLearningExamples apply --unidiff-zero -- "
                        "params/patches/tf1_inter_op_threads.patch")


def test_flags_rendering():
    assert commands.flags({"a": 1, "b": True, "c": False, "d": None, "-e": 3, "--num-examples": 5, "-v": True}) == [
        "--a=1", "--b", "-e", "3", "--num-examples", "5", "-v"]


CPU_MPI = """\
schema_version: 1
model: resnet50_tf
runtime: cpu
cpu: {{image_size: 32}}
sweep: {{batch_size: 8, data: synthetic, processes: [1, 2]}}
iterations: 6
warmup_steps: 2
launcher: {launcher}
env: {{TF_CPP_MIN_LOG_LEVEL: "2"}}
"""


def cpu_commands(tmp_path, launcher: str) -> dict[str, commands.Command]:
    path = tmp_path / f"cpu_{len(list(tmp_path.glob('*.yaml')))}.yaml"
    path.write_text(CPU_MPI.format(launcher=launcher))
    s = study.load(path)
    return {rid: cmd for rid, _d, _c, cmd in runner.plan(s, tmp_path / "runs", python="/envs/tf/bin/python")}


def test_cpu_ranks_through_each_launcher(tmp_path, monkeypatch):
    monkeypatch.setenv("NCCL_DEBUG", "WARN")
    monkeypatch.setenv("LD_LIBRARY_PATH", "/opt/lib")
    workload = str(commands.models.workload_script("tensorflow", "resnet50_tf"))
    for launcher in ("local", "mpirun", "horovodrun"):
        cmds = cpu_commands(tmp_path, launcher)
        assert list(cmds) == ["cpu_fp32_bs8_syn_r1", "cpu_np2_fp32_bs8_syn_r1"]
        one, two = cmds["cpu_fp32_bs8_syn_r1"], cmds["cpu_np2_fp32_bs8_syn_r1"]
        assert one.argv[:2] == ["/envs/tf/bin/python", workload]  # one process: no launcher program around it
        i = two.argv.index("/envs/tf/bin/python")
        assert two.argv[i + 1] == workload and two.launcher == launcher
        head = shlex.join(two.argv[:i])
        if launcher == "local":
            assert head == "mpiexec --allow-run-as-root --tag-output --oversubscribe --bind-to none -np 2"
        elif launcher == "mpirun":
            assert head.startswith("mpirun --allow-run-as-root --tag-output -np 2 -H localhost:2 --bind-to none "
                                   "--map-by slot --oversubscribe -x NCCL_DEBUG -x LD_LIBRARY_PATH -x PATH "
                                   "-x TF_CPP_MIN_LOG_LEVEL --mca pml ob1 --mca btl '^openib'")
        else:
            assert head == "horovodrun -np 2 -H localhost:2"


def test_mpirun_options_come_from_the_study(tmp_path, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    cmds = cpu_commands(tmp_path, "{name: mpirun, bind_to: core, map_by: node, export: [OMP_NUM_THREADS], "
                                  "mca: {btl: 'self,tcp'}, ssh_agent: 'ssh -o BatchMode=yes', "
                                  "args: [--report-bindings]}")
    argv = cmds["cpu_np2_fp32_bs8_syn_r1"].argv
    line = shlex.join(argv[:argv.index("/envs/tf/bin/python")])
    assert "--bind-to core --map-by node" in line and "-x OMP_NUM_THREADS -x TF_CPP_MIN_LOG_LEVEL" in line
    assert "--mca btl self,tcp" in line and "pml" not in line and "-x PATH" not in line
    assert line.endswith("--mca plm_rsh_agent 'ssh -o BatchMode=yes' --report-bindings")


def test_dlperf_multi_node_through_horovodrun(tmp_path):
    doc = (ROOT / "params" / "resnet50_tf" / "dlperf_scaling.yaml").read_text()
    path = tmp_path / "dlperf_horovod.yaml"
    path.write_text(doc.replace("launcher: mpirun", "launcher: horovodrun"))
    s = study.load(path)
    cmd = {rid: c for rid, _d, _c, c in runner.plan(s, Path("/runs"))}["2n8g_amp_bs224_xla_dali_r1"]
    line = shlex.join(cmd.argv)
    assert "tf_resnet horovodrun -np 16 -H 10.11.0.2:8,10.11.0.3:8 -p 10000 python3 main.py" in line


def test_cpu_ranks_get_only_the_variables_that_are_set(tmp_path, monkeypatch):
    monkeypatch.delenv("NCCL_DEBUG", raising=False)
    monkeypatch.delenv("LD_LIBRARY_PATH", raising=False)
    argv = cpu_commands(tmp_path, "mpirun")["cpu_np2_fp32_bs8_syn_r1"].argv
    line = shlex.join(argv)
    assert "-x PATH -x TF_CPP_MIN_LOG_LEVEL" in line and "NCCL_DEBUG" not in line and "LD_LIBRARY_PATH" not in line


# DeepLearningExamples PyTorch/Classification/ConvNets/resnet50v1.5/README.md@291f0d02, "Training
# performance benchmark": the commands for 1 GPU and for 8 (`<path to imagenet>` is the study's mount);
# benchbook adds the study's batch and the run folder as main.py's workspace.
PYTORCH_README = ("python ./launch.py --model resnet50 --precision {p} --mode benchmark_training --platform {platform} "
                  "/imagenet --raport-file benchmark.json --epochs 1 --prof 100")
PYTORCH_ADDED = "--batch-size {b} --workspace /results"


@pytest.mark.parametrize(("study_name", "run_id", "p", "platform", "b"), [
    ("resnet50_pytorch/ngc", "1n1g_tf32_bs256_r1", "TF32", "DGXA100", 256),
    ("resnet50_pytorch/ngc", "1n8g_amp_bs256_r1", "AMP", "DGXA100", 256),
    ("resnet50_pytorch/ngc_v100", "1n1g_fp32_bs112_r1", "FP32", "DGX1V", 112),
    ("resnet50_pytorch/ngc_v100", "1n8g_amp_bs256_r1", "AMP", "DGX1V", 256),
])
def test_pytorch_commands_are_the_readme_s(study_name, run_id, p, platform, b):
    readme = PYTORCH_README.format(p=p, platform=platform)
    if run_id.startswith("1n8g"):
        readme = readme.replace("python ./launch.py", "python ./multiproc.py --nproc_per_node 8 ./launch.py")
    assert inner(study_name, run_id) == tokens(readme + " " + PYTORCH_ADDED.format(b=b))


def test_pytorch_across_nodes_one_multiproc_per_node_with_its_rank():
    s = study.load(ROOT / "params" / "resnet50_pytorch" / "ngc_mpirun.yaml")
    ((_rid, _dir, _cfg, cmd),) = runner.plan(s, Path("/runs"))
    argv = cmd.argv
    assert argv[argv.index("-np") + 1] == "4" and argv[argv.index("-H") + 1] == "node1:1,node2:1,node3:1,node4:1"
    line = argv[-1]
    assert argv[-3:-1] == ["bash", "-c"]
    assert line.startswith('python ./multiproc.py --nnodes 4 --node_rank "${OMPI_COMM_WORLD_RANK:-${SLURM_NODEID:-0}}" '
                           "--master_addr node1 --nproc_per_node 8 ./launch.py --model resnet50 --precision AMP ")


CPU_TTT = """\
schema_version: 1
model: {model}
runtime: cpu
mode: {mode}
cpu: {{image_size: 32}}
sweep: {{batch_size: 32, data: real}}
repeats: 2
iterations: 3
warmup_steps: 1
target_accuracy: 50
"""


def cpu_plan(tmp_path, model: str, mode: str) -> list[tuple]:
    path = tmp_path / f"{model}_{mode}.yaml"
    path.write_text(CPU_TTT.format(model=model, mode=mode))
    return [(d, cmd.argv) for _rid, d, _c, cmd in runner.plan(study.load(path), tmp_path / "runs",
                                                                 python="/envs/py/bin/python")]


def test_cpu_time_to_train_writes_mllog_in_each_run_folder(tmp_path):
    """A train_and_evaluate run of a workload that can write MLLOG gets `--mllog <run folder>/mllog.txt`, each
    repeat its own, where `benchbook mlperf score` reads them (runfolder.MLLOG)."""
    plan = cpu_plan(tmp_path, "resnet50_tf", "train_and_evaluate")
    assert len(plan) == 2
    for run_dir, argv in plan:
        assert argv[argv.index("--mllog") + 1] == str(Path(run_dir) / "mllog.txt")
        assert argv.count("--mllog") == 1
    assert len({argv[argv.index("--mllog") + 1] for _d, argv in plan}) == 2


@pytest.mark.parametrize(("model", "mode"), [("resnet50_tf", "training_benchmark"),
                                             ("resnet50_mxnet", "train_and_evaluate"),
                                             ("resnet50_pytorch", "train_and_evaluate")])
def test_cpu_runs_without_mllog_where_the_workload_does_not_write_it(tmp_path, model, mode):
    """A throughput benchmark has no time to train; the MXNet and PyTorch workloads have no --mllog."""
    assert not commands.models.get(model).cpu_mllog or mode == "training_benchmark"
    for _d, argv in cpu_plan(tmp_path, model, mode):
        assert "--mllog" not in argv
