"""mlperf.mllog: one result file read line by line, v0.6 (:::MLL, seconds) and v0.7 on (:::MLLOG, ms).

The helpers here write small result files modelled on the published ones (the other test_mlperf
modules import them): a launcher's text around the MLLOG lines, rank prefixes, every key the
reader keeps.
"""

from __future__ import annotations

import json

import pytest

from benchbook.errors import LogError
from benchbook.mlperf import mllog

START_MS = 1_600_000_000_000
# What mlperf-logging's training_0.7.0 and 1.0.0 closed rules ask of a ResNet run besides the common keys
# (closed_resnet.yaml, closed_resnet_sgd.yaml), so that its own scorer accepts these files.
HYPERPARAMETERS = {"resnet": (("opt_name", "sgd"), ("sgd_opt_base_learning_rate", 2.0),
                              ("sgd_opt_end_learning_rate", 0.0001), ("sgd_opt_learning_rate_decay_poly_power", 2),
                              ("sgd_opt_learning_rate_decay_steps", 100), ("sgd_opt_weight_decay", 0.0002),
                              ("sgd_opt_momentum", 0.9), ("model_bn_span", 32),
                              ("opt_learning_rate_warmup_epochs", 2), ("gradient_accumulation_steps", 1))}


def mllog_line(time_ms: float, key: str, value=None, prefix: str = "", **metadata) -> str:
    record = {"namespace": "", "time_ms": time_ms, "event_type": "POINT_IN_TIME", "key": key, "value": value,
              "metadata": {"file": "train.py", "lineno": 1, **metadata}}
    return f"{prefix}:::MLLOG {json.dumps(record)}\n"


def mll_line(seconds: float, key: str, value=None, prefix: str = "", **metadata) -> str:
    return f"{prefix}:::MLL {seconds:.3f} {key}: {json.dumps({'value': value, 'metadata': metadata})}\n"


def result_text(minutes: float, *, benchmark: str = "resnet", status: str = "success", accuracies=(0.5, 0.76),
                org: str = "Acme", version: str = "v0.7", prefix: str = "", batch: int = 256,
                start: float = START_MS, stop: bool = True, division: str = "closed") -> str:
    """A result file whose run lasts `minutes` (run_start to run_stop), with one evaluation per epoch."""
    v06 = version == "v0.6"
    scale = 1.0 if v06 else 1000.0  # the log's unit per second
    start = start / 1000.0 if v06 else start
    line = mll_line if v06 else mllog_line
    out = ["+ srun --ntasks=1 python train.py\n", "Beginning trial 1 of 1\n",
           line(start - 60 * scale, "submission_benchmark", benchmark, prefix),
           line(start - 60 * scale, "submission_org", org, prefix),
           line(start - 60 * scale, "submission_division", division, prefix),
           line(start - 60 * scale, "submission_platform", "1xWidget", prefix),
           line(start - 60 * scale, "submission_status", "onprem", prefix),
           line(start - 55 * scale, "cache_clear", True, prefix),
           line(start - 50 * scale, "init_start", None, prefix),
           line(start - 50 * scale + 1, "init_start", None, "[1] "),  # a second rank, a moment later
           line(start - 10 * scale, "global_batch_size", batch, prefix),
           *(line(start - 10 * scale, key, value, prefix) for key, value in HYPERPARAMETERS.get(benchmark, ())),
           line(start - 5 * scale, "init_stop", None, prefix),
           line(start, "run_start", None, prefix),
           line(start, "train_samples", 1281167, prefix),
           line(start, "eval_samples", 50000, prefix)]
    end = start + minutes * 60 * scale
    for epoch, accuracy in enumerate(accuracies, 1):
        began, when = [start + (end - start) * (epoch - done) / len(accuracies) for done in (1, 0)]
        if benchmark == "maskrcnn":
            value = {"BBOX": accuracy, "SEGM": accuracy * 0.9}
        else:
            value = accuracy
        out.append(line(began, "epoch_start", None, prefix, epoch_num=epoch))
        out.append(f"epoch {epoch} loss 1.{epoch}\n")
        out.append(line(when, "epoch_stop", None, prefix, epoch_num=epoch))
        out.append(line(when, "eval_start", None, prefix, epoch_num=epoch))
        out.append(line(when, "eval_stop", None, prefix, epoch_num=epoch))
        out.append(line(when, "eval_accuracy", value, prefix, epoch_num=epoch))
    if stop:
        out.append(line(end, "run_stop", None, prefix, status=status))
    out.append("ENDING TIMING RUN AT 2020-06-20 10:00:00 PM\n")
    return "".join(out)


def write(path, text: str):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_v07_run(tmp_path):
    run = mllog.read(write(tmp_path / "result_0.txt", result_text(30.5, prefix="[0] ")))
    assert run.unit == "ms" and run.status == "success" and run.succeeded
    assert run.minutes == pytest.approx(30.5)
    assert run.time_to_train == pytest.approx(30.5 * 60_000)
    assert run.init_seconds == pytest.approx(45.0)  # the first rank's init_start to init_stop
    assert run.global_batch_size == 256
    assert run.submission == {"benchmark": "resnet", "org": "Acme", "division": "closed", "platform": "1xWidget",
                              "status": "onprem"}
    assert [(e.epoch, e.metric, e.value) for e in run.evaluations] == [(1, "accuracy", 0.5), (2, "accuracy", 0.76)]
    assert run.problems == []


def test_v06_run_is_in_seconds(tmp_path):
    run = mllog.read(write(tmp_path / "result_0.txt", result_text(100.0, version="v0.6")))
    assert run.unit == "s"
    assert run.time_to_train == pytest.approx(6000.0)
    assert run.minutes == pytest.approx(100.0)


