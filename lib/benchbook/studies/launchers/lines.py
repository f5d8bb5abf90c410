"""A run's output as lines, read at pipe speed whatever its line ends, with bounded memory.

The runner copies a run's output to its log as it comes, and keeps two views of it: the last lines
(the record's `last_lines`) and, unless `--quiet`, the lines shown on the terminal. Neither may
slow the run: a progress bar that ends its updates with `\\r` alone (tqdm, Keras) writes megabytes
without a `\\n`, and the run blocks as soon as the pipe is full. So the last lines are found from
the end of each read (a few searches in C, however many lines it holds), a kept line is cut at
`MAX_LINE` bytes with a note of its full length, and the terminal is fed by a thread of its own
through a bounded queue: when it cannot keep up, what it misses is counted and said, never waited
for (the log has every byte).
"""

from __future__ import annotations

import collections
import queue
import threading
from collections.abc import Callable

MAX_LINE = 4096  # bytes of one line kept in the tail or shown; the rest is counted
TAIL = 50  # lines kept for the record
ECHO_QUEUE = 16  # reads waiting for the terminal (a read is at most a pipe's size, 1 MiB)


def _cut(text: bytes | bytearray, total: int) -> str:
    return text.decode("utf-8", "replace") + (f" [benchbook: line cut, {total:,} bytes in all]"
                                              if total > len(text) else "")


class Tail:
    """The last `keep` lines of a byte stream, each cut at MAX_LINE bytes (its start is kept: where
    an error names itself); `\\n`, `\\r\\n` and `\\r` alone each end a line."""

    def __init__(self, keep: int = TAIL):
        self.lines: collections.deque[str] = collections.deque(maxlen=keep)
        self._head = b""  # the first MAX_LINE bytes of the line not ended yet
        self._length = 0  # its length so far
        self._after_cr = False  # the last read ended with `\r`: a `\n` first in the next one ends no line

    def feed(self, data: bytes | bytearray, size: int | None = None) -> None:
        """Read `data[:size]` (the whole of it by default): a reader's buffer is used as it is."""
        hi = len(data) if size is None else size
        lo = 1 if self._after_cr and data[:1] == b"\n" else 0  # the `\n` of a `\r\n` cut by the reads
        if hi <= lo:
            self._after_cr = self._after_cr and hi == 0
            return
        self._after_cr = data[hi - 1] == 0x0D
        last_n, last_r = data.rfind(b"\n", lo, hi), data.rfind(b"\r", lo, hi)
        end = max(last_n, last_r)  # the last line end of the read
        rest = max(end + 1, lo)  # where the line it leaves open begins
        found = []  # newest first, at most `keep`: the lines before them are never looked at
        while end >= lo and len(found) < self.lines.maxlen:
            stop = end - 1 if data[end] == 0x0A and end > lo and data[end - 1] == 0x0D else end
            if last_n >= stop:  # search again only when the known `\n` is not before this line
                last_n = data.rfind(b"\n", lo, stop)
            if last_r >= stop:
                last_r = data.rfind(b"\r", lo, stop)
            start = max(last_n, last_r, lo - 1) + 1
            if start == lo:  # the line began in an earlier read
                self._grow(data, lo, stop)
                found.append(_cut(self._head, self._length))
                break
            found.append(_cut(data[start:min(stop, start + MAX_LINE)], stop - start))
            end = start - 1
        self.lines.extend(reversed(found))
        if found:
            self._head, self._length = b"", 0
        self._grow(data, rest, hi)

    def _grow(self, data: bytes | bytearray, lo: int, hi: int) -> None:
        """The open line goes on with `data[lo:hi]`: its first MAX_LINE bytes are kept, the rest counted."""
        if len(self._head) < MAX_LINE:
            self._head += bytes(data[lo:min(hi, lo + MAX_LINE - len(self._head))])
        self._length += hi - lo

    def finish(self) -> list[str]:
        """The lines kept, the one left open at the end included."""
        if self._length:
            self.lines.append(_cut(self._head, self._length))
            self._head, self._length = b"", 0
        return list(self.lines)


