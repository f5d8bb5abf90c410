"""The path of a TF1 line to its number stays short enough to follow (issues 27 and 35): measured by
tools/trace_rule_path.py, as ARCHITECTURE.md's "The parsing engine" states it."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOOL = ROOT / "tools" / "trace_rule_path.py"


def _tool():
    spec = importlib.util.spec_from_file_location("trace_rule_path", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# A function on the path that is longer than the cap, with its length today: it may shrink, never grow (none now:
# textio.chunks, 62 lines, gave its first bytes' check to `_check_head`, issue 46).
LONGER: dict[tuple[str, str], int] = {}


def test_a_tf1_line_reaches_its_number_through_thirteen_files_of_short_functions(fixtures):
    """Issue 35: a cap on the files and on the length of each function on the path, not on how many
    functions there are (which would decide where code goes). The thirteenth is `core/userfiles`, what
    judges a file before a byte of it is read (issue 49 cause 2: a link to /proc/kmsg, a FIFO)."""
    path = _tool().trace(fixtures / "ngc_tf1" / "tf_gpu1_amp_bs256.log")
    files = {file for file, _, _ in path}
    assert len(files) <= 13, sorted(files)
    long = {(file, name): lines for file, name, lines in path if lines > LONGER.get((file, name), 60)}
    assert not long, long
    names = [f"{file}: {name}" for file, name, _ in path]
    order = ["logs/analysis.py: analyze", "logs/textio.py: chunks", "logs/assemble.py: fold",  # fold pulls the
             "logs/parsers/scanning.py: scan", "logs/rules.py: Rule.resolve", "logs/rules.py: apply",  # events
             "logs/rules.py: value"]
    assert [names.index(step) for step in order] == sorted(names.index(step) for step in order)
    assert not [n for n in names if "<" in n.split(": ")[1].split(".")[-1]]  # no comprehension, lambda
    assert not [n for n in names if n.endswith(": sniff")]  # format sniffing is left out


def test_the_tool_prints_the_counts_then_the_path(fixtures):
    out = subprocess.run([sys.executable, str(TOOL), str(fixtures / "ngc_tf1" / "tf_gpu1_amp_bs256.log")],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    files, functions, longest = out[0].split(", ")
    assert files.endswith(" files") and functions.endswith(" functions") and longest.endswith(" lines")
    assert len(out) == 1 + int(functions.split()[0]) and out[1].startswith("logs/analysis.py: analyze (")
