"""The report figures: built headless (Agg), from synthetic frames and from the example logs."""

from __future__ import annotations

import subprocess
import sys

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

import benchbook  # noqa: E402
from benchbook.logs.analysis import EVAL_COLUMNS, ITERATION_COLUMNS, RUN_COLUMNS  # noqa: E402
from benchbook.reports import metrics, plots  # noqa: E402

CONFIGS = [  # gpus, precision, batch, xla, images/s per GPU
    (1, "fp32", 128, True, 360.0),
    (8, "fp32", 128, True, 350.0),
    (1, "amp", 224, True, 925.0),
    (8, "amp", 224, True, 900.0),
]


def make_runs(configs=CONFIGS, repeats=3, spread=0.01) -> pd.DataFrame:
    rows = []
    rng = np.random.default_rng(0)
    for gpus, precision, batch, xla, per_gpu in configs:
        for rep in range(1, repeats + 1):
            rate = per_gpu * max(gpus, 1) * (1 + spread * rng.standard_normal())
            rows.append({
                "source": f"logs/{gpus}g_{precision}_bs{batch}_{rep}.log", "run": 0, "format": "ngc_tf1",
                "framework": "tensorflow", "model": "resnet50", "gpus": gpus, "nodes": 1, "batch_size": batch,
                "global_batch_size": batch * max(gpus, 1), "precision": precision, "xla": xla, "dali": True,
                "synthetic": False, "repeat": rep, "reported_throughput": rate * 1.001,
                "recomputed_throughput": rate, "elapsed_throughput": rate * 0.998, "status": "complete",
            })
    runs = pd.DataFrame(rows).reindex(columns=list(RUN_COLUMNS))
    for col in ("gpus", "nodes", "batch_size", "global_batch_size", "repeat"):
        runs[col] = runs[col].astype("Int64")
    return runs


def make_iterations(runs: pd.DataFrame, records=30, warmup=5) -> pd.DataFrame:
    frames = []
    for r in runs.itertuples():
        n = np.arange(records)
        rate = np.where(n < warmup, r.recomputed_throughput * 0.5, r.recomputed_throughput)
        frames.append(pd.DataFrame({
            "source": r.source, "run": r.run, "line": n + 10, "rank": -1, "epoch": 0, "iteration": n * 10,
            "timestamp": 1.7e9 + n * 2.0, "elapsed": n * 2.0, "throughput": rate, "loss": 1.0, "lr": 0.1,
            "steps": 10.0, "warmup": n < warmup, "measured": n >= warmup,
        }))
    return pd.concat(frames, ignore_index=True).reindex(columns=list(ITERATION_COLUMNS))


def texts(fig: Figure) -> str:
    """Every piece of text in the figure, joined."""
    return "\n".join(t.get_text() for t in fig.findobj(matplotlib.text.Text))


def x_extent(patch) -> list[float]:
    """The data x range of a band drawn with axvspan."""
    if hasattr(patch, "get_width"):
        return [patch.get_x(), patch.get_x() + patch.get_width()]
    xs = np.asarray(patch.get_xy())[:, 0]
    return [xs.min(), xs.max()]


def by_gid(ax, gid: str) -> list:
    return [a for a in ax.get_children() if a.get_gid() == gid]


@pytest.fixture(scope="module")
def example(repo_root=None):
    from pathlib import Path

    return benchbook.analyze([Path(__file__).parent.parent / "examples" / "logs"])


@pytest.fixture(autouse=True)
def no_pyplot_figures():
    """The figures never go through pyplot: nothing is left open, nothing is shown twice in Jupyter."""
    before = plt.get_fignums()
    yield
    assert plt.get_fignums() == before


# ------------------------------------------------------------------ names


@pytest.mark.parametrize("row, label", [
    ({"gpus": 8, "precision": "amp", "batch_size": 224, "xla": True}, "8 GPUs · amp · bs224 · xla"),
    ({"gpus": 1, "precision": "fp32", "batch_size": 128, "xla": False}, "1 GPU · fp32 · bs128 · no xla"),
    ({"gpus": 0, "precision": "bf16", "batch_size": 32, "xla": None}, "CPU · bf16 · bs32"),
    ({"gpus": pd.NA, "precision": None, "batch_size": "?", "xla": "?"}, "? GPUs · ? · bs?"),
])
def test_config_label(row, label):
    assert plots.config_label(row) == label


