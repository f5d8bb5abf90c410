"""The throughput rule: warm-up, window and method override each format's default; bad values refuse."""

from __future__ import annotations

import dataclasses
import statistics

import numpy as np
import pandas as pd
import pytest

from benchbook import Rule, analyze
from benchbook.errors import RuleError
from benchbook.logs import rules

# tf_gpu1_amp_bs256.log: 8 records of 1 GPU x 256 images, the format's warm-up is its first 3.
RATES = [120.0, 610.0, 870.0, 1000.0, 1120.0, 900.0, 1010.0, 1250.0]
STAMPS = [5.0, 6.0, 7.0, 7.25, 7.5, 7.75, 8.0, 8.25]  # seconds after 08:00:00
BATCH = 256


def _run(fixtures, rule):
    return analyze([fixtures / "ngc_tf1" / "tf_gpu1_amp_bs256.log"], rule)


def _harmonic(rates):
    return len(rates) / sum(1 / r for r in rates)


def _elapsed(first, last):
    return BATCH * (last - first) / (STAMPS[last] - STAMPS[first])


@pytest.mark.parametrize("rule, expected, used", [
    (Rule(), statistics.mean(RATES[3:]), 5),
    (Rule(method="mean"), statistics.mean(RATES[3:]), 5),
    (Rule(method="median"), statistics.median(RATES[3:]), 5),
    (Rule(method="harmonic"), _harmonic(RATES[3:]), 5),
    (Rule(method="elapsed"), _elapsed(3, 7), 5),
    (Rule(skip_records=0), statistics.mean(RATES), 8),
    (Rule(skip_records=6), statistics.mean(RATES[6:]), 2),
    (Rule(window=2), statistics.mean(RATES[3:5]), 2),
    (Rule(window=3), statistics.mean(RATES[3:6]), 3),
    (Rule(skip_records=1, window=4, method="median"), statistics.median(RATES[1:5]), 4),
    (Rule(skip_records=0, method="elapsed"), _elapsed(0, 7), 8),
    (Rule(skip_records=2, window=3, method="harmonic"), _harmonic(RATES[2:5]), 3),
])
def test_rule_overrides_the_default(fixtures, rule, expected, used):
    run = _run(fixtures, rule).runs.iloc[0]
    # Timestamps are seconds since 1970 (float ulp ~2e-7 s), so elapsed values agree to ~1e-7.
    assert run["recomputed_throughput"] == pytest.approx(expected, rel=1e-6)
    assert run["iterations"] == used
    assert run["reported_throughput"] == 1055.5  # the rule never changes what the script printed


def test_measured_records_are_the_ones_the_rule_used(fixtures):
    it = _run(fixtures, Rule(skip_records=1, window=4)).iterations
    assert it["measured"].tolist() == [False, True, True, True, True, False, False, False]
    assert it.loc[it["measured"], "throughput"].tolist() == RATES[1:5]


def test_records_after_the_window_are_not_warm_up(fixtures):
    result = _run(fixtures, Rule(window=2))
    assert result.iterations["warmup"].tolist() == [True] * 3 + [False] * 5
    assert result.runs.iloc[0]["warmup_records"] == 3


def test_rule_is_described_in_words(fixtures):
    default = _run(fixtures, Rule()).runs.iloc[0]["rule"]
    assert "warmup_steps" in default and "mean" in default
    custom = _run(fixtures, Rule(skip_records=2, window=4, method="median")).runs.iloc[0]["rule"]
    assert "2" in custom and "4" in custom and "median" in custom


def test_a_warm_up_longer_than_the_run_leaves_nothing_to_recompute(fixtures):
    run = _run(fixtures, Rule(skip_records=50)).runs.iloc[0]
    assert pd.isna(run["recomputed_throughput"])
    assert run["iterations"] == 0
    assert any("no record left" in w for w in run["warnings"])


def test_tolerance_decides_when_a_gap_to_the_reported_value_warns(fixtures):
    # Recomputed 1056.0 against reported 1055.5: a gap of 0.047%.
    quiet = _run(fixtures, Rule(tolerance=0.001)).runs.iloc[0]
    loud = _run(fixtures, Rule(tolerance=0.0001)).runs.iloc[0]
    assert not any("differs from the reported" in w for w in quiet["warnings"])
    assert any("differs from the reported" in w for w in loud["warnings"])


@pytest.mark.parametrize("kwargs, field", [
    ({"skip_records": -1}, "skip_records"),
    ({"warmup": 3}, "warmup"),  # the old name of skip_records is refused, not ignored
    ({"window": 0}, "window"),
    ({"method": "geometric"}, "method"),
    ({"tolerance": 0}, "tolerance"),
    ({"warmpu": 3}, "warmpu"),
])
def test_invalid_rule_values_are_refused_naming_the_field(kwargs, field):
    with pytest.raises((RuleError, TypeError)) as info:  # a misspelt field is a TypeError: the code's mistake
        Rule(**kwargs)
    assert field in str(info.value)


