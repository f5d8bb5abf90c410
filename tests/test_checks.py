"""`benchbook check`: set-up checks with faked docker/ssh/mpirun/nvidia-smi and data layouts built in tmp_path.

Studies are the shipped ones under params/, copied with their host paths pointed into tmp_path. The
fake machine answers like a healthy DGX host (docker with the nvidia runtime, the image, the running
container, 8 GPUs, mpirun and ssh in the container) unless a test overrides one answer.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import io
import json
import subprocess
from pathlib import Path

import pytest
import yaml
from rich.console import Console
from rich.table import Table

from benchbook.environment import envs
from benchbook.studies import checks, study

PARAMS = Path(__file__).resolve().parents[1] / "params"
COMMIT_TF = "fed7ba99cde958fda12c9e81d12b3d7e738e0590"


# ---------------------------------------------------------------- fakes and helpers


class Machine:
    """`which` and `run` of a fake host. `answers` maps a substring of the command line to (rc, out, err);
    the first match wins, overrides first."""

    def __init__(self, tools=("docker", "ssh", "git"), gpus: int = 8):
        self.tools = set(tools)
        self.calls: list[list[str]] = []
        smi = "".join(f"GPU {i}: Tesla V100-SXM2-16GB (UUID: GPU-{i:08d})\n" for i in range(gpus))
        self.answers: list[tuple[str, tuple[int, str, str]]] = [
            ("docker info", (0, '{"nvidia":{"path":"nvidia-container-runtime"},"runc":{"path":"runc"}}\n', "")),
            ("docker image inspect", (0, "sha256:" + "a" * 64 + "\n", "")),
            ("docker inspect -f", (0, "true\n", "")),
            ("nvidia-smi -L", (0, smi, "")),
            ("command -v mpirun", (0, "== TensorFlow ==\nNVIDIA Release 20.03-tf1\n/usr/local/mpi/bin/mpirun\n", "")),
            ("command -v mpiexec", (0, "/usr/local/mpi/bin/mpiexec\n", "")),
            ("ssh ", (0, "", "")),
            ("rev-parse HEAD", (0, COMMIT_TF + "\n", "")),
        ]

    def set(self, fragment: str, rc: int, out: str = "", err: str = "") -> Machine:
        self.answers.insert(0, (fragment, (rc, out, err)))
        return self

    def which(self, name: str) -> str | None:
        return f"/usr/bin/{name}" if name in self.tools else None

    def run(self, argv, **kwargs):
        assert kwargs.get("timeout"), "every probe has a time limit"
        self.calls.append(list(argv))
        line = " ".join(argv)
        for fragment, answer in self.answers:
            if fragment in line:
                if isinstance(answer, BaseException):
                    raise answer
                rc, out, err = answer
                return subprocess.CompletedProcess(argv, rc, out, err)
        raise FileNotFoundError(argv[0])

    def raises(self, fragment: str, exc: BaseException) -> Machine:
        self.answers.insert(0, (fragment, exc))
        return self

    def check(self, spec, **kwargs):
        return checks.check(spec, which=self.which, run=self.run, **kwargs)


def by_name(results: list[checks.Check]) -> dict[str, checks.Check]:
    return {c.name: c for c in results}


def write_study(tmp_path: Path, name: str, **changes) -> study.Study:
    """A shipped study copied into tmp_path with `changes` merged in (dicts one level deep)."""
    doc = yaml.safe_load((PARAMS / f"{name}.yaml").read_text())
    for key, value in changes.items():
        if isinstance(value, dict) and isinstance(doc.get(key), dict):
            doc[key] = {**doc[key], **value}
        else:
            doc[key] = value
    target = tmp_path / "studies" / (name.replace("/", "__") + ".yaml")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(yaml.safe_dump(doc, sort_keys=False))
    return study.load(target)


def touch(folder: Path, names) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for n in names:
        (folder / n).touch()
    return folder


def imagenet_tfrecords(folder: Path, skip=()) -> Path:
    names = [f"train-{i:05d}-of-01024" for i in range(1024)] + [f"validation-{i:05d}-of-00128" for i in range(128)]
    return touch(folder, [n for n in names if n not in skip])


def dlperf(tmp_path: Path, *, skip_shards=(), skip_index=(), index=True) -> study.Study:
    data = imagenet_tfrecords(tmp_path / "ImageNet" / "tfrecord", skip_shards)
    if index:  # the DALI index folder next to the data folder, named like data.dali_index
        imagenet_tfrecords(tmp_path / "ImageNet" / "dali_idx", skip_index)
    return write_study(tmp_path, "resnet50_tf/dlperf_scaling", data={"path": str(data)})


# ---------------------------------------------------------------- TF1 ImageNet layout (acceptance)


def test_complete_tf1_layout_passes(tmp_path):
    spec = dlperf(tmp_path)
    m = Machine()
    results = m.check(spec)
    assert checks.failed(results) == []
    got = by_name(results)
    assert got["ImageNet train TFRecords"].ok and "1024 of 1024 train shards" in got["ImageNet train TFRecords"].detail
    assert got["ImageNet validation TFRecords"].ok
    assert got["DALI index"].ok and "1152 of 1152 index files" in got["DALI index"].detail
    assert got["GPUs per node"].ok and got["container"].ok and got["NVIDIA container runtime"].ok
    assert got["mpirun"].detail.startswith("/usr/local/mpi/bin/mpirun")  # the NGC banner is skipped
    assert got["code"].ok is None and f"git checkout {COMMIT_TF} --" in got["code"].fix
    # the launcher runs in the exec container: ssh is tried from there, on the containers' sshd port
    ssh = [c for c in m.calls if "ssh" in c]
    assert ssh[0][:4] == ["docker", "exec", "--", "tf_resnet"]
    assert ["-p", "10000"] == ssh[0][ssh[0].index("-p"):ssh[0].index("-p") + 2]
    assert {c[-2] for c in ssh} == {"10.11.0.2", "10.11.0.3", "10.11.0.4", "10.11.0.5"}


def test_1023_of_1024_shards_names_the_missing_file(tmp_path):
    spec = dlperf(tmp_path, skip_shards={"train-00017-of-01024"})
    got = by_name(Machine().check(spec))
    train = got["ImageNet train TFRecords"]
    assert train.ok is False
    assert "1023 of 1024 train shards" in train.detail and "missing train-00017-of-01024" in train.detail
    assert "--data-prep" in train.fix
    assert got["ImageNet validation TFRecords"].ok


def test_many_missing_shards_are_counted_and_the_first_named(tmp_path):
    missing = {f"validation-{i:05d}-of-00128" for i in range(100, 128)}
    got = by_name(Machine().check(dlperf(tmp_path, skip_shards=missing)))
    val = got["ImageNet validation TFRecords"]
    assert val.ok is False and "100 of 128 validation shards" in val.detail
    assert "validation-00100-of-00128" in val.detail and "(and 23 more)" in val.detail


def test_missing_dali_index_files_are_named(tmp_path):
    spec = dlperf(tmp_path, skip_index={"train-00003-of-01024", "validation-00127-of-00128"})
    dali = by_name(Machine().check(spec))["DALI index"]
    assert dali.ok is False
    assert "1150 of 1152 index files" in dali.detail
    assert "train-00003-of-01024" in dali.detail and "validation-00127-of-00128" in dali.detail
    assert "bash ./utils/dali_index.sh /data/tfrecords /data/dali_idx" in dali.fix
    assert dali.fix.startswith("docker exec -it tf_resnet")


def test_missing_dali_index_folder_says_where_it_looked(tmp_path):
    spec = dlperf(tmp_path, index=False)
    m = Machine().set("ls -1A -- /data/dali_idx", 2, "",
                      "ls: cannot access '/data/dali_idx': No such file or directory")
    dali = by_name(m.check(spec))["DALI index"]
    assert dali.ok is False and "/data/dali_idx" in dali.detail and "No such file" in dali.detail


def test_dali_index_inside_the_exec_container_is_listed_there(tmp_path):
    spec = dlperf(tmp_path, index=False)
    names = "\n".join([f"train-{i:05d}-of-01024" for i in range(1024)] +
                      [f"validation-{i:05d}-of-00128" for i in range(127)])
    m = Machine().set("ls -1A -- /data/dali_idx", 0, names + "\n")
    dali = by_name(m.check(spec))["DALI index"]
    assert dali.ok is False and "(in container tf_resnet)" in dali.detail
    assert "missing validation-00127-of-00128" in dali.detail
    assert ["docker", "exec", "--", "tf_resnet", "ls", "-1A", "--", "/data/dali_idx"] in m.calls


def test_dali_index_not_mounted_in_mode_run_fails_with_the_mount_to_add(tmp_path):
    data = imagenet_tfrecords(tmp_path / "tfrecords")
    imagenet_tfrecords(tmp_path / "dali_idx")
    spec = write_study(tmp_path, "resnet50_tf/ngc_throughput", data={"path": str(data), "dali_index": "/data/dali_idx"},
                       sweep={"gpus": 1, "batch_size": 256, "precision": "amp", "dali": True})
    dali = by_name(Machine().check(spec))["DALI index"]
    assert dali.ok is False and "will not see /data/dali_idx" in dali.detail
    assert f"container.mounts: {{{tmp_path / 'dali_idx'}: /data/dali_idx}}" in dali.fix


def test_dali_index_under_the_data_mount_is_read_through_the_mount(tmp_path):
    data = imagenet_tfrecords(tmp_path / "tfrecords")
    imagenet_tfrecords(data / "idx", skip={"train-01023-of-01024"})
    spec = write_study(tmp_path, "resnet50_tf/ngc_throughput",
                       data={"path": str(data), "dali_index": "/data/tfrecords/idx"},
                       sweep={"gpus": 1, "batch_size": 256, "precision": "amp", "dali": True})
    dali = by_name(Machine().check(spec))["DALI index"]
    assert dali.ok is False and str(data / "idx") in dali.detail and "train-01023-of-01024" in dali.detail


def test_no_dali_point_needs_no_index(tmp_path):
    data = imagenet_tfrecords(tmp_path / "tfrecords")
    spec = write_study(tmp_path, "resnet50_tf/ngc_time_to_train", data={"path": str(data)},
                       code={"patches": []})
    results = Machine().check(spec)
    assert "DALI index" not in by_name(results) and checks.failed(results) == []


def test_missing_data_folder(tmp_path):
    spec = write_study(tmp_path, "resnet50_tf/ngc_throughput", data={"path": str(tmp_path / "nowhere")})
    got = by_name(Machine().check(spec))
    assert got["ImageNet TFRecords"].ok is False and "does not exist" in got["ImageNet TFRecords"].detail


# ---------------------------------------------------------------- MXNet, Mask R-CNN, synthetic, CPU


def test_mxnet_missing_val_idx_is_named(tmp_path):
    data = touch(tmp_path / "recordio", ["train.rec", "train.idx", "val.rec"])
    spec = write_study(tmp_path, "resnet50_mxnet/ngc", data={"path": str(data)})
    got = by_name(Machine().check(spec))
    rec = got["ImageNet RecordIO"]
    assert rec.ok is False and "3 of 4 RecordIO files" in rec.detail and "missing val.idx" in rec.detail
    assert "DALI index" not in got  # MXNet's DALI reads the RecordIO .idx files
    assert got["GPUs per node"].ok and "1,8" in got["GPUs per node"].detail


def test_mxnet_complete_layout_passes(tmp_path):
    data = touch(tmp_path / "recordio", ["train.rec", "train.idx", "val.rec", "val.idx"])
    spec = write_study(tmp_path, "resnet50_mxnet/ngc", data={"path": str(data)})
    assert checks.failed(Machine().check(spec)) == []


def test_pytorch_reads_the_imagenet_folders_and_names_a_missing_one(tmp_path):
    data = tmp_path / "imagenet"
    (data / "train").mkdir(parents=True)
    spec = write_study(tmp_path, "resnet50_pytorch/ngc", data={"path": str(data)})
    got = by_name(Machine().check(spec))["ImageNet folders"]
    assert got.ok is False and "1 of 2 folders" in got.detail and "missing val" in got.detail
    (data / "val").mkdir()
    assert by_name(Machine().check(spec))["ImageNet folders"].ok is True
    prep = checks.data_preparation(spec)
    assert prep[-1].startswith(f"# then move train/ and val/ into {data} (mounted at /imagenet)")


def coco(tmp_path: Path, skip=()) -> Path:
    names = [f"train-{i:05d}-of-00256.tfrecord" for i in range(256)] + \
            [f"val-{i:05d}-of-00032.tfrecord" for i in range(32)]
    return touch(tmp_path / "coco", [n for n in names if n not in skip])


def maskrcnn(tmp_path: Path, weights: Path | None, skip=()) -> study.Study:
    data = coco(tmp_path, skip)
    container = {"mounts": {str(weights): "/model"} if weights else {}}
    return write_study(tmp_path, "maskrcnn_tf2/ngc", data={"path": str(data)}, container=container)


def test_maskrcnn_complete_layout_passes(tmp_path):
    weights = tmp_path / "weights"
    touch(weights / "resnet" / "resnet-nhwc-2018-02-07",
          ["model.ckpt-112603.index", "model.ckpt-112603.data-00000-of-00001", "model.ckpt-112603.meta"])
    results = Machine().check(maskrcnn(tmp_path, weights))
    assert checks.failed(results) == []
    got = by_name(results)
    assert "256 of 256 train shards" in got["COCO train TFRecords"].detail
    assert "32 of 32 val shards" in got["COCO validation TFRecords"].detail


def test_maskrcnn_missing_checkpoint(tmp_path):
    weights = tmp_path / "weights"
    touch(weights / "resnet" / "resnet-nhwc-2018-02-07", ["model.ckpt-112603.index"])
    ckpt = by_name(Machine().check(maskrcnn(tmp_path, weights)))["ResNet-50 checkpoint"]
    assert ckpt.ok is False and "missing model.ckpt-112603.data-00000-of-00001" in ckpt.detail
    assert "download_and_process_pretrained_weights.sh" in ckpt.fix and str(weights) in ckpt.fix


def test_maskrcnn_checkpoint_folder_absent(tmp_path):
    weights = tmp_path / "weights"
    ckpt = by_name(Machine().check(maskrcnn(tmp_path, weights)))["ResNet-50 checkpoint"]
    assert ckpt.ok is False and "resnet-nhwc-2018-02-07 does not exist" in ckpt.detail


def test_maskrcnn_without_a_model_mount(tmp_path):
    ckpt = by_name(Machine().check(maskrcnn(tmp_path, None)))["ResNet-50 checkpoint"]
    assert ckpt.ok is False and "no folder is mounted at /model" in ckpt.detail


def test_maskrcnn_missing_coco_shard(tmp_path):
    weights = tmp_path / "weights"
    got = by_name(Machine().check(maskrcnn(tmp_path, weights, skip={"val-00031-of-00032.tfrecord"})))
    assert got["COCO validation TFRecords"].ok is False
    assert "missing val-00031-of-00032.tfrecord" in got["COCO validation TFRecords"].detail


def test_synthetic_only_study_needs_no_data(tmp_path):
    spec = write_study(tmp_path, "resnet50_mxnet/ngc", data={"path": str(tmp_path / "none")},
                       sweep={"gpus": [1, 8], "batch_size": 128, "dali": False, "data": "synthetic"})
    got = by_name(Machine().check(spec))
    assert got["data"].ok is None and "synthetic" in got["data"].detail
    assert "ImageNet RecordIO" not in got


def test_cpu_study_checks_only_the_framework_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("BENCHBOOK_ENVS", str(tmp_path / "envs"))
    spec = study.load(PARAMS / "resnet50_tf" / "cpu.yaml")
    m = Machine(tools=())
    results = m.check(spec)
    assert [c.name for c in results] == ["tensorflow environment"]
    assert results[0].ok is None and "created automatically by the first run" in results[0].detail
    assert results[0].fix.startswith("benchbook run ") and checks.failed(results) == []
    assert m.calls == []  # no docker, no nvidia-smi
    ready = envs.path("tensorflow")
    ready.mkdir(parents=True)
    (ready / envs.READY).write_text("x\n")
    assert m.check(spec)[0].ok is True


# ---------------------------------------------------------------- docker, image, container, GPUs


def test_docker_absent(tmp_path):
    spec = dlperf(tmp_path)
    got = by_name(Machine(tools=("ssh",)).check(spec))
    assert got["docker"].ok is False and "install Docker Engine" in got["docker"].fix
    assert got["container"].ok is None  # not checked without docker
    assert got["ssh 10.11.0.2:10000"].ok is None


def test_docker_absent_under_slurm_points_to_enroot_pyxis(tmp_path):
    spec = dlperf(tmp_path)
    docker = by_name(Machine(tools=("srun", "enroot")).check(spec))["docker"]
    assert docker.ok is False and "Slurm" in docker.detail
    assert "--container-image=nvidia_rn50_tf:20.03-resnet" in docker.fix and "container.mode: inside" in docker.fix
    assert "launcher: slurm" in docker.fix


SINFO = "gpu* up 4 idle\ndebug up 1 idle\n"


def test_slurm_launcher_checks_the_scheduler_and_pyxis_instead_of_docker(tmp_path):
    slurm = {"name": "slurm", "slurm": {"partition": "gpu"}}
    spec = write_study(tmp_path, "resnet50_tf/ngc_throughput", launcher=slurm,
                       sweep={"gpus": [1, 8], "batch_size": 128, "data": "synthetic"})
    m = Machine(tools=("sbatch", "srun")).set("sinfo", 0, SINFO).set("srun --help", 0, "  --container-image=[USER@]...")
    got = by_name(m.check(spec))
    assert got["slurm"].ok is True and "gpu, debug" in got["slurm"].detail
    assert got["pyxis"].ok is True and "slurm partition" not in got
    assert "docker" not in got and not any("docker" in c for c in m.calls)
    m = Machine(tools=("sbatch", "srun")).set("sinfo", 0, SINFO).set("srun --help", 0, "Usage: srun [OPTIONS...]")
    got = by_name(m.check(write_study(tmp_path, "resnet50_tf/ngc_throughput",
                                      launcher={"name": "slurm", "slurm": {"partition": "a100"}})))
    assert got["slurm partition"].ok is False and "'a100' is not among gpu, debug" in got["slurm partition"].detail
    assert got["pyxis"].ok is False and "github.com/NVIDIA/pyxis" in got["pyxis"].fix


def test_slurm_launcher_without_sbatch_or_controller(tmp_path, monkeypatch):
    monkeypatch.setenv("BENCHBOOK_ENVS", str(tmp_path / "envs"))
    cpu = tmp_path / "cpu_slurm.yaml"
    cpu.write_text((PARAMS / "resnet50_tf" / "cpu_smoke.yaml").read_text() + "launcher: slurm\n")
    spec = study.load(cpu)
    got = by_name(Machine(tools=()).check(spec))
    assert got["slurm"].ok is False and "tools/slurm_cluster.sh up" in got["slurm"].fix
    m = Machine(tools=("sbatch",)).set("sinfo", 1, "", "slurm_load_partitions: Unable to contact slurm controller")
    got = by_name(m.check(spec))
    assert got["slurm"].ok is False and "Unable to contact slurm controller" in got["slurm"].detail


def test_cpu_runs_of_several_processes_need_the_mpi_launcher_here(tmp_path, monkeypatch):
    monkeypatch.setenv("BENCHBOOK_ENVS", str(tmp_path / "envs"))
    path = tmp_path / "cpu_mpi.yaml"
    text = (PARAMS / "resnet50_tf" / "cpu_smoke.yaml").read_text()
    path.write_text(text + "launcher: mpirun\n")
    assert "mpirun" not in by_name(Machine(tools=()).check(study.load(path)))  # one process: no MPI
    doc = yaml.safe_load(text)
    doc["sweep"]["processes"] = [1, 2]
    doc["launcher"] = "mpirun"
    path.write_text(yaml.safe_dump(doc))
    got = by_name(Machine(tools=()).check(study.load(path)))
    assert got["mpirun"].ok is False and "openmpi-bin" in got["mpirun"].fix
    assert by_name(Machine(tools=("mpirun",)).check(study.load(path)))["mpirun"].ok is True


def test_docker_engine_unreachable(tmp_path):
    spec = write_study(tmp_path, "resnet50_tf/ngc_throughput", data={"path": str(imagenet_tfrecords(tmp_path / "d"))})
    m = Machine().set("docker info", 1, "", "permission denied while trying to connect to the Docker daemon socket")
    got = by_name(m.check(spec))
    assert got["docker engine"].ok is False and "usermod -aG docker" in got["docker engine"].fix
    assert got["image"].ok is None


def test_image_absent_fix_is_the_build_or_pull_line(tmp_path):
    spec = write_study(tmp_path, "resnet50_tf/ngc_throughput", data={"path": str(imagenet_tfrecords(tmp_path / "d"))})
    m = Machine().set("docker image inspect", 1, "", "Error: No such image: nvidia_rn50_tf")
    image = by_name(m.check(spec))["image"]
    assert image.ok is False and "No such image" in image.detail
    assert "docker build -t nvidia_rn50_tf DeepLearningExamples/TensorFlow/Classification/ConvNets" in image.fix
    assert "docker pull nvidia_rn50_tf" in image.fix
    assert "git clone -- https://github.com/NVIDIA/DeepLearningExamples" in image.fix


def test_nvidia_runtime_missing(tmp_path):
    spec = write_study(tmp_path, "resnet50_tf/ngc_throughput", data={"path": str(imagenet_tfrecords(tmp_path / "d"))})
    m = Machine().set("docker info", 0, '{"runc":{"path":"runc"}}\n')
    rt = by_name(m.check(spec))["NVIDIA container runtime"]
    assert rt.ok is False and "nvidia-container-toolkit" in rt.fix
    m.tools.add("nvidia-container-runtime-hook")  # the toolkit behind `docker run --gpus`
    assert by_name(m.check(spec))["NVIDIA container runtime"].ok is True


def test_exec_container_stopped_or_absent(tmp_path):
    spec = dlperf(tmp_path)
    got = by_name(Machine().set("docker inspect -f", 0, "false\n").check(spec))
    assert got["container"].ok is False and got["container"].fix == "docker start tf_resnet"
    assert got["image"].ok  # checked because the fix starts a container from it
    assert got["mpirun"].ok is None and got["ssh 10.11.0.3:10000"].ok is None
    got = by_name(Machine().set("docker inspect -f", 1, "", "Error: No such object: tf_resnet").check(spec))
    assert got["container"].ok is False
    assert "--name tf_resnet" in got["container"].fix and "nvidia_rn50_tf:20.03-resnet" in got["container"].fix
    assert f"{spec.data.path}:/data/tfrecords" in got["container"].fix


def test_ssh_failing_for_a_host_names_it_and_the_port_10000_fix(tmp_path):
    spec = dlperf(tmp_path)
    m = Machine().set("10.11.0.4 true", 255, "", "ssh: connect to host 10.11.0.4 port 10000: Connection refused")
    results = m.check(spec)
    got = by_name(results)
    bad = got["ssh 10.11.0.4:10000"]
    assert bad.ok is False and "10.11.0.4" in bad.detail and "Connection refused" in bad.detail
    assert "Port 10000" in bad.fix and "ssh -p 10000 10.11.0.4 true" in bad.fix
    assert "authorized_keys" in bad.fix and "openssh-server" in bad.fix
    assert [c.name for c in checks.failed(results)] == ["ssh 10.11.0.4:10000"]
    assert got["ssh 10.11.0.5:10000"].ok


def test_ssh_timeout_is_a_failure(tmp_path):
    spec = dlperf(tmp_path)
    m = Machine().raises("10.11.0.5 true", subprocess.TimeoutExpired(["ssh"], 120))
    bad = by_name(m.check(spec))["ssh 10.11.0.5:10000"]
    assert bad.ok is False and "did not answer" in bad.detail


def test_only_the_hosts_the_sweep_uses_are_tried(tmp_path):
    data = imagenet_tfrecords(tmp_path / "d")
    imagenet_tfrecords(tmp_path / "dali_idx")
    spec = write_study(tmp_path, "resnet50_tf/dlperf_scaling", data={"path": str(data)},
                       sweep=[{"gpus": ["1", "2x8"], "precision": "fp32", "batch_size": 128, "dali": True}])
    got = by_name(Machine().check(spec))
    assert {n for n in got if n.startswith("ssh ")} == {"ssh 10.11.0.2:10000", "ssh 10.11.0.3:10000"}


def test_single_node_studies_need_no_ssh_and_mxnet_no_mpi(tmp_path):
    data = touch(tmp_path / "recordio", ["train.rec", "train.idx", "val.rec", "val.idx"])
    got = by_name(Machine().check(write_study(tmp_path, "resnet50_mxnet/ngc", data={"path": str(data)})))
    assert not [n for n in got if n.startswith("ssh") or n.startswith("mpi")]


def test_mpi_probed_in_a_fresh_container_in_mode_run(tmp_path):
    spec = write_study(tmp_path, "resnet50_tf/ngc_throughput", data={"path": str(imagenet_tfrecords(tmp_path / "d"))})
    m = Machine()
    got = by_name(m.check(spec))
    assert got["mpiexec"].ok
    assert ["docker", "run", "--rm", "--", "nvidia_rn50_tf", "sh", "-c", "command -v mpiexec"] in m.calls
    m.set("command -v mpiexec", 1)
    assert by_name(m.check(spec))["mpiexec"].ok is False


def test_gpu_count_too_low(tmp_path):
    spec = dlperf(tmp_path)
    gpu = by_name(Machine().check(spec, gpus=4))["GPUs per node"]
    assert gpu.ok is False and "4 on this node" in gpu.detail and "8 needed" in gpu.detail
    assert "at least 8 GPUs" in gpu.fix
    gpu = by_name(Machine(gpus=2).check(spec))["GPUs per node"]
    assert gpu.ok is False and "2 on this node (nvidia-smi -L)" in gpu.detail


def test_no_nvidia_smi_is_a_failure(tmp_path):
    spec = dlperf(tmp_path)
    m = Machine().raises("nvidia-smi", FileNotFoundError("nvidia-smi"))
    gpu = by_name(m.check(spec))["GPUs per node"]
    assert gpu.ok is False and "command not found" in gpu.detail and "NVIDIA driver" in gpu.fix


def test_mode_inside_checks_the_container_and_local_tools(tmp_path):
    data = imagenet_tfrecords(tmp_path / "d")
    spec = write_study(tmp_path, "resnet50_tf/ngc_throughput", container={"mode": "inside"},
                       data={"path": None, "mount": str(data)})
    m = Machine(tools=("mpiexec",))
    got = by_name(m.check(spec, env={"NVIDIA_BUILD_ID": "11010"}, root=tmp_path))
    assert got["inside container"].ok and "docker" not in got and got["mpiexec"].ok
    assert got["ImageNet train TFRecords"].ok
    assert not any(c[0] == "docker" for c in m.calls)
    outside = by_name(Machine().check(spec, env={}, root=tmp_path))["inside container"]
    assert outside.ok is False and "srun --container-image=nvidia_rn50_tf" in outside.fix


def test_code_folder_is_compared_with_the_commit(tmp_path):
    spec = dlperf(tmp_path)
    clone = tmp_path / "DeepLearningExamples"
    (clone / "TensorFlow" / "Classification" / "ConvNets").mkdir(parents=True)
    assert by_name(Machine().check(spec, code_dir=clone))["code"].ok is True
    m = Machine().set("rev-parse HEAD", 0, "0123456789abcdef0123456789abcdef01234567\n")
    code = by_name(m.check(spec, code_dir=clone))["code"]
    assert code.ok is False and "0123456789ab" in code.detail and f"checkout {COMMIT_TF}" in code.fix


# ---------------------------------------------------------------- data preparation, rendering, CLI


def test_data_preparation_commands_are_the_published_ones(tmp_path):
    tf = checks.data_preparation(study.load(PARAMS / "resnet50_tf" / "dlperf_scaling.yaml"))
    assert "bash ./utils/dali_index.sh /data/tfrecords /data/dali_idx" in tf
    assert "docker exec -it tf_resnet /bin/bash" in tf
    assert any(line.startswith("tar -xvf ILSVRC2012_img_train.tar") for line in tf)
    mx = checks.data_preparation(study.load(PARAMS / "resnet50_mxnet" / "ngc.yaml"))
    assert any(line.endswith("./scripts/prepare_imagenet.sh /ILSVRC2012 /data/imagenet/train-val-recordio-passthrough")
               for line in mx)
    mrcnn = checks.data_preparation(study.load(PARAMS / "maskrcnn_tf2" / "ngc.yaml"))
    assert "cd dataset && bash download_and_preprocess_coco.sh /data" in mrcnn
    assert any("/data/weights" in line for line in mrcnn)
    assert checks.data_preparation(study.load(PARAMS / "resnet50_tf" / "cpu.yaml")) == []


def test_render_is_a_table_with_a_row_per_check():
    table = checks.render([checks.Check("docker", True, "/usr/bin/docker"),
                           checks.Check("image", False, "x [not markup]", "docker pull x")])
    assert isinstance(table, Table) and table.row_count == 2
    out = io.StringIO()
    Console(file=out, width=200).print(table)
    text = out.getvalue()
    assert "MISSING" in text and "[not markup]" in text and "1 of 2 checks missing" in text


REAL_CHECK = checks.check


def cli(argv, monkeypatch, machine: Machine) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `benchbook check ...` through the parser, on the fake machine."""
    monkeypatch.setattr(checks, "check", functools.partial(REAL_CHECK, which=machine.which, run=machine.run))
    parser = argparse.ArgumentParser(prog="benchbook")
    checks.add_check_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    out, err, printed = io.StringIO(), io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(printed):
        code = args.func(args, Console(file=out, width=250), Console(file=err, width=250))
    return code, printed.getvalue() + out.getvalue(), err.getvalue()