def test_labels_name_the_model_only_when_models_differ(example):
    labels, order = plots.config_labels(example.runs)
    assert "tensorflow2 maskrcnn · 8 GPUs · amp · bs2 · xla" in order
    assert len(order) == 14
    labels, order = plots.config_labels(make_runs())  # XLA on in every run: the labels leave it out
    assert order == ["1 GPU · fp32 · bs128", "8 GPUs · fp32 · bs128", "1 GPU · amp · bs224", "8 GPUs · amp · bs224"]
    mixed = make_runs().assign(xla=[True, False] * (len(make_runs()) // 2) + [True] * (len(make_runs()) % 2))
    assert any(label.endswith(" · no xla") for label in plots.config_labels(mixed)[1])


# ------------------------------------------------------------------ throughput over time


def test_throughput_over_time_facets_lines_and_warmup():
    runs = make_runs()
    fig = plots.throughput_over_time(make_iterations(runs), runs)
    assert isinstance(fig, Figure)
    assert len(fig.axes) == 4  # one facet per configuration
    titles = [ax.get_title() for ax in fig.axes]
    assert titles[0].startswith("1 GPU · fp32 · bs128") and "3 runs" in titles[0]
    for ax, (gpus, precision, batch, _, _) in zip(fig.axes, CONFIGS, strict=True):
        measured = by_gid(ax, "measured")
        assert len(measured) == 3  # the repeats, as separate lines
        # measured records solid, warm-up records greyed, each on its own line
        y = measured[0].get_ydata()
        assert np.isnan(y[:5]).all() and np.isfinite(y[5:]).all()
        warm = by_gid(ax, "warmup")
        assert len(warm) == 3 and np.isfinite(warm[0].get_ydata()[:5]).all()
        spans = by_gid(ax, "warmup-span")
        assert len(spans) == 1
        assert x_extent(spans[0]) == [0, 50]  # from the first warm-up iteration to the first measured one
        rates = sorted(line.get_ydata()[0] for line in by_gid(ax, "rate"))
        mine = runs[(runs["gpus"] == gpus) & (runs["precision"] == precision) & (runs["batch_size"] == batch)]
        assert rates == pytest.approx(sorted(mine["recomputed_throughput"]))
    assert "throughput (images/s)" in texts(fig)
    assert "warm-up records (skipped)" in texts(fig)
    assert fig.axes[-1].get_xlabel() == "iteration"


def test_throughput_over_time_without_warmup_has_no_shading_and_elapsed_axis():
    runs = make_runs(CONFIGS[:2])
    fig = plots.throughput_over_time(make_iterations(runs, warmup=0), runs, x="elapsed")
    assert len(fig.axes) == 2
    assert not any(by_gid(ax, "warmup-span") or by_gid(ax, "warmup") for ax in fig.axes)
    assert "warm-up records (skipped)" not in texts(fig)
    assert fig.axes[-1].get_xlabel() == "elapsed time (s)"
    assert by_gid(fig.axes[0], "measured")[0].get_xdata()[-1] == 58.0


def test_throughput_over_time_caps_facets_and_runs():
    configs = [(g, p, b, True, 100.0) for g in (1, 2, 4, 8) for p in ("fp32", "amp") for b in (64, 128)]
    runs = make_runs(configs, repeats=6)  # 16 configurations, 96 runs
    fig = plots.throughput_over_time(make_iterations(runs, records=8, warmup=2), runs, max_runs=12, max_facets=6)
    assert len(fig.axes) == 6
    assert sum(len(by_gid(ax, "measured")) for ax in fig.axes) == 12
    assert all(len(by_gid(ax, "measured")) == 2 for ax in fig.axes)  # shared out evenly
    assert all("6 runs, 2 drawn" in ax.get_title() for ax in fig.axes)
    title = fig.get_suptitle()
    assert "10 configurations left out" in title and "12 of 96 runs drawn" in title


def test_throughput_over_time_runs_without_records():
    runs = make_runs(CONFIGS[:2])
    iterations = make_iterations(runs.iloc[[0, 1]])  # the 8-GPU runs and one 1-GPU run logged nothing
    fig = plots.throughput_over_time(iterations, runs)
    assert len(fig.axes) == 2
    assert "1 without records" in fig.axes[0].get_title()
    assert len(by_gid(fig.axes[0], "measured")) == 2
    assert "no records logged" in [t.get_text() for t in fig.axes[1].texts]


def test_throughput_over_time_counts_iterations_that_restart_each_epoch(example):
    mx = example.runs[example.runs["framework"] == "mxnet"]
    fig = plots.throughput_over_time(example.iterations, mx)
    assert len(fig.axes) == 4
    x = by_gid(fig.axes[0], "measured")[0].get_xdata()
    assert (np.diff(x) > 0).all()  # iteration 20..200 in each epoch, counted over the run


def test_throughput_over_time_without_iteration_numbers_counts_records():
    runs = make_runs(CONFIGS[:1], repeats=1)
    iterations = make_iterations(runs).assign(iteration=-1, steps=np.nan)
    fig = plots.throughput_over_time(iterations, runs)
    assert fig.axes[0].get_xlabel() == "record number (no iteration logged)"
    assert list(by_gid(fig.axes[0], "other")[0].get_xdata()) == list(range(30))


def test_throughput_over_time_rejects_unknown_x():
    runs = make_runs(CONFIGS[:1])
    with pytest.raises(ValueError, match="iteration"):
        plots.throughput_over_time(make_iterations(runs), runs, x="epoch")


def test_throughput_over_time_on_the_example_logs(example):
    fig = plots.throughput_over_time(example.iterations, example.runs, max_facets=20)
    assert len(fig.axes) == example.runs.groupby(["model", "gpus", "precision", "batch_size", "xla"]).ngroups
    assert all(by_gid(ax, "warmup-span") for ax in fig.axes)  # every example run skips warm-up records
    # only the rank the rule used is drawn: one line of records per run
    assert sum(len(by_gid(ax, "other")) for ax in fig.axes) == len(example.runs)


# ------------------------------------------------------------------ repeats


def test_repeats_points_and_medians():
    runs = make_runs()
    runs.loc[0, "status"] = "failed"
    fig = plots.repeats(runs)
    ax_abs, ax_rel = fig.axes
    points = sum(len(c.get_offsets()) for c in ax_abs.collections)
    assert points == len(runs) - 1
    medians = [line for line in ax_abs.lines if line.get_label() == "median"][0]
    labels = [t.get_text() for t in ax_abs.get_yticklabels()]
    assert labels[0] == "1 GPU · fp32 · bs128"
    complete = runs[runs["status"] == "complete"]
    expected = [complete[(complete["gpus"] == g) & (complete["precision"] == p)]["recomputed_throughput"].median()
                for g, p, *_ in CONFIGS]
    assert medians.get_xdata() == pytest.approx(expected)
    assert list(medians.get_ydata()) == [0, 1, 2, 3]
    # right panel: distance from the median in percent; the middle repeat sits on 0
    rel = np.concatenate([c.get_offsets()[:, 0] for c in ax_rel.collections])
    assert len(rel) == len(runs) - 1 and np.isclose(rel, 0).sum() == 3
    assert "n=3, CV" in texts(fig) and "n=2, CV" in texts(fig)
    assert "1 run without a value or not complete left out" in fig.get_suptitle()


def test_repeats_other_metric_and_incomplete_runs():
    runs = make_runs()
    runs.loc[0, "status"] = "incomplete"
    fig = plots.repeats(runs, value="reported_throughput", complete_only=False)
    assert sum(len(c.get_offsets()) for c in fig.axes[0].collections) == len(runs)
    assert fig.axes[0].get_xlabel() == "reported throughput (images/s)"


# ------------------------------------------------------------------ scaling


def test_scaling_speedup_efficiency_and_ideal(example):
    stats = metrics.aggregate(example.runs)
    fig = plots.scaling(stats)
    ax_s, ax_e = fig.axes
    measured = by_gid(ax_s, "measured")
    assert len(measured) == 6  # (framework, model, precision, batch, xla) series
    tf_amp = [line for line in measured if line.get_label() == "tensorflow resnet50 · amp · bs224 · xla"][0]
    assert list(tf_amp.get_xdata()) == [1, 4, 8]
    row = stats[(stats["framework"] == "tensorflow") & (stats["precision"] == "amp") & (stats["gpus"] == 8)]
    assert tf_amp.get_ydata()[-1] == pytest.approx(row["speedup"].iloc[0])
    ideal = by_gid(ax_s, "ideal")[0]
    assert list(ideal.get_xdata()) == list(ideal.get_ydata())
    assert ideal.get_xdata()[0] == 1 and ideal.get_xdata()[-1] == 8
    eff = [line for line in by_gid(ax_e, "measured") if line.get_label() == tf_amp.get_label()][0]
    assert eff.get_ydata()[-1] == pytest.approx(100 * row["efficiency"].iloc[0])
    assert by_gid(ax_e, "ideal")[0].get_ydata()[0] == 100
    assert not by_gid(ax_s, "published")
    assert ax_s.get_xlabel() == "GPUs" and "speedup" in ax_s.get_ylabel()


def test_scaling_with_published_reference():
    stats = metrics.aggregate(make_runs())
    reference = pd.DataFrame({
        "gpus": [1, 8, 1, 8, 16], "batch_size": [128, 128, 224, 224, 224],
        "precision": ["fp32", "fp32", "amp", "amp", "amp"], "xla": [True] * 5,
        "published": [400.0, 3000.0, 1000.0, 7600.0, 14000.0], "published_speedup": [1.0, 7.5, np.nan, np.nan, 14.0],
    })
    fig = plots.scaling(stats, reference=reference)
    ax_s, ax_e = fig.axes
    hollow = by_gid(ax_s, "published")
    assert len(hollow) == 2 and all(line.get_markerfacecolor() == "none" for line in hollow)
    amp = [line for line in hollow if 16 in line.get_xdata()][0]
    assert list(amp.get_xdata()) == [1, 8, 16]
    assert amp.get_ydata() == pytest.approx([1.0, 7.6, 14.0])  # derived from `published` where not given
    assert by_gid(ax_e, "published")[1].get_ydata()[-1] == pytest.approx(100 * 14 / 16)
    assert "published (hollow)" in texts(fig)
    assert [t.get_text() for t in ax_s.get_xticklabels()] == ["1", "8", "16"]
    assert ax_s.get_xscale() == ax_s.get_yscale() == "log"  # 16 GPUs: log2 axes
    ideal = by_gid(ax_s, "ideal")[0]
    assert ideal.get_xdata()[-1] == 16 and ideal.get_ydata() == pytest.approx(ideal.get_xdata())


def test_scaling_published_column_and_cpu_rows():
    runs = make_runs(CONFIGS[:2] + [(0, "fp32", 32, False, 50.0)], repeats=1)
    stats = metrics.aggregate(runs)
    stats["published_speedup"] = np.where(stats["gpus"] == 8, 7.2, np.where(stats["gpus"] == 1, 1.0, np.nan))
    fig = plots.scaling(stats)
    hollow = by_gid(fig.axes[0], "published")
    assert len(hollow) == 1 and list(hollow[0].get_ydata()) == [1.0, 7.2]
    assert "1 CPU configuration left out" in fig.get_suptitle()


# ------------------------------------------------------------------ time to train


def make_evaluations(runs: pd.DataFrame, epochs=10, hours_per_epoch=0.5) -> pd.DataFrame:
    frames = []
    for i, r in enumerate(runs.itertuples()):
        e = np.arange(1, epochs + 1)
        top1 = 40 + 38 * (1 - np.exp(-e / (3 + i)))
        for metric, values in (("top1", top1), ("top5", top1 + 15)):  # long: a row per evaluation and metric
            frames.append(pd.DataFrame({"source": r.source, "run": r.run, "line": e * 100, "epoch": e,
                                        "metric": metric, "value": values, "unit": "%", "eval_throughput": 5000.0,
                                        "timestamp": 1.7e9 + e * 1800.0, "elapsed": e * hours_per_epoch * 3600}))
    return pd.concat(frames, ignore_index=True).reindex(columns=list(EVAL_COLUMNS))


def test_time_to_train_target_and_time_to_target():
    runs = make_runs(CONFIGS[:2], repeats=1)
    evaluations = make_evaluations(runs)
    fig = plots.time_to_train(evaluations, runs, target=70.0)
    ax = fig.axes[0]
    assert len(by_gid(ax, "run")) == 2
    assert by_gid(ax, "target")[0].get_ydata()[0] == 70.0
    assert ax.get_xlabel() == "elapsed time (h)" and ax.get_ylabel() == "top-1 accuracy (%)"
    reached = metrics.time_to_target(evaluations, 70.0, "top1").set_index("source")
    stars = by_gid(ax, "time-to-target")
    assert len(stars) == reached["reached"].sum() >= 1
    first = reached.loc[runs["source"].iloc[0]]
    assert stars[0].get_xdata()[0] == pytest.approx(first["seconds"] / 3600)
    assert stars[0].get_ydata()[0] == pytest.approx(first["top1"])
    names = [line.get_label() for line in by_gid(ax, "run")]
    assert names[0].startswith("1 GPU · fp32 · bs128 · #1")
    if not reached["reached"].all():
        assert any(n.endswith("not reached") for n in names)


def test_time_to_train_short_runs_in_seconds_and_no_target():
    runs = make_runs(CONFIGS[:1], repeats=2)
    fig = plots.time_to_train(make_evaluations(runs, hours_per_epoch=0.001), runs)
    ax = fig.axes[0]
    assert ax.get_xlabel() == "elapsed time (s)"
    assert not by_gid(ax, "target") and not by_gid(ax, "time-to-target")
    assert [line.get_label() for line in by_gid(ax, "run")] == ["1 GPU · fp32 · bs128 · #1",
                                                                "1 GPU · fp32 · bs128 · #2"]


# ------------------------------------------------------------------ comparison


def test_comparison_ratios_in_a_tolerance_band():
    frame = pd.DataFrame({
        "gpus": [1, 8, 8, 1], "batch_size": [128, 128, 224, 224], "precision": ["fp32", "fp32", "amp", "amp"],
        "xla": [True] * 4, "published": [400.0, 3000.0, 7600.0, 1000.0],
        "measured": [396.0, 2700.0, 7900.0, np.nan],
    })
    frame["ratio"] = frame["measured"] / frame["published"]
    frame["verdict"] = ["ok", "slower", "faster", "not measured"]
    fig = plots.comparison(frame, tolerance=0.05)
    ax = fig.axes[0]
    band = by_gid(ax, "tolerance")[0]
    assert x_extent(band) == pytest.approx([0.95, 1.05])
    points = by_gid(ax, "ratio")
    assert sum(len(p.get_offsets()) for p in points) == 3
    xs = sorted(np.concatenate([p.get_offsets()[:, 0] for p in points]))
    assert xs == pytest.approx(sorted(frame["ratio"].dropna()))
    assert {p.get_label() for p in points} == {"ok", "slower", "faster"}
    ok, slower = ([p for p in points if p.get_label() == v][0] for v in ("ok", "slower"))
    assert tuple(ok.get_facecolor()[0][:3]) != tuple(slower.get_facecolor()[0][:3])
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels == ["1 GPU · fp32 · bs128", "8 GPUs · fp32 · bs128", "1 GPU · amp · bs224",
                      "8 GPUs · amp · bs224"]
    assert "no ratio" in texts(fig) and "±5 %" in fig.get_suptitle()


def test_comparison_tolerance_from_attrs_and_tables():
    frame = pd.DataFrame({"table": ["A", "B"], "gpus": [8, 8], "batch_size": [256, 256], "precision": ["amp"] * 2,
                          "xla": [None, None], "published": [10000.0, 9500.0], "measured": [9700.0, 9700.0]})
    frame["ratio"] = frame["measured"] / frame["published"]
    frame["verdict"] = ["reproduced", "reproduced"]
    frame.attrs.update(tolerance=0.1, unit="img/s")
    fig = plots.comparison(frame)
    ax = fig.axes[0]
    assert x_extent(by_gid(ax, "tolerance")[0]) == pytest.approx([0.9, 1.1])
    assert [t.get_text() for t in ax.get_yticklabels()] == ["8 GPUs · amp · bs256 [A]", "8 GPUs · amp · bs256 [B]"]
    assert "img/s" in ax.get_xlabel()


def test_comparison_derives_ratio_and_verdict():
    frame = pd.DataFrame({"gpus": [0, 1], "batch_size": [32, 64], "precision": ["fp32", "fp32"], "xla": [False] * 2,
                          "published": [100.0, 100.0], "measured": [80.0, 101.0]})
    fig = plots.comparison(frame, tolerance=0.1)
    labels = {p.get_label() for p in by_gid(fig.axes[0], "ratio")}
    assert labels == {"below", "within"}
    assert "CPU · fp32 · bs32" in [t.get_text() for t in fig.axes[0].get_yticklabels()]


# ------------------------------------------------------------------ empty input


@pytest.mark.parametrize("draw", [
    lambda: plots.throughput_over_time(pd.DataFrame(columns=list(ITERATION_COLUMNS)),
                                       pd.DataFrame(columns=list(RUN_COLUMNS))),
    lambda: plots.throughput_over_time(pd.DataFrame(columns=list(ITERATION_COLUMNS)), make_runs()),
    lambda: plots.repeats(pd.DataFrame(columns=list(RUN_COLUMNS))),
    lambda: plots.repeats(make_runs().assign(recomputed_throughput=np.nan)),
    lambda: plots.scaling(metrics.aggregate(pd.DataFrame(columns=list(RUN_COLUMNS)))),
    lambda: plots.scaling(metrics.aggregate(make_runs(CONFIGS[1:2]))),  # no 1-GPU baseline
    lambda: plots.time_to_train(pd.DataFrame(columns=list(EVAL_COLUMNS)), make_runs(), target=76.1),
    lambda: plots.comparison(pd.DataFrame(columns=["gpus", "batch_size", "precision", "xla", "published",
                                                   "measured", "ratio", "verdict"])),
])
def test_empty_input_says_no_data(draw):
    fig = draw()
    assert isinstance(fig, Figure)
    assert "no data" in texts(fig)


# ------------------------------------------------------------------ explore, PNG


def test_explore_builds_without_kernel_and_redraws(example):
    import ipywidgets

    ui = plots.explore(example)
    assert isinstance(ui, ipywidgets.Widget)
    assert ui.output in ui.children
    assert len(ui.configs.options) == 14 and set(ui.configs.value) == set(ui.configs.options)
    first = ui.figure
    assert isinstance(first, Figure) and first.axes[0].get_xlabel() == "recomputed throughput (samples/s)"
    updates = ui.updates

    ui.configs.value = tuple(o for o in ui.configs.options if o.startswith("mxnet resnet50") and "fp32" in o)
    assert ui.updates == updates + 1 and ui.figure is not first
    assert [t.get_text() for t in ui.figure.axes[0].get_yticklabels()] == ["1 GPU · fp32 · bs96",
                                                                          "8 GPUs · fp32 · bs96"]

    ui.metric.value = "reported_throughput"
    assert ui.figure.axes[0].get_xlabel() == "reported throughput (images/s)"

    ui.kind.value = "scaling"
    assert [ax.get_title() for ax in ui.figure.axes] == ["Speedup", "Scaling efficiency"]
    measured = by_gid(ui.figure.axes[0], "measured")
    assert len(measured) == 1 and measured[0].get_ydata()[-1] == pytest.approx(2848.1 / 371.65)  # reported values

    ui.kind.value = "throughput over time"
    assert len(ui.figure.axes) == 2
    assert by_gid(ui.figure.axes[0], "rate")[0].get_ydata()[0] == pytest.approx(371.65)

    ui.configs.value = ()
    assert "no data" in texts(ui.figure)


def test_figure_to_png_and_repr():
    runs = make_runs(CONFIGS[:1], repeats=1)
    fig = plots.time_to_train(make_evaluations(runs, epochs=3), runs)
    png = plots.figure_to_png(fig, dpi=50)
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 2000
    assert isinstance(fig, plots.ReportFigure) and callable(fig._repr_png_)  # IPython shows it as a PNG


# ------------------------------------------------------------------ legends, labels, alt text (issue 20)


def _inside(fig: Figure, artist) -> bool:
    fig.canvas.draw()
    box, page = artist.get_window_extent(), fig.bbox
    return box.x0 >= page.x0 - 1 and box.x1 <= page.x1 + 1 and box.y0 >= page.y0 - 1 and box.y1 <= page.y1 + 1


@pytest.mark.parametrize("draw", [
    lambda runs: plots.throughput_over_time(make_iterations(runs.head(1)), runs.head(1)),
    lambda runs: plots.throughput_over_time(make_iterations(runs), runs),
    lambda runs: plots.scaling(metrics.aggregate(runs)),
])
def test_legends_stay_inside_the_figure(draw):
    """A legend placed outside a narrow figure was cut ("recomputed throughput of the ru")."""
    fig = draw(make_runs())
    legends = fig.legends + [ax.get_legend() for ax in fig.axes if ax.get_legend()]
    assert legends and all(_inside(fig, leg) for leg in legends)


def test_ratio_labels_keep_three_significant_digits_and_figures_have_alt_text():
    frame = pd.DataFrame({"gpus": [1, 8], "batch_size": [2, 2], "precision": ["fp32", "fp32"], "xla": [True, True],
                          "published": [5.3, 37.8], "measured": [5.2, 37.5]})
    frame["ratio"] = frame["measured"] / frame["published"]
    frame["verdict"] = ["reproduced", "reproduced"]
    fig = plots.comparison(frame, tolerance=0.05)
    assert "(5.20 / 5.30)" in texts(fig) and "(37.5 / 37.8)" in texts(fig)  # was (5 / 5), (38 / 38)
    assert _inside(fig, fig.axes[0].get_legend())
    page = fig._repr_html_()
    assert page.startswith('<img src="data:image/png;base64,') and 'alt="Measured vs published throughput' in page


def test_mask_rcnn_runs_say_samples_on_every_axis():
    runs = make_runs().assign(model="maskrcnn")
    fig = plots.throughput_over_time(make_iterations(runs), runs)
    assert "samples/s" in texts(fig) and "images/s" not in texts(fig)
    assert plots.rate_unit(make_runs()) == "images/s"


def test_the_figures_need_no_seaborn_nor_scipy():
    """Drawing a report's figures imports neither (1.3 s of every report's kernel, for a style and a palette)."""
    code = ("import sys, benchbook.reports.plots as p; import pandas as pd; "
            "p.repeats(pd.DataFrame({'gpus': [1, 1], 'precision': ['fp32'] * 2, 'batch_size': [8, 8], "
            "'recomputed_throughput': [10.0, 11.0], 'status': ['complete'] * 2}))._repr_png_(); "
            "print(sorted(m for m in ('seaborn', 'scipy') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_a_figure_is_drawn_once_for_its_png_and_its_html_and_again_once_changed(monkeypatch):
    from benchbook.reports import plot_base

    drawn = []
    real = plot_base.figure_to_png
    monkeypatch.setattr(plot_base, "figure_to_png", lambda fig, dpi=None: drawn.append(1) or real(fig, dpi))
    fig = plot_base.new_figure(3, 2)
    ax = fig.subplots()
    ax.plot([1, 2])
    png = fig._repr_png_()
    assert 'alt="' in fig._repr_html_() and fig._repr_png_() == png and len(drawn) == 1
    ax.set_title("changed")
    assert fig._repr_png_() != png and len(drawn) == 2
