"""Published references: the shipped files hold the reports' numbers, comparisons give sensible verdicts,
differences are said in words, bad files fail with the file, line and field."""

from __future__ import annotations

import copy
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from benchbook import analyze, models
from benchbook.core import catalog
from benchbook.errors import BenchbookError, UnknownNameError
from benchbook.logs.analysis import EVAL_COLUMNS
from benchbook.reports import metrics, references
from benchbook.reports.references import ReferenceError
from benchbook.studies import study

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "params" / "references"
FIXTURES = Path(__file__).parent / "fixtures" / "references"
TINY = FIXTURES / "tiny_resnet50_tf.yaml"
DLPERF_COMMIT = "fed7ba99cde958fda12c9e81d12b3d7e738e0590"
NGC_COMMIT = "99b1c898cead5603c945721162270c2fe077b4a2"


def _row(ref_or_frame, **where):
    """The one published row (or comparison row) with these values."""
    if isinstance(ref_or_frame, pd.DataFrame):
        frame = ref_or_frame
        mask = np.ones(len(frame), dtype=bool)
        for key, value in where.items():
            mask &= frame[key].map(lambda v, value=value: v == value).to_numpy(dtype=bool)
        hit = frame[mask]
        assert len(hit) == 1, f"{len(hit)} rows match {where}"
        return hit.iloc[0]
    hits = [r for r in ref_or_frame.rows if all(getattr(r, k) == v for k, v in where.items())]
    assert len(hits) == 1, f"{len(hits)} rows match {where}"
    return hits[0]


# ------------------------------------------------------------------------------------- shipped files


def test_the_shipped_references_are_the_ones_the_studies_name():
    named = set()
    for path in (ROOT / "params").rglob("*.yaml"):
        if "references" in path.parts:
            continue
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        if isinstance(doc, dict) and doc.get("reference"):
            named.add(doc["reference"])
    assert named, "no study names a reference"
    assert named <= set(references.available())


@pytest.mark.parametrize("name", references.available(SHIPPED))
def test_every_shipped_reference_loads(name):
    ref = references.load(name, root=SHIPPED)
    assert ref.name == name and ref.path == SHIPPED / f"{name}.yaml"
    assert ref.model in study.MODELS
    assert ref.title and ref.statistic and ref.source.title and ref.hardware.gpu
    assert ref.rows or ref.time_to_train or ref.accuracy
    assert ref.framework == study.MODELS[ref.model]
    # The frame of rows has one row per published row.
    assert len(ref.frame()) == len(ref.rows)


def test_log_names_cover_every_study_model():
    assert set(references.LOG_NAMES) == set(study.MODELS)


def test_dlperf_reference_holds_the_published_tables():
    ref = references.load("dlperf_tf1_resnet50", root=SHIPPED)
    assert ref.statistic == "median of 5 runs"
    assert ref.hardware.gpu == "V100-SXM2-16GB" and ref.hardware.gpus_per_node == 8 and ref.hardware.nodes == 4
    assert ref.software.container == "nvcr.io/nvidia/tensorflow:20.03-tf1-py3"
    assert ref.software.commit == DLPERF_COMMIT
    assert ref.source.url.startswith("https://github.com/Oneflow-Inc/DLPerf/")
    counts = ref.frame().groupby("table").size().to_dict()
    assert counts == {"fp32": 5, "amp": 5, "amp_xla": 5, "data_real": 3, "data_dali": 3, "data_synthetic": 3}
    assert all(r.dali is True for r in ref.rows if r.table in ("fp32", "amp", "amp_xla", "data_dali"))
    fp32_32 = _row(ref, table="fp32", gpus=32)
    assert (fp32_32.throughput, fp32_32.speedup, fp32_32.nodes, fp32_32.batch_size) == (9514.64, 26.25, 4, 128)
    assert fp32_32.xla is False and fp32_32.precision == "fp32"
    assert _row(ref, table="fp32", gpus=1).throughput == 362.44
    amp_16 = _row(ref, table="amp", gpus=16)
    assert (amp_16.throughput, amp_16.speedup, amp_16.nodes, amp_16.batch_size) == (12021.09, 12.72, 2, 224)
    assert _row(ref, table="amp", gpus=8).speedup == 7.3
    xla_1 = _row(ref, table="amp_xla", gpus=1)
    assert (xla_1.throughput, xla_1.xla, xla_1.precision) == (1198.55, True, "amp")
    assert _row(ref, table="amp_xla", gpus=32).throughput == 29171.69
    real_4 = _row(ref, table="data_real", gpus=4)
    assert (real_4.throughput, real_4.dali, real_4.synthetic, real_4.speedup) == (4560.29, False, False, None)
    assert _row(ref, table="data_dali", gpus=8).throughput == 8578.02
    syn_8 = _row(ref, table="data_synthetic", gpus=8)
    assert (syn_8.throughput, syn_8.synthetic, syn_8.dali, syn_8.xla) == (9265.83, True, False, True)
    # The DALI row of the data table repeats the configuration of the AMP + XLA table.
    assert _row(ref, table="data_dali", gpus=1).key == _row(ref, table="amp_xla", gpus=1).key


