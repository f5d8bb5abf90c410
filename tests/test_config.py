"""The configuration type (issue 35): a configuration's axes declared once in `core.config`, read by the
analysis, the run records, the statistics, the grid, the tables and the words of a report; the YAML
reader, the value checks and the cross-field problem type at the bottom of the library."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pandas as pd
import pytest

from benchbook.core import config
from benchbook.core.problems import FieldProblems
from benchbook.reports import configs, grid, metrics, tables
from benchbook.runfolder import records

FUSED = config.Axis("fused", bool, "flag", "fused", "the kernels were fused",
                    {True: "fused", False: "not fused", None: "fusion unknown"})


def _runs(fused: list) -> pd.DataFrame:
    rows = [{"framework": "tensorflow", "model": "resnet50", "gpus": g, "nodes": 1, "processes": g, "batch_size": 256,
             "precision": "amp", "xla": True, "dali": False, "synthetic": False, "fused": f,
             "recomputed_throughput": 1000.0 * g * (1.2 if f else 1.0), "status": "complete"}
            for g in (1, 8) for f in fused]
    return pd.DataFrame(rows)


def test_a_new_axis_is_one_line_and_reaches_the_grid():
    plain = grid.grids(metrics.aggregate(_runs([True, False])), None)[0]
    assert len(plain.cells) == 2  # without the axis, fused and not fused runs are one configuration
    with config.added(FUSED):
        stats = metrics.aggregate(_runs([True, False]))
        assert "fused" in stats.columns and len(stats) == 4
        assert stats.loc[stats["fused"] == True, "speedup"].tolist() == [1.0, 8.0]  # noqa: E712 -- its own baseline
        cells = grid.grids(stats, None)[0].cells
        assert len(cells) == 4 and {c[-1] for c in cells["column"]} == {("fused", True), ("fused", False)}
        shown = grid.render(grid.grids(stats, None)[0], "images/s").markup
        assert "AMP bs256 fused" in shown and "AMP bs256 not fused" in shown
        assert "fused" in records.json_keys() and "fused" in tables.published_layout(stats).columns.levels[0][0]
    assert "fused" not in config.run_keys() and "fused" not in records.json_keys()


def test_an_axis_declared_twice_differently_is_refused():
    with config.added(FUSED):
        config.add(FUSED)  # the same axis again: nothing changes
        assert config.run_keys().count("fused") == 1
        with pytest.raises(ValueError, match="declared twice"):
            config.add(config.Axis("fused", int, "identity", "fused", "another"))


def test_one_spelling_of_where_a_configuration_ran():
    assert [config.where(g, p) for g, p in ((8, 8), (1, 1), (0, 1), (0, 2), (None, None))] == [
        "8 GPUs", "1 GPU", "CPU", "CPU, 2 processes", "? GPUs"]
    assert configs.describe(0, 2, "fp32", 8) == "CPU, 2 processes, FP32, batch 8"
    assert configs.place_label(configs.place(0, 2)) == "CPU, 2 processes"
    from benchbook.reports import plots
    assert plots.config_label({"gpus": 0, "processes": 2, "precision": "fp32", "batch_size": 8}).startswith(
        "CPU, 2 processes ·")


def test_one_conversion_of_missing_int_and_bool():
    assert [config.missing(v) for v in (None, float("nan"), pd.NA, "?", "", "none", 0, "amp")] == [
        True, True, True, True, True, True, False, False]
    assert [config.as_int(v) for v in (8, "8", 8.0, None, "?", pd.NA)] == [8, 8, 8, None, None, None]
    assert [config.as_bool(v) for v in (True, "false", "?", None, pd.NA)] == [True, False, None, None, None]
    assert [config.typed("gpus", v) for v in ("8", 8, -1, True, "x")] == [8, 8, None, None, None]
    assert config.typed("xla", "true") is None and config.typed("xla", True) is True


def test_the_configuration_type_costs_no_heavy_import():
    code = "import sys, benchbook.core.config; print(sorted({m.split('.')[0] for m in sys.modules} & " \
           "{'yaml', 'pydantic', 'pandas', 'numpy'}))"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "[]\n"


def test_a_reference_file_with_a_duplicate_key_is_refused_at_its_line(tmp_path):
    from benchbook.models.reference_schema import ReferenceError, load
    path = tmp_path / "dup.yaml"
    path.write_text(textwrap.dedent("""\
        schema_version: 1
        title: t
        title: again
        """))
    with pytest.raises(ReferenceError, match=r"dup.yaml:3: .*duplicate key 'title' \(first on line 2\)"):
        load(path)


def test_field_problems_keep_each_field():
    problems = FieldProblems([(("a",), "first"), (("b", 0), "second")])
    assert problems.problems[1] == (("b", 0), "second") and str(problems) == "first; second"


# Issue 35: the metric and unit words are a model's (ModelSpec.unit, ModelSpec.quality), named only in the model's
# own module, the log parsers (what a log says) and the workloads. Left, each for a reason it names:
LEFT = {
    "lib/benchbook/cli.py",  # summarize's title line: another change owns the CLI
}


def test_no_generic_module_names_a_models_metric_or_unit():
    from pathlib import Path
    lib = Path(__file__).resolve().parents[1] / "lib" / "benchbook"
    own = [lib / "workloads", lib / "logs" / "parsers"] + [lib / "models" / f"{name}.py" for name in
                                                            __import__("benchbook.models").models.names()]
    words = ("top1", "top5", "images/s")
    named = sorted({p.relative_to(lib.parents[1]).as_posix() for p in lib.rglob("*.py")
                    if not any(p == o or o in p.parents for o in own)
                    and any(w in p.read_text(encoding="utf-8") for w in words)})
    assert set(named) == LEFT, named


def test_a_models_quality_metrics_and_unit_reach_the_frames():
    from benchbook import models
    from benchbook.logs.frames import eval_columns, row_columns
    top1 = models.get("resnet50_tf").quality[0]
    assert (top1.key, top1.unit, top1.direction) == ("top1", "%", "higher") and top1.as_logged(0.759) == 75.9
    assert [m.name for m in models.get("maskrcnn_tf2").quality] == ["box AP", "mask AP"]
    assert {m.key for spec in models.specs() for m in spec.quality} <= set(eval_columns())
    assert "final_top1" in row_columns() and "final_top1" in records.json_keys() and config.headline_metric() == top1
    with pytest.raises(ValueError, match="declared twice"):
        config.declare(config.Metric("top1", "something else", "%"))


def test_a_models_own_count_axis_tells_grid_columns_apart():
    seq = config.Axis("fake_len", int, "identity", "sequence length", "tokens a sequence")  # not BERT's seq_len
    runs = _runs([True]).drop(columns="fused")
    runs = pd.concat([runs.assign(fake_len=128), runs.assign(fake_len=512, recomputed_throughput=100.0)])
    with config.added(seq):
        stats = metrics.aggregate(runs)
        assert len(stats) == 4 and "fake_len" in config.labelled()
        shown = grid.render(grid.grids(stats, None)[0], "sequences/s").markup
        assert "AMP bs256 sequence length 128" in shown and "AMP bs256 sequence length 512" in shown


def test_an_analysis_without_the_models_keeps_every_evaluated_value(fixtures):
    """The log formats declare the metrics their evaluations carry: `benchbook.logs.analysis` imported on its
    own (no model loaded) still has the top-1 column and its values (it had none: they were left out)."""
    code = ("import sys; from benchbook.logs.analysis import analyze; "
            f"a = analyze([{str(fixtures / 'ngc_tf1' / 'train_and_evaluate_gpu1_amp_bs256.log')!r}]); "
            "assert 'benchbook.models' not in sys.modules; "
            "print(a.evaluations['top1'].tolist()[-1], a.runs['final_top1'].tolist())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["76.81", "[76.81]"]
