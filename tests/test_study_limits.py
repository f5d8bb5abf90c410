"""Hostile and careless study files (issue 21): refused at load, quickly, with the file and line."""

import os
import time

import pytest
import yaml

from benchbook.core import project, yamlfile
from benchbook.studies import commands, study
from benchbook.studies.study import StudyError

CPU = """\
schema_version: 1
model: resnet50_tf
runtime: cpu
sweep:
  batch_size: 8
iterations: 12
warmup_steps: 4
"""

NGC = """\
schema_version: 1
model: resnet50_tf
runtime: ngc
code: {repository: https://github.com/NVIDIA/DeepLearningExamples, commit: 99b1c898cead5603c945721162270c2fe077b4a2,
       workdir: /workspace/rn50}
container: {image: nvidia_rn50_tf}
data: {path: /data/tfrecords}
sweep:
  gpus: 1
  batch_size: 128
iterations: 100
warmup_steps: 10
"""


def write(tmp_path, text, name="study.yaml"):
    p = tmp_path / name
    p.write_text(text)
    return p


def refused(tmp_path, text, *needles):
    with pytest.raises(StudyError) as info:
        study.load(write(tmp_path, text))
    for needle in needles:
        assert needle in str(info.value), str(info.value)
    return str(info.value)


def test_nested_aliases_are_refused_at_once(tmp_path):
    # the "billion laughs": each level repeats the one before ten times
    levels = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    levels += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
    t0 = time.monotonic()
    msg = refused(tmp_path, CPU + "\n".join(["options:"] + ["  " + line for line in levels]) + "\n",
                  "study.yaml:", "more than 20000 YAML values")
    assert time.monotonic() - t0 < 2.0, msg


def test_one_long_string_aliased_thousands_of_times_is_refused_by_its_bytes_at_once(tmp_path):
    # Issue 49 cause 8: 5,000 aliases of one 2 MiB string are 5,001 values, far under the cap on values,
    # and 10 GB once built (`run --dry-run` took 15 GB): the cap counts the bytes the document expands to.
    text = CPU + "options:\n  a: &big " + "x" * (2 << 20) + "\n  b: [" + ", ".join(["*big"] * 5000) + "]\n"
    t0 = time.monotonic()
    msg = refused(tmp_path, text, "study.yaml:", f"more than {yamlfile.MAX_EXPANDED_BYTES} characters of text")
    assert time.monotonic() - t0 < 10.0, msg


def test_every_shipped_yaml_file_loads_under_the_byte_cap():
    shipped = sorted(project.PARAMS.rglob("*.yaml"))
    assert len(shipped) > 40
    for path in shipped:
        text = path.read_text(encoding="utf-8")
        size = yamlfile.expanded_size(yaml.compose(text, yaml.SafeLoader), path, 10**9)
        assert 0 < size[1] < yamlfile.MAX_EXPANDED_BYTES / 4, (path, size)
        assert yamlfile.parse(text, path, size[0]) is not None, path


def test_a_small_alias_still_loads(tmp_path):
    s = study.load(write(tmp_path, CPU.replace("iterations: 12", "iterations: &n 12\nrepeats: *n")))
    assert s.repeats == 12


def test_duplicate_keys_are_refused_with_both_lines(tmp_path):
    refused(tmp_path, CPU + "iterations: 100\n", "study.yaml:8", "duplicate key 'iterations' (first on line 6)")


@pytest.mark.parametrize("value", ["true", '"8"', "8.0"])
def test_counts_are_integers_not_bools_or_strings(tmp_path, value):
    refused(tmp_path, CPU.replace("batch_size: 8", f"batch_size: {value}"), "study.yaml:5", "batch_size")


@pytest.mark.parametrize("field", ["repeats", "iterations"])
def test_bool_counts_are_refused(tmp_path, field):
    text = CPU + "repeats: true\n" if field == "repeats" else CPU.replace("iterations: 12", "iterations: true")
    refused(tmp_path, text, field)


def test_a_million_runs_is_refused_with_the_flag_that_lifts_the_cap(tmp_path, monkeypatch):
    sizes = ", ".join(str(b) for b in range(1, 1001))
    text = CPU.replace("batch_size: 8", f"batch_size: [{sizes}]\n  processes: [1, 2]") + "repeats: 500\n"
    t0 = time.monotonic()
    refused(tmp_path, text, "plans 1000000 runs", "--allow-large-study")
    assert time.monotonic() - t0 < 2.0
    monkeypatch.setenv(study.LIFT_CAPS_ENV, "1")
    assert study.caps_lifted()
    small = CPU.replace("batch_size: 8", f"batch_size: [{sizes}]") + "repeats: 2\n"
    assert len(study.expand(study.load(write(tmp_path, small)))) == 2000


