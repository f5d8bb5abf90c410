"""Environment drift: what differs between captures, runs and studies, most significant first; loading them."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from benchbook.environment import CATEGORIES, Varies, describe, diff, drift, load, view
from benchbook.environment.diff import classify
from benchbook.errors import BenchbookError

FIXTURE = Path(__file__).parent / "fixtures" / "environment" / "dgx1_tf1_20.03.json"
IMAGE_20_06 = "nvcr.io/nvidia/tensorflow:20.06-tf1-py3"


@pytest.fixture
def dgx1() -> dict:
    """A complete capture: NGC TF1 20.03 on a DGX-1 (a fresh copy per test)."""
    return json.loads(FIXTURE.read_text(encoding="utf-8"))


def _keys(differences) -> list[str]:
    return [d.key for d in differences]


def _write(path: Path, obj) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj), encoding="utf-8")
    return path


def test_same_capture_has_no_difference(dgx1):
    assert diff(dgx1, copy.deepcopy(dgx1)) == []


def test_driver_and_container_change_lists_exactly_those(dgx1):
    other = copy.deepcopy(dgx1)
    other["gpus"]["driver"] = "450.51.06"
    other["container"]["image"] = IMAGE_20_06
    differences = diff(dgx1, other)
    assert [(d.key, d.a, d.b, d.category) for d in differences] == [
        ("gpus.driver", "440.33.01", "450.51.06", "driver"),
        ("container.image", "nvcr.io/nvidia/tensorflow:20.03-tf1-py3", IMAGE_20_06, "container")]
    assert differences[0].rank < differences[1].rank


def test_volatile_fields_are_ignored(dgx1):
    other = copy.deepcopy(dgx1)
    other["captured_at"] = "2021-01-01T00:00:00+00:00"
    other["cuda"]["sources"] = {"env": "10.2.89"}  # where a version was read, not which
    other["gpus"]["topology"]["text"] = other["gpus"]["topology"]["text"].replace("\t", "    ")
    other["gpus"]["source"] = "nvml"
    other["system"]["memory"]["total_bytes"] -= 3 * 2**20  # another kernel reserves a little more
    assert diff(dgx1, other) == []


def test_differences_come_most_significant_first(dgx1):
    other = copy.deepcopy(dgx1)
    other["hostname"] = "dgx1-08"
    other["python"]["packages"]["numpy"] = "1.18.1"
    other["variables"]["NCCL_DEBUG"] = "INFO"
    other["system"]["kernel"] = "5.4.0-42-generic"
    other["code"]["commit"] = "0" * 40
    other["frameworks"]["tensorflow"]["package_version"] = "1.15.3+nv"
    other["nccl"]["version"] = "2.7.6"
    other["cudnn"]["version"] = "8.0.1"
    other["cuda"]["version"] = "11.0.194"
    other["gpus"]["driver"] = "450.51.06"
    for d in other["gpus"]["devices"]:
        d["clock_app_sm_mhz"] = 1530
    other["gpus"]["devices"] = other["gpus"]["devices"][:4]
    other["gpus"]["count"] = 4
    for d in other["gpus"]["devices"]:
        d["name"] = "Tesla V100-SXM2-32GB"
    differences = diff(dgx1, other)
    categories = [d.category for d in differences]
    assert categories == ["GPU model", "GPU count", "GPU settings", "driver", "CUDA", "cuDNN", "NCCL", "framework",
                          "model code", "variables", "OS", "Python packages", "identity", "identity", "identity"]
    assert [d.rank for d in differences] == sorted(d.rank for d in differences)
    assert _keys(differences)[-3:] == ["hostname", "gpus.uuid", "gpus.pci_bus_id"]


def test_classify_follows_the_published_order():
    order = [classify(key)[1] for key in ("gpus.model", "gpus.count", "gpus.driver", "cuda.version", "cudnn.version",
                                          "nccl.version", "frameworks.tensorflow.version", "container.digest",
                                          "code.commit", "config.batch_size", "config.precision")]
    assert order == ["GPU model", "GPU count", "driver", "CUDA", "cuDNN", "NCCL", "framework", "container",
                     "model code", "batch size", "flags"]
    assert classify("code.path") == (len(CATEGORIES) - 1, "identity")
    assert classify("something.new")[1] == "other"


def test_a_machine_without_gpu_differs_in_model_count_and_driver(dgx1):
    laptop = copy.deepcopy(dgx1)
    laptop["gpus"] = {"available": False, "reason": "`nvidia-smi` not found on PATH"}
    by_key = {d.key: d for d in diff(dgx1, laptop)}
    assert (by_key["gpus.model"].b, by_key["gpus.count"].b, by_key["gpus.driver"].b) == (None, 0, None)
    assert describe(by_key["gpus.model"].b) == "absent"


def test_frameworks_added_or_removed_are_listed(dgx1):
    other = copy.deepcopy(dgx1)
    del other["frameworks"]["dali"]
    other["frameworks"]["tensorflow"]["cuda"] = "11.0"
    assert {d.key: (d.a, d.b) for d in diff(dgx1, other)} == {
        "frameworks.tensorflow.cuda": (None, "11.0"), "frameworks.dali.package": ("nvidia-dali", None),
        "frameworks.dali.version": ("0.19.0", None), "frameworks.dali.package_version": ("0.19.0", None)}


# ---------------------------------------------------------------- run records and config


def test_run_records_compare_config_after_code(dgx1):
    a = {"run_id": "r50_b256_r1", "config": {"batch_size": 256, "precision": "amp", "repeat": 1}, "environment": dgx1}
    b = copy.deepcopy(a)
    b["config"].update(batch_size=128, precision="fp32", repeat=2)
    b["environment"]["code"]["commit"] = "1" * 40
    assert [(d.key, d.category) for d in diff(a, b)] == [("code.commit", "model code"),
                                                         ("config.batch_size", "batch size"),
                                                         ("config.precision", "flags")]


def test_drift_flags_the_repeat_that_ran_elsewhere(dgx1):
    repeats = [copy.deepcopy(dgx1) for _ in range(3)]
    repeats[1]["hostname"] = "dgx1-08"  # another identical node is no drift
    repeats[2]["gpus"]["driver"] = "418.87.01"
    repeats[2]["hostname"] = "dgx1-09"
    [d] = drift(repeats)
    assert (d.key, d.a, d.b, d.where) == ("gpus.driver", "440.33.01", "418.87.01", (2,))
    assert [x.key for x in drift(repeats, identity=True)] == ["gpus.driver", "hostname", "hostname"]
    assert drift(repeats[:1]) == []


def test_drift_groups_captures_that_share_a_value(dgx1):
    runs = [copy.deepcopy(dgx1) for _ in range(4)]
    for i in (1, 3):
        runs[i]["container"]["image"] = IMAGE_20_06
    [d] = drift(runs)
    assert (d.key, d.b, d.where) == ("container.image", IMAGE_20_06, (1, 3))
    assert d.to_json() == {"key": "container.image", "category": "container", "rank": d.rank,
                           "a": "nvcr.io/nvidia/tensorflow:20.03-tf1-py3", "b": IMAGE_20_06, "where": [1, 3]}


# ---------------------------------------------------------------- load


def test_load_a_capture_file(tmp_path, dgx1):
    loaded = load(_write(tmp_path / "env.json", dgx1))
    assert loaded.kind == "capture" and len(loaded.entries) == 1 and loaded.entries[0].config is None
    assert loaded.view() == view(dgx1)


def test_load_a_run_record_and_its_folder(tmp_path, dgx1):
    record = {"schema_version": 1, "run_id": "r1", "status": "complete", "config": {"batch_size": 256},
              "environment": dgx1}
    path = _write(tmp_path / "r1" / "run.json", record)
    for source in (path, path.parent):
        loaded = load(source)
        assert loaded.kind == "run" and loaded.entries[0].config == {"batch_size": 256}
        assert loaded.view()["config.batch_size"] == 256


def test_load_a_multi_host_run(tmp_path, dgx1):
    second = copy.deepcopy(dgx1)
    second["hostname"] = "dgx1-08"
    second["infiniband"]["devices"]["mlx5_2"]["ports"]["1"]["state"] = "DOWN"
    loaded = load(_write(tmp_path / "run.json", {"config": {}, "environment": [dgx1, second]}))
    assert [e.label for e in loaded.entries] == [f"{tmp_path / 'run.json'} [dgx1-07]",
                                                 f"{tmp_path / 'run.json'} [dgx1-08]"]
    assert [(d.key, d.b) for d in loaded.drift()] == [("infiniband.mlx5_2.port1.state", "DOWN")]
    assert loaded.view()["infiniband.mlx5_2.port1.state"] == Varies(["ACTIVE", "DOWN"])


@pytest.fixture
def study(tmp_path, dgx1) -> Path:
    """Two batch sizes x two repeats; repeat 2 of batch 256 ran with another driver; one old record."""
    folder = tmp_path / "study"
    for batch in (128, 256):
        for repeat in (1, 2):
            env = copy.deepcopy(dgx1)
            if (batch, repeat) == (256, 2):
                env["gpus"]["driver"] = "418.87.01"
            _write(folder / f"b{batch}_r{repeat}" / "run.json",
                   {"run_id": f"b{batch}_r{repeat}", "status": "complete",
                    "config": {"batch_size": batch, "repeat": repeat}, "environment": env})
    _write(folder / "old" / "run.json", {"run_id": "old", "status": "complete", "config": {},
                                          "environment": {"host": {"hostname": "x"}, "capture_error": "boom"}})
    _write(folder / "study.json", {"study": "s"})
    return folder


def test_load_a_study_folder(study, dgx1):
    loaded = load(study)
    assert loaded.kind == "study"
    assert [e.label for e in loaded.entries] == ["b128_r1", "b128_r2", "b256_r1", "b256_r2"]
    assert len(loaded.problems) == 1 and "old/run.json" in loaded.problems[0] and "boom" in loaded.problems[0]
    [d] = loaded.drift()
    assert (d.key, d.b, d.where) == ("gpus.driver", "418.87.01", (3,))
    [(config, group, differences)] = loaded.repeat_drift()
    assert config == {"batch_size": 256} and [e.label for e in group] == ["b256_r1", "b256_r2"]
    assert [x.key for x in differences] == ["gpus.driver"]
    # Against the published reference environment: the driver varies within the study.
    [against] = diff(loaded, dgx1)
    assert against.key == "gpus.driver" and against.a == Varies(["440.33.01", "418.87.01"])
    assert describe(against.a) == "varies: 440.33.01 | 418.87.01"


def test_two_studies_with_the_same_sweep_differ_only_in_environment(study, tmp_path):
    other = tmp_path / "other"
    for run in sorted(study.rglob("run.json")):
        record = json.loads(run.read_text())
        if "config" in record and record["config"]:
            record["environment"]["container"]["image"] = IMAGE_20_06
            _write(other / run.parent.name / "run.json", record)
    assert [(d.key, d.b) for d in diff(load(study), load(other))] == [("container.image", IMAGE_20_06)]


# ---------------------------------------------------------------- errors name the file


def test_bad_json_names_the_file(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{"schema_version": 1,\n  "gpus": ', encoding="utf-8")
    with pytest.raises(BenchbookError, match=r"broken\.json: not valid JSON \(line 2, column \d+: .*a capture"):
        load(path)


@pytest.mark.parametrize("content, message", [
    ("[1, 2]", r"expected a JSON object; expected a capture"),
    ('{"config": {}}', r"not an environment capture"),
    ('{"environment": {"host": {}}, "config": {}}', r"its `environment` is not a capture"),
])
def test_records_without_a_capture_name_the_file(tmp_path, content, message):
    path = tmp_path / "odd.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(BenchbookError, match=rf"odd\.json: {message}"):
        load(path)


def test_missing_paths_and_empty_folders(tmp_path):
    with pytest.raises(BenchbookError, match=r"nope\.json: no such file or folder"):
        load(tmp_path / "nope.json")
    (tmp_path / "empty").mkdir()
    with pytest.raises(BenchbookError, match=r"empty: no run\.json in this folder or below"):
        load(tmp_path / "empty")
    binary = tmp_path / "image.bin"
    binary.write_bytes(b"\xff\xfe\x00binary")
    with pytest.raises(BenchbookError, match=r"image\.bin: not a text file"):
        load(binary)


def test_a_study_without_any_capture_is_an_error(tmp_path):
    _write(tmp_path / "s" / "r1" / "run.json", {"status": "complete", "config": {}, "environment": None})
    with pytest.raises(BenchbookError, match=r"none of its 1 run records holds an environment capture"):
        load(tmp_path / "s")


def test_a_study_reads_its_records_as_run_records(study, dgx1):
    """A study's run.json is read by studies.records: one without `status` is no run record, and is named."""
    _write(study / "half" / "run.json", {"run_id": "half", "config": {}, "environment": dgx1})
    loaded = load(study)
    assert [e.label for e in loaded.entries] == ["b128_r1", "b128_r2", "b256_r1", "b256_r2"]
    [half] = [p for p in loaded.problems if "half/run.json" in p]
    assert "not a run record (expected a JSON object with `config` and `status`)" in half


