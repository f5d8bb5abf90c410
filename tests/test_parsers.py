"""The registry of log formats: names, lookup, detection from the head of a file."""

from __future__ import annotations

import pytest

from benchbook.errors import BenchbookError
from benchbook.logs import parsers
from benchbook.logs.rules import METHODS, Rule

NAMES = {"ngc_tf1_convnets", "ngc_mxnet_resnet50", "ngc_tf2_maskrcnn", "ngc_pytorch_convnets", "benchbook_cpu", "mllog",
         "ngc_bert_pytorch", "ngc_bert_tf1", "megatron_lm", "megatron_deepspeed",
         "primus", "nemo2", "torchtitan"}
# A format's default rule: NVIDIA's arithmetic (for Megatron and NeMo 2 dgxc-benchmarking's), MLPerf's time to train,
# torchtitan's own (its benchmarks' step-90 value).
DEFAULT_RULE = {"mllog": "mlperf", "torchtitan": "torchtitan"}


def test_the_formats_are_registered():
    assert set(parsers.FORMATS) == NAMES
    for name, fmt in parsers.FORMATS.items():
        assert fmt.name == name
        for preset in fmt.rules:  # every named rule says whose arithmetic it is
            assert preset.method in METHODS
            assert preset.warmup  # the warm-up, in words, for `benchbook formats`
            assert "/" in preset.source, (name, preset.name)
            if name.startswith("ngc_"):  # a public script: repository, path and commit
                assert "@" in preset.source, (name, preset.name)


def test_every_format_has_the_nvidia_rule_first_and_unknown_rules_are_refused():
    for fmt in parsers.FORMATS.values():
        assert fmt.rules[0].name == DEFAULT_RULE.get(fmt.name, "nvidia")  # MLLOG: time to train
        assert Rule().resolve(fmt) is fmt.rules[0]  # no part chosen: the format's default as it declares it
    assert [r.name for r in parsers.get("ngc_tf1_convnets").rules] == ["nvidia", "dlperf"]
    assert [r.name for r in parsers.get("ngc_mxnet_resnet50").rules] == ["nvidia", "dlperf"]
    with pytest.raises(BenchbookError, match="'dlperf'.*known: nvidia"):
        parsers.get("ngc_tf2_maskrcnn").rule("dlperf")


def test_get_returns_the_registered_format():
    assert parsers.get("ngc_tf2_maskrcnn") is parsers.FORMATS["ngc_tf2_maskrcnn"]


def test_get_an_unknown_name_lists_the_known_ones():
    with pytest.raises(BenchbookError) as info:
        parsers.get("ngc_pytorch_bert")
    assert isinstance(info.value, KeyError)
    message = str(info.value)
    assert "ngc_pytorch_bert" in message
    for name in NAMES:
        assert name in message


@pytest.mark.parametrize("fixture, expected", [
    ("ngc_tf1/tf_gpu1_amp_bs256.log", "ngc_tf1_convnets"),
    ("ngc_tf1/tf_gpu8_fp32_bs128_imgs_per_sec.log", "ngc_tf1_convnets"),
    ("ngc_mxnet/mxnet_gpu1_gpu4_amp_bs64.txt", "ngc_mxnet_resnet50"),
    ("ngc_mxnet/mxnet_dllogger_fp32_bs96.txt", "ngc_mxnet_resnet50"),
    ("ngc_maskrcnn/launch_command_at_end.txt", "ngc_tf2_maskrcnn"),
    ("robustness/timestamp_output_prefix.txt", "ngc_mxnet_resnet50"),
])
def test_detect_recognises_each_fixture(fixtures, fixture, expected):
    head = (fixtures / fixture).read_text(encoding="utf-8")
    fmt = parsers.detect(head)
    assert fmt is not None and fmt.name == expected


@pytest.mark.parametrize("head", ["", "Epoch 1/90\nloss: 6.912 - 412 img/s\n", "DLL is a library\n"])
def test_detect_returns_none_for_text_in_no_known_format(head):
    assert parsers.detect(head) is None


# Bulk patterns: numpy's conversions of their columns must read what float() and datetime read.

def _read(pattern, types, lines, lead=0):
    """(which lines are records, their fields) of a bulk rule over the lines, as `scan` reads them."""
    import numpy as np

    from benchbook.logs.parsers import scanning
    from benchbook.logs.textio import Chunk

    rule = scanning.BulkRule(pattern=pattern, types=types, lead=lead)
    events = scanning.scan(Chunk.of("\n".join(lines) + "\n"), [], rule)
    cols = [e[3].columns() for e in events if e[2] == "bulk"]
    fields = {name: np.concatenate([c[name] for c in cols]) if cols else np.zeros(0) for name in types}
    records = np.concatenate([c["line"] for c in cols]) if cols else np.zeros(0, dtype=int)
    return np.isin(np.arange(1, len(lines) + 1), records), fields


