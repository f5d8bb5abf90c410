"""The exception tree: every error benchbook raises on purpose derives from BenchbookError."""

from __future__ import annotations

import unicodedata


class BenchbookError(Exception):
    """Raised when benchbook cannot do what was asked; the message says what to do next."""


class UnknownNameError(BenchbookError, KeyError):
    """Raised when a registry is asked for a name it does not hold."""

    def __init__(self, kind: str, name: str, known: list[str]):
        self.kind, self.name, self.known = kind, name, sorted(known)
        super().__init__(name)

    def __str__(self) -> str:
        return f"unknown {self.kind} {self.name!r}; known: {', '.join(self.known) or '(none)'}"


class LogError(BenchbookError):
    """Raised when a log file cannot be analyzed at all (empty, binary, no known format)."""

    def __init__(self, path: str, reason: str):
        self.path, self.reason = path, reason
        super().__init__(f"{path}: {reason}")


class RuleError(BenchbookError, ValueError):
    """Raised when a throughput rule has values that make no sense."""


class ReportNameError(BenchbookError, ValueError):
    """Raised when a report name (`publish --name`, or a folder's name) is not a plain folder name:
    it would write outside the reports folder or be read as an option."""


def shown(text: str) -> str:
    """`text` (a file name, a log's line, a message naming them) safe to print on a terminal or a page:
    control and format characters (terminal escapes, bidi controls) as `\\x1b`/`\\u202e`, a byte that is
    not UTF-8 (os.fsdecode's surrogate escape of a file name) as `\\xff`; newlines and tabs stay."""
    out = []
    for ch in text:
        code = ord(ch)
        if 0xDC80 <= code <= 0xDCFF:  # os.fsdecode's escape of a byte that is not UTF-8
            out.append(f"\\x{code - 0xDC00:02x}")
        elif ch in "\n\t" or unicodedata.category(ch) not in ("Cc", "Cf", "Cs"):
            out.append(ch)
        else:
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
    return "".join(out)
