"""Check `benchbook analyze --json` against published reference logs and their expected.yaml.

Usage: python tools/check_reference_logs.py ../shared/reference-logs [--group NAME ...]
       python tools/check_reference_logs.py examples/published/ngc-tf1-resnet50

The folder holds a folder per group, or archives holding them (`<group>/<file>` inside, as
examples/published/ ships them: read in place).

For every run listed in expected.yaml (of the groups named, or all): the run is found at its
index in its file (file order), with the listed GPUs, per-GPU batch size, precision and XLA;
`reported_throughput` equals the listed `reported` value; `recomputed_throughput`, the default
(`nvidia`) rule's number, is within 0.2% of the `published` one (`reported` where none is
listed). Runs the CLI, as a user would, and exits 1 with one line per mismatch.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
from pathlib import Path

import yaml

from benchbook.logs import archives
from benchbook.logs.archives import SEP

TOLERANCE = 0.002


def _key(source: str, folder: Path) -> str:
    """`<group>/<file>` of a run's source: a file under `folder`, or a member of an archive there."""
    return source.rpartition(SEP)[2] if SEP in source else str(Path(source).relative_to(folder))


def analyze(folder: Path, groups: list[str], rule: str | None = None) -> dict[tuple[str, int], dict]:
    archived = [p for p in sorted(folder.iterdir()) if archives.kind(p.name)]
    paths = [str(folder / g) for g in groups if (folder / g).is_dir()] + [str(p) for p in archived]
    named = ["--rule", rule] if rule else []
    out = subprocess.run([sys.executable, "-m", "benchbook.cli", "analyze", "--json", *named, *paths],
                         capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"benchbook analyze failed ({out.returncode}):\n{out.stderr}")
    runs = [json.loads(line) for line in out.stdout.splitlines() if line.strip()]
    return {(_key(r["source"], folder), r["run"]): r for r in runs}


def check(folder: Path, expected: dict, rule: str | None = None) -> list[str]:
    """Mismatches of the runs found against `expected`; the recomputed values by `rule` (None: each
    format's default, `nvidia`)."""
    errors: list[str] = []
    found = analyze(folder, list(expected), rule)
    checked = 0
    for group, spec in expected.items():
        for want in spec["runs"]:
            key = (f"{group}/{want['file']}", want["run"])
            got = found.get(key)
            where = f"{key[0]} run {key[1]}"
            if got is None:
                errors.append(f"{where}: not found (runs found in that file: "
                              f"{sorted(r for f, r in found if f == key[0])})")
                continue
            checked += 1
            for field in ("gpus", "batch_size", "precision", "xla"):
                if field in want and got[field] != want[field]:
                    errors.append(f"{where}: {field} is {got[field]!r}, expected {want[field]!r}")
            reported, recomputed = got["reported_throughput"], got["recomputed_throughput"]
            if reported is None or not math.isclose(reported, float(want["reported"]), rel_tol=1e-12):
                errors.append(f"{where}: reported_throughput is {reported}, expected {want['reported']}")
            published = float(want.get("published", want["reported"]))
            if recomputed is None or abs(recomputed - published) / published > TOLERANCE:
                errors.append(f"{where}: recomputed_throughput {recomputed} is not within "
                              f"{TOLERANCE:.1%} of the published {published:g}")
            if got["status"] != "complete":
                errors.append(f"{where}: status is {got['status']}, expected complete")
    print(f"checked {checked} runs of {sum(len(s['runs']) for s in expected.values())} listed; "
          f"{len(errors)} mismatches")
    return errors


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("folder", type=Path, help="folder holding expected.yaml and the logs")
    p.add_argument("--expected", type=Path, help="expected.yaml (default: FOLDER/expected.yaml)")
    p.add_argument("--group", action="append", metavar="NAME", help="check only this group (repeatable)")
    p.add_argument("--rule", metavar="NAME", help="the named rule that printed the published numbers "
                   "(default: each format's nvidia rule)")
    args = p.parse_args(argv)
    folder = args.folder.resolve()
    expected = yaml.safe_load((args.expected or folder / "expected.yaml").read_text(encoding="utf-8"))
    unknown = sorted(set(args.group or ()) - set(expected))
    if unknown:
        p.error(f"no group {', '.join(unknown)} in expected.yaml (groups: {', '.join(expected)})")
    if args.group:
        expected = {g: spec for g, spec in expected.items() if g in args.group}
    errors = check(folder, expected, args.rule)
    for e in errors:
        print(f"MISMATCH {e}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
