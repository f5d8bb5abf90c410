"""Check `benchbook mlperf score --json` against published MLPerf Training result folders and their
expected.yaml, and that scoring left every file of the folder byte-identical.

Usage: python tools/check_mlperf_results.py ../shared/mlperf-results
       python tools/check_mlperf_results.py examples/published/mlperf

The folder holds the result repositories, or archives holding them (read in place, as
examples/published/ ships them).

expected.yaml maps each result folder (relative to the given folder) to its `round`, `benchmark`,
`submitter`, `system` and `result_files`. Every folder listed must be found, valid, with these fields,
and its score within 0.0001 minutes of the score published for it, as `params/references/mlperf/`
holds it with its source (expected.yaml's own `score_minutes` must be that number too); no other
folder may be found. Runs the CLI, as a user would, and exits 1 with one line per mismatch.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
from pathlib import Path

import yaml

from benchbook.logs import archives
from benchbook.logs.archives import SEP
from benchbook.mlperf import published

TOLERANCE_MINUTES = published.TOLERANCE_MINUTES


def digests(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def score(folder: Path) -> dict[str, dict]:
    archived = [str(p) for p in sorted(folder.iterdir()) if archives.kind(p.name)]
    out = subprocess.run([sys.executable, "-m", "benchbook.cli", "mlperf", "score", "--json", *(archived or [folder])],
                         capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"benchbook mlperf score failed ({out.returncode}):\n{out.stderr}")
    rows = [json.loads(line) for line in out.stdout.splitlines() if line.strip()]
    return {r["folder"].rpartition(SEP)[2] if SEP in r["folder"] else str(Path(r["folder"]).relative_to(folder)): r
            for r in rows}


def check(folder: Path, expected: dict, published_root: Path | None = None) -> list[str]:
    """Mismatches of the folders scored against `expected`, and any file that changed."""
    before = digests(folder)
    found = score(folder)
    errors = [f"{name}: {'changed' if name in before else 'written'} by scoring"
              for name, digest in digests(folder).items() if before.get(name) != digest]
    errors += [f"{name}: found, not in expected.yaml" for name in sorted(set(found) - set(expected))]
    for name, want in expected.items():
        got = found.get(name)
        if got is None:
            errors.append(f"{name}: not found")
            continue
        for key in ("round", "benchmark", "submitter", "system"):
            if got[key] != want[key]:
                errors.append(f"{name}: {key} {got[key]!r}, expected {want[key]!r}")
        if got["runs"] != want["result_files"]:
            errors.append(f"{name}: {got['runs']} result files, expected {want['result_files']}")
        found_published = published.lookup(want["round"], want["submitter"], want["system"], want["benchmark"],
                                           published_root)
        if found_published is None:
            errors.append(f"{name}: no published score for it in {published_root or published.ROOT}")
            continue
        pub, source = found_published
        if want.get("score_minutes") != pub.minutes:
            errors.append(f"{name}: expected.yaml says {want.get('score_minutes')} minutes, the published score is "
                          f"{pub.minutes} ({source.path})")
        if not got["valid"] or got["score_minutes"] is None:
            errors.append(f"{name}: invalid ({got['reason']}), published {pub.minutes} minutes")
        elif abs(got["score_minutes"] - pub.minutes) > TOLERANCE_MINUTES:
            errors.append(f"{name}: {got['score_minutes']:.6f} minutes, published {pub.minutes} "
                          f"(within {TOLERANCE_MINUTES}; {source.where(pub)})")
    return errors


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("folder", type=Path, help="folder of result repositories with an expected.yaml")
    p.add_argument("--published", type=Path, metavar="DIR", help="the files of published scores (default: "
                   "params/references/mlperf)")
    args = p.parse_args(argv)
    expected = yaml.safe_load((args.folder / "expected.yaml").read_text(encoding="utf-8"))
    errors = check(args.folder, expected, args.published)
    for e in errors:
        print(e)
    print(f"{len(expected) - len({e.split(':')[0] for e in errors} & set(expected))} of {len(expected)} "
          f"result folders as expected")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