def test_time_to_train_and_accuracy_references():
    ttt = references.load("ngc_tf1_resnet50_time_to_train", root=SHIPPED)
    (entry,) = ttt.time_to_train
    assert (entry.gpus, entry.batch_size, entry.precision, entry.epochs) == (1, 256, "amp", 120)
    assert (entry.seconds, entry.target, entry.quality, entry.throughput) == (148720, {"top1": 76.10},
                                                                     {"top1": 76.97}, 1149.207)
    (row,) = ttt.rows
    assert (row.throughput, row.batch_size, row.precision) == (1149.207, 256, "amp")
    assert ttt.software.commit == NGC_COMMIT and ttt.software.changes
    acc = references.load("ngc_tf1_resnet50_accuracy", root=SHIPPED)
    (entry,) = acc.accuracy
    assert (entry.epochs, entry.quality, entry.batch_size, entry.precision) == (250, {"top1": 76.81}, 256, "amp")
    assert acc.quality_tolerance_of("top1") == 0.5 and acc.metric("top1").name == "top-1 accuracy"
    assert not acc.rows and not acc.time_to_train


def test_mxnet_and_maskrcnn_references():
    ttt = references.load("ngc_tf1_resnet50_time_to_train", root=SHIPPED)
    clean = references.differences(ttt, _capture(), None)
    assert "model code: no local changes, but the report changed the code (runtime/runner.py: " \
           "config.inter_op_parallelism_threads = 4)" in clean
    mx = references.load("ngc_mxnet_resnet50", root=SHIPPED)
    assert mx.model == "resnet50_mxnet" and mx.hardware.gpu == "V100-SXM2-32GB" and len(mx.rows) == 8
    assert all(r.xla is False and r.dali is True for r in mx.rows)
    assert _row(mx, gpus=1, batch_size=128, precision="fp32").throughput == 381.46
    assert _row(mx, gpus=8, batch_size=256, precision="fp32").throughput == 2987.9
    assert _row(mx, gpus=1, batch_size=256, precision="amp").throughput == 1412
    assert _row(mx, gpus=8, batch_size=256, precision="amp").throughput == 10440
    assert mx.software.commit == NGC_COMMIT
    rcnn = references.load("ngc_tf2_maskrcnn", root=SHIPPED)
    assert rcnn.model == "maskrcnn_tf2" and rcnn.unit == "samples/s" and len(rcnn.rows) == 8
    assert all(r.xla is True and r.dali is False for r in rcnn.rows)
    assert _row(rcnn, gpus=1, batch_size=2, precision="fp32").throughput == 5.3
    assert _row(rcnn, gpus=8, batch_size=4, precision="amp").throughput == 54.8
    assert _row(rcnn, gpus=8, batch_size=2, precision="amp").throughput == 49.6


# --------------------------------------------------------------------------------------------- compare


FIXED = {"framework": "tensorflow", "model": "resnet50", "nodes": 1, "status": "complete"}


def _stats(rows):
    """Statistics through metrics.aggregate, from (gpus, batch, precision, xla, dali, synthetic, values)."""
    runs = [{**FIXED, "gpus": g, "batch_size": b, "precision": p, "xla": x, "dali": d, "synthetic": s,
             "recomputed_throughput": v}
            for g, b, p, x, d, s, values in rows for v in values]
    return metrics.aggregate(pd.DataFrame(runs))


MEASURED = [
    (1, 128, "fp32", False, True, False, [410.0, 412.0, 408.0]),  # 410 / 400 = 1.025
    (8, 128, "fp32", False, True, False, [2700.0, 2690.0, 2710.0]),  # 0.9
    (1, 256, "amp", True, True, False, [1100.0, 1100.0, 1100.0]),  # 1.1
    (8, 256, "amp", True, True, False, [7300.0, 7300.0, 7300.0]),  # 0.96 of 7600, 0.9125 of 8000
    (4, 64, "fp32", False, False, False, [1600.0, 1610.0]),  # the row leaves XLA unstated
    (4, 64, "fp32", True, False, False, [1490.0]),
]


@pytest.fixture
def tiny():
    return references.load(TINY)


def test_compare_gives_one_row_per_published_row_with_verdicts(tiny):
    out = references.compare(_stats(MEASURED), tiny)
    assert list(out.columns) == list(references.COLUMNS)
    assert len(out) == len(tiny.rows)
    assert out.attrs["tolerance"] == 0.05 and out.attrs["value"] == "median"
    within = _row(out, table="main", gpus=1, batch_size=128)
    assert within["verdict"] == "reproduced"
    assert within["measured"] == pytest.approx(410.0) and within["runs"] == 3
    assert within["ratio"] == pytest.approx(1.025) and within["delta_pct"] == pytest.approx(2.5)
    assert within["published_speedup"] == 1.0 and within["measured_speedup"] == pytest.approx(1.0)
    slower = _row(out, table="main", gpus=8, batch_size=128)
    assert slower["verdict"] == "slower" and slower["ratio"] == pytest.approx(0.9)
    assert slower["measured_speedup"] == pytest.approx(2700 / 410)
    assert _row(out, table="main", gpus=1, batch_size=256)["verdict"] == "faster"
    missing = _row(out, table="main", gpus=16)
    assert missing["verdict"] == "not measured" and missing["runs"] == 0 and math.isnan(missing["measured"])
    assert missing["nodes"] == 2
    assert set(out["verdict"]) <= set(references.VERDICTS)


def test_a_configuration_published_in_two_tables_is_compared_with_both(tiny):
    out = references.compare(_stats(MEASURED), tiny)
    main = _row(out, table="main", gpus=8, batch_size=256)
    extra = _row(out, table="extra", gpus=8, batch_size=256)
    assert main["measured"] == extra["measured"] == pytest.approx(7300.0)
    assert (main["verdict"], extra["verdict"]) == ("reproduced", "slower")
    assert any("also published in table 'extra'" in d for d in main["differences"])
    assert any("also published in table 'main'" in d for d in extra["differences"])


