"""The rule search (`logs/rule_search.py`) on NGC TF1 BERT logs written here in run_pretraining.py's line
shapes, whose published value is made by a known rule: the search finds that rule first, and says so with
the nearest where no rule of its space gives the value. Also the engine's tail and rank selections."""

from __future__ import annotations

import json
import statistics
from datetime import datetime, timedelta

import numpy as np
import pytest

from benchbook.cli import main
from benchbook.errors import RuleError
from benchbook.logs.explain import explain, logged_runs
from benchbook.logs.rule_search import _suffix_medians, digits, half_unit
from benchbook.logs.rules import Rule

HEAD = ["+ bash scripts/run_pretraining_lamb.sh 96 64 8 7.5e-4 5e-4 fp16 true {gpus} 2000 200 50 200 88 512 base",
        "INFO:tensorflow:  max_seq_length: 128", "INFO:tensorflow:  train_batch_size: 96",
        "INFO:tensorflow:  num_accumulation_steps: 88", "INFO:tensorflow:  amp: True",
        "INFO:tensorflow:***** Running training *****"]


def _rates(n: int, seed: int, centre: float = 1000.0) -> list[float]:
    return np.random.default_rng(seed).normal(centre, 40.0, n).round(3).tolist()


def write_log(path, rates_by_rank: list[list[float]], iterations: list[int] | None = None, gpus: int = 8):
    """A TF1 BERT log: the launch script's trace (its 8th argument the GPUs), rank 0's DLLogger step lines
    (`Iteration: N  throughput_train : X sequences/s`), 15 s a step; with several ranks the older release's
    `Rank : N` lines, of which the format reads rank 0's."""
    n = len(rates_by_rank[0])
    iterations = iterations or list(range(1, n + 1))
    start, lines = datetime(2020, 7, 1, 10, 0, 0), [HEAD[0].format(gpus=gpus), *HEAD[1:]]
    for k in range(n):
        for rank, rates in enumerate(rates_by_rank):
            stamp = (start + timedelta(seconds=15 * k, microseconds=rank)).strftime("%Y-%m-%d %H:%M:%S.%f")
            who = f"Rank : {rank}  " if len(rates_by_rank) > 1 else ""
            lines.append(f"DLL {stamp} - Iteration: {iterations[k]}  {who}throughput_train : {rates[k]} "
                         f"sequences/s mlm_loss : 10.4  nsp_loss : 0.69  total_loss : 11.0  avg_loss_step : 11.1  "
                         "learning_rate : 0.0  loss_scaler : 134217728 ")
    path.write_text("\n".join(lines) + "\n")
    return path


def _explained(path, printed: str):
    runs, problems = logged_runs([path])
    assert problems == [] and len(runs) == 1
    return explain(runs[0], printed)


def _analyze(path, *options: str, capsys) -> float:
    assert main(["analyze", str(path), "--json", *options]) == 0
    return json.loads(capsys.readouterr().out.splitlines()[0])["recomputed_throughput"]


def test_the_mean_of_the_last_20_records_is_found_first_and_the_cli_gives_it_again(tmp_path, capsys):
    rates = _rates(120, seed=1)
    log = write_log(tmp_path / "tf_bert.log", [rates])
    printed = f"{statistics.fmean(rates[-20:]):.4f}"

    cell = _explained(log, printed)

    best = cell.best()
    assert cell.verdict() == "found"
    assert best.rule.cli() == "--rule perf --tail 20"  # said as the last 20, not as a skip of 100
    assert best.reproduces and abs(best.value - float(printed)) <= 0.00005
    assert _analyze(log, "--rule", "perf", "--tail", "20", capsys=capsys) == best.value
    assert [c.reproduces for c in cell.found.named] == [False] * 4  # nvidia (no figure), perf, perf_from_3, steady


def test_every_rule_the_search_names_gives_its_value_again_through_the_analysis(tmp_path):
    from benchbook import analyze

    rates = _rates(50, seed=15)
    log = write_log(tmp_path / "tf_bert.log", [rates], [1, 1, 2] + list(range(3, 50)))
    cell = _explained(log, f"{statistics.fmean(rates[10:30]):.2f}")  # 2 decimals: several rules give it

    shown = [c for c in cell.found.candidates() if c.value is not None]
    assert len(cell.found.found) >= 3 and len(shown) >= 7
    for c in shown:
        got = analyze([log], rule=c.rule.rule()).runs["recomputed_throughput"].iloc[0]
        assert got == c.value, c.rule.cli()


