"""MLPerf Training across rounds (issue 37): list-valued accuracies, every benchmark's quality target and run
count read from the compliance rules mlperf-logging ships, the 30-minute setup limit, and the real result
folders of ../shared/mlperf-results scored as their expected.yaml says (skipped where ../shared is absent)."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import pytest

from benchbook.mlperf import mllog, results, rules
from test_mlperf_mllog import START_MS, mll_line, mllog_line, result_text, write
from test_mlperf_score import SYSTEM


def v06_mask_list(minutes: float, last=(0.381, 0.343), start: float = 1_558_421_526.0) -> str:
    """A v0.6 Google TPU Mask R-CNN result: eval_accuracy a list [BBOX, SEGM], epoch_num from 0."""
    out = [mll_line(0.0, "submission_benchmark", "mask"), mll_line(0.0, "submission_division", "closed"),
           mll_line(0.0, "submission_org", "google"), mll_line(start - 440, "init_start"),
           mll_line(start - 440, "global_batch_size", 128), mll_line(start - 1, "init_stop"),
           mll_line(start, "run_start")]
    end = start + minutes * 60
    for epoch, value in enumerate([[0.128, 0.134], [0.30, 0.28], list(last)]):
        out.append(mll_line(start + (end - start) * (epoch + 1) / 3 - 1, "eval_accuracy", value, epoch_num=epoch))
    out.append(mll_line(end, "run_stop", status="success"))
    return "".join(out)


def test_a_list_valued_accuracy_is_bbox_and_segm(tmp_path):
    run = mllog.read(write(tmp_path / "result_0.txt", v06_mask_list(100)))
    assert [(e.epoch, e.metric, e.value) for e in run.evaluations][-2:] == [(2, "BBOX", 0.381), (2, "SEGM", 0.343)]


def test_v06_google_mask_rcnn_scores_by_its_lists(tmp_path):
    folder = tmp_path / "training_results_v0.6" / "Google" / "results" / "tpu-v3-32" / "mask"
    for i, minutes in enumerate((100, 105, 107, 109, 120)):
        write(folder / f"result_{i}.txt", v06_mask_list(minutes, last=(0.376, 0.35) if i == 4 else (0.381, 0.343)))
    write(folder.parents[2] / "systems" / "tpu-v3-32.json", json.dumps(SYSTEM))
    (found,) = results.score([folder])
    assert found.benchmark == "maskrcnn" and found.valid and found.runs_failed == 1
    assert found.score_minutes == pytest.approx(107.0)  # 100 fastest, result_4 (BBOX 0.376 < 0.377) slowest
    assert "target BBOX >= 0.377 and SEGM >= 0.339 not reached" in found.run_details[4]["reason"]


def test_a_list_of_an_unknown_benchmark_is_named_by_position(tmp_path):
    text = mll_line(0.0, "submission_benchmark", "other") + mll_line(1.0, "run_start") + \
        mll_line(2.0, "eval_accuracy", [0.5, 0.6], epoch_num=1) + mll_line(3.0, "run_stop", status="success")
    run = mllog.read(write(tmp_path / "r.txt", text))
    assert [(e.metric, e.value) for e in run.evaluations] == [("accuracy[0]", 0.5), ("accuracy[1]", 0.6)]


def test_the_rules_data_is_what_mlperf_logging_ships():
    """params/references/mlperf/rules/training.yaml is generated from the installed mlperf-logging's files."""
    pytest.importorskip("mlperf_logging")
    from benchbook.mlperf import rulesdata

    assert rulesdata.DATA.read_text(encoding="utf-8") == rulesdata.text(*rulesdata._package())


@pytest.mark.parametrize(("check", "want"), [
    ("v['value'] >= 0.7590 and v['value'] < 1.0", [(None, [("accuracy", 0.759, True, 1.0, False)])]),
    ("(v['value'] <= 0.925) and v['value'] > 0.0", [(None, [("accuracy", 0.0, False, 0.925, True)])]),
    ("(0.0 <= v['value']['FID'] <= 90.0) and (0.15 <= v['value']['CLIP'] <= 1.0)",
     [(None, [("FID", 0.0, True, 90.0, True), ("CLIP", 0.15, True, 1.0, True)])]),
    ("(v['value'] >= 0.712 if s['global_batch_size'] < 8192 else v['value'] >= 0.706) and v['value'] < 1.0",
     [({"below": 8192}, [("accuracy", 0.712, True, 1.0, False)]),
      ({"at_least": 8192}, [("accuracy", 0.706, True, 1.0, False)])]),
])
def test_a_compliance_check_is_read_as_bounds(check, want):
    from benchbook.mlperf import rulesdata

    got = [(c["batch"], [(b["metric"], b.get("min"), b.get("min_inclusive"), b.get("max"), b.get("max_inclusive"))
                         for b in c["bounds"]]) for c in rulesdata.clauses(check)]
    assert got == want


@pytest.mark.parametrize("check", ["v['value'] >= s['target_accuracy']", "is_integer(v['value'])",
                                   "v['value'] in [0.5, 0.6]"])
def test_a_check_that_is_no_bound_is_not_made_one(check):
    from benchbook.mlperf import rulesdata

    with pytest.raises(rulesdata.NotBounds):
        rulesdata.clauses(check)


