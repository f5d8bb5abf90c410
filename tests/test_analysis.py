"""`benchbook.analyze`: the tidy frames, and logs that are damaged, unfinished or not logs at all."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from benchbook import Analysis, Rule, analyze
from benchbook.logs.analysis import EVAL_COLUMNS, ITERATION_COLUMNS, RUN_COLUMNS

GOOD = "ngc_tf1/tf_gpu1_amp_bs256.log"
GOOD_RECOMPUTED = (1000.0 + 1120.0 + 900.0 + 1010.0 + 1250.0) / 5


def test_frames_have_the_documented_columns(fixtures):
    result = analyze([fixtures / "ngc_tf1" / "train_and_evaluate_gpu1_amp_bs256.log"])
    assert isinstance(result, Analysis)
    assert set(RUN_COLUMNS) <= set(result.runs.columns)
    assert list(result.iterations.columns) == list(ITERATION_COLUMNS)
    assert list(result.evaluations.columns) == list(EVAL_COLUMNS)
    assert result.rule == Rule()


def test_nothing_to_analyze_gives_empty_frames_with_the_columns():
    result = analyze([])
    assert result.runs.empty and result.iterations.empty and result.evaluations.empty
    assert set(RUN_COLUMNS) <= set(result.runs.columns)
    assert list(result.iterations.columns) == list(ITERATION_COLUMNS)
    assert result.problems == []


def test_folders_are_searched_recursively_in_sorted_order(fixtures):
    result = analyze([fixtures / "ngc_mxnet", fixtures / "ngc_maskrcnn"])
    assert result.problems == []
    names = [Path(s).name for s in result.runs["source"]]
    assert names == ["mxnet_dllogger_fp32_bs96.txt", "mxnet_dllogger_horovod_gpu8_amp_bs256.txt",
                     "mxnet_dllogger_horovod_two_nodes_amp_bs256.txt", "mxnet_dllogger_horovod_untagged_amp.txt",
                     "mxnet_gpu1_gpu4_amp_bs64.txt", "mxnet_gpu1_gpu4_amp_bs64.txt", "hook_running_mean_amp_bs2.txt",
                     "launch_command_at_end.txt", "tf_gpu1_fp32_bs2.txt"]
    assert result.runs["run"].tolist() == [0, 0, 0, 0, 0, 1, 0, 0, 0]
    # Iterations and evaluations name their run by source and index.
    keys = set(zip(result.iterations["source"], result.iterations["run"], strict=True))
    assert keys == set(zip(result.runs["source"], result.runs["run"], strict=True))


def test_crlf_line_ends_change_nothing(fixtures, tmp_path):
    path = tmp_path / "tf_gpu1_amp_bs256.log"
    path.write_bytes((fixtures / GOOD).read_bytes().replace(b"\n", b"\r\n"))
    result = analyze([path])
    run = result.runs.iloc[0]
    assert run["recomputed_throughput"] == pytest.approx(GOOD_RECOMPUTED)
    assert run["reported_throughput"] == 1055.5
    assert (run["line_start"], run["line_end"]) == (1, 14)
    assert run["status"] == "complete"
    assert list(run["warnings"]) == []
    assert result.iterations["line"].tolist() == list(range(5, 13))


def test_lone_cr_line_ends_change_nothing(fixtures, tmp_path):
    # An ASCII chunk is read as its own bytes, but for line ends that were CRs.
    path = tmp_path / "tf_gpu1_amp_bs256.log"
    path.write_bytes((fixtures / GOOD).read_bytes()[:-1].replace(b"\n", b"\r") + b"\n")
    result = analyze([path])
    run = result.runs.iloc[0]
    assert run["recomputed_throughput"] == pytest.approx(GOOD_RECOMPUTED)
    assert (run["line_start"], run["line_end"], run["status"]) == (1, 14, "complete")
    assert result.iterations["line"].tolist() == list(range(5, 13))


def test_bytes_that_are_not_utf8_warn_but_the_log_is_analyzed(fixtures, tmp_path):
    data = (fixtures / GOOD).read_bytes().replace(b"Starting Model Training...", b"Starting \xff\xfe Training...")
    path = tmp_path / "tf_gpu1_amp_bs256.log"
    path.write_bytes(data)
    result = analyze([path])
    assert result.problems == []
    run = result.runs.iloc[0]
    assert run["status"] == "complete"
    assert run["recomputed_throughput"] == pytest.approx(GOOD_RECOMPUTED)
    assert any("UTF-8" in w for w in run["warnings"])


def test_a_file_cut_mid_line_warns_and_is_incomplete(fixtures, tmp_path):
    data = (fixtures / GOOD).read_bytes()
    cut = data.index(b"(0, 7) total_i") + len(b"(0, 7) total_i")  # inside the last record
    path = tmp_path / "tf_gpu1_amp_bs256.log"
    path.write_bytes(data[:cut])
    result = analyze([path])
    assert result.problems == []
    run = result.runs.iloc[0]
    assert run["status"] == "incomplete"
    assert pd.isna(run["reported_throughput"])
    assert run["recomputed_throughput"] == pytest.approx((1000.0 + 1120.0 + 900.0 + 1010.0) / 4)
    assert run["line_end"] <= 12
    assert any("middle of a line" in w for w in run["warnings"])


def test_truncated_log_without_summary_is_incomplete(fixtures):
    run = analyze([fixtures / "robustness" / "truncated_no_summary.log"]).runs.iloc[0]
    assert run["status"] == "incomplete"
    assert pd.isna(run["failure"])
    assert pd.isna(run["reported_throughput"])
    assert run["recomputed_throughput"] == pytest.approx((400.0 + 390.0 + 410.0) / 3)
    assert (run["line_start"], run["line_end"]) == (1, 9)
    assert any("summary" in w for w in run["warnings"])


def test_out_of_memory_without_summary_is_failed_with_the_cause(fixtures):
    run = analyze([fixtures / "robustness" / "oom_no_summary.log"]).runs.iloc[0]
    assert run["status"] == "failed"
    assert "out of memory" in run["failure"]
    assert run["iterations"] == 0
    assert any("out of memory" in w and "line 5" in w for w in run["warnings"])


def test_traceback_without_summary_is_failed_with_the_cause(fixtures):
    run = analyze([fixtures / "robustness" / "traceback_no_summary.log"]).runs.iloc[0]
    assert run["status"] == "failed"
    assert "traceback" in run["failure"].lower()
    assert any("line 7" in w for w in run["warnings"])
    assert run["recomputed_throughput"] == pytest.approx(800.0)  # the one record past warmup_steps 1


def test_a_failure_mentioned_in_a_finished_run_does_not_fail_it(write_tf1_log, tmp_path):
    path = write_tf1_log("noisy.log", gpus=1, batch=64, amp=False, rates=[100.0, 300.0, 310.0], warmup=1)
    text = path.read_text().replace("Starting Model Training...",
                                    "Starting Model Training...\nW allocator: ran out of memory, retrying")
    path.write_text(text)
    run = analyze([path]).runs.iloc[0]
    assert run["status"] == "complete"
    assert pd.isna(run["failure"])
    assert not any(w.startswith("failed") for w in run["warnings"])


def _bad_folder(tmp_path, fixtures):
    folder = tmp_path / "logs"
    folder.mkdir()
    (folder / "good.log").write_bytes((fixtures / GOOD).read_bytes())
    (folder / "empty.log").write_bytes(b"")
    (folder / "binary.log").write_bytes(b"\x7fELF\x02\x01\x01\x00\x00\x00" * 20)
    (folder / "notes.log").write_bytes((fixtures / "robustness" / "no_known_format.log").read_bytes())
    (folder / "banner_only.log").write_text("[MaskRCNN] DEBUG   : nothing happened here\n")
    return folder


def test_bad_files_are_problems_and_good_files_are_still_analyzed(tmp_path, fixtures):
    folder = _bad_folder(tmp_path, fixtures)
    missing = tmp_path / "nowhere.log"
    result = analyze([folder, missing])

    assert result.runs["source"].tolist() == [str(folder / "good.log")]
    assert result.runs.iloc[0]["recomputed_throughput"] == pytest.approx(GOOD_RECOMPUTED)
    reasons = {p.source: p.reason for p in result.problems}
    assert set(reasons) == {str(folder / n) for n in ("empty.log", "binary.log", "notes.log", "banner_only.log")} | {
        str(missing)}
    assert "empty" in reasons[str(folder / "empty.log")]
    assert "binary" in reasons[str(folder / "binary.log")]
    assert "no known log format" in reasons[str(folder / "notes.log")]
    assert "ngc_tf2_maskrcnn" in reasons[str(folder / "banner_only.log")]
    assert "no such file" in reasons[str(missing)]


def test_a_forced_format_that_does_not_fit_is_a_problem(fixtures):
    result = analyze([fixtures / GOOD], log_format="ngc_tf2_maskrcnn")
    assert result.runs.empty
    [problem] = result.problems
    assert problem.source == str(fixtures / GOOD)
    assert "no run" in problem.reason


def test_a_log_larger_than_one_read_chunk_keeps_every_record_and_line(tmp_path):
    # ~9.6 MB: more than textio.CHUNK_BYTES (8 MiB), so records come from several chunks.
    n = 150_000
    head = ("DLL 2021-01-04 00:00:00.000000 - PARAMETER arch : resnet50  mode : training_benchmark  "
            "data_dir : /data  batch_size : 256  num_iter : 150000  iter_unit : batch  warmup_steps : 100  "
            "use_xla : True  use_dali : False  use_tf_amp : True \nNum GPUs 1\nPer-GPU Batch Size 256\n")
    body = []
    for i in range(n):
        h, rest = divmod(i * 0.25 + 10.0, 3600)
        m, s = divmod(rest, 60)
        body.append(f"DLL 2021-01-04 {int(h):02d}:{int(m):02d}:{s:09.6f} - (0, {i}) total_ips : {1000 + i % 7}.0 \n")
    tail = "Ending Model Training ...\nDLL 2021-01-04 12:00:00.000000 - () train_throughput : 1003.0 images/s \n"
    path = tmp_path / "long_run.log"
    path.write_text(head + "".join(body) + tail)
    assert path.stat().st_size > 8 << 20

    result = analyze([path])
    run = result.runs.iloc[0]
    assert run["status"] == "complete"
    assert run["iterations"] == n - 100
    rates = [1000 + i % 7 for i in range(100, n)]
    assert run["recomputed_throughput"] == pytest.approx(sum(rates) / len(rates))
    assert (run["line_start"], run["line_end"]) == (1, n + 5)
    it = result.iterations
    assert len(it) == n
    assert (it["line"].to_numpy() == it["iteration"].to_numpy() + 4).all()
    assert it["elapsed"].iloc[-1] == pytest.approx((n - 1) * 0.25 + 10.0)


def test_failures_are_told_apart_between_runs_of_one_file(fixtures, tmp_path):
    crashed = (fixtures / "robustness" / "traceback_no_summary.log").read_text()  # 10 lines
    good = (fixtures / GOOD).read_text()  # 14 lines
    oom = (fixtures / "robustness" / "oom_no_summary.log").read_text()  # 9 lines, allocator line 5
    path = tmp_path / "three_runs.log"
    path.write_text(crashed + good + oom)

    runs = analyze([path]).runs
    assert runs["line_start"].tolist() == [1, 11, 25]
    assert runs["status"].tolist() == ["failed", "complete", "failed"]
    assert "traceback" in runs.iloc[0]["failure"].lower()
    assert pd.isna(runs.iloc[1]["failure"])
    assert "out of memory" in runs.iloc[2]["failure"]
    assert any("line 29" in w for w in runs.iloc[2]["warnings"])
    assert runs.iloc[1]["recomputed_throughput"] == pytest.approx(GOOD_RECOMPUTED)


def test_folders_pass_over_earlier_attempts_and_hidden_files(copy_fixture, tmp_path):
    study = tmp_path / "runs" / "study"
    kept = copy_fixture(GOOD, "runs/study/r1/tf_gpu1_amp_bs256.log")
    copy_fixture(GOOD, "runs/study/r1/attempts/1/tf_gpu1_amp_bs256.log")  # kept by the runner, not a result
    copy_fixture(GOOD, "runs/study/r1/.tf_gpu1_amp_bs256.log.swp")
    copy_fixture(GOOD, "runs/study/.cache/tf_gpu1_amp_bs256.log")
    result = analyze([study])
    assert result.problems == []
    assert result.runs["source"].tolist() == [str(kept)]
    # A file named explicitly is analyzed wherever it is.
    attempt = study / "r1" / "attempts" / "1" / "tf_gpu1_amp_bs256.log"
    assert analyze([attempt]).runs["source"].tolist() == [str(attempt)]


def _steps_by_definition(steps, iteration, rank, run):
    """Record by record: as logged, else the gap to the previous record of the same rank in the same
    run (when positive and the iteration was logged), else the run's median gap (1 without any)."""
    import numpy as np

    gaps, medians = {}, {}
    for r in set(run.tolist()):
        previous, found = {}, []
        for j in np.flatnonzero(run == r).tolist():
            if rank[j] in previous and iteration[j] - iteration[previous[rank[j]]] > 0 and iteration[j] >= 0:
                gaps[j] = float(iteration[j] - iteration[previous[rank[j]]])
                found.append(gaps[j])
            previous[rank[j]] = j
        medians[r] = float(np.median(found)) if found else 1.0
    return np.array([s if s == s else gaps.get(j, medians[run[j]]) for j, s in enumerate(steps.tolist())])


