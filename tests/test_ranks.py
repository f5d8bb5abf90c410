"""mpirun rank tags: pieces of several ranks' lines on one physical line, `--timestamp-output`."""

from __future__ import annotations

import statistics

import pytest

from benchbook import analyze
from benchbook.logs import textio
from benchbook.logs.textio import demux


def test_text_without_interleaved_tags_is_unchanged():
    text = "[1,0]<stdout>:a\n[1,1]<stdout>:b\nplain line\n"
    assert demux(text) == (text, {})


def test_a_line_cut_by_another_rank_is_completed_on_the_line_that_ends_it():
    text = ("[1,0]<stdout>:zero-1\n"
            "[1,1]<stdout>:one-par[1,0]<stdout>:zero-2\n"
            "[1,1]<stdout>:tial\n"
            "[1,0]<stdout>:zero-3\n")
    out, _ = demux(text)
    lines = out.split("\n")
    assert len(lines) == len(text.split("\n"))  # line numbers are kept
    assert lines[0] == "[1,0]<stdout>:zero-1"
    assert lines[1].endswith("zero-2") and "one" not in lines[1]
    assert lines[2].startswith("[1,1]<") and lines[2].endswith(":one-partial")
    assert lines[3] == "[1,0]<stdout>:zero-3"


def test_same_rank_tag_repeated_inside_a_line_is_removed():
    out, _ = demux("[1,3]<stderr>:[[1,3]<stderr>:03:16:39] conv[1,3]<stderr>:: tuning\n")
    assert out.endswith(":[03:16:39] conv: tuning\n")
    assert out.count("\n") == 1


def test_timestamp_output_prefix_is_part_of_the_tag():
    text = ("Fri Apr 02 10:41:27 2021[1,1]<stdout>:rate 19"
            "Fri Apr 02 10:41:27 2021[1,0]<stdout>:rate 1900.0\n"
            "Fri Apr 02 10:41:27 2021[1,1]<stdout>:02.0\n")
    out, _ = demux(text)
    lines = out.split("\n")
    assert len(lines) == 3
    assert lines[0].endswith(":rate 1900.0") and "Fri" not in lines[0].split("<stdout>:")[1]
    assert lines[1].endswith(":rate 1902.0")


def test_records_cut_across_rank_tags_are_parsed_on_their_physical_lines(fixtures):
    result = analyze([fixtures / "robustness" / "mpirun_ranks_cut_into_each_other.txt"])

    assert result.problems == []
    got = list(zip(result.iterations["rank"], result.iterations["line"], result.iterations["throughput"], strict=True))
    assert got == [(0, 3, 400.0), (1, 4, 400.5), (0, 5, 760.0), (1, 6, 762.0),
                   (0, 7, 780.0), (1, 8, 781.0), (0, 9, 790.0), (1, 11, 791.0)]
    run = result.runs.iloc[0]
    assert (run["gpus"], run["batch_size"], run["precision"]) == (2, 128, "fp32")
    # Rank 0's records from Batch [20-39] of epoch 0 to the end of epoch 1 (fit.py's durations[20:]).
    assert run["recomputed_throughput"] == pytest.approx(statistics.harmonic_mean([760.0, 780.0, 790.0]))
    assert run["status"] == "complete"
    assert (run["line_start"], run["line_end"]) == (1, 12)
    assert run["ranks"] == 2


def test_timestamp_output_tags_still_give_ranks_and_gpus(fixtures):
    result = analyze([fixtures / "robustness" / "timestamp_output_prefix.txt"])

    assert result.problems == []
    run = result.runs.iloc[0]
    # Horovod: one GPU per rank, and no GPU count anywhere but in the tags.
    assert (run["gpus"], run["batch_size"], run["global_batch_size"]) == (2, 96, 192)
    assert run["precision"] == "amp"
    # Epoch 0's only record is [0-19], left out of fit.py's durations: epoch 1's records remain.
    assert run["recomputed_throughput"] == pytest.approx(statistics.harmonic_mean([1900.0, 1940.0]))
    it = result.iterations
    assert sorted(it["rank"].unique().tolist()) == [0, 1]
    assert list(zip(it["rank"], it["line"], it["throughput"], strict=True))[2:4] == [(0, 5, 1900.0), (1, 6, 1902.0)]
    # Python logging's stamp (not the mpirun prefix) is the record's time: 10:41:25 is 4.9 s after 10:41:20,100.
    assert it["elapsed"].tolist()[0] == pytest.approx(4.9)