def test_cli_acceptance_missing_shard_and_index(tmp_path, monkeypatch):
    spec = dlperf(tmp_path, skip_shards={"train-01023-of-01024"}, skip_index={"train-00000-of-01024"})
    code, out, err = cli(["check", str(spec.path)], monkeypatch, Machine())
    assert code == 1
    assert "1023 of 1024 train shards" in out and "train-01023-of-01024" in out
    assert "train-00000-of-01024" in out and "DALI index" in err


def test_cli_ready_study_exits_0_and_json(tmp_path, monkeypatch):
    spec = dlperf(tmp_path)
    code, out, _ = cli(["check", str(spec.path)], monkeypatch, Machine())
    assert code == 0 and "none missing" in out
    code, out, _ = cli(["check", str(spec.path), "--json", "--data-prep"], monkeypatch, Machine())
    doc = json.loads(out)
    assert code == 0 and doc["ready"] is True and doc["study"] == spec.name
    assert {"name", "ok", "detail", "fix"} <= set(doc["checks"][0])
    assert "bash ./utils/dali_index.sh /data/tfrecords /data/dali_idx" in doc["data_preparation"]


def test_cli_data_prep_prints_the_commands(tmp_path, monkeypatch):
    data = touch(tmp_path / "recordio", ["train.rec"])
    spec = write_study(tmp_path, "resnet50_mxnet/ngc", data={"path": str(data)})
    code, out, err = cli(["check", str(spec.path), "--data-prep"], monkeypatch, Machine())
    assert code == 1 and "prepare_imagenet.sh /ILSVRC2012" in out and "ImageNet RecordIO" in err