_STAMP = "[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}(?:[.,][0-9]+)?"
_NUM = r"v (?P<throughput>[0-9.eE+-]+) end"


def test_bulk_numbers_are_read_exactly_as_float_reads_them():
    import math
    import random
    from decimal import Decimal

    rng = random.Random(7)
    values = [repr(rng.uniform(0, 10000)) for _ in range(3000)]
    values += [repr(rng.uniform(0, 1) * 10 ** rng.randint(-9, 9)) for _ in range(3000)]
    values += ["".join(rng.choice("0123456789") for _ in range(rng.randint(1, 19))) for _ in range(1000)]
    values += ["1e-05", "2.5E+3", "-1.5", "+3", "0.0", "00012.5000", "7.", ".5", "1.5e3", "3.000000000000000000001"]
    for _ in range(2000):  # decimal strings on either side of the midpoint between two doubles
        x = rng.uniform(1, 10000)
        mid = f"{(Decimal(x) + Decimal(math.nextafter(x, math.inf))) / 2:.40f}"
        whole, frac = mid.split(".")
        size = 17 - len(whole)
        values += [f"{whole}.{frac[:size]}", f"{whole}.{frac[:size - 1]}{min(int(frac[size - 1]) + 1, 9)}"]
    ok, fields = _read(_NUM, {"throughput": "float"}, [f"v {v} end" for v in values])
    assert ok.all()
    assert [float(v) for v in values] == fields["throughput"].tolist()


def test_bulk_tokens_that_are_no_number_are_nan_and_long_ints_are_read_whole():
    """`[0-9.eE+-]+` also matches `1.2.3`, `6+0` and `.`: float() refuses them. They are NaN,
    as the regex rules' `number` gives None; they used to raise and lose the whole log."""
    import math

    from benchbook.logs.parsers.scanning import INT

    values = ["1.2.3", "6+0", ".", "-", "e5", "0", "0.", ".5", "7"]
    ok, fields = _read(_NUM, {"throughput": "float"}, [f"v {v} end" for v in values])
    assert ok.all()
    got = fields["throughput"].tolist()
    assert all(math.isnan(x) for x in got[:5])
    assert got[5:] == [0.0, 0.0, 0.5, 7.0]
    ints = ["0" * 30 + "42", "9" * 18, "1" + "0" * 18, "0" * 40, "9" * 40]  # INT: an int of 18 digits at most
    ok, fields = _read(rf"n (?P<iteration>{INT});", {"iteration": "int"}, [f"n {v};" for v in ints])
    assert ok.tolist() == [True, True, False, True, False]
    assert fields["iteration"].tolist() == [42, 10**18 - 1, 0]


def test_bulk_numbers_of_many_digits_are_read_as_float_reads_them():
    """More than 18 digits: leading zeros do not count (0.006041599999999999, a logged learning
    rate), digits past the 18th do."""
    import random

    rng = random.Random(7)
    values = ["0.006041599999999999", "0.9999999999999999999", "0.0009999999999999999999", "0" * 20 + "1.5",
              "0." + "0" * 25 + "42", "0." + "0" * 30,
              "123456789.0123456789", "1" * 30, "0.1" + "0" * 30 + "1", "00.00"]
    for _ in range(300):
        digits = "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 20)))
        values.append("0." + "0" * rng.randint(0, 12) + digits)
        values.append("0" * rng.randint(0, 12) + digits + "." + digits[::-1])
    ok, fields = _read(_NUM, {"throughput": "float"}, [f"v {v} end" for v in values])
    assert ok.all()
    assert fields["throughput"].tolist() == [float(v) for v in values]


