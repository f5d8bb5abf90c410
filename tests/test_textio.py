"""Reading logs in chunks of whole lines: line numbers, line ends, bytes that are not UTF-8, cut files."""

from __future__ import annotations

import pytest

from benchbook.logs.textio import Chunk, ReadStats, chunks, demux

LINES = [f"line {i} " + "x" * (i % 7) for i in range(1, 41)]


def _check_whole_lines(parts, expected_text):
    line = 1
    for part in parts:
        assert part.first_line == line
        assert part.text.endswith("\n")
        line += part.text.count("\n")
    assert "".join(p.text for p in parts) == expected_text


@pytest.mark.parametrize("size", [16, 33, 100, 1 << 20])
def test_chunks_are_whole_lines_numbered_from_1(tmp_path, size):
    text = "\n".join(LINES) + "\n"
    path = tmp_path / "plain.log"
    path.write_bytes(text.encode())
    stats = ReadStats()

    parts = list(chunks(path, stats, size=size))

    _check_whole_lines(parts, text)
    assert sum(len(p.ends) - 1 for p in parts) == 40
    assert stats.bytes == len(text.encode())
    assert not stats.invalid_utf8 and not stats.cut_last_line
    if size < len(text):
        assert len(parts) > 1


def test_a_line_longer_than_a_chunk_is_kept_whole(tmp_path):
    long = "y" * 500
    path = tmp_path / "long.log"
    path.write_bytes(f"a\n{long}\nb\n".encode())
    parts = list(chunks(path, size=64))
    _check_whole_lines(parts, f"a\n{long}\nb\n")
    assert any(long + "\n" in p.text for p in parts)