def test_maskrcnn_evaluations_give_bbox_and_segm(tmp_path):
    run = mllog.read(write(tmp_path / "r.txt", result_text(60, benchmark="maskrcnn", accuracies=(0.3, 0.38))))
    rows = [(e.epoch, e.metric, round(e.value, 4)) for e in run.evaluations]
    assert rows == [(1, "BBOX", 0.3), (1, "SEGM", 0.27), (2, "BBOX", 0.38), (2, "SEGM", 0.342)]


def test_v06_accuracy_nested_under_accuracy(tmp_path):
    text = mll_line(10.0, "run_start") + mll_line(
        20.0, "eval_accuracy", {"epoch": 3, "accuracy": {"BBOX": 0.38, "SEGM": 0.34}}) + mll_line(
        30.0, "run_stop", status="success")
    run = mllog.read(write(tmp_path / "r.txt", text))
    assert [(e.epoch, e.metric, e.value) for e in run.evaluations] == [(3, "BBOX", 0.38), (3, "SEGM", 0.34)]


def test_first_run_stop_ends_the_run(tmp_path):
    text = (mllog_line(0, "run_start") + mllog_line(60_000, "run_stop", status="success")
            + mllog_line(90_000, "eval_accuracy", 0.9, epoch_num=9) + mllog_line(120_000, "run_stop", status="x"))
    run = mllog.read(write(tmp_path / "r.txt", text))
    assert run.minutes == pytest.approx(1.0) and run.status == "success" and run.evaluations == []


def test_aborted_status_is_kept(tmp_path):
    run = mllog.read(write(tmp_path / "r.txt", result_text(10, status="aborted")))
    assert run.status == "aborted" and not run.succeeded


def test_two_rounds_forms_in_one_file_are_refused(tmp_path):
    path = write(tmp_path / "r.txt", "hello\n:::MLPv0.5.0 resnet 1541710862.123 (x.py:1) run_start\n"
                 + mllog_line(9, "run_stop", status="success"))
    with pytest.raises(LogError, match=r"r\.txt: line 3: mixes ':::MLPv0.5.0' and ':::MLLOG' lines"):
        mllog.read(path)


def test_bad_json_names_file_and_line(tmp_path):
    path = write(tmp_path / "r.txt", mllog_line(0, "run_start") + ':::MLLOG {"time_ms": 5, "key": \n'
                 + mllog_line(9, "run_stop", status="success"))
    with pytest.raises(LogError, match=r"r\.txt: line 2: the MLLOG JSON does not parse"):
        mllog.read(path)


def test_truncated_file_names_its_last_line(tmp_path):
    text = result_text(10)
    cut = text[: text.index("run_stop") + 5]  # mid-record, no newline: the copy stopped there
    path = write(tmp_path / "r.txt", cut)
    with pytest.raises(LogError, match=rf"line {cut.count(chr(10)) + 1}: the file is truncated"):
        mllog.read(path)


def test_run_without_run_stop_is_a_problem(tmp_path):
    text = result_text(10, stop=False)
    run_start = next(line for line in text.splitlines() if '"run_start"' in line)
    run = mllog.read(write(tmp_path / "r.txt", text))
    assert run.status is None and run.minutes is None
    line = text.splitlines().index(run_start) + 1
    assert len(run.problems) == 1 and f"no run_stop after run_start (line {line})" in run.problems[0]
    assert "r.txt" in run.problems[0]


def test_no_mllog_line_is_an_error(tmp_path):
    with pytest.raises(LogError, match="no MLLOG line"):
        mllog.read(write(tmp_path / "r.txt", "just text\n"))


def test_missing_file_is_an_error(tmp_path):
    with pytest.raises(LogError, match="cannot be read"):
        mllog.read(tmp_path / "absent.txt")


def test_mixed_versions_are_refused(tmp_path):
    with pytest.raises(LogError, match="line 2: mixes"):
        mllog.read(write(tmp_path / "r.txt", mllog_line(0, "run_start") + mll_line(1.0, "run_stop")))


def test_lines_with_an_mll_like_word_are_not_read(tmp_path):
    text = ":::MLLX not a record\n" + result_text(5)
    assert mllog.read(write(tmp_path / "r.txt", text)).minutes == pytest.approx(5)


def test_line_numbers_count_every_line_crlf_too(tmp_path):
    text = result_text(10).replace("\n", "\r\n")
    run = mllog.read(write(tmp_path / "r.txt", text))
    assert run.lines == text.count("\r\n")
    assert run.run_stop_line == next(i for i, line in enumerate(text.splitlines(), 1) if '"run_stop"' in line)


def test_records_nothing_reads_are_not_parsed_but_needed_ones_are(tmp_path):
    """A key nothing reads is told without parsing its JSON (speed); a needed key, a key nested before
    the record's own, or a line not closed on itself is parsed, and refused when it does not parse."""
    nested = ':::MLLOG {"metadata": {"key": "throughput"}, "time_ms": 60000, "key": "run_stop", "value": null}\n'
    text = mllog_line(0, "run_start") + ':::MLLOG {"time_ms": 5, "key": "throughput", "value": {oops}}\n' + nested
    run = mllog.read(write(tmp_path / "r.txt", text))
    assert run.run_stop == 60000 and run.minutes == 1.0
    for bad in (':::MLLOG {"time_ms": 5, "key": "throughput", "value": 1\n',
                ':::MLLOG {"time_ms": 5, "key": "eval_accuracy", "value": {oops}}\n',
                ':::MLL 5.0 throughput: {"value": 1\n'):
        head = mll_line(0, "run_start") if bad.startswith(":::MLL ") else mllog_line(0, "run_start")
        with pytest.raises(LogError, match=r"r\.txt: line 2: the MLLOG JSON does not parse"):
            mllog.read(write(tmp_path / "r.txt", head + bad))