def test_rule_is_immutable():
    rule = Rule(skip_records=3)
    with pytest.raises(dataclasses.FrozenInstanceError):
        rule.skip_records = 5
    assert rule.skip_records == 3


def _one_run(rates, steps, stamps, method, batch):
    """What each method gives for one run's measured records, written out plainly."""
    if not rates:
        return None
    if method == "mean":
        return statistics.mean(rates)
    if method == "median":
        return statistics.median(rates)
    if method == "harmonic":
        pos = [(s, r) for s, r in zip(steps, rates, strict=True) if r > 0]
        return sum(s for s, _ in pos) / sum(s / r for s, r in pos) if pos else None
    if len(rates) < 2 or not batch or not stamps[-1] > stamps[0]:
        return None
    return batch * sum(steps[1:]) / (stamps[-1] - stamps[0])


@pytest.mark.parametrize("method", ["mean", "median", "harmonic", "elapsed"])
def test_a_run_s_value_is_its_definition(method):
    # Runs of 0 to 7 records, some not measured (warm-up, or no rate); some rates are not
    # positive, some batches unknown, one run logs the same time twice.
    rng = np.random.default_rng(7)
    sizes = [3, 0, 1, 6, 2, 5, 4, 1, 0, 2, 7]
    batches = [256, 256, np.nan, 128, 256, 0, 64, 64, 64, 32, 8]
    for r, (size, batch) in enumerate(zip(sizes, batches, strict=True)):
        rates = rng.uniform(-50, 1000, size).round(3)
        measured = rng.uniform(size=size) < 0.8
        rates[~measured & (rng.uniform(size=size) < 0.5)] = np.nan
        steps = rng.integers(1, 20, size).astype(float)
        stamps = np.full(size, 100.0) if r == 4 else np.cumsum(rng.uniform(0, 2, size))
        got = rules.value({"steps": steps, "timestamp": stamps}, rates, measured, method, batch)
        want = _one_run(rates[measured].tolist(), steps[measured].tolist(), stamps[measured].tolist(), method,
                        None if np.isnan(batch) else batch)
        if want is None:
            assert np.isnan(got), (r, got)
        else:
            assert got == pytest.approx(want, rel=1e-12), r


def test_a_run_reads_its_lowest_rank_s_records():
    columns = {"line": np.arange(5), "rank": np.array([2, 1, 2, 1, 3]), "epoch": np.array([0, 0, 1, 1, 1])}
    one = rules.Run(columns, {"warmup_steps": 15})
    assert one["epoch"].tolist() == [0, 1] and len(one) == 2 and one.meta["warmup_steps"] == 15
    assert one.on_all(np.array([False, True])).tolist() == [False, False, False, True, False]
    alone = rules.Run({"line": np.arange(2), "rank": np.array([-1, -1]), "epoch": np.array([4, 5])}, {})
    assert alone["epoch"] is not None and alone.own == slice(None)  # one rank: the columns as they are


def _tf1_log(path, rates, warmup_steps=20):
    """An NGC TF1 ConvNets benchmark log with one `total_ips` record a step."""
    lines = [f"DLL 2021-03-02 08:00:00.000000 - PARAMETER arch : resnet50  mode : training_benchmark  "
             f"batch_size : 128  num_iter : {len(rates)}  warmup_steps : {warmup_steps}  use_xla : False  "
             f"use_tf_amp : False  precision : fp32 ", "Num GPUs 1", "Per-GPU Batch Size 128"]
    for step, rate in enumerate(rates):
        lines.append(f"DLL 2021-03-02 08:{1 + step // 60:02d}:{step % 60:02d}.000000 - (0, {step}) "
                     f"total_ips : {rate!r} ")
    lines += ["Ending Model Training ...", "DLL 2021-03-02 09:00:00.000000 - () train_throughput : 400.0 images/s "]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_dlperf_tf1_rule_is_the_mean_of_100_rounded_rates_after_20_steps(tmp_path):
    # extract_tensorflow_logs.py: each logged imgs_per_sec rounded to 2 decimals (Python's round),
    # the mean of [warmup_batches - 20 : train_batches - 20] of a log that starts at step 20,
    # rounded to 2 (round() of numpy's float64: numpy's rounding).
    rates = [50.0 + 3.456789 * s + (0.005 if s % 2 else 0.0) for s in range(140)]
    path = _tf1_log(tmp_path / "tf_gpu1_fp32_bs128.txt", rates)
    run = analyze([path], Rule(name="dlperf")).runs.iloc[0]
    assert run["recomputed_throughput"] == round(np.mean([round(r, 2) for r in rates[20:120]]), 2)
    assert (run["iterations"], run["warmup_records"]) == (100, 20)
    assert run["rule"].startswith("dlperf: ") and "extract_tensorflow_logs.py@" in run["rule"]
    assert "rounded to 2 decimals" in run["rule"]
    # The default (nvidia) rule: the mean of every step from warmup_steps on, unrounded.
    run = analyze([path]).runs.iloc[0]
    assert run["recomputed_throughput"] == pytest.approx(statistics.mean(rates[20:]), rel=1e-12)
    assert run["rule"].startswith("nvidia: ") and "benchmark_hooks.py@" in run["rule"]
    # Each part of a named rule stays overridable.
    run = analyze([path], Rule(name="dlperf", skip_records=30, method="median")).runs.iloc[0]
    assert run["recomputed_throughput"] == round(np.median([round(r, 2) for r in rates[30:130]]), 2)