def _edge(bound, inside: bool) -> float:
    """A value just inside (or just outside) the bound the target turns on: the lower one where it is not 0."""
    lower = bound.min not in (None, 0)
    at, inclusive = (bound.min, bound.min_inclusive) if lower else (bound.max, bound.max_inclusive)
    inward, outward = (math.inf, -math.inf) if lower else (-math.inf, math.inf)
    if inside:
        return at if inclusive else math.nextafter(at, inward)
    return math.nextafter(at, outward) if inclusive else at


def _targets():
    found = rules.loaded().targets
    return [(r, b, batch) for r in sorted(found, key=lambda r: tuple(map(int, r.split("."))))
            if tuple(map(int, r.split("."))) <= (5, 0) for b, t in sorted(found[r].items())
            for batch in ([4096, 8192] if len(t.clauses) > 1 else [256])]


def _run_text(goal, minutes, reach: bool, batch: int, round_: str) -> str:
    start, out = START_MS, []
    for key, value in (("submission_benchmark", goal.benchmark), ("submission_division", "closed"),
                       ("submission_org", "Acme"), ("init_start", None), ("global_batch_size", batch)):
        out.append(mllog_line(start - 60_000, key, value))
    out.append(mllog_line(start, "run_start"))
    bounds = goal.bounds(batch)
    values = {b.metric: _edge(b, reach) for b in bounds}
    value = values["accuracy"] if list(values) == ["accuracy"] else values
    out.append(mllog_line(start + 30_000, goal.key, value, epoch_num=1, samples_count=1000))
    out.append(mllog_line(start + minutes * 60_000, "run_stop", status="success"))
    return "".join(out)


@pytest.mark.parametrize(("round_", "benchmark", "batch"), _targets())
def test_every_benchmarks_target_decides_its_runs(tmp_path, round_, benchmark, batch):
    """Per round and benchmark: runs that reach the target at its very edge converge, one just short of it
    does not, and the folder needs the runs the round's rule says."""
    goal = rules.target(benchmark, round_)
    need = rules.runs_required(benchmark, round_)
    folder = tmp_path / f"training_results_v{round_}" / "Acme" / "results" / "box8" / benchmark
    for i in range(need):
        write(folder / f"result_{i}.txt", _run_text(goal, 10 + i, reach=i != need - 1, batch=batch, round_=round_))
    (found,) = results.score([folder])
    assert found.runs == need and found.runs_failed == 1 and found.valid
    assert goal.source in found.run_details[-1]["reason"] and "not reached" in found.run_details[-1]["reason"]
    assert all(d["converged"] for d in found.run_details[:-1])


def _with_setup(minutes: float, setup: float, version: str, division: str = "closed") -> str:
    """A result file whose first init_start is `setup` minutes before its init_stop (and run_start)."""
    text = result_text(minutes, version=version, division=division).splitlines(keepends=True)
    v06 = version == "v0.6"
    scale = 1.0 if v06 else 1000.0
    init_stop = (START_MS / 1000.0 if v06 else START_MS) - 5 * scale  # where result_text logs it
    at = next(i for i, t in enumerate(text) if "init_start" in t)
    text[at] = (mll_line if v06 else mllog_line)(init_stop - setup * 60 * scale, "init_start")
    return "".join(text)


@pytest.mark.parametrize(("version", "division", "setup", "dropped"), [
    ("v5.0", "closed", 32.3, True), ("v5.0", "closed", 29.9, False), ("v5.0", "open", 200, False),
    ("v5.0", "open", 241, True), ("v1.0", "closed", 30.0, True), ("v0.7", "closed", 21, True),
    ("v0.7", "closed", 19, False), ("v0.6", "closed", 21, True)])
def test_a_setup_over_the_rounds_limit_drops_the_run(tmp_path, version, division, setup, dropped):
    folder = tmp_path / f"training_results_{version}" / "Acme" / "results" / "box8" / "resnet"
    for i, minutes in enumerate((10, 11, 12, 13, 14)):
        text = _with_setup(minutes, setup, version, division) if i == 2 else \
            result_text(minutes, version=version, division=division)
        write(folder / f"result_{i}.txt", text)
    (found,) = results.score([folder])
    assert found.valid and found.runs_failed == int(dropped)
    reason = found.run_details[2]["reason"]
    if dropped:
        assert reason.startswith(f"setup (the first init_start to init_stop) {setup:.2f} minutes, not under the "
                                 f"{division} division's") and "common.yaml:" in reason
        assert found.score_minutes == pytest.approx((11 + 13 + 14) / 3)  # 10 fastest, the dropped run slowest
    else:
        assert reason == "" and found.score_minutes == pytest.approx(12.0)


ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "mlperf-results"  # ../shared from the repository (or worktree) root


@pytest.mark.skipif(not (SHARED / "expected.yaml").is_file(), reason="../shared/mlperf-results is not here")
def test_the_seven_shared_folders_score_as_expected_and_stay_untouched(capsys):
    """tools/check_mlperf_results.py on ../shared: every folder found, scored as expected.yaml and the published
    scores say (v4.0's result_<id>_<N>.txt, v0.6's [BBOX, SEGM] lists, v5.0's setup over the limit), analyze
    agreeing, every file's hash the same after."""
    spec = importlib.util.spec_from_file_location("check_mlperf_results", ROOT / "tools" / "check_mlperf_results.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    assert tool.main([str(SHARED)]) == 0, capsys.readouterr().out
    assert capsys.readouterr().out.strip() == "7 of 7 result folders as expected"
