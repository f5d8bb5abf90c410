"""A run's output (issue 26, item 2): copied at pipe speed whatever its line ends, with bounded memory;
`\\r` ends a line of the record's tail, and each kept line is cut with a note of its length."""

import importlib.util
import re
import sys
import threading
import time
from pathlib import Path

from benchbook.studies import failures
from benchbook.studies.commands import Command
from benchbook.studies.launchers import lines, process

ROOT = Path(__file__).resolve().parents[1]

# Writes MB megabytes of `\r` progress updates in 64 KiB writes (a fast progress bar), and the seconds it
# spent writing (blocked on the pipe when its reader is slow) as its last line.
UPDATE = " 42%|####2     | 420/1000 [00:10<00:14, 41.17it/s]"
FLOOD = """\
import os, sys, time
update = b"\\r{update}"
block = update * (65536 // len(update))
start = time.perf_counter()
for _ in range({mb} * 16):
    view = memoryview(block)
    while view:
        view = view[os.write(1, view):]
os.write(1, b"\\nwrote in %.3f s\\n" % (time.perf_counter() - start))
"""


def test_a_flood_of_carriage_returns_is_read_at_pipe_speed(tmp_path):
    """32 MB of `\\r` updates: 7 s of a blocked workload when each read re-split the open line (the time
    grew with the square of the flood); well under a second now, echo on."""
    shown = []
    end = process.execute(Command([sys.executable, "-c", FLOOD.format(mb=32, update=UPDATE)]), tmp_path / "x.log",
                          echo=shown.append)
    seconds = float(re.fullmatch(r"wrote in ([0-9.]+) s", end.tail[-1]).group(1))
    assert seconds < 2.0, seconds
    block = (65536 // (len(UPDATE) + 1)) * (len(UPDATE) + 1)
    assert (tmp_path / "x.log").stat().st_size == 32 * 16 * block + len(end.tail[-1]) + 2
    assert len(end.tail) == 50 and end.tail[-2] == UPDATE
    assert shown == [UPDATE, end.tail[-1]]  # the terminal shows the progress line once, as it stands at its end


def test_long_lines_are_cut_in_the_record(tmp_path):
    """A crash after three 3 MB lines: each kept line is its first 4 KiB and a note of its length (the
    record held all 9 MB)."""
    script = "import sys\nfor c in 'abc': sys.stdout.write(c * 3_000_000 + '\\r')\nsys.exit('RuntimeError: boom')"
    end = process.execute(Command([sys.executable, "-c", script]), tmp_path / "x.log")
    status, failure = failures.classify(end, [])
    assert failure["cause"] == "crash" and "RuntimeError: boom" in failure["detail"]
    assert failure["last_lines"] == [c * lines.MAX_LINE + " [benchbook: line cut, 3,000,000 bytes in all]"
                                     for c in "abc"] + ["RuntimeError: boom"]
    assert (tmp_path / "x.log").stat().st_size == 9_000_003 + len("RuntimeError: boom\n")


def test_every_line_end_counts_for_the_tail_whatever_the_reads():
    data = b"one\rtwo\r\nthree\n\nfour\r\rfive"
    for cut in range(1, len(data)):
        tail = lines.Tail(keep=5)
        tail.feed(data[:cut])
        buffer = bytearray(data[cut:]) + b"junk after the read"
        tail.feed(buffer, len(data) - cut)
        assert tail.finish() == ["three", "", "four", "", "five"], cut


def test_the_terminal_shows_each_line_as_it_ends():
    shown = lines.Lines()
    assert shown.feed(b"epoch 1\n 10%\r 50%\r") == ["epoch 1"]
    assert shown.feed(b"100%\r\nloss 0.5\r\n") == ["100%", "loss 0.5"]
    assert shown.feed(b"x" * 10_000) == [] and shown.finish() == ["[benchbook: line cut, 10,000 bytes in all] "
                                                                  + "x" * lines.MAX_LINE]


def test_a_slow_terminal_misses_lines_instead_of_slowing_the_run():
    busy, gate, shown = threading.Event(), threading.Event(), []

    def show(line):
        busy.set()
        gate.wait(10)
        shown.append(line)

    echo = lines.Echo(show)
    buffer = bytearray(b"line\n" * 1000)
    echo.offer(buffer, len(buffer))
    assert busy.wait(10)  # the terminal is stuck on the first line
    t0 = time.monotonic()
    for _ in range(lines.ECHO_QUEUE + 10):
        echo.offer(buffer, len(buffer))
    assert time.monotonic() - t0 < 1  # never waited for the terminal
    gate.set()
    echo.close()
    assert len(shown) == (1 + lines.ECHO_QUEUE) * 1000 + 1 and set(shown[:-1]) == {"line"}
    assert shown[-1] == "benchbook: 50,000 bytes of output not shown here (the log has them all)"


def test_the_flood_bench_measures_both_sides(capsys):
    spec = importlib.util.spec_from_file_location("bench_flood", ROOT / "bench" / "bench_flood.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    assert bench.main(["--megabytes", "2", "--pairs", "1"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^pair 1 \(piped first\): 2 MB of \\r updates written in [0-9.]+ s piped to cat, [0-9.]+ s "
                     r"under benchbook run, ratio [0-9.]+; run.json \d+ kB$", out, re.M), out
    assert re.search(r"^CPU time to copy 2 MB \(least of 1\): benchbook's reader [0-9.]+ s, cat [0-9.]+ s$", out, re.M)
    assert re.search(r"^fastest of 1: [0-9.]+ s piped to cat, [0-9.]+ s under benchbook run: piped/benchbook ratio "
                     r"[0-9.]+: ", out, re.M), out
