"""A file that holds runs of several log formats (issue 38 item 6): refused, naming the formats and the
lines where they change, never read as fewer runs of the format its head tells."""

from __future__ import annotations

import pytest

from benchbook import analyze
from benchbook.logs import parsers

FIXTURES = ["ngc_tf1/tf_gpu1_amp_bs256.log", "ngc_mxnet/mxnet_gpu1_gpu4_amp_bs64.txt",
            "ngc_maskrcnn/tf_gpu1_fp32_bs2.txt", "ngc_pytorch/pytorch_gpu8_amp_bs256.txt",
            "benchbook_cpu/two_ranks_rank0_logs.log"]


def test_the_five_fixtures_concatenated_are_refused_naming_each_format_and_its_first_line(fixtures, tmp_path):
    texts = [(fixtures / name).read_text() for name in FIXTURES]
    path = tmp_path / "mixed.log"
    path.write_text("".join(texts))
    starts = [1 + sum(t.count("\n") for t in texts[:i]) for i in range(len(texts))]
    result = analyze([path])
    assert result.runs.empty
    (problem,) = result.problems
    named = ", ".join(f"{fmt} from line {line}" for fmt, line in zip(
        ["ngc_tf1_convnets", "ngc_mxnet_resnet50", "ngc_tf2_maskrcnn", "ngc_pytorch_convnets", "benchbook_cpu"],
        starts, strict=True))
    assert problem.source == str(path)
    assert problem.reason == (f"line 1: a run of another log format than benchbook_cpu, told by the file's head, "
                              f"begins here ({named}); refused, none of its runs read: split it into one file a format")


@pytest.mark.parametrize("first,second", [(0, 1), (1, 0), (3, 0), (0, 3), (2, 4), (4, 2)])
def test_two_formats_in_one_file_are_refused_at_the_line_where_the_second_begins(fixtures, tmp_path, first, second):
    a, b = ((fixtures / FIXTURES[i]).read_text() for i in (first, second))
    path = tmp_path / "two.log"
    path.write_text(a + b)
    result = analyze([path])
    assert result.runs.empty, result.runs[["format", "line_start"]]
    (problem,) = result.problems
    read_in = parsers.detect(a + b).name
    other_line = 1 if read_in != parsers.detect(a).name else a.count("\n") + 1
    assert problem.reason.startswith(f"line {other_line}: a run of another log format than {read_in}, ")


def test_each_fixture_alone_and_a_format_concatenated_with_itself_are_read_whole(fixtures, tmp_path):
    for name in FIXTURES:
        text = (fixtures / name).read_text()
        path = tmp_path / "same.log"
        path.write_text(text + text)
        single, double = analyze([fixtures / name]), analyze([path])
        assert not single.problems and not double.problems, (name, double.problems)
        assert len(double.runs) >= len(single.runs)


def test_a_format_forced_by_the_user_reads_the_file_as_it_says(fixtures, tmp_path):
    path = tmp_path / "two.log"
    path.write_text("".join((fixtures / name).read_text() for name in FIXTURES[:2]))
    result = analyze([path], log_format="ngc_tf1_convnets")
    assert not result.problems and list(result.runs["format"]) == ["ngc_tf1_convnets"]


def test_every_format_that_can_be_mixed_names_the_line_that_opens_its_runs():
    assert {f.name for f in parsers.FORMATS.values() if not f.opens} == {"mllog"}
