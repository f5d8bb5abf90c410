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
