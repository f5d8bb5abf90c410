"""The registry of log formats: names, lookup, detection from the head of a file."""

from __future__ import annotations

import pytest

from benchbook import parsers
from benchbook.errors import BenchbookError

NAMES = {"ngc_tf1_convnets", "ngc_mxnet_resnet50", "ngc_tf2_maskrcnn", "benchbook_cpu"}


def test_the_formats_are_registered():
    assert set(parsers.FORMATS) == NAMES
    for name, fmt in parsers.FORMATS.items():
        assert fmt.name == name
        assert fmt.method in ("mean", "median", "harmonic", "elapsed")
        assert fmt.warmup  # the default warm-up, in words, for `benchbook formats`


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

def _read(layout_, lines):
    import numpy as np

    from benchbook.parsers import layout
    from benchbook.ranks import codes

    text = "\n".join(lines) + "\n"
    points = codes(text)
    newlines = np.flatnonzero(points == 10)
    starts = np.concatenate(([0], newlines[:-1] + 1))
    return layout.read(layout_, text, points, newlines, starts)


def test_layout_numbers_are_read_exactly_as_float_reads_them():
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


def test_layout_reads_ints_stamps_and_sought_fields_and_rejects_other_lines():
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


def test_find_gives_every_occurrence_with_and_without_code_points():
    import numpy as np

    from benchbook.parsers.layout import find
    from benchbook.ranks import codes

    for text in ["xDLL aDLL DLL\nDLL", "no match here", "DLLDLL ü DLL ", "DLL DLL"]:
        want = [i for i in range(len(text)) if text.startswith("DLL ", i)]
        assert find(text, "DLL ").tolist() == want
        assert find(text, "DLL ", codes(text)).tolist() == want
        assert isinstance(find(text, "DLL "), np.ndarray)