def test_steps_are_gaps_to_the_same_rank_s_previous_record_else_the_run_s_median_gap():
    import numpy as np

    from benchbook.logs.rules import fill_steps

    rng = np.random.default_rng(5)
    for _ in range(300):
        sizes = rng.integers(0, 12, size=rng.integers(1, 6))
        n = int(sizes.sum())
        run = np.repeat(np.arange(len(sizes)), sizes)
        rank = rng.integers(-1, 3, n) if rng.random() < 0.5 else np.zeros(n, dtype=np.int64)  # one rank, mostly
        iteration = np.where(rng.random(n) < 0.1, -1, np.cumsum(rng.integers(0, 4, n)))
        steps = np.where(rng.random(n) < 0.3, rng.integers(1, 9, n).astype(float), np.nan)
        cols = {"steps": steps, "iteration": iteration, "rank": rank, "epoch": np.full(n, -1)}
        bounds = np.concatenate(([0], np.cumsum(sizes))).tolist()
        runs = zip(bounds, bounds[1:], strict=False)
        got = np.concatenate([fill_steps({k: v[a:b] for k, v in cols.items()}) for a, b in runs])
        assert np.array_equal(got, _steps_by_definition(steps, iteration, rank, run), equal_nan=True)


def test_a_whole_epoch_s_record_keeps_its_iterations_unknown():
    import numpy as np

    from benchbook.logs.rules import fill_steps

    # 20-iteration records of epoch 0, then the epoch's own record (DLLogger `Epoch: 0  train.ips`).
    cols = {"steps": np.full(4, np.nan), "iteration": np.array([19, 39, 59, -1]), "rank": np.zeros(4, dtype=np.int64),
            "epoch": np.array([0, 0, 0, 0])}
    got = fill_steps(cols)
    assert got[:3].tolist() == [20.0, 20.0, 20.0] and np.isnan(got[3])