class Lines:
    """Complete `\\n` lines of a byte stream as a terminal shows them: a line that a progress bar
    rewrote with `\\r` shows its last state; a line is cut to its last MAX_LINE bytes."""

    def __init__(self):
        self._end = b""  # the last MAX_LINE bytes of the line not ended yet
        self._length = 0

    def feed(self, data: bytes, before: int = 0) -> list[str]:
        """The lines `data` completes; `before`: bytes of the open line left out before it (its
        middle, not needed to show its end)."""
        self._length += before
        if b"\n" not in data:  # progress updates alone: only the line's end is kept, nothing split
            self._end = (self._end + data[-MAX_LINE:])[-MAX_LINE:]
            self._length += len(data)
            return []
        pieces = data.split(b"\n")
        rest = pieces.pop()
        out = []
        for i, piece in enumerate(pieces):
            if i == 0:
                piece, length = (self._end + piece)[-MAX_LINE:], self._length + len(piece)
            else:
                length = len(piece)
            out.append(self._shown(piece[-MAX_LINE:], length))
        if pieces:
            self._end, self._length = b"", 0
        self._end = (self._end + rest)[-MAX_LINE:]
        self._length += len(rest)
        return out

    def skip(self) -> None:
        """Output was missed: the line under way is not whole."""
        self._end, self._length = b"", 0

    def finish(self) -> list[str]:
        line = [self._shown(self._end, self._length)] if self._length else []
        self._end, self._length = b"", 0
        return line

    @staticmethod
    def _shown(end: bytes, length: int) -> str:
        body = end.rstrip(b"\r")
        last = body.rfind(b"\r")  # a progress bar's last state starts after it, whole
        text = body[last + 1:].decode("utf-8", "replace")
        return f"[benchbook: line cut, {length:,} bytes in all] {text}" if last < 0 and length > len(end) else text


class Echo:
    """Shows a run's lines from a thread of its own, so that a slow terminal never slows the run:
    reads wait in a queue of ECHO_QUEUE; beyond it they are counted and a line says how much."""

    def __init__(self, show: Callable[[str], None]):
        self._show = show
        self._queue: queue.Queue[tuple[int, bytes] | int | None] = queue.Queue(maxsize=ECHO_QUEUE)
        self._missed = 0  # bytes not handed over yet (the reading thread's alone, as the next two)
        self._open, self._skipped = b"", 0  # the end of a line left open by the reads, and its bytes before
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def offer(self, buffer: bytearray, size: int) -> None:
        """Hand `buffer[:size]` over (copied: the reader reuses its buffer). A read without `\\n` is the
        middle of a line (a flood of progress updates): its end is kept here, handed over with the
        read that ends the line, and the thread is not woken for it."""
        if buffer.find(b"\n", 0, size) < 0:
            total = self._skipped + len(self._open) + size
            self._open = (self._open + bytes(buffer[max(0, size - MAX_LINE):size]))[-MAX_LINE:]
            self._skipped = total - len(self._open)
            return
        item = (self._skipped, self._open + bytes(buffer[:size]))
        self._open, self._skipped = b"", 0
        try:
            if self._missed:
                self._queue.put_nowait(self._missed)
                self._missed = 0
            self._queue.put_nowait(item)
        except queue.Full:
            self._missed += item[0] + len(item[1])

    def close(self, timeout: float = 10.0) -> None:
        """Show what is queued (and what was missed), then stop."""
        try:
            if self._missed:
                self._queue.put(self._missed, timeout=timeout)
            if self._open:
                self._queue.put((self._skipped, self._open), timeout=timeout)
            self._queue.put(None, timeout=timeout)
        except queue.Full:
            return
        self._thread.join(timeout)

    def _run(self) -> None:
        lines = Lines()
        while (item := self._queue.get()) is not None:
            if isinstance(item, int):
                lines.skip()
                self._show(f"benchbook: {item:,} bytes of output not shown here (the log has them all)")
                continue
            for line in lines.feed(item[1], item[0]):
                self._show(line)
        for line in lines.finish():
            self._show(line)
