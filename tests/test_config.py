"""The configuration type (issue 35): a configuration's axes declared once in `core.config`, read by the
analysis, the run records, the statistics, the grid, the tables and the words of a report; the YAML
reader, the value checks and the cross-field problem type at the bottom of the library."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pandas as pd
import pytest

from benchbook.core import catalog, config
from benchbook.core.problems import FieldProblems
from benchbook.reports import configs, grid, metrics, tables
from benchbook.runfolder import records
from conftest import extended_catalog

FUSED = config.Axis("fused", bool, "flag", "fused", "the kernels were fused",
                    {True: "fused", False: "not fused", None: "fusion unknown"})


def _runs(fused: list) -> pd.DataFrame:
    rows = [{"framework": "tensorflow", "model": "resnet50", "gpus": g, "nodes": 1, "processes": g, "batch_size": 256,
             "precision": "amp", "xla": True, "dali": False, "synthetic": False, "fused": f,
             "recomputed_throughput": 1000.0 * g * (1.2 if f else 1.0), "status": "complete"}
            for g in (1, 8) for f in fused]
    return pd.DataFrame(rows)


def test_statistics_group_by_the_catalog_they_are_given_not_the_default():
    own = catalog.build([catalog.Part(axes=(FUSED,))])  # a catalog passed, no plugin, the default untouched
    assert len(metrics.aggregate(_runs([True, False]))) == 2 and "fused" not in catalog.default().run_keys()
    stats = metrics.aggregate(_runs([True, False]), catalog=own)
    assert len(stats) == 4 and "fused" in stats.columns


def test_a_new_axis_is_one_line_and_reaches_the_grid():
    plain = grid.grids(metrics.aggregate(_runs([True, False])), None)[0]
    assert len(plain.cells) == 2  # without the axis, fused and not fused runs are one configuration
    with extended_catalog(FUSED):
        stats = metrics.aggregate(_runs([True, False]))
        assert "fused" in stats.columns and len(stats) == 4
        assert stats.loc[stats["fused"] == True, "speedup"].tolist() == [1.0, 8.0]  # noqa: E712 -- its own baseline
        cells = grid.grids(stats, None)[0].cells
        assert len(cells) == 4 and {c[-1] for c in cells["column"]} == {("fused", True), ("fused", False)}
        shown = grid.render(grid.grids(stats, None)[0], "images/s").markup
        assert "AMP bs256 fused" in shown and "AMP bs256 not fused" in shown
        assert "fused" in records.json_keys() and "fused" in tables.published_layout(stats).columns.levels[0][0]
    assert "fused" not in catalog.default().run_keys() and "fused" not in records.json_keys()


def test_an_axis_declared_twice_differently_is_refused():
    twice = catalog.build([catalog.Part(axes=(FUSED,)), catalog.Part(axes=(FUSED,))])  # the same axis: kept once
    assert twice.run_keys().count("fused") == 1
    with pytest.raises(ValueError, match="declared twice"):
        catalog.build([catalog.Part(axes=(FUSED,)),
                       catalog.Part(axes=(config.Axis("fused", int, "identity", "fused", "another"),))])


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
    gpus, xla = catalog.default().axis("gpus"), catalog.default().axis("xla")
    assert [config.typed(gpus, v) for v in ("8", 8, -1, True, "x")] == [8, 8, None, None, None]
    assert config.typed(xla, "true") is None and config.typed(xla, True) is True


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
LEFT: set[str] = set()


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
    from benchbook.logs.frames import row_columns
    top1 = models.get("resnet50_tf").quality[0]
    assert (top1.key, top1.unit, top1.direction) == ("top1", "%", "higher") and top1.as_logged(0.759) == 75.9
    assert [m.name for m in models.get("maskrcnn_tf2").quality] == ["box AP", "mask AP"]
    known = catalog.default()
    assert {m.key for spec in models.specs() for m in spec.quality} <= {m.key for m in known.metrics}
    assert "final_top1" in row_columns(known) and "final_top1" in records.json_keys()
    assert known.headline_metric([("resnet50", "tensorflow")]) == top1  # the runs' model's own, never "the first"
    assert known.headline_metric([("resnet50", "tensorflow"), ("bert", "pytorch")]) is None
    with pytest.raises(ValueError, match="declared twice"):
        catalog.build([catalog.Part(metrics=(top1,)), catalog.Part(metrics=(config.Metric("top1", "else", "%"),))])


def test_a_models_own_count_axis_tells_grid_columns_apart():
    seq = config.Axis("fake_len", int, "identity", "sequence length", "tokens a sequence")  # not BERT's seq_len
    runs = _runs([True]).drop(columns="fused")
    runs = pd.concat([runs.assign(fake_len=128), runs.assign(fake_len=512, recomputed_throughput=100.0)])
    with extended_catalog(seq) as known:
        stats = metrics.aggregate(runs)
        assert len(stats) == 4 and "fake_len" in known.labelled()
        shown = grid.render(grid.grids(stats, None)[0], "sequences/s").markup
        assert "AMP bs256 sequence length 128" in shown and "AMP bs256 sequence length 512" in shown


def _fresh(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_an_analysis_is_the_same_whatever_was_imported_first(repo_root):
    """Issue 46: `from benchbook import analyze` gave the BERT set 34 run columns and `from benchbook.logs.analysis
    import analyze` 32 (no seq_len, no phase): the axes were lists the models filled as they were imported. Two
    fresh interpreters, importing in both orders, now give the same frames."""
    bert = str(repo_root / "examples" / "published" / "ngc-pytorch-bert")
    show = (f"a = analyze([{bert!r}]); import pandas as pd; pd.set_option('display.width', 10**6); "
            "print(list(a.runs.columns)); print(a.runs.drop(columns=['meta', 'reported']).to_csv()); "
            "print(list(a.evaluations.columns)); print(len(a.iterations))")
    low = _fresh("from benchbook.logs.analysis import analyze; import benchbook.models; " + show)
    top = _fresh("import benchbook.models; from benchbook import analyze; " + show)
    assert low == top
    assert "'seq_len', 'phase'" in low.splitlines()[0]


def test_nothing_in_core_changes_after_import():
    """The catalog is built from the registries; nothing in `core/` is a list or mapping the registries fill:
    every module-level value of every core module is the same before and after everything is imported and an
    analysis run (and none is a mutable container)."""
    code = textwrap.dedent("""
        import importlib, pkgutil, types
        import benchbook.core as core
        names = [f"benchbook.core.{m.name}" for m in pkgutil.iter_modules(core.__path__)]
        mods = [importlib.import_module(n) for n in names]
        def state():
            return {(m.__name__, k): repr(v) for m in mods for k, v in vars(m).items()
                    if not k.startswith("__") and not callable(v) and not isinstance(v, types.ModuleType)}
        mutable = sorted(f"{m.__name__}.{k}" for m in mods for k, v in vars(m).items()
                         if not k.startswith("__") and isinstance(v, (list, dict, set)))
        before = state()
        import benchbook.models, benchbook.studies.launchers
        from benchbook import analyze
        from benchbook.core import catalog
        catalog.default(); analyze([])
        print(mutable, before == state(), len(before))
    """)
    mutable, same, count = _fresh(code).rsplit(" ", 2)
    assert (mutable, same) == ("[]", "True") and int(count) > 20
