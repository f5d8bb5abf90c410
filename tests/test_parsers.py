"""The registry of log formats: names, lookup, detection from the head of a file."""

from __future__ import annotations

import pytest

from benchbook import parsers
from benchbook.errors import BenchbookError
from benchbook.rules import METHODS

NAMES = {"ngc_tf1_convnets", "ngc_mxnet_resnet50", "ngc_tf2_maskrcnn", "ngc_pytorch_convnets", "benchbook_cpu"}


def test_the_formats_are_registered():
    assert set(parsers.FORMATS) == NAMES
    for name, fmt in parsers.FORMATS.items():
        assert fmt.name == name
        assert fmt.method in METHODS
        assert fmt.warmup  # the default warm-up, in words, for `benchbook formats`
        for preset in fmt.rules().values():  # every named rule says whose arithmetic it is
            assert preset.method in METHODS
            assert "/" in preset.source, (name, preset.name)
            if name.startswith("ngc_"):  # a public script: repository, path and commit
                assert "@" in preset.source, (name, preset.name)


def test_every_format_has_the_nvidia_rule_first_and_unknown_rules_are_refused():
    for fmt in parsers.FORMATS.values():
        assert next(iter(fmt.rules())) == "nvidia"
        assert fmt.rule(None).name == "nvidia"
    assert set(parsers.get("ngc_tf1_convnets").rules()) == {"nvidia", "dlperf"}
    assert set(parsers.get("ngc_mxnet_resnet50").rules()) == {"nvidia", "dlperf"}
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


# Line layouts: the per-step lines read with numpy must read exactly what a regex and float() read.
# Fields of a few lines are read one line at a time instead; both ways are checked.

@pytest.fixture(params=["numpy", "per line"])
def reader(request, monkeypatch):
    from benchbook.parsers import layout

    monkeypatch.setattr(layout, "_FEW", 0 if request.param == "numpy" else 10**9)
    return request.param


def _read(layout_, lines):
    import numpy as np

    from benchbook.parsers import layout
    from benchbook.ranks import codes

    text = "\n".join(lines) + "\n"
    points = codes(text)
    newlines = np.flatnonzero(points == 10)
    starts = np.concatenate(([0], newlines[:-1] + 1))
    return layout.read(layout_, text, points, newlines, starts)


def test_layout_numbers_are_read_exactly_as_float_reads_them(reader):
    import math
    import random
    from decimal import Decimal

    from benchbook.parsers.layout import Layout, Num

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
    ok, fields, _ = _read(Layout("v ", Num("x"), " end"), [f"v {v} end" for v in values])
    assert ok.all()
    assert [float(v) for v in values] == fields["x"].tolist()


def test_layout_tokens_that_are_no_number_are_nan_and_long_ints_are_read_whole(reader):
    """`[0-9.eE+-]+` also matches `1.2.3`, `6+0` and `.`: float() refuses them. They are NaN,
    as the regex rules' `number` gives None; they used to raise and lose the whole log."""
    import math

    from benchbook.parsers.layout import Int, Layout, Num

    values = ["1.2.3", "6+0", ".", "-", "e5", "0", "0.", ".5", "7"]
    ok, fields, _ = _read(Layout("v ", Num("x"), " end"), [f"v {v} end" for v in values])
    assert ok.all()
    got = fields["x"].tolist()
    assert all(math.isnan(x) for x in got[:5])
    assert got[5:] == [0.0, 0.0, 0.5, 7.0]
    ints = ["0" * 30 + "42", "9" * 18, "1" + "0" * 18, "0" * 40]
    ok, fields, _ = _read(Layout("n ", Int("i"), ";"), [f"n {v};" for v in ints])
    assert ok.tolist() == [True, True, False, True]
    assert fields["i"][[0, 1, 3]].tolist() == [42, 10**18 - 1, 0]


def test_layout_numbers_of_many_digits_are_read_as_float_reads_them(reader):
    """More than 18 digits: leading zeros do not count (0.006041599999999999, a logged learning
    rate), digits past the 18th do, and so do runs longer than the window read at once."""
    import random

    from benchbook.parsers.layout import Layout, Num

    rng = random.Random(7)
    values = ["0.006041599999999999", "0.9999999999999999999", "0.0009999999999999999999", "0" * 20 + "1.5",
              "0." + "0" * 25 + "42", "0." + "0" * 30,
              "123456789.0123456789", "1" * 30, "0.1" + "0" * 30 + "1", "00.00"]
    for _ in range(300):
        digits = "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 20)))
        values.append("0." + "0" * rng.randint(0, 12) + digits)
        values.append("0" * rng.randint(0, 12) + digits + "." + digits[::-1])
    ok, fields, _ = _read(Layout("v ", Num("x"), " end"), [f"v {v} end" for v in values])
    assert ok.all()
    assert fields["x"].tolist() == [float(v) for v in values]