def test_an_unknown_rule_name_is_a_problem_naming_the_format_s_rules(fixtures):
    result = analyze([fixtures / "ngc_tf1" / "tf_gpu1_amp_bs256.log"], Rule(name="nvdia"))
    assert result.runs.empty
    (problem,) = result.problems
    assert "'nvdia'" in problem.reason and "dlperf, nvidia" in problem.reason


def _columns(epoch, iteration, rates, steps):
    return {"epoch": np.array(epoch), "iteration": np.array(iteration), "throughput": np.array(rates, dtype=float),
            "steps": np.array(steps, dtype=float), "timestamp": np.arange(len(rates), dtype=float),
            "line": np.arange(1, len(rates) + 1)}


def test_last_method_is_each_run_s_last_measured_record():
    cols = _columns([0] * 5, [5, 10, 15, 20, 25], [1.0, 2.0, 3.0, 4.0, 5.0], [5] * 5)
    assert rules.value(cols, cols["throughput"], np.array([True, True, False, True, False]), "last", np.nan) == 4.0
    assert np.isnan(rules.value(cols, cols["throughput"], np.zeros(5, dtype=bool), "last", np.nan))


def test_epochs_method_reads_whole_epoch_records_or_accumulates_the_others():
    # Records of whole epochs: the harmonic mean of the epochs after the run's first.
    whole = _columns([0, 1, 2], [-1, -1, -1], [800.0, 1000.0, 1200.0], [np.nan] * 3)
    out = rules.value(whole, whole["throughput"], np.array([False, True, True]), "epochs", np.nan)
    assert out == pytest.approx(statistics.harmonic_mean([1000.0, 1200.0]))
    # 20-iteration records: epoch e's rate is images over time from the first measured record on.
    cols = _columns([0, 0, 1, 1, 2], [20, 40, 20, 40, 20], [500.0, 600.0, 700.0, 800.0, 900.0], [20] * 5)
    measured = np.array([False, True, True, True, True])
    out = rules.value(cols, cols["throughput"], measured, "epochs", np.nan)
    epoch1, epoch2 = statistics.harmonic_mean([600, 700, 800]), statistics.harmonic_mean([600, 700, 800, 900])
    assert out == pytest.approx(statistics.harmonic_mean([epoch1, epoch2]))
    # A run of one epoch: that epoch.
    out = rules.value(cols, cols["throughput"], np.array([False, True, False, False, False]), "epochs", np.nan)
    assert out == pytest.approx(600.0)


def test_a_rule_chosen_in_a_notebook_is_the_one_the_cli_chooses(fixtures):
    """Every part the CLI sets (window and tolerance too) is a notebook parameter, checked by the same Rule."""
    from benchbook.logs import parsers
    from benchbook.reports.notebook_params import NotebookParameterError, check
    given = {"study": None, "log_dir": str(fixtures / "ngc_tf1"), "runs_dir": "runs"}
    parts = {"name": "dlperf", "skip_records": 2, "window": 4, "method": "median", "tolerance": 0.01}
    chosen = check(**given, **{"rule" if k == "name" else k: v for k, v in parts.items()}).throughput_rule()
    assert chosen == parsers.choose(**parts) == Rule(**parts)
    with pytest.raises(NotebookParameterError, match="window = 0: expected a whole number >= 1"):
        check(**given, window=0)


def test_a_resolved_rule_is_the_format_s_named_rule_with_the_user_s_parts_and_says_so():
    from benchbook.logs import parsers
    tf1 = parsers.get("ngc_tf1_convnets")
    applied = Rule(name="dlperf", window=4, method="median").resolve(tf1)
    assert (applied.name, applied.window, applied.method, applied.decimals) == ("dlperf", 4, "median", 2)
    assert applied.describe().startswith("dlperf: skip records before step 20, then use at most 4 records; median")
    skipped = Rule(skip_records=3).resolve(tf1)
    assert skipped.mark_warmup is None and skipped.skip == 3 and "skip the first 3 records" in skipped.describe()
    assert Rule(name="dlperf", window=4).describe() == "the dlperf rule, at most 4 records"
