"""How many functions a TF1 line crosses on its way to its number: the measure of ARCHITECTURE.md's
"The parsing engine".

Runs `benchbook.logs.analysis.analyze` twice on one published TF1 log and traces the second call
(the first fills the caches and imports) with `sys.setprofile`, keeping each distinct Python
function of `lib/benchbook` entered, as (file, qualified name), in the order first entered.
Comprehensions, generator expressions and lambdas are left out (functions defined inside functions
count), and so is format sniffing (the formats' `sniff`). Prints the number of files and functions
and the longest function's lines, then the functions in order, each with its length in lines (from
its `def` to its last line, docstring and comments included).

    python tools/trace_rule_path.py [LOG]
"""

from __future__ import annotations

import argparse
import inspect
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIB = ROOT / "lib" / "benchbook"
DEFAULT_LOG = ROOT.parent / "shared" / "reference-logs" / "ngc-tf1-resnet50" / "tf_gpu1_amp_bs256.txt"


def trace(log: Path) -> list[tuple[str, str, int]]:
    """The (file under lib/benchbook, qualified name, length in lines) of each function the second
    analysis of `log` entered, in the order first entered."""
    sys.path.insert(0, str(ROOT / "lib"))
    from benchbook import analyze  # the package entry point: the models declare their metrics first

    analyze([log])  # imports, caches
    lib = str(LIB) + "/"
    seen: dict[tuple[str, str], int] = {}

    def profile(frame, event, arg) -> None:
        if event != "call":
            return
        code = frame.f_code
        if not code.co_filename.startswith(lib) or code.co_name.startswith("<") or code.co_name == "sniff":
            return  # not ours; a comprehension, generator expression or lambda; format sniffing
        key = (code.co_filename[len(lib):], code.co_qualname)
        if key not in seen:
            seen[key] = len(inspect.getsourcelines(code)[0])

    sys.setprofile(profile)
    try:
        result = analyze([log])
    finally:
        sys.setprofile(None)
    if result.problems or not len(result.runs):
        raise SystemExit(f"{log}: no run analyzed ({result.problems})")
    return [(file, name, lines) for (file, name), lines in seen.items()]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("log", nargs="?", type=Path, default=DEFAULT_LOG, help="a TF1 log (default: %(default)s)")
    args = parser.parse_args(argv)
    path = trace(args.log.resolve())
    print(f"{len({file for file, _, _ in path})} files, {len(path)} functions, the longest "
          f"{max(lines for _, _, lines in path)} lines")
    for file, name, lines in path:
        print(f"{file}: {name} ({lines} lines)")


if __name__ == "__main__":
    main()