def test_layout_reads_ints_stamps_and_sought_fields_and_rejects_other_lines(reader):
    import math

    from benchbook.parsers.layout import Int, Layout, Num, Seek, Stamp

    lay = Layout(Stamp(), ":INFO: Epoch[", Int("epoch"), "] Speed: ", Num("rate"), Seek("LR: ", Num("lr")))
    lines = ["2020-12-11 03:13:49,587:INFO: Epoch[12] Speed: 633.5 samples/sec\tLR: 0.1",
             "2020-12-11 03:13:49.5:INFO: Epoch[0] Speed: 1e3 and then some LR: 2e-05",
             "2020-12-11 03:13:49:INFO: Epoch[7] Speed: 5 no rate",
             "2020-12-11 03:13:49,587:INFO: Epoch[x] Speed: 633.5",
             "2020-13-11 03:13:49,587:INFO: Epoch[1] Speed: 1.0",
             "2020-12-11 03:13:4,587:INFO: Epoch[1] Speed: 1.0",
             "short"]
    ok, f, _ = _read(lay, lines)
    assert ok.tolist() == [True, True, True, False, True, False, False]
    assert f["epoch"][:3].tolist() == [12, 0, 7]
    assert f["rate"][:3].tolist() == [633.5, 1000.0, 5.0]
    assert f["lr"][0] == 0.1 and f["lr"][1] == 2e-05 and math.isnan(f["lr"][2])
    assert f["timestamp"][:3].tolist() == [1607656429.587, 1607656429.5, 1607656429.0]
    assert math.isnan(f["timestamp"][4])  # the layout of a date-time, but no date


def test_stamps_are_read_as_numpy_reads_each_date_time_and_refused_without_their_digits():
    """`datetimes` counts days itself; numpy's datetime64, one stamp at a time, is the reference:
    leap years (1900, 2000), the ends of months, out-of-range hours, year 0, fractions of every
    length. A stamp needs its 14 digits (numpy would also take ` 020` or `-020` as years)."""
    import math
    import random

    import numpy as np

    from benchbook.parsers.layout import datetimes
    from benchbook.ranks import codes

    rng = random.Random(3)
    stamps = []
    for _ in range(3000):
        year = rng.choice(["2020", "2000", "1900", "2100", "0000", "9999", "1969", "1600", "2023"])
        month, day = f"{rng.randint(0, 13):02d}", f"{rng.randint(0, 32):02d}"
        if rng.random() < 0.5:
            month, day = rng.choice(["02", "04", "12", "01"]), f"{rng.randint(27, 31):02d}"
        clock = [rng.randint(0, 23), rng.randint(0, 59), rng.randint(0, 59)]
        if rng.random() < 0.1:
            clock = [rng.randint(0, 25), rng.randint(0, 61), rng.randint(0, 61)]
        fraction = rng.choice(["", ".5", ",123", ".123456", ".1234567", "." + "9" * 15, ","])
        stamps.append(f"{year}-{month}-{day} {clock[0]:02d}:{clock[1]:02d}:{clock[2]:02d}{fraction}")
    stamps += ["2020-12-11 03:13:49.25", " 020-12-11 00:00:00", "-020-12-11 00:00:00", "2020-12-11 0a:00:00"]
    text = "".join(f"v {s} end\n" for s in stamps)
    points = codes(text)
    starts = np.concatenate(([0], np.flatnonzero(points == 10)[:-1] + 1)) + 2
    seconds, layout, width = datetimes(points, starts)
    assert layout.tolist() == [True] * (len(stamps) - 3) + [False] * 3
    for stamp, got, size in zip(stamps[:-3], seconds[:-3].tolist(), width[:-3].tolist(), strict=True):
        head, _, fraction = stamp.replace(",", ".").partition(".")
        assert size == len(head) + (len(fraction) + 1 if fraction else 0)
        try:
            whole = int(np.datetime64(head.replace(" ", "T"), "s").astype(np.int64))
        except ValueError:
            assert math.isnan(got), stamp
            continue
        micros = int((fraction + "000000")[:6]) if fraction else 0
        assert got == (whole * 1_000_000 + micros) / 1e6, stamp
    assert seconds[-4] == 1607656429.25


def test_a_layout_reads_one_line():
    from benchbook.parsers.layout import Layout, Num, Seek

    with pytest.raises(ValueError, match="holds a newline"):
        Layout("v ", Num("x"), Seek("LR:\n", Num("lr")))


def test_find_gives_every_occurrence_with_and_without_code_points():
    import numpy as np

    from benchbook.parsers.layout import find
    from benchbook.ranks import codes

    for text in ["xDLL aDLL DLL\nDLL", "no match here", "DLLDLL ü DLL ", "DLL DLL"]:
        want = [i for i in range(len(text)) if text.startswith("DLL ", i)]
        assert find(text, "DLL ").tolist() == want
        assert find(text, "DLL ", codes(text)).tolist() == want
        assert isinstance(find(text, "DLL "), np.ndarray)