def test_cli_bad_study_file_is_a_benchbook_error(tmp_path, monkeypatch):
    from benchbook.errors import BenchbookError

    with pytest.raises(BenchbookError):
        cli(["check", str(tmp_path / "missing.yaml")], monkeypatch, Machine())


def test_bert_pytorch_counts_its_shards_in_either_form(tmp_path):
    data = tmp_path / "parquet"
    data.mkdir()
    spec = write_study(tmp_path, "bert_pytorch/ngc", data={"path": str(data)})
    got = by_name(Machine().check(spec))[spec.spec.data_name]
    assert got.ok is False and "no *.parquet" in got.detail and "*.hdf5" in got.detail and str(data) in got.detail
    touch(data, ["shard-0.parquet", "shard-1.parquet"])
    assert "2 *.parquet shards" in by_name(Machine().check(spec))[spec.spec.data_name].detail
    older = touch(tmp_path / "hdf5", ["wikicorpus_en_training_0.hdf5"])
    spec = write_study(tmp_path, "bert_pytorch/ngc", data={"path": str(older)})
    assert by_name(Machine().check(spec))[spec.spec.data_name].ok is True
    assert "data/create_datasets_from_start.sh" in checks.data_preparation(spec)[-1]


def test_bert_tf_needs_the_scripts_two_folders(tmp_path):
    data = tmp_path / "bert_tf"
    (data / "tfrecord").mkdir(parents=True)
    spec = write_study(tmp_path, "bert_tf/ngc", data={"path": str(data)})
    got = by_name(Machine().check(spec))[spec.spec.data_name]
    assert got.ok is False and "1 of 2 folders" in got.detail and "missing download" in got.detail
    assert "COCO" not in " ".join(by_name(Machine().check(spec)))
    assert checks.data_preparation(spec)[-1].endswith("bash scripts/data_download.sh")