def test_bulk_patterns_read_ints_stamps_and_sought_fields_and_reject_other_lines():
    import math

    from benchbook.logs.parsers import scanning

    pattern = (rf":INFO: Epoch\[(?<=(?P<timestamp>{scanning.DATE_TIME}[.,][0-9]{{3}}):INFO: Epoch\[)"
               rf"(?P<epoch>[0-9]+)\] Speed: (?P<throughput>{scanning.NUM})(?:[^\n]*?LR: (?P<lr>{scanning.NUM}))?")
    types = {"timestamp": "stamp", "epoch": "int", "throughput": "float", "lr": "float"}
    lines = ["2020-12-11 03:13:49,587:INFO: Epoch[12] Speed: 633.5 samples/sec\tLR: 0.1",
             "2020-12-11 03:13:49.500:INFO: Epoch[0] Speed: 1e3 and then some LR: 2e-05",
             "2020-12-11 03:13:49,000:INFO: Epoch[7] Speed: 5 no rate",
             "2020-12-11 03:13:49,587:INFO: Epoch[x] Speed: 633.5",
             "2020-13-11 03:13:49,587:INFO: Epoch[1] Speed: 1.0",
             "2020-12-11 03:13:4,587:INFO: Epoch[1] Speed: 1.0",
             "2020-12-11 03:13:49.5:INFO: Epoch[1] Speed: 1.0",
             "short"]
    ok, f = _read(pattern, types, lines, lead=23)
    assert ok.tolist() == [True, True, True, False, True, False, False, False]
    assert f["epoch"].tolist() == [12, 0, 7, 1]
    assert f["throughput"].tolist() == [633.5, 1000.0, 5.0, 1.0]
    assert f["lr"][0] == 0.1 and f["lr"][1] == 2e-05 and math.isnan(f["lr"][2])
    assert f["timestamp"][:3].tolist() == [1607656429.587, 1607656429.5, 1607656429.0]
    assert math.isnan(f["timestamp"][3])  # the pattern of a date-time, but no date


def test_stamps_are_read_as_datetime_reads_each_date_time_and_refused_without_their_digits():
    """Python's datetime is the reference: leap years (1900, 2000), the ends of months,
    out-of-range hours, fractions of every length (whole microseconds). A stamp needs its 14
    digits (numpy alone would also take ` 020` or `-020` as years)."""
    import math
    import random
    from datetime import UTC, datetime

    rng = random.Random(3)
    stamps = []
    for _ in range(3000):
        year = rng.choice(["2020", "2000", "1900", "2100", "9999", "1969", "1600", "2023"])
        month, day = f"{rng.randint(0, 13):02d}", f"{rng.randint(0, 32):02d}"
        if rng.random() < 0.5:
            month, day = rng.choice(["02", "04", "12", "01"]), f"{rng.randint(27, 31):02d}"
        clock = [rng.randint(0, 23), rng.randint(0, 59), rng.randint(0, 59)]
        if rng.random() < 0.1:
            clock = [rng.randint(0, 25), rng.randint(0, 61), rng.randint(0, 61)]
        fraction = rng.choice(["", ".5", ",123", ".123456", ".1234567", "." + "9" * 15])
        stamps.append(f"{year}-{month}-{day} {clock[0]:02d}:{clock[1]:02d}:{clock[2]:02d}{fraction}")
    ok, f = _read(r"v (?P<timestamp>" + _STAMP + ") end", {"timestamp": "stamp"}, [f"v {s} end" for s in stamps])
    assert ok.all()
    for stamp, got in zip(stamps, f["timestamp"].tolist(), strict=True):
        head, _, fraction = stamp.replace(",", ".").partition(".")
        try:
            whole = datetime.fromisoformat(head).replace(tzinfo=UTC).timestamp()
        except ValueError:
            assert math.isnan(got), stamp
            continue
        micros = int((fraction + "000000")[:6]) if fraction else 0
        assert got == (int(whole) * 1_000_000 + micros) / 1e6, stamp
    ok, _ = _read(r"v (?P<timestamp>" + _STAMP + ") end", {"timestamp": "stamp"},
                  ["v  020-12-11 00:00:00 end", "v -020-12-11 00:00:00 end", "v 2020-12-11 0a:00:00 end"])
    assert not ok.any()


def test_the_maskrcnn_rules_find_their_lines_wherever_the_logger_prefix_stands(fixtures):
    """Tagged or not, and with the logger's prefix inside a line too."""
    from benchbook.logs.parsers import ngc_maskrcnn, scanning
    from benchbook.logs.textio import Chunk

    fmt = ngc_maskrcnn.FORMAT
    for tagged in (False, True):
        for midline in (False, True):
            text = (fixtures / "ngc_maskrcnn" / "launch_command_at_end.txt").read_text(encoding="utf-8")
            lines = text.splitlines(keepends=True)  # tagged by mpirun
            if not tagged:
                lines = [line.removeprefix("[1,0]<stdout>:") for line in lines]
            if midline:
                lines.insert(3, "a note: [MaskRCNN] INFO    : Average throughput: 12.5 samples/sec\n")
            got = scanning.scan(Chunk.of("".join(lines)), fmt.patterns, fmt.bulk)
            summaries = [e for e in got if e[2] == "summary" and "throughput" in e[3]]
            assert len(summaries) == (2 if midline else 1)
            assert any(e[2] == "trailer" for e in got) and any(e[2] == "run_start" for e in got)
            assert {e[1] for e in got if e[2] == "bulk"} == {None}  # (a block's rank is in its columns)