# ---------------------------------------------------------------- issue 26 (9): wrongly typed or deeply nested JSON


def _set(root: dict, dotted: str, value) -> dict:
    """`root` with the field at `dotted` set to `value`."""
    *parents, last = dotted.split(".")
    obj = root
    for part in parents:
        obj = obj[part]
    obj[last] = value
    return root


@pytest.mark.parametrize("field, value, message", [
    ("gpus.devices", "abc", "gpus.devices: expected a list, found text"),
    ("gpus.devices", [1, 2], "gpus.devices[0]: expected an object, found a number"),
    ("system.cpu", [1], "system.cpu: expected an object, found a list"),
    ("system.memory", "lots", "system.memory: expected an object, found text"),
    ("variables", "x", "variables: expected an object, found text"),
    ("variables", {"NCCL_DEBUG": [1, 2]}, "variables.NCCL_DEBUG: expected one value"),
    ("python.packages", ["numpy"], "python.packages: expected an object, found a list"),
    ("container.env", {"A": {"b": 1}}, "container.env.A: expected one value (text, number, true/false or null), "
                                       "found an object"),
    ("infiniband", {"available": True, "devices": {"mlx5_0": {"ports": {"1": "up"}}}},
     "infiniband.devices.mlx5_0.ports.1: expected an object, found text"),
    ("hostname", ["a"], "hostname: expected one value"),
    ("gpus", "8 x V100", "gpus: expected an object, found text"),
])
def test_a_wrongly_typed_capture_names_the_file_and_field(tmp_path, dgx1, field, value, message):
    """These were AttributeError / TypeError (unhashable) from deep inside `view`."""
    bad = _write(tmp_path / "bad.json", _set(copy.deepcopy(dgx1), field, value))
    with pytest.raises(BenchbookError) as e:
        diff(load(bad), dgx1)
    assert str(e.value) == f"{bad}: {message}" or str(e.value).startswith(f"{bad}: {message}"), str(e.value)
    run = _write(tmp_path / "run" / "run.json", {"status": "complete", "config": {}, "environment": [
        dgx1, _set(copy.deepcopy(dgx1), field, value)]})
    with pytest.raises(BenchbookError, match=r"run\.json: environment\[1\]\." + message.split(":")[0].split(".")[0]):
        load(run.parent)