def test_a_run_of_one_record_covers_one_iteration_unless_it_is_a_whole_epoch_s():
    import numpy as np

    from benchbook.logs.rules import fill_steps

    def one(iteration, epoch, steps=np.nan):
        return fill_steps({"steps": np.array([steps]), "iteration": np.array([iteration]),
                           "rank": np.array([0]), "epoch": np.array([epoch])}).tolist()

    assert one(7, 0) == [1.0] and one(-1, -1) == [1.0] and one(5, -1, steps=4.0) == [4.0]
    assert np.isnan(one(-1, 3)[0])  # a whole epoch's record: its iterations unknown


def test_listing_the_formats_reads_no_log():
    """`benchbook formats` loads the formats and their rules, not the reading stage (textio, archives:
    tarfile, zipfile...)."""
    import subprocess
    import sys

    code = ("import sys, io, contextlib\nfrom benchbook import cli\nwith contextlib.redirect_stdout(io.StringIO()):\n"
            "    cli.main(['formats'])\n"
            "print(sorted(m for m in ('benchbook.logs.textio', 'benchbook.logs.archives') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines()[-1] == "[]"


@pytest.mark.parametrize("argv", [["--help"], ["formats"], ["analyze", "--help"]])
def test_commands_that_analyze_nothing_start_without_pandas_or_the_report_stack(argv):
    """`benchbook --help` and `formats` import neither pandas nor matplotlib nor papermill: they
    are what makes a command take half a second to start."""
    import subprocess
    import sys

    code = ("import sys\nfrom benchbook import cli\ntry:\n    cli.main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in ('pandas', 'matplotlib', 'papermill', 'nbconvert') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, check=True).stdout
    assert out.splitlines()[-1] == "[]"