# Line rules: what numpy finds at the lines' starts is what a regex search finds.

def _events(events):
    """Events with their BULK columns as lists (NaN as None), comparable with ==."""
    def column(values):
        return [None if v != v else v for v in values.tolist()]

    return [(line, rank, kind, {k: column(v) for k, v in data.items()} if kind == "bulk" else data)
            for line, rank, kind, data in events]


def _maskrcnn_text(fixtures, tagged: bool, midline: bool) -> str:
    text = (fixtures / "ngc_maskrcnn" / "launch_command_at_end.txt").read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)  # tagged by mpirun
    if not tagged:
        lines = [line.removeprefix("[1,0]<stdout>:") for line in lines]
    if midline:  # the logger's prefix inside a line too: the line rules search the whole chunk
        lines.insert(3, "a note: [MaskRCNN] INFO    : Average throughput: 12.5 samples/sec\n")
    return "".join(lines)


@pytest.mark.parametrize("tagged", [False, True])
@pytest.mark.parametrize("midline", [False, True])
def test_line_rules_find_what_the_plain_rules_find(fixtures, tagged, midline):
    from benchbook.parsers import ngc_maskrcnn, scanning

    text = _maskrcnn_text(fixtures, tagged, midline)
    assert (scanning._Chunk(text, 1).opening(ngc_maskrcnn._RULES[0].prefix) is None) == midline  # the path taken
    plain = [(rule.pattern, rule.handler) for rule in ngc_maskrcnn._RULES]
    got = _events(scanning.scan(text, 1, ngc_maskrcnn._RULES, ngc_maskrcnn._BULK))
    assert got == _events(scanning.scan(text, 1, plain, ngc_maskrcnn._BULK))
    summaries = [e for e in got if e[2] == "summary" and "throughput" in e[3]]
    assert len(summaries) == (2 if midline else 1)
    assert any(e[2] == "trailer" for e in got) and any(e[2] == "run_start" for e in got)


def test_a_line_rule_of_a_newline_matches_the_lines_a_search_does():
    import re

    from benchbook.parsers import scanning

    pattern = re.compile(r"\n(mpirun [^\n]*)")
    text = "mpirun first line\nx\nmpirun -np 2 a.py\n[1,0]<stdout>:mpirun tagged\nmpirun again\n"
    rule = scanning.LineRule(pattern, lambda m: ("trailer", m.group(1)), heads=("mpirun ",))
    chunk = scanning._Chunk(text, 1)
    assert scanning._hits(chunk, [rule]) == scanning._hits(text, [(pattern, rule.handler)])
    assert [h[2] for h in scanning._hits(chunk, [rule])] == ["mpirun -np 2 a.py", "mpirun again"]


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


def test_a_long_leading_literal_is_found_by_str_find_with_what_finditer_finds():
    """`_literal_matches` stands in for finditer over the spans between records: same matches,
    overlapping occurrences skipped as finditer skips them, none across a span's end; None where
    the literal is short or too common."""
    import random
    import re

    from benchbook.parsers import scanning

    assert scanning._leading_literal(re.compile(r":INFO: Start with (\w+) x")) == ":INFO: Start with "
    assert scanning._leading_literal(re.compile(r"abc|abd")) == "ab"
    assert scanning._leading_literal(re.compile(r"\n(train\.[a-z]+)")) == "\ntrain."
    assert scanning._leading_literal(re.compile(r"(abc)+x|y")) == ""
    assert scanning._leading_literal(re.compile(r"abc", re.IGNORECASE)) == ""
    pattern = re.compile(r"Start with arguments ([a-z]*)(?:Start with arguments )?")
    rng = random.Random(2)
    for _ in range(300):
        text = "".join(rng.choice(["Start with arguments ", "abc", "\n", "Start with argu", "xy"])
                       for _ in range(rng.randint(0, 40)))
        cuts = sorted(rng.sample(range(len(text) + 1), min(len(text) + 1, 2 * rng.randint(1, 4))))
        spans = list(zip(cuts[::2], cuts[1::2], strict=False)) or [(0, len(text))]
        want = [m.span() for lo, hi in spans for m in pattern.finditer(text, lo, hi)]
        got = scanning._literal_matches(text, pattern, spans)
        assert got is not None and [m.span() for m in got] == want, (text, spans)
    assert scanning._literal_matches("DLL x", re.compile("DLL (x)"), [(0, 5)]) is None  # short
    common = "Start with arguments a\n" * 100
    assert scanning._literal_matches(common, pattern, [(0, len(common))]) is None