def test_a_cut_line_at_the_end_of_a_read_chunk_is_still_completed(tmp_path):
    args = ("amp=False, arch='resnetv15', batch_size=256, data_backend='dali-gpu', dtype='float32', "
            "gpus=[0, 1], kv_store='horovod', mode='train', num_epochs=2")
    head = "".join(f"[1,{r}]<stderr>:2021-04-02 09:00:00,000:INFO: Start with arguments Namespace({args})\n"
                   for r in (0, 1))
    batch = "2021-04-02 09:00:{:02d},000:INFO: Epoch[{}] Batch [0-19]\tSpeed: {} samples/sec\tLR: 0.1\t"
    records = "".join(f"[1,{r}]<stderr>:" + batch.format(10, 0, 400.0 + r) + "\n" for r in (0, 1))
    cut = ("[1,1]<stderr>:" + batch.format(20, 1, 7)[: -len(" samples/sec\tLR: 0.1\t")]
           + "[1,0]<stderr>:" + batch.format(20, 1, 780.0) + "\n")
    rest = ("[1,1]<stderr>:81.0 samples/sec\tLR: 0.1\t\n"
            "[1,0]<stderr>:2021-04-02 09:00:30,000:INFO: Experiment took: 30.0 sec\n")
    filler_line = "[1,0]<stderr>:2021-04-02 09:00:05,000:WARNING: DALI iterator padding the last batch\n"
    # Filler so that the cut line ends exactly at the end of the first read.
    room = textio.CHUNK_BYTES - len((head + records + cut).encode())
    filler = filler_line * (room // len(filler_line))
    filler += "[1,0]<stderr>:" + "." * (room - len(filler) - len("[1,0]<stderr>:") - 1) + "\n"
    text = head + filler + records + cut + rest
    assert len((head + filler + records + cut).encode()) == textio.CHUNK_BYTES
    path = tmp_path / "mxnet_cut_at_chunk_end.txt"
    path.write_text(text)
    cut_line = (head + filler + records).count("\n") + 1

    it = analyze([path]).iterations
    got = list(zip(it["rank"], it["line"], it["throughput"], strict=True))
    assert got[-2:] == [(0, cut_line, 780.0), (1, cut_line + 1, 781.0)]


def test_an_untagged_run_before_a_tagged_run_keeps_its_records(fixtures, tmp_path):
    lines = (fixtures / "ngc_mxnet" / "mxnet_gpu1_gpu4_amp_bs64.txt").read_text().splitlines()
    # The 1-GPU run (lines 1-10) launched without mpirun, the 4-GPU run under mpirun --tag-output.
    lines[:10] = [line.removeprefix("[1,0]<stderr>:") for line in lines[:10]]
    path = tmp_path / "mxnet_gpu1_gpu4_amp_bs64.txt"
    path.write_text("\n".join(lines) + "\n")

    result = analyze([path])
    runs = result.runs
    assert runs["gpus"].tolist() == [1, 4]
    assert runs["iterations"].tolist() == [5, 5]
    assert runs["recomputed_throughput"].tolist() == pytest.approx([
        statistics.harmonic_mean([580, 590, 600, 610, 650]), statistics.harmonic_mean([2200, 2300, 2350, 2400, 2450])])
    one = result.iterations[result.iterations["run"] == 0]
    assert one["line"].tolist() == [3, 4, 5, 7, 8, 9]
    assert one["rank"].tolist() == [-1] * 6


@pytest.mark.parametrize("opening, rank", [
    ("[1,3]<stdout>:", 3), ("[1,0]<stderr>:", 0), ("[12345,4096]<stddiag>:", 4096), ("[1,7][host2:123]<stdout>:", 7),
    ("Fri Apr 02 10:41:27 2021[1,11]<stdout>:", 11), ("[1,2]<stdin>:", -1), ("[1,]<stdout>:", -1),
    ("[1,3]<stdou", -1), ("[x,1]<stdout>:", -1), ("", -1), ("x[1,3]<stdout>:", -1),
])
def test_the_tag_that_opens_a_line_gives_its_rank_and_is_taken_out(opening, rank):
    chunk = textio.Chunk.of("first [1,9]<stdout>: line\n" + opening + "über body\n[1,5]<stdout>:last\n")
    assert chunk.ranks.tolist() == [-1, rank, 5, -1]  # (the empty text after the last newline: no tag)
    body = "über body" if rank >= 0 else opening + "über body"
    assert chunk.text == "first [1,9]<stdout>: line\n" + body + "\nlast\n"


def test_a_tagged_chunk_gives_the_rank_of_each_line():
    text = ("[1,0]<stdout>:a\n[1,3]<stderr>:b [1,4]<stdout>: c\nplain [1,2]<stdout>:\n\n"
            "[1,12]<stdout>:\n[1,3]<stdout>:[1,3]<stdout>:d")
    chunk = textio.Chunk.of(text, 7)
    assert chunk.text == "a\nb [1,4]<stdout>: c\nplain [1,2]<stdout>:\n\n\n[1,3]<stdout>:d"
    assert chunk.ranks.tolist() == [0, 3, -1, -1, 12, 3]
    assert chunk.first_line == 7
    untagged = textio.Chunk.of("a\nb\n")
    assert untagged.text == "a\nb\n" and untagged.ranks.tolist() == [-1, -1, -1]


def test_only_lines_with_a_second_tag_are_rewritten():
    text = "".join(f"[1,{r}]<stdout>:line {i} <stdin> <std\n" for i, r in enumerate([0, 1] * 50))
    assert demux(text) == (text, {})
    cut = text.replace("line 7 <stdin> <std\n", "line 7 [1,0]<stdout>:")
    out, _ = demux(cut)
    assert out != cut and out.count("\n") == cut.count("\n")


def test_demux_rewrites_a_text_exactly_when_a_line_holds_a_second_tag():
    import random

    from benchbook.logs.textio import _MULTI

    rng = random.Random(11)
    pieces = ["[1,0]<stdout>:", "[1,12]<stderr>:", "[12,3]<stdout>:", "x<stdout>:", "<std", "]<std", "\n",
              "abc", "[", "]", "<", "ü", "[a,b]<std", "<st", "\n[1,0]<stdout>:", "[1,2][host:7]<stdout>:"]
    for _ in range(3000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 30)))
        out, _ = demux(text)
        assert (out is not text) == bool(_MULTI.search(text)), text  # the text itself comes back unless rewritten
        assert out.count("\n") == text.count("\n")