def test_an_unstated_flag_matches_any_measured_value_deterministically(tiny):
    out = references.compare(_stats(MEASURED), tiny)
    row = _row(out, table="extra", gpus=4)
    assert row["xla"] is None
    # Two measured configurations fit; the one with more runs is used, the other is named.
    assert row["measured"] == pytest.approx(1605.0) and row["runs"] == 2 and row["verdict"] == "faster"
    assert any("not stated by the report; logged with XLA off" in d for d in row["differences"])
    assert any("also logged with XLA on: 1490" in d and "not used" in d for d in row["differences"])
    # The same stats in another order give the same answer.
    again = references.compare(_stats(list(reversed(MEASURED))), tiny)
    assert _row(again, table="extra", gpus=4)["measured"] == pytest.approx(1605.0)


def test_flags_decide_the_match_and_unknown_flags_match_with_a_note(tiny):
    stated_off = _stats([(1, 128, "fp32", True, True, False, [400.0])])  # XLA on; published off
    row = _row(references.compare(stated_off, tiny), table="main", gpus=1, batch_size=128)
    assert row["verdict"] == "not measured"
    assert any("logged only with XLA on (published: XLA off): 400" in d for d in row["differences"])
    unknown = _stats([(1, 128, "fp32", False, None, None, [400.0])])  # the logs did not say
    row = _row(references.compare(unknown, tiny), table="main", gpus=1, batch_size=128)
    assert row["verdict"] == "reproduced" and row["measured"] == pytest.approx(400.0)
    assert any(d.startswith("dali: not known from the logs") for d in row["differences"])
    # A configuration whose flags are known wins over one whose flags are not.
    both = _stats([(1, 128, "fp32", False, None, None, [300.0] * 5), (1, 128, "fp32", False, True, False, [401.0])])
    row = _row(references.compare(both, tiny), table="main", gpus=1, batch_size=128)
    assert row["measured"] == pytest.approx(401.0)


def test_tolerance_value_and_other_models(tiny):
    stats = _stats(MEASURED)
    strict = references.compare(stats, tiny, tolerance=0.01)
    assert _row(strict, table="main", gpus=1, batch_size=128)["verdict"] == "faster"
    assert strict.attrs["tolerance"] == 0.01
    edge = references.compare(_stats([(1, 128, "fp32", False, True, False, [420.0])]), tiny)
    assert _row(edge, table="main", gpus=1, batch_size=128)["verdict"] == "reproduced"  # exactly +5%
    by_max = references.compare(stats, tiny, value="max")
    assert _row(by_max, table="main", gpus=1, batch_size=128)["measured"] == pytest.approx(412.0)
    mxnet = stats.assign(framework="mxnet")  # another model's numbers are not this reference's
    assert set(references.compare(mxnet, tiny)["verdict"]) == {"not measured"}
    batch = _row(references.compare(_stats([(1, 256, "fp32", False, True, False, [800.0])]), tiny),
                 table="main", gpus=1, batch_size=128)
    assert batch["differences"] == ["batch size: logged at 256 per GPU, published at 128"]


def test_compare_rejects_what_it_cannot_use(tiny):
    with pytest.raises(ReferenceError, match="lack the column.*median.*metrics.aggregate"):
        references.compare(pd.DataFrame({"gpus": [1], "batch_size": [128], "precision": ["fp32"]}), tiny)
    with pytest.raises(ReferenceError, match="tolerance 2"):
        references.compare(_stats(MEASURED), tiny, tolerance=2)
    empty = references.compare(metrics.aggregate(pd.DataFrame(columns=[*catalog.default().identity(), "status",
                                                                         "recomputed_throughput"])), tiny)
    assert len(empty) == len(tiny.rows) and set(empty["verdict"]) == {"not measured"}


def test_verdict_summary(tiny):
    summary = references.verdict_summary(references.compare(_stats(MEASURED), tiny))
    assert summary == {"reproduced": 2, "slower": 2, "faster": 2, "not measured": 1, "rows": 7, "measured": 6,
                       "overall": "partly reproduced"}

    def overall(*verdicts):
        return references.verdict_summary(pd.DataFrame({"verdict": list(verdicts)}))["overall"]

    assert overall("reproduced", "reproduced") == "reproduced"
    assert overall("reproduced", "not measured") == "partly reproduced"
    assert overall("slower", "faster", "not measured") == "not reproduced"
    assert overall("not measured") == overall() == "not measured"


# ----------------------------------------------------------------------------------------- differences


def _capture():
    """A capture shaped like benchbook.environment.capture's, with the published set-up of TINY."""
    return {
        "schema_version": 1, "hostname": "node-a",
        "gpus": {"available": True, "count": 8, "models": ["Tesla V100-SXM2-16GB"], "driver": "440.33.01"},
        "cuda": {"available": True, "version": "10.2.89"},
        "cudnn": {"available": True, "version": "7.6.5"},
        "frameworks": {"available": True, "tensorflow": {"version": "1.15.2", "package_version": "1.15.2+nv"}},
        "container": {"available": True, "inside": True, "image": "nvcr.io/nvidia/tensorflow:20.03-tf1-py3"},
        "code": {"available": True, "commit": DLPERF_COMMIT, "dirty": False},
    }


CONFIG = {"model": "resnet50_tf", "gpus": 8, "batch_size": 256, "precision": "amp", "xla": True, "dali": True,
          "synthetic": False}


def test_differences_of_the_published_set_up_are_none(tiny):
    assert references.differences(tiny, _capture(), CONFIG) == []


def test_differences_without_an_environment(tiny):
    out = references.differences(tiny, None, None)
    assert len(out) == 1 and out[0].startswith("environment: not captured")
    assert "V100-SXM2-16GB" in out[0]
    out = references.differences(tiny, None, {**CONFIG, "batch_size": 96, "xla": False})
    assert out[0].startswith("environment: not captured")
    assert "batch size: 96 per GPU measured vs published 256 for amp" in out
    assert "xla: XLA off measured vs XLA on published" in out