def test_a_harmonic_mean_after_a_skip_is_found_first(tmp_path, capsys):
    rates = _rates(120, seed=2)
    log = write_log(tmp_path / "tf_bert.log", [rates])
    printed = f"{statistics.harmonic_mean(rates[25:]):.4f}"

    best = _explained(log, printed).best()

    assert best.rule.cli() == "--rule perf --skip-records 25 --method harmonic"
    assert _analyze(log, *best.rule.cli().split(), capsys=capsys) == best.value


def write_mxnet_log(path, rates_by_rank: list[list[float]], batch: int = 64):
    """An MXNet 19.07 log under `mpirun --tag-output`: each rank's `Start with arguments Namespace(...)` and its
    own `Epoch[0] Batch [a-b]  Speed: X samples/sec` lines (fit.py's Speedometer, every 20 batches)."""
    gpus = list(range(len(rates_by_rank)))
    args = (f"Namespace(amp=False, arch='resnetv15', batch_size={batch * len(gpus)}, data_backend='dali-gpu', "
            f"disp_batches=20, dtype='float16', gpus={gpus}, kv_store='horovod', mode='train', num_epochs=1)")
    lines = [f"[1,{r}]<stderr>:2021-04-01 10:00:00,{r:03d}:INFO: Start with arguments {args}" for r in gpus]
    start = datetime(2021, 4, 1, 10, 0, 5)
    for k in range(len(rates_by_rank[0])):
        stamp = (start + timedelta(seconds=2.2 * k)).strftime("%Y-%m-%d %H:%M:%S,%f")[:-3]
        for r in gpus:
            lines.append(f"[1,{r}]<stderr>:{stamp}:INFO: Epoch[0] Batch [{20 * k}-{20 * k + 19}]\tSpeed: "
                         f"{rates_by_rank[r][k]} samples/sec\tLR: 0.08\t")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_another_rank_s_own_records_are_found_and_the_cli_reads_that_rank(tmp_path, capsys):
    rank0, rank1 = _rates(60, seed=3), _rates(60, seed=4, centre=900.0)
    log = write_mxnet_log(tmp_path / "mxnet_gpu2_amp_bs64.txt", [rank0, rank1])
    printed = f"{statistics.fmean(rank1[10:]):.4f}"

    best = _explained(log, printed).best()

    assert best.rule.options() == {"name": "nvidia", "skip_records": 10, "rank": 1, "method": "mean"}
    assert "rank 1's records" in best.words
    assert _analyze(log, *best.rule.cli().split(), capsys=capsys) == best.value
    assert _analyze(log, "--rule", "nvidia", "--skip-records", "10", "--method", "mean", capsys=capsys) == \
        pytest.approx(statistics.fmean(rank0[10:]))  # the lowest rank's, without --rank


def test_the_loss_scaler_s_repeats_left_out_are_found_and_the_cli_leaves_them_out(tmp_path, capsys):
    rates = _rates(40, seed=14)
    iterations = [1, 1, 1, 2] + list(range(3, 39))  # 'Iteration: 1' three times: the loss scaler backs off twice
    log = write_log(tmp_path / "tf_bert.log", [rates], iterations)
    printed = f"{statistics.fmean(rates[2:]):.4f}"  # the last 'Iteration: 1' on: each iteration once

    best = _explained(log, printed).best()

    assert best.rule.cli() == "--rule perf --drop-repeats"
    assert "of the records of one iteration in a row, the last alone" in best.words
    assert _analyze(log, "--rule", "perf", "--drop-repeats", capsys=capsys) == best.value


def test_a_named_rule_that_gives_the_value_comes_first(tmp_path):
    rates = _rates(40, seed=5)
    iterations = [1, 1, 1, 2] + list(range(3, 39))  # the loss scaler's repeats of the first step
    log = write_log(tmp_path / "tf_bert.log", [rates], iterations)
    printed = f"{statistics.fmean(rates[4:]):.3f}"  # from the first 'Iteration: 3': perf_from_3

    cell = _explained(log, printed)

    first = cell.found.candidates()[0]
    assert (first.rule.cli(), first.rule.named, first.reproduces) == ("--rule perf_from_3", True, True)
    assert cell.verdict() == "named" and cell.found.nearest == []


def test_a_value_no_rule_gives_is_said_with_the_nearest_rules_and_each_named_rule_s_distance(tmp_path):
    rates = _rates(50, seed=6)
    log = write_log(tmp_path / "tf_bert.log", [rates])

    cell = _explained(log, "2000.00")

    assert cell.verdict() == "none" and cell.best() is None and not cell.found.reproduced
    perf = next(c for c in cell.found.named if c.rule.base == "perf")
    assert perf.relative_distance == pytest.approx(statistics.fmean(rates) / 2000 - 1)
    assert cell.found.nearest and all(not c.reproduces for c in cell.found.nearest)
    distances = [abs(c.relative_distance) for c in cell.found.nearest]
    assert min(distances) == pytest.approx((max(rates) - 2000) / -2000)  # the fastest record is the nearest
    assert cell.found.found_count == 0