def test_timestamp_output_without_tag_output_is_taken_out_its_rank_unknown():
    chunk = textio.Chunk.of("Thu Mar  4 10:00:05 2021<stdout>:a\nThu Mar 14 10:00:05 2021<stderr>:b\n"
                            "[1,2]<stdout>:c\nThu Mar  4 10:00:05 2021[1,3]<stdout>:d\n<stdout>:e\n")
    assert chunk.text == "a\nb\nc\nd\n<stdout>:e\n"  # a stream alone, without a timestamp or rank, is no tag
    assert chunk.ranks.tolist() == [-1, -1, 2, 3, -1, -1]


def test_a_log_under_timestamp_output_alone_is_read_through_its_format(fixtures):
    result = analyze([fixtures / "robustness" / "timestamp_output_without_tags.txt"])

    assert result.problems == []
    run = result.runs.iloc[0]
    assert run["format"] == "ngc_tf1_convnets"
    assert (run["gpus"], run["batch_size"], run["precision"]) == (1, 256, "amp")
    assert (run["iterations"], run["warmup_records"]) == (5, 3)  # warmup_steps 3
    assert run["recomputed_throughput"] == pytest.approx(1000.0)
    assert run["reported_throughput"] == 1000.0
    assert result.iterations["line"].tolist() == list(range(6, 14))  # the stderr line 5 holds no record
    assert result.iterations["rank"].tolist() == [-1] * 8
    assert list(run["warnings"]) == []


def test_rank_pieces_that_never_close_are_read_in_linear_time(tmp_path):
    # Issue 38 item 13: rank 0's partial line, never completed, was copied whole at every piece added
    # (1 MB 6.9 s, 2 MB 19 s, 10 MB past 120 s). Against the same bytes with the pieces on lines of their
    # own, read in the same test: quadratic is 16 times that at 4 MB and grows; linear about 3, at any size.
    import time

    def read_seconds(line: str) -> float:
        path = tmp_path / "ranks.log"
        path.write_text("".join(line.format(i) for i in range(40_000)))  # 3.4 MB
        start = time.perf_counter()
        list(textio.chunks(path))
        return time.perf_counter() - start

    pieces = read_seconds("[1,0]<stdout>:record {} total_ips : 991.5 [1,1]<stdout>:partial\n")
    apart = read_seconds("[1,0]<stdout>:record {} total_ips : 991.5 \n[1,1]<stdout>:partial\n")
    assert pieces < 8 * apart + 0.05, (pieces, apart)


def test_a_partial_line_carried_over_chunks_is_completed_whole():
    text = "".join(f"[1,1]<stdout>:piece{i} [1,0]<stdout>:line {i}\n" for i in range(50)) + "[1,1]<stdout>:end\n"
    out, left = demux(text)
    assert out.split("\n")[50] == "[1,1]<stdout>:" + "".join(f"piece{i} " for i in range(50)) + "end"
    cut = text.index("line 20\n") + 8
    _, carried = demux(text[:cut])
    assert carried == {1: "".join(f"piece{i} " for i in range(21))} and left == {}
    tail, _ = demux(text[cut:], carried)
    assert tail.split("\n")[-2] == out.split("\n")[50]