def test_differences_most_significant_first(tiny):
    env = _capture()
    env["gpus"] = {"available": True, "count": 1, "models": ["NVIDIA H100 80GB HBM3"], "driver": "550.54.15"}
    env["container"]["image"] = "nvcr.io/nvidia/tensorflow:23.03-tf1-py3"
    env["frameworks"]["tensorflow"]["version"] = "1.15.5"
    env["cudnn"]["version"] = "8.8.1"
    env["code"] = {"available": True, "commit": "0123456789abcdef0123456789abcdef01234567", "dirty": True}
    out = references.differences(tiny, env, {**CONFIG, "batch_size": 192, "dali": False})
    assert out == [
        "GPU: measured on NVIDIA H100 80GB HBM3 vs published V100-SXM2-16GB",
        "GPU count: 1 per machine measured vs 8 per node published (2 nodes)",
        "GPU driver: 550.54.15 measured vs published 440.33.01",
        "container: nvcr.io/nvidia/tensorflow:23.03-tf1-py3 measured vs published "
        "nvcr.io/nvidia/tensorflow:20.03-tf1-py3",
        "framework: tensorflow 1.15.5 measured vs published 1.15.2",
        "cuDNN: 8.8.1 measured vs published 7.6.5",
        "model code: commit 0123456789ab measured vs published fed7ba99cde9",
        "model code: local changes on top of the commit (published changes: none stated)",
        "batch size: 192 per GPU measured vs published 256 for amp",
        "dali: DALI off measured vs DALI on published",
    ]


def test_differences_on_a_laptop_and_with_partial_captures(tiny):
    laptop = {"gpus": {"available": False, "reason": "`nvidia-smi` not found on PATH; no NVIDIA GPU or driver here"},
              "container": {"available": False, "reason": "not inside a container"},
              "frameworks": {"available": True, "tensorflow": {"version": "2.16.1"}},
              "code": {"available": False, "reason": "no model code folder given"}}
    out = references.differences(tiny, laptop, {"model": "resnet50_tf", "gpus": 0, "batch_size": 32,
                                                "precision": "bf16", "data": "synthetic"})
    assert out[0] == "GPU: measured on CPU (no GPU) vs published V100-SXM2-16GB"
    assert "container: none (not in a container) vs published nvcr.io/nvidia/tensorflow:20.03-tf1-py3" in out
    assert "framework: tensorflow 2.16.1 measured vs published 1.15.2" in out
    assert "model code: commit not recorded vs published fed7ba99cde9" in out
    assert "precision: bf16 measured, not published (published: fp32, amp)" in out
    assert "GPUs: 0 measured, not among the published counts (1, 4, 8, 16)" in out
    assert "synthetic: synthetic data measured vs real data published" in out
    # Sections missing or half-filled are tolerated, never raised.
    sparse = references.differences(tiny, {"gpus": {"available": True}}, None)
    assert "GPU: not recorded vs published V100-SXM2-16GB" not in sparse
    assert any(d.startswith("framework: tensorflow not found") for d in sparse)
    assert references.differences(tiny, {}, {})[0] == "GPU: not recorded vs published V100-SXM2-16GB"


def test_differences_take_a_run_record_and_several_hosts(tiny):
    record = {"environment": [_capture(), copy.deepcopy(_capture())], "config": {**CONFIG, "batch_size": 128}}
    assert references.differences(tiny, record) == ["batch size: 128 per GPU measured vs published 256 for amp"]
    other = copy.deepcopy(_capture())
    other["gpus"]["models"] = ["Tesla V100-SXM2-32GB"]
    out = references.differences(tiny, [_capture(), other], CONFIG)
    assert out == ["GPU: measured on Tesla V100-SXM2-16GB, Tesla V100-SXM2-32GB vs published V100-SXM2-16GB"]
    ttt = references.load("ngc_tf1_resnet50_time_to_train", root=SHIPPED)
    clean = references.differences(ttt, _capture(), None)
    assert "model code: no local changes, but the report changed the code (runtime/runner.py: " \
           "config.inter_op_parallelism_threads = 4)" in clean
    mx = references.load("ngc_mxnet_resnet50", root=SHIPPED)
    first = references.differences(mx, _capture(), CONFIG)[0]
    assert first == "model: resnet50_tf measured vs published resnet50_mxnet"


# ---------------------------------------------------------------------------------------- bad files


GOOD = {
    "schema_version": 1, "title": "t", "model": "resnet50_tf", "statistic": "median of 3 runs",
    "source": {"title": "a report"}, "hardware": {"gpu": "V100-SXM2-16GB", "gpus_per_node": 8},
    "software": {"commit": DLPERF_COMMIT},
    "rows": [{"gpus": 1, "batch_size": 128, "precision": "fp32", "throughput": 400.0}],
}