def test_a_value_cut_to_the_printed_digits_reproduces_it_and_says_so(tmp_path):
    rates = _rates(40, seed=11)
    log = write_log(tmp_path / "tf_bert.log", [rates])
    mean = statistics.fmean(rates)  # 996.72755: cut to 996.72, rounded to 996.73
    assert (f"{int(mean * 100) / 100:.2f}", f"{mean:.2f}") == ("996.72", "996.73")

    truncated_cell, rounded_cell = _explained(log, "996.72"), _explained(log, "996.73")

    perf = next(c for c in truncated_cell.found.named if c.rule.base == "perf")
    assert (perf.reproduces, perf.digits) == (True, "truncated")
    assert next(c for c in rounded_cell.found.named if c.rule.base == "perf").digits == "rounded"
    assert digits(mean, 996.71, 0.005) is None and digits(mean, 996.74, 0.005) is None


def test_the_log_s_own_figure_is_a_candidate_where_it_reports_one(tmp_path):
    rates = _rates(30, seed=9)
    log = write_log(tmp_path / "tf_bert.log", [rates])
    log.write_text(log.read_text() + "DLL 2020-07-01 11:00:00.000000 -  throughput_train : 987.654 sequences/s\n")

    cell = _explained(log, "987.654")

    first = cell.found.candidates()[0]
    assert first.rule.cli() == "--rule nvidia"  # NVIDIA's rule reads the figure: a named rule first
    assert cell.found.reported.reproduces and cell.found.reported.value == 987.654


@pytest.mark.parametrize(("printed", "half"),
                         [("16142.9", 0.05), ("1412", 0.5), ("0.0342", 0.00005), ("3038.730", 0.0005)])
def test_the_printed_precision_is_half_a_unit_of_the_last_printed_digit(printed, half):
    assert half_unit(printed) == pytest.approx(half)


def test_a_published_value_that_is_no_number_is_refused_with_its_text():
    with pytest.raises(ValueError, match="'12,5'"):
        half_unit("12,5")


def test_the_median_of_every_suffix_is_numpy_s():
    rng = np.random.default_rng(7)
    for n in (1, 2, 3, 8, 41):
        for values in (rng.normal(size=n), rng.integers(0, 4, n).astype(float)):
            assert _suffix_medians(values).tolist() == [float(np.median(values[s:])) for s in range(n)]


def test_every_stretch_of_every_method_is_the_engine_s_value_over_its_records():
    """The prefix sums, one skip's windows at a time, against `rules.value` on each stretch's mask."""
    from benchbook.logs import rule_search
    from benchbook.logs.rules import value

    rng = np.random.default_rng(10)
    n = 9
    rates, steps = rng.uniform(500, 1500, n), rng.integers(1, 4, n).astype(float)
    stamps = np.cumsum(rng.uniform(0.5, 2.0, n))
    recs = rule_search._Records(None, None, False, rates, steps, stamps)
    cols = {"steps": steps, "timestamp": stamps}
    for method in rule_search.SEARCHED_METHODS:
        layout, got = rule_search._stretches(recs, method, 96.0)
        start, end = layout.locate(np.arange(len(got)))
        pairs = set(zip(start.tolist(), end.tolist(), strict=True))
        assert len(pairs) == len(got)  # each stretch once
        assert (0, n) in pairs and ((1, n - 1) in pairs) == (method in ("mean", "harmonic", "elapsed"))
        for i, (a, b) in enumerate(zip(start.tolist(), end.tolist(), strict=True)):
            mask = np.zeros(n, dtype=bool)
            mask[a:b] = True
            want = value(cols, rates, mask, method, 96.0)
            assert got[i] == pytest.approx(want, rel=1e-12, nan_ok=True), (method, a, b)


def test_a_tail_with_a_skip_and_a_negative_rank_are_refused_by_field():
    with pytest.raises(RuleError) as tail:
        Rule(tail=5, skip_records=2)
    with pytest.raises(RuleError) as rank:
        Rule(rank=-1)
    with pytest.raises(RuleError) as repeats:
        Rule(drop_repeats="yes")
    assert (tail.value.field, rank.value.field, repeats.value.field) == ("tail", "rank", "drop_repeats")
    assert "not with skip_records" in str(tail.value)