def test_a_cpu_run_of_two_mpi_ranks_is_one_run_of_two_processes(fixtures):
    from benchbook import analyze

    result = analyze([fixtures / "benchbook_cpu" / "two_ranks_rank0_logs.log"])
    assert result.problems == [] and len(result.runs) == 1
    run = result.runs.iloc[0]
    assert (run["format"], run["processes"], run["batch_size"]) == ("benchbook_cpu", 2, 8)
    assert run["global_batch_size"] == 2 * run["batch_size"]
    assert (run["ranks"], run["status"], run["iterations"], run["warmup_records"]) == (1, "complete", 4, 2)
    assert run["recomputed_throughput"] == pytest.approx(16.0)
    assert run["elapsed_throughput"] == pytest.approx(16.0)  # 16 images a step, a step a second
    assert list(run["warnings"]) == []
    assert result.iterations["rank"].tolist() == [0] * 6


def test_a_cpu_run_that_does_not_log_its_processes_ran_one(fixtures, tmp_path):
    from benchbook import analyze

    text = (fixtures / "benchbook_cpu" / "two_ranks_rank0_logs.log").read_text(encoding="utf-8")
    path = tmp_path / "one_process.log"
    path.write_text(text.replace("processes : 2  ", ""), encoding="utf-8")
    run = analyze([path]).runs.iloc[0]
    assert (run["processes"], run["global_batch_size"]) == (1, run["batch_size"])


def test_an_ngc_run_has_a_process_per_gpu(fixtures):
    from benchbook import analyze

    runs = analyze([fixtures / "ngc_mxnet" / "mxnet_gpu1_gpu4_amp_bs64.txt"]).runs
    assert runs["processes"].tolist() == runs["gpus"].tolist() == [1, 4]


def test_cpu_step_lines_are_read_as_columns_and_those_with_values_that_are_no_plain_number_one_by_one(
        fixtures, tmp_path):
    from benchbook import analyze

    lines = (fixtures / "benchbook_cpu" / "two_ranks_rank0_logs.log").read_text(encoding="utf-8").splitlines()
    at = next(i for i, line in enumerate(lines) if "Iteration: 1 " in line)
    lines[at] = lines[at].replace(lines[at].split("train.loss : ")[1].split()[0], "nan")  # a loss that diverged
    path = tmp_path / "nan_loss.log"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    before = analyze([fixtures / "benchbook_cpu" / "two_ranks_rank0_logs.log"]).iterations
    after = analyze([path]).iterations
    assert after["throughput"].tolist() == before["throughput"].tolist()  # no record lost
    assert after["line"].tolist() == before["line"].tolist()
    loss = after["loss"].tolist()
    assert loss[1] != loss[1] and loss[0] == before["loss"].tolist()[0]  # NaN where the log says nan


# --- issue 35: formats found as models are, one precedence in one place ----------------------------

def test_every_module_of_the_parsers_package_but_the_shared_ones_registers_a_format():
    import pkgutil

    modules = {m.name for m in pkgutil.iter_modules(parsers.__path__)} - {"registry", "scanning", "dllogger"}
    assert sorted(modules) == sorted(fmt.sniff.__module__.rsplit(".", 1)[1] for fmt in parsers.FORMATS.values())


def test_one_precedence_places_every_format_and_decides_a_head_that_several_recognise():
    assert sorted(parsers.PRECEDENCE) == sorted(parsers.FORMATS)
    assert not any(hasattr(fmt, "priority") for fmt in parsers.FORMATS.values())
    # a TF1 head recognised by the PyTorch format too: the one first in PRECEDENCE
    head = ("DLL 2021-01-01 00:00:00.000000 - PARAMETER arch : resnet50  raport_file : r.json \n"
            "DLL 2021-01-01 00:00:01.000000 - (0, 1) total_ips : 900.0 \n")
    both = [name for name in parsers.PRECEDENCE if parsers.get(name).sniff(head)]
    assert both == ["ngc_pytorch_convnets", "ngc_tf1_convnets"]
    assert parsers.detect(head).name == both[0]


def test_a_format_that_precedence_does_not_place_is_refused_at_registration():
    from dataclasses import replace

    fake = replace(parsers.get("ngc_tf1_convnets"), name="fake_format")
    with pytest.raises(ValueError, match="'fake_format' is not placed in parsers/registry.py's PRECEDENCE"):
        parsers.register(fake)
    assert "fake_format" not in parsers.FORMATS