def _write(tmp_path, doc, name="ref.yaml"):
    path = tmp_path / name
    path.write_text(doc if isinstance(doc, str) else yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


def test_a_minimal_file_loads_with_defaults(tmp_path):
    ref = references.load(_write(tmp_path, GOOD))
    assert ref.name == "ref" and ref.tolerance == 0.05 and ref.unit == "images/s"
    (row,) = ref.rows
    assert (row.xla, row.dali, row.synthetic, row.table) == (None, None, None, None)


def test_unknown_key_names_file_line_and_the_allowed_keys(tmp_path):
    text = yaml.safe_dump(GOOD, sort_keys=False).replace("throughput: 400.0", "troughput: 400.0")
    path = _write(tmp_path, text)
    line = next(i for i, t in enumerate(text.splitlines(), 1) if "troughput" in t)
    with pytest.raises(ReferenceError) as err:
        references.load(path)
    msg = str(err.value)
    assert f"{path}:{line}: unknown key 'rows[0].troughput'; did you mean 'throughput'?" in msg
    assert "allowed here: table, gpus" in msg
    bare = _write(tmp_path, text.replace("troughput: 400.0", "note: ''"), "bare.yaml")
    with pytest.raises(ReferenceError) as err:  # the row's headline measure (throughput) without its value
        references.load(bare)
    assert f"{bare}:{line - 3}: rows[0]: the row's measure is throughput: give its published value" in str(err.value)
    top = _write(tmp_path, {**GOOD, "colour": "red"}, "top.yaml")
    with pytest.raises(ReferenceError, match=r"top.yaml:\d+: unknown key 'colour' \(allowed here: schema_version"):
        references.load(top)


@pytest.mark.parametrize(("change", "expected"), [
    ({"gpus": "eight"}, r"rows\[0\].gpus = 'eight': Input should be a valid integer"),
    ({"throughput": "400"}, r"rows\[0\].throughput = '400': Input should be a valid number"),
    ({"precision": "fp64"}, r"rows\[0\].precision = 'fp64': must be one of 'fp32', 'amp'"),
    ({"xla": "on"}, r"rows\[0\].xla = 'on': must be true or false \(or null: not stated\)"),
    ({"throughput": -1}, r"rows\[0\].throughput = -1: Input should be greater than 0"),
])
def test_wrong_types_and_values_are_named(tmp_path, change, expected):
    doc = copy.deepcopy(GOOD)
    doc["rows"][0].update(change)
    with pytest.raises(ReferenceError, match=r"ref.yaml:\d+: " + expected):
        references.load(_write(tmp_path, doc))


def test_wrong_values_elsewhere_are_named(tmp_path):
    doc = {**GOOD, "model": "resnet101", "source": {"title": "a", "url": "ftp://x"},
           "software": {"commit": "HEAD"}, "tolerance": 5}
    with pytest.raises(ReferenceError) as err:
        references.load(_write(tmp_path, doc))
    msg = str(err.value)
    known = ", ".join(f"'{name}'" for name in sorted(models.names())[:-1])
    assert f"model = 'resnet101': must be one of {known} or '{sorted(models.names())[-1]}'" in msg
    assert "source.url = 'ftp://x': must be an http:// or https:// address" in msg
    assert "software.commit = 'HEAD': must be a git commit" in msg
    assert "tolerance = 5: Input should be less than 1" in msg


def test_cross_field_problems_are_each_named_with_their_line(tmp_path):
    doc = copy.deepcopy(GOOD)
    doc["tables"] = {"a": "table a"}
    doc["software"]["framework"] = "mxnet"
    doc["rows"] = [{**GOOD["rows"][0], "table": "b"}, {**GOOD["rows"][0], "gpus": 16},
                   GOOD["rows"][0], GOOD["rows"][0]]
    doc["time_to_train"] = [{"gpus": 1, "batch_size": 256, "precision": "amp", "epochs": 120}]
    with pytest.raises(ReferenceError) as err:
        references.load(_write(tmp_path, doc))
    msg = str(err.value)
    assert "software.framework: 'mxnet' does not run resnet50_tf" in msg
    assert "rows[0].table: 'b' is not a label of `tables`; allowed: a" in msg
    assert "rows[1].gpus: 16 GPUs but hardware has 1 node(s) x 8" in msg
    assert "rows[3]: repeats rows[2]" in msg
    assert "time_to_train[0].seconds: is required" in msg
    assert "time_to_train[0].target: a time-to-train entry names one target: `target: {metric: value}`" in msg
    assert all(line.startswith(f"{tmp_path / 'ref.yaml'}:") for line in msg.splitlines())
    empty = {k: v for k, v in GOOD.items() if k != "rows"}
    with pytest.raises(ReferenceError, match="at least one of rows, time_to_train, accuracy"):
        references.load(_write(tmp_path, empty, "empty.yaml"))


OUTCOME = {"gpus": 1, "batch_size": 256, "precision": "amp", "epochs": 120}


def test_the_old_top1_keys_are_named_with_their_line_and_what_to_write(tmp_path):
    doc = {**copy.deepcopy(GOOD), "top1_tolerance": 0.5,
           "time_to_train": [{**OUTCOME, "seconds": 148720, "target_top1": 76.1, "top1": 76.97}]}
    text = yaml.safe_dump(doc, sort_keys=False)
    path = _write(tmp_path, text)
    line = {key: next(i for i, t in enumerate(text.splitlines(), 1) if t.lstrip(" -").startswith(key + ":"))
            for key in ("top1_tolerance", "target_top1", "top1")}
    with pytest.raises(ReferenceError) as err:
        references.load(path)
    msg = str(err.value)
    assert (f"{path}:{line['top1_tolerance']}: top1_tolerance: 'top1_tolerance' is the old spelling of a quality "
            "value; write `quality_tolerance: {top1: 0.5}` instead") in msg
    assert (f"{path}:{line['target_top1']}: time_to_train[0].target_top1: 'target_top1' is the old spelling of a "
            "quality value; write `target: {top1: 76.1}` instead") in msg
    assert f"{path}:{line['top1']}: time_to_train[0].top1: 'top1' is the old spelling" in msg
    assert "write `quality: {top1: 76.97}` instead" in msg


def test_quality_values_are_keyed_by_the_models_metrics(tmp_path):
    doc = {**copy.deepcopy(GOOD), "quality_tolerance": {"map": 0.2},
           "accuracy": [{**OUTCOME, "quality": {"box_ap": 37.7, "top1": 176.0}}]}
    with pytest.raises(ReferenceError) as err:
        references.load(_write(tmp_path, doc))
    msg = str(err.value)
    assert "quality_tolerance.map: 'map' is not a quality metric of resnet50_tf (its metrics: top1, top5)" in msg
    assert "accuracy[0].quality.box_ap: 'box_ap' is not a quality metric of resnet50_tf" in msg
    assert "accuracy[0].quality.top1: 176 is above 100: top-1 accuracy is a percent" in msg
    doc["accuracy"] = [{**OUTCOME, "target": {"top1": 76.1}}]
    with pytest.raises(ReferenceError, match=r"accuracy\[0\].quality: is required for an accuracy entry"):
        references.load(_write(tmp_path, doc, "empty_quality.yaml"))


def test_a_reference_in_box_and_mask_ap_compares_each(tmp_path):
    doc = {**copy.deepcopy(GOOD), "model": "maskrcnn_tf2", "rows": [], "quality_tolerance": {"mask_ap": 1.0},
           "accuracy": [{**OUTCOME, "epochs": 12, "quality": {"box_ap": 37.7, "mask_ap": 34.1}}]}
    ref = references.load(_write(tmp_path, doc))
    evals = pd.DataFrame({"source": ["a.log"] * 2, "run": [0, 0], "line": [1, 2], "epoch": [11, 12],
                          "box_ap": [36.0, 37.0], "mask_ap": [32.0, 33.5], "elapsed": [10.0, 20.0]})
    out = references.time_to_train_check(evals, ref)
    assert list(out["metric"]) == ["box_ap", "mask_ap"]
    assert list(out["measured_quality"]) == [37.0, 33.5] and list(out["verdict"]) == ["lower", "reproduced"]
    assert out.attrs["quality_tolerance"] == {"mask_ap": 1.0}
    with pytest.raises(ReferenceError, match="computed for another metric; the reference compares box_ap"):
        references.time_to_train_check(metrics.time_to_target(evals, 30.0, "mask_ap").drop(columns="final_box_ap",
                                                                                            errors="ignore"), ref)


@pytest.mark.parametrize(("text", "expected"), [
    ("- a\n- b\n", "a reference file is a YAML mapping"),
    ("title: x\n", "schema_version is missing"),
    ("schema_version: 2\ntitle: x\n", r"ref.yaml:1: schema_version 2 is not supported"),
    ("schema_version: 1\nrows: [\n", "not valid YAML"),
    ("schema_version: 1\nname: other\n", "name 'other' differs from the file name"),
])
def test_malformed_files(tmp_path, text, expected):
    with pytest.raises(ReferenceError, match=expected):
        references.load(_write(tmp_path, text))


def test_unknown_names_and_paths(tmp_path):
    with pytest.raises(UnknownNameError) as err:
        references.load("dlperf_resnet50", root=SHIPPED)
    assert isinstance(err.value, ReferenceError) and isinstance(err.value, KeyError)
    assert isinstance(err.value, BenchbookError)
    msg = str(err.value)
    assert "unknown reference 'dlperf_resnet50'" in msg and "dlperf_tf1_resnet50" in msg and str(SHIPPED) in msg
    with pytest.raises(ReferenceError, match="no such reference file"):
        references.load(tmp_path / "missing.yaml")


def test_root_argument_and_environment_variable(tmp_path, monkeypatch):
    _write(tmp_path, GOOD, "mine.yaml")
    assert references.available(tmp_path) == ["mine"]
    assert references.load("mine", root=tmp_path).name == "mine"
    assert references.load("mine.yaml", root=tmp_path).name == "mine"
    monkeypatch.setenv(references.ENV_VAR, str(tmp_path))
    assert references.available() == ["mine"]
    assert references.load("mine").path == tmp_path / "mine.yaml"
    monkeypatch.delenv(references.ENV_VAR)
    assert "dlperf_tf1_resnet50" in references.available()
    assert references.available(tmp_path / "nowhere") == []


# -------------------------------------------------------------------------------------- time to train


def _evaluations(runs):
    """An evaluations frame (long, as an Analysis's): per run, a list of (epoch, top1, elapsed seconds)."""
    rows = [{"source": f"run{r}.log", "run": 0, "line": 10 * i, "epoch": e, "metric": "top1", "value": t,
             "unit": "%", "eval_throughput": np.nan, "timestamp": np.nan, "elapsed": s}
            for r, evals in enumerate(runs) for i, (e, t, s) in enumerate(evals)]
    return pd.DataFrame(rows, columns=list(EVAL_COLUMNS))


def test_time_to_train_check():
    ref = references.load("ngc_tf1_resnet50_time_to_train", root=SHIPPED)
    evals = _evaluations([
        [(90, 75.9, 110000.0), (110, 76.2, 150000.0), (120, 76.9, 160000.0)],  # 150000 / 148720: +0.9%
        [(90, 74.0, 120000.0), (120, 75.5, 170000.0)],  # never reaches 76.10
    ])
    out = references.time_to_train_check(evals, ref)
    assert list(out.columns) == list(references.TIME_COLUMNS) and len(out) == 2
    first, second = out.iloc[0], out.iloc[1]
    assert first["kind"] == "time_to_train" and first["verdict"] == "reproduced" and first["reached"]
    assert first["measured_seconds"] == 150000.0 and first["ratio"] == pytest.approx(150000 / 148720)
    assert (first["metric"], first["target"], first["published_quality"]) == ("top1", 76.10, 76.97)
    assert first["measured_quality"] == 76.9 and first["quality_delta"] == pytest.approx(76.9 - 76.97)
    assert second["verdict"] == "not reached" and not second["reached"] and math.isnan(second["measured_seconds"])
    assert second["differences"] == ["never reached top-1 accuracy 76.1% (final 75.50%)"]
    assert references.verdict_summary(out)["overall"] == "partly reproduced"
    # The frame of metrics.time_to_target gives the same verdicts.
    same = references.time_to_train_check(metrics.time_to_target(evals, 76.10, "top1"), ref)
    assert list(same["verdict"]) == ["reproduced", "not reached"]
    slow = references.time_to_train_check(evals, ref, tolerance=0.001)
    assert slow.iloc[0]["verdict"] == "slower"  # 150000 s against 148720 s
    fast = references.time_to_train_check(_evaluations([[(100, 76.5, 120000.0)]]), ref)
    assert fast.iloc[0]["verdict"] == "faster"


def test_accuracy_check():
    ref = references.load("ngc_tf1_resnet50_accuracy", root=SHIPPED)
    evals = _evaluations([[(249, 76.95, 300000.0)], [(249, 75.9, 300000.0)], [(120, 77.6, 150000.0)]])
    out = references.time_to_train_check(evals, ref)
    assert list(out["kind"]) == ["accuracy"] * 3
    assert list(out["verdict"]) == ["reproduced", "lower", "higher"]
    assert out.iloc[1]["quality_delta"] == pytest.approx(75.9 - 76.81)
    assert out.iloc[2]["differences"] == ["last evaluation at epoch 120; the published run trained 250 epochs"]
    none = references.time_to_train_check(_evaluations([]), ref)
    assert list(none["verdict"]) == ["not measured"] and references.verdict_summary(none)["overall"] == "not measured"
    with pytest.raises(ReferenceError, match="evaluations"):
        references.time_to_train_check(pd.DataFrame({"x": [1]}), ref)


# ----------------------------------------------------------------------------------------- pipeline


def test_the_example_logs_compare_through_the_real_pipeline(repo_root):
    result = analyze([repo_root / "examples" / "logs"])
    assert not result.problems
    stats = metrics.aggregate(result.runs)
    for name in ("dlperf_tf1_resnet50", "ngc_tf2_maskrcnn", "ngc_mxnet_resnet50"):
        ref = references.load(name, root=SHIPPED)
        out = references.compare(stats, ref)
        assert len(out) == len(ref.rows)
        assert list(out["published"]) == [r.throughput for r in ref.rows]
        assert set(out["verdict"]) <= set(references.VERDICTS)
        measured = out[out["verdict"] != "not measured"]
        assert (measured["runs"] > 0).all()
        np.testing.assert_allclose(measured["ratio"], measured["measured"] / measured["published"])
        for _, row in measured.iterrows():
            expected = "reproduced" if abs(row["ratio"] - 1) <= 0.05 else ("slower" if row["ratio"] < 1 else "faster")
            assert row["verdict"] == expected
        summary = references.verdict_summary(out)
        assert summary["rows"] == len(ref.rows) and summary["measured"] == len(measured)
    dlperf = references.compare(stats, references.load("dlperf_tf1_resnet50", root=SHIPPED))
    # The examples are 1-8 GPU TF1 runs with XLA and DALI: the AMP + XLA rows (both tables) are measured.
    measured = dlperf[dlperf["verdict"] != "not measured"]
    assert sorted(zip(measured["table"], measured["gpus"], strict=True)) == [
        ("amp_xla", 1), ("amp_xla", 4), ("amp_xla", 8), ("data_dali", 1), ("data_dali", 4), ("data_dali", 8)]
    assert (measured["runs"] == 3).all()
    assert dlperf[dlperf["gpus"] > 8]["verdict"].eq("not measured").all()
    rcnn = references.compare(stats, references.load("ngc_tf2_maskrcnn", root=SHIPPED))
    assert (rcnn["verdict"] != "not measured").sum() == 4  # batch 2 was logged, batch 4 was not
    mxnet = references.compare(stats, references.load("ngc_mxnet_resnet50", root=SHIPPED))
    assert references.verdict_summary(mxnet)["overall"] == "not measured"  # the examples ran batch 96
    assert all(d and "batch size: logged at 96" in d[0] for d in mxnet["differences"])


@pytest.mark.parametrize("name", ["../../secret", "../secret.yaml", "{outside}/secret.yaml", "sub/../../secret",
                                  "link", ""])
def test_a_reference_name_never_leaves_the_references_folder(tmp_path, name):
    """`--reference ../../file` read any file (issue 21): a name resolves inside the folder or is refused."""
    folder, outside = tmp_path / "refs", tmp_path / "elsewhere"
    folder.mkdir()
    (folder / "sub").mkdir()
    outside.mkdir()
    _write(outside, GOOD, "secret.yaml")
    _write(tmp_path, GOOD, "secret.yaml")
    (folder / "link.yaml").symlink_to(outside / "secret.yaml")
    with pytest.raises(references.ReferenceOutsideError) as err:
        references.load(name.format(outside=outside), root=folder)
    assert "is not a file of the references folder" in str(err.value) and str(folder) in str(err.value)
    assert isinstance(err.value, ReferenceError) and isinstance(err.value, BenchbookError)


def test_a_name_inside_the_folder_still_loads_from_a_subfolder(tmp_path):
    (tmp_path / "sub").mkdir()
    _write(tmp_path / "sub", GOOD, "mine.yaml")
    assert references.load("sub/mine", root=tmp_path).name == "mine"
    with pytest.raises(ReferenceError, match="no such reference file"):
        references.load("sub/other", root=tmp_path)


def test_the_tf1_reference_logs_get_a_verdict():
    """NGC's TF1 numbers of the report beside ../shared/reference-logs/ngc-tf1-resnet50 (issue 20): every
    configuration of those logs has a row (tools/check_reference_reports.py checks the verdicts on the logs)."""
    ref = references.load("ngc_tf1_resnet50", root=SHIPPED)
    assert ref.source.commit == "15b5df84" and "wanghuancoder/PerformanceReport" in ref.source.url
    assert {(r.gpus, r.batch_size, r.precision) for r in ref.rows} == {
        (g, b, p) for g in (1, 8) for b in (128, 256) for p in ("fp32", "amp")}
    assert all(r.xla is True and r.dali is False and r.synthetic is False for r in ref.rows)


def test_dlperf_speedups_keep_the_digits_the_readme_prints():
    # DLPerf's README (d9408d7e) prints the 1-GPU speedup as 1.00 in the FP32 table and as 1 in the AMP ones.
    ref = references.load("dlperf_tf1_resnet50")
    firsts = {r.table: r.as_printed("speedup") for r in ref.rows if r.gpus == 1 and r.speedup is not None}
    assert firsts == {"fp32": "1.00", "amp": "1", "amp_xla": "1"}
    assert _row(ref, table="amp", gpus=8).as_printed("speedup") == "7.3"


def test_the_comparison_reads_a_configurations_keys_from_the_axes():
    """Issue 35: the reference comparison names no axis of a configuration itself; it reads the keys from
    core.config through the schema (MATCHED, FLAGS, ROW_AXES), so that an axis is declared in one place."""
    import re

    from benchbook.models import reference_schema

    keys = "|".join(map(re.escape, catalog.default().run_keys()))
    for name in ("reference_compare.py", "reference_differences.py"):
        text = (ROOT / "lib" / "benchbook" / "reports" / name).read_text(encoding="utf-8")
        spelled = [line for line in text.splitlines() if re.search(rf"[\"']({keys})[\"']", line)
                   and not line.startswith(("GPU_SECTION = ", "_LIBRARY_LABELS = "))]  # a capture's sections
        assert spelled == [], name
    assert reference_schema.MATCHED == ("gpus", "batch_size", "precision")
    assert reference_schema.ROW_AXES == ("gpus", "nodes", "batch_size", "precision", *catalog.default().flags(),
                                         *reference_schema.STATED)  # (then the models' own: BERT's seq_len, phase)
    assert list(references.COLUMNS)[1:1 + len(reference_schema.ROW_AXES)] == list(reference_schema.ROW_AXES)


_OWN_AXIS = '''
import json, sys
import pandas as pd
from benchbook.logs.parsers.ngc_bert_pytorch import SEQ_LEN  # (the BERT models' declaration of the axis)
from benchbook.models import spec
base = spec.get("resnet50_tf")
spec.register(spec.ModelSpec(
    name="fakebert", framework="pytorch", title="Fake BERT", log_names=("pytorch", "fakebert"), notebook="x",
    unit="sequences/s", ngc_command=base.ngc_command, ngc_script="run.py", dataset="Wiki",
    data_layout="imagenet_folders", data_name="x",
    axes=(SEQ_LEN,)))
from benchbook.reports import references
from pathlib import Path
ref = references.load(Path(sys.argv[1]))
stats = pd.DataFrame([{"framework": "pytorch", "model": "fakebert", "gpus": 8, "batch_size": 64,
                       "precision": "amp", "seq_len": n, "median": v, "runs": 1} for n, v in ((128, 3000.0),
                                                                                             (512, 1000.0))])
out = references.compare(stats, ref)
print(json.dumps({"columns": list(out.columns), "rows": out[["seq_len", "measured", "verdict"]].to_dict("records"),
                  "notes": list(out["differences"]), "key": list(ref.rows[0].key)}, default=str))
'''


def test_a_models_own_axis_is_a_field_of_a_published_row(tmp_path):
    """A model that declares an axis (a sequence length) gets a `Row` field for it: a row that states it
    matches that value only; one that does not matches any, and the others are named."""
    import json
    import subprocess
    import sys

    doc = {**copy.deepcopy(GOOD), "model": "fakebert", "rows": [
        {"gpus": 8, "batch_size": 64, "precision": "amp", "seq_len": 512, "throughput": 1010.0},
        {"gpus": 8, "batch_size": 64, "precision": "amp", "seq_len": 256, "throughput": 2000.0},
        {"gpus": 8, "batch_size": 64, "precision": "amp", "throughput": 2900.0, "table": "any"}],
        "tables": {"any": "the sequence length unstated"}}
    path = _write(tmp_path, doc)
    out = subprocess.run([sys.executable, "-c", _OWN_AXIS, str(path)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got["columns"][1:9] == ["gpus", "nodes", "batch_size", "precision", "xla", "dali", "synthetic", "seq_len"]
    assert got["rows"][0] == {"seq_len": 512, "measured": 1000.0, "verdict": "reproduced"}
    assert got["rows"][1]["verdict"] == "not measured"
    assert "logged only with sequence length 128 (published: sequence length 256): 3000" in got["notes"][1][0]
    assert math.isnan(got["rows"][2]["seq_len"]) and got["rows"][2]["measured"] == 3000.0  # not stated
    assert any("also logged with sequence length 512: 1000" in note for note in got["notes"][2])
    # (the BERT models' phase, the LLM's parallel sizes and the global batch: not stated)
    assert got["key"] == [8, 64, "amp", None, None, None, 512, *[None] * (len(got["key"]) - 7)]
    rows = [{**doc["rows"][0], "hidden_size": 768}]
    path = _write(tmp_path, {**doc, "model": GOOD["model"], "rows": rows})
    with pytest.raises(ReferenceError, match="unknown key 'rows.0..hidden_size'"):  # an axis no model declares
        references.load(path)