def test_a_million_processes_is_refused(tmp_path):
    refused(tmp_path, CPU.replace("batch_size: 8", "batch_size: 8\n  processes: 1000000"),
            "processes: 1000000 starts 1000000 processes", "--allow-large-study")
    refused(tmp_path, NGC.replace("gpus: 1", "gpus: 2000x8").replace("warmup_steps: 10",
                                                                     "warmup_steps: 10\nlauncher: slurm"),
            "'2000x8' starts 16000 processes")
    assert study.load(write(tmp_path, CPU.replace("batch_size: 8", "batch_size: 8\n  processes: 1000000")),
                      limits=False).sweep[0].processes == 1000000


@pytest.mark.parametrize("where, text", [
    ("slurm.partition", "launcher: {name: slurm, slurm: {partition: \"gpu\\ntouch /tmp/x\"}}"),
    ("slurm.sbatch", "launcher: {name: slurm, slurm: {sbatch: [\"--qos=high\\ntouch /tmp/x\"]}}"),
    ("env.A", "env: {A: \"1\\ntouch /tmp/x\"}"),
])
def test_newlines_that_would_reach_a_shell_are_refused(tmp_path, where, text):
    refused(tmp_path, CPU + text + "\n", where, "control character '\\n'")


@pytest.mark.parametrize("name", ["A=1; touch /tmp/x; B", "1A", "A B", "A-B"])
def test_environment_variable_names_must_be_names(tmp_path, name):
    refused(tmp_path, CPU + f"env: {{'{name}': y}}\n", "is not an environment variable name")
    refused(tmp_path, CPU + f"launcher: {{name: mpirun, export: ['{name}']}}\n", "export")


@pytest.mark.parametrize("path", ["/some/dir", "../../x", "a/../../x", "..", ""])
def test_cpu_clean_stays_in_the_run_folder(tmp_path, path):
    refused(tmp_path, CPU + f"clean: ['{path}']\n", "clean:", "only")


@pytest.mark.parametrize("path, says", [
    (".", "the whole folder"), ("./", "plain form"), ("run.json", "benchbook's own record"),
    ("attempts/1", "benchbook's own record"), ("cpu_fp32_bs8_syn_r1.log", "benchbook's own record"),
    ("data/", "write 'data'"), ("a//b", "write 'a/b'"), ("a/./b", "write 'a/b'"),
])
def test_cpu_clean_leaves_the_run_record_and_log_alone(tmp_path, path, says):
    refused(tmp_path, CPU + f"clean: ['{path}']\n", "clean:", says)


@pytest.mark.parametrize("path", ["/workspace/rn50/data/", "/results/./ckpt", "/tmp/model/"])
def test_ngc_clean_paths_are_written_plain(tmp_path, path):
    refused(tmp_path, NGC + f"clean: ['{path}']\n", "clean:", "plain form")


def test_cpu_clean_is_resolved_in_the_run_folder(tmp_path):
    s = study.load(write(tmp_path, CPU + "clean: [model, ckpt/old]\n"))
    run_dir = tmp_path / "runs" / "x" / "cpu_fp32_bs8_r1"
    cmd = commands.command(s, study.expand(s)[0].config, run_dir, python="python")
    assert cmd.pre == [["rm", "-rf", "--", str(run_dir / "model")], ["rm", "-rf", "--", str(run_dir / "ckpt/old")]]


@pytest.mark.parametrize("path, ok", [
    ("/tmp/model", True),  # a throwaway `docker run --rm` file system
    ("/results/ckpt", True), ("/workspace/rn50/model", True), ("model", True),
    ("/data", False), ("/data/train", False), ("/", False), ("/results/../etc", False), ("../x", False),
])
def test_ngc_clean_in_a_throwaway_container(tmp_path, path, ok):
    text = NGC + f"clean: ['{path}']\n"
    if ok:
        assert study.load(write(tmp_path, text)).clean == [path]
    else:
        refused(tmp_path, text, "clean:")


