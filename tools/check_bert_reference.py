"""Check `benchbook analyze --json` against a published set whose cells each name their rule (the BERT sets).

Usage: python tools/check_bert_reference.py examples/published/ngc-tf1-bert
       python tools/check_bert_reference.py examples/published/ngc-pytorch-bert

expected.yaml lists each run with its `rule`: a named rule of its log format (`benchbook formats`), or
`none exact`. Every run is found at its index in its file with the listed GPUs, per-GPU batch, precision,
sequence length and phase (a sequence length and phase the log names nowhere are said, not guessed); its
`reported_throughput` is the listed `reported` one; a cell with a rule is within 0.2% of `published` by that
rule; a cell of `none exact` is shown with the value of every rule of its format and its distance (a rule
that lands near it by chance is shown, never taken for the publisher's). Prints one line a cell and exits 1
with the mismatches.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import yaml
from check_reference_logs import TOLERANCE, analyze

from benchbook.logs.parsers import get

NONE_EXACT = "none exact"
FIELDS = ("gpus", "batch_size", "precision", "seq_len", "phase")
UNLOGGED = "the log names neither the sequence length nor the phase"


def _distance(value, published: float) -> str:
    return "none" if value is None else f"{value:.3f} ({100 * (value - published) / published:+.3f}%)"


def _metadata(where: str, want: dict, got: dict, notes: list[str]) -> list[str]:
    errors = []
    for field in FIELDS:
        if field not in want or got.get(field) == want[field]:
            continue
        if field not in got:  # an axis no loaded model declares: the analysis has no column for it
            notes.append(f"{where}: {field} not checked (no model declares the axis)")
            continue
        if got.get(field) is None and field in ("seq_len", "phase") and UNLOGGED in " ".join(got.get("warnings") or []):
            notes.append(f"{where}: {field} unknown (not in the log; the table says {want[field]})")
            continue
        errors.append(f"{where}: {field} is {got.get(field)!r}, expected {want[field]!r}")
    return errors


def _cell(where: str, want: dict, by_rule: dict[str, dict], rules: list[str]) -> tuple[list[str], str]:
    """Mismatches of one cell and its line: its rule's value, or every rule's where none is exact."""
    published = float(want["published"])
    values = {name: (found.get("recomputed_throughput") if found else None) for name, found in by_rule.items()}
    if want["rule"] != NONE_EXACT:
        got = values.get(want["rule"])
        line = f"{where}: {want['rule']} {_distance(got, published)} of published {want['published']}"
        if got is None or abs(got - published) / published > TOLERANCE:
            return [f"{line}: not within {TOLERANCE:.1%}"], line
        return [], line
    shown = ", ".join(f"{name} {_distance(values.get(name), published)}" for name in rules)
    return [], f"{where}: no exact rule for published {want['published']}: {shown}"


def check(folder: Path, expected: dict) -> tuple[list[str], list[str]]:
    errors, lines, notes = [], [], []
    for group, spec in expected.items():
        default = analyze(folder, [group])
        formats = {r["format"] for r in default.values()}
        rules = sorted({rule.name for f in formats for rule in get(f).rules}, key=lambda n: (n != "nvidia", n))
        found = {name: analyze(folder, [group], name) for name in rules}
        for want in spec["runs"]:
            key = (f"{group}/{want['file']}", want["run"])
            where = f"{key[0]} run {key[1]}"
            got = default.get(key)
            if got is None:
                errors.append(f"{where}: not found")
                continue
            errors += _metadata(where, want, got, notes)
            reported = got["reported_throughput"]
            if want.get("reported") is not None and (
                    reported is None or not math.isclose(reported, float(want["reported"]), rel_tol=1e-12)):
                errors.append(f"{where}: reported_throughput is {reported}, expected {want['reported']}")
            wrong, line = _cell(where, want, {n: found[n].get(key) for n in rules}, rules)
            errors += wrong
            lines.append(line)
    return errors, lines + notes


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("folder", type=Path, help="folder holding expected.yaml and the logs (or their archive)")
    args = p.parse_args(argv)
    folder = args.folder.resolve()
    expected = yaml.safe_load((folder / "expected.yaml").read_text(encoding="utf-8"))
    errors, lines = check(folder, expected)
    for line in lines:
        print(line)
    for e in errors:
        print(f"MISMATCH {e}")
    cells = sum(len(s["runs"]) for s in expected.values())
    print(f"checked {cells} cells; {len(errors)} mismatches")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