def test_deep_nesting_is_a_clear_error(tmp_path, dgx1):
    deep = tmp_path / "deep.json"
    deep.write_text('{"schema_version": 1, "system": ' + "[" * 100000 + "]" * 100000 + "}", encoding="utf-8")
    with pytest.raises(BenchbookError, match=r"deep\.json: nested too deeply"):
        load(deep)
    nested = copy.deepcopy(dgx1)
    # past the capture's 32 levels, within the 64 a JSON record may have
    nested["frameworks"]["tensorflow"] = json.loads('{"a": ' * 40 + "1" + "}" * 40)
    with pytest.raises(BenchbookError, match=r"frameworks\.tensorflow(\.a){31}: nested more than 32 levels"):
        load(_write(tmp_path / "nested.json", nested))
    record = {"status": "complete", "config": {"batch_size": json.loads("[" * 40 + "]" * 40)}, "environment": dgx1}
    with pytest.raises(BenchbookError, match=r"config\.batch_size(\[0\]){32}: nested more than 32"):
        load(_write(tmp_path / "r" / "run.json", record))


def test_one_bad_record_of_a_study_is_skipped_and_named(study, dgx1, tmp_path):
    (study / "deep").mkdir()
    (study / "deep" / "run.json").write_text("[" * 100000 + "]" * 100000, encoding="utf-8")
    _write(study / "typed" / "run.json", {"status": "complete", "config": {},
                                          "environment": _set(copy.deepcopy(dgx1), "gpus.devices", 5)})
    loaded = load(study)
    assert len(loaded.entries) == 4
    assert any("deep/run.json: not a readable run record: nested too deeply" in p for p in loaded.problems)
    assert any("typed/run.json: environment.gpus.devices: expected a list, found a number" in p
               for p in loaded.problems)