def test_ngc_clean_inside_a_lasting_container_stays_in_the_run_or_the_code(tmp_path):
    inside = NGC.replace("container: {image: nvidia_rn50_tf}", "container: {image: nvidia_rn50_tf, mode: inside}")
    assert study.load(write(tmp_path, inside + "clean: [/workspace/rn50/model]\n"))
    refused(tmp_path, inside + "clean: [/tmp/model]\n", "outside the run folder (/results) and the code checkout")


def test_study_name_does_not_depend_on_the_current_directory(tmp_path, monkeypatch):
    folder = tmp_path / "params" / "resnet50_tf"
    folder.mkdir(parents=True)
    path = write(folder, CPU, "rep4.yaml")
    names = {study.load(path).name}
    monkeypatch.chdir(folder)
    names.add(study.load("rep4.yaml").name)
    monkeypatch.chdir(tmp_path)
    names.add(study.load("params/resnet50_tf/rep4.yaml").name)
    assert names == {"resnet50_tf-rep4"}


@pytest.mark.parametrize("host", ["-oProxyCommand=touch /tmp/x", "node1;touch x", "node 1", "a\nb"])
def test_hosts_are_host_names_not_options(tmp_path, host):
    text = NGC.replace("gpus: 1", "gpus: 2x8") + f"launcher: mpirun\nhosts: [{host!r}, node2]\n".replace("'", '"')
    refused(tmp_path, text.replace('"a\nb"', '"a\\nb"'), "hosts")


def test_setup_steps_paste_into_a_shell_as_they_read(tmp_path):
    """(An image like `rn50 $(touch MARK)` is refused when the study is loaded: see test_hostile_checks.)"""
    text = NGC.replace("repository: https://github.com/NVIDIA/DeepLearningExamples",
                       'repository: "https://example.org/x; touch MARK"')
    steps = commands.setup_steps(study.load(write(tmp_path, text)))
    assert steps[0] == "git clone -- 'https://example.org/x; touch MARK' 'x; touch MARK'"
    assert steps[-1].startswith("docker build -t nvidia_rn50_tf ")


@pytest.mark.parametrize(("field", "old", "new"), [
    ("code.repository", "repository: https://github.com/NVIDIA/DeepLearningExamples",
     "repository: --upload-pack=touch MARK"),
    ("code.repository", "repository: https://github.com/NVIDIA/DeepLearningExamples",
     "repository: https://example.org/-uevil"),  # (its clone folder, -uevil, a positional too)
    ("code.subfolder", "workdir: /workspace/rn50}", "workdir: /workspace/rn50, subfolder: --help}"),
    ("code.patches", "workdir: /workspace/rn50}", "workdir: /workspace/rn50, patches: [-R]}"),
    ("code.workdir", "workdir: /workspace/rn50}", "workdir: -x}"),
    ("data.path", "path: /data/tfrecords", "path: -v/etc:/x"),
    ("data.mount", "path: /data/tfrecords}", "path: /data/tfrecords, mount: --privileged}"),
    ("data.dali_index", "path: /data/tfrecords}", "path: /data/tfrecords, dali_index: -rf}"),
    ("container.mounts", "image: nvidia_rn50_tf}", "image: nvidia_rn50_tf, mounts: {--privileged: /x}}"),
])
def test_a_value_that_reaches_a_command_as_an_operand_may_not_start_with_a_dash(tmp_path, field, old, new):
    # Issue 49 cause 12: `repository: --upload-pack=...` printed `git clone '--upload-pack=...'`, which runs a
    # command when pasted: quoting keeps a value one word, only refusing a dash keeps it an operand.
    assert old in NGC
    msg = refused(tmp_path, NGC.replace(old, new), "study.yaml:", field, "may not start with '-'")
    assert "the command it reaches would read it as an option" in msg


def test_every_git_command_printed_ends_its_options_before_its_operands(tmp_path):
    text = NGC.replace("workdir: /workspace/rn50}", "workdir: /workspace/rn50, patches: [fix.patch]}")
    steps = commands.setup_steps(study.load(write(tmp_path, text)))
    gits = [part.strip() for step in steps for part in step.split("&&") if part.strip().startswith("git ")]
    assert gits == ["git clone -- https://github.com/NVIDIA/DeepLearningExamples DeepLearningExamples",
                    "git checkout 99b1c898cead5603c945721162270c2fe077b4a2 --",
                    f"git -C DeepLearningExamples apply --unidiff-zero -- {os.path.relpath(tmp_path / 'fix.patch')}"]