@pytest.mark.parametrize("width", [5_000, 20_000, 70_000])
def test_a_chunk_ends_at_its_last_newline_however_far_back_it_is(tmp_path, width):
    """The last newline of a chunk is looked for from its end a window at a time (4 KiB, then
    wider): lines longer than the window, or than the chunk, still come whole."""
    text = "".join(f"{i} " + "z" * (width * (i % 3 + 1) // 2) + "\nshort\nlines\n" for i in range(12))
    path = tmp_path / "wide.log"
    path.write_bytes(text.encode())
    parts = list(chunks(path, size=3 * width + 1))
    _check_whole_lines(parts, text)
    assert len(parts) > 1


def test_crlf_and_lone_cr_become_newlines(tmp_path):
    path = tmp_path / "crlf.log"
    path.write_bytes(b"one\r\ntwo\rthree\r\n")
    stats = ReadStats()
    assert "".join(p.text for p in chunks(path, stats, size=5)) == "one\ntwo\nthree\n"


def test_bytes_that_are_not_utf8_are_replaced_and_noted(tmp_path):
    path = tmp_path / "latin1.log"
    path.write_bytes("caf\u00e9 ok\n".encode("latin-1") + b"next \xff\xfe line\n")
    stats = ReadStats()
    text = "".join(p.text for p in chunks(path, stats))
    assert stats.invalid_utf8
    assert text.count("\n") == 2
    assert "\ufffd" in text and text.endswith("next \ufffd\ufffd line\n")


def test_a_file_cut_mid_line_is_noted_and_its_last_line_kept(tmp_path):
    path = tmp_path / "cut.log"
    path.write_bytes(b"first\nsecond\nthi")
    stats = ReadStats()
    parts = list(chunks(path, stats, size=4))
    assert stats.cut_last_line
    _check_whole_lines(parts, "first\nsecond\nthi\n")


def test_tagged_chunks_are_demultiplexed_and_their_tags_taken_out(tmp_path):
    text = "[1,1]<stdout>:b-par[1,0]<stdout>:a1\n[1,1]<stdout>:tial\n"
    path = tmp_path / "tagged.log"
    path.write_text(text)
    (chunk,) = chunks(path)
    assert (chunk.text, chunk.ranks.tolist()) == ("a1\nb-partial\n", [0, 1, -1])


def test_demultiplexing_does_not_depend_on_where_chunks_end(tmp_path):
    text = ("[1,0]<stdout>:a1\n"
            "[1,1]<stdout>:b-par[1,0]<stdout>:a2\n"
            "[1,1]<stdout>:tial\n"
            "[1,0]<stdout>:a3\n")
    path = tmp_path / "tagged.log"
    path.write_text(text)
    whole = Chunk.of(demux(text)[0])
    assert whole.text == "a1\na2\nb-partial\na3\n" and whole.ranks.tolist() == [0, 0, 1, 0, -1]
    for size in range(1, len(text) + 2):
        parts = list(chunks(path, size=size))
        assert "".join(p.text for p in parts) == whole.text, f"chunk size {size}"
        ranks = [r for p in parts for r in p.ranks[:-1].tolist()]  # (each chunk's last: after its last newline)
        assert ranks == whole.ranks[:-1].tolist(), f"chunk size {size}"


def test_a_nul_byte_inside_a_record_is_left_out_and_its_line_noted(tmp_path, fixtures):
    from benchbook import analyze

    lines = (fixtures / "ngc_tf1" / "tf_gpu1_amp_bs256.log").read_bytes().split(b"\n")
    at = next(i for i, line in enumerate(lines) if b"(0, 1) total_ips" in line)
    lines[at] = lines[at].replace(b"total_ips", b"\x00total_ips")
    filler = [b"# a line of the log %d" % i for i in range(600)]  # the NUL past the first 8 KiB
    path = tmp_path / "tf_gpu1_amp_bs256.log"
    path.write_bytes(b"\n".join(lines[:1] + filler + lines[1:]))
    stats = ReadStats()
    text = "".join(c.text for c in chunks(path, stats, size=4096))
    assert "\x00" not in text and "(0, 1) total_ips : 610.0" in text
    assert (stats.nul_bytes, stats.nul_lines) == (1, [at + 1 + len(filler)])

    run = analyze([path]).runs.iloc[0]
    assert run["iterations"] + run["warmup_records"] == 8  # no record lost
    (warning,) = [w for w in run["warnings"] if "NUL" in w]
    assert f"line {at + 1 + len(filler)}" in warning


def test_a_nul_tail_is_not_held_whole(tmp_path):
    import tracemalloc

    text = "".join(f"line {i}\n" for i in range(200))
    path = tmp_path / "crashed.log"
    with open(path, "wb") as f:
        f.write(text.encode())
        f.write(b"\x00" * (48 << 20))  # a zero-filled tail, no newline in it
    stats = ReadStats()
    tracemalloc.start()
    try:
        got = "".join(c.text for c in chunks(path, stats, size=1 << 20))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert got == text
    assert stats.nul_bytes == 48 << 20 and stats.nul_lines == [201]
    assert peak < 8 << 20, peak  # a few 1 MiB chunks, not the 48 MiB tail


def test_a_log_with_a_nul_tail_is_readable_and_a_file_whose_first_line_has_one_is_binary(tmp_path):
    from benchbook.errors import LogError
    from benchbook.logs.textio import chunks

    tail = tmp_path / "short.log"
    tail.write_bytes(b"DLL 2021-03-02 08:00:00.000000 - PARAMETER arch : resnet50\n" + b"\x00" * 100)
    assert "".join(c.text for c in chunks(tail)) == "DLL 2021-03-02 08:00:00.000000 - PARAMETER arch : resnet50\n\n"
    binary = tmp_path / "core"
    binary.write_bytes(b"\x7fELF\x02\x01\x01\x00\n" * 20)
    with pytest.raises(LogError, match="binary"):
        next(chunks(binary))
    empty = tmp_path / "empty.log"
    empty.write_bytes(b"")
    with pytest.raises(LogError, match="empty"):
        next(chunks(empty))
    with pytest.raises(LogError, match="cannot be read"):
        next(chunks(tmp_path / "missing.log"))


def test_an_archive_member_cut_short_keeps_its_lines_before_the_fault(tmp_path):
    import gzip
    import random

    from benchbook.errors import LogError
    from benchbook.logs import archives

    rng = random.Random(5)
    text = b"".join(b"line %d %f\n" % (i, rng.random()) for i in range(50000))
    whole = gzip.compress(text)
    path = tmp_path / "cut.log.gz"
    path.write_bytes(whole[: len(whole) // 2])
    member = archives.ArchivePath(archives.listing(path), "cut.log")
    stats = ReadStats()
    read = "".join(c.text for c in chunks(member, stats, size=1 << 16))
    assert 0 < len(read) < len(text) and text.decode().startswith(read[: read.rfind("\n", 0, -1) + 1])
    assert stats.fault.startswith("the archive is damaged (EOFError")
    assert stats.fault.endswith("the lines before are read, the rest of the member is not")
    path.write_bytes(whole[:5])  # nothing readable: an error, as for a file that is no log
    with pytest.raises(LogError, match="cut.log.gz!cut.log: the archive is damaged"):
        next(chunks(archives.ArchivePath(archives.listing(path), "cut.log")))
