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
folder may be found. `benchbook analyze` of the same folder must give one run per result file, its time
to train the score's (to float precision) and its evaluations. Runs the CLI, as a user would, and
exits 1 with one line per mismatch.
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
from benchbook.mlperf import published, rules

TOLERANCE_MINUTES = published.TOLERANCE_MINUTES


def digests(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _cli(folder: Path, *command: str) -> tuple[list[dict], str]:
    """The JSON lines and the stderr of `benchbook COMMAND --json` on the folder (its archives, if any)."""
    archived = [str(p) for p in sorted(folder.iterdir()) if archives.kind(p.name)]
    out = subprocess.run([sys.executable, "-m", "benchbook.cli", *command, "--json", *(archived or [str(folder)])],
                         capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"benchbook {' '.join(command)} failed ({out.returncode}):\n{out.stderr}")
    return [json.loads(line) for line in out.stdout.splitlines() if line.strip()], out.stderr


def score(folder: Path) -> dict[str, dict]:
    rows, _ = _cli(folder, "mlperf", "score")
    return {r["folder"].rpartition(SEP)[2] if SEP in r["folder"] else str(Path(r["folder"]).relative_to(folder)): r
            for r in rows}


def analyzed_like_scored(folder: Path, scored: dict[str, dict]) -> list[str]:
    """`benchbook analyze` of the same folder (the engine's MLLOG format) against the score's runs: one
    run per result file, its time to train the score's to float precision, its evaluations read, and no
    internal error."""
    runs, stderr = _cli(folder, "analyze")
    errors = [f"analyze: {line}" for line in stderr.splitlines() if "internal error" in line]
    by_source = {r["source"]: r for r in runs if r["format"] == "mllog"}
    files = 0
    for row in scored.values():
        for run in row["run_details"]:
            files += 1
            source = f"{row['folder']}/{run['file']}"
            got = by_source.get(source)
            if got is None:
                errors.append(f"{source}: scored, not analyzed")
                continue
            minutes = got["reported"].get("time_to_train_minutes")
            if (minutes is None) != (run["minutes"] is None) or (
                    minutes is not None and abs(minutes - run["minutes"]) > 1e-9 * max(1.0, abs(run["minutes"]))):
                errors.append(f"{source}: analyze gives {minutes} minutes, score {run['minutes']}")
            if got["reported"].get("epochs") is None and got["reported"].get("samples") is None:
                errors.append(f"{source}: analyze found no evaluation")
    if len(by_source) != files:
        errors.append(f"analyze found {len(by_source)} MLLOG runs, score {files} result files")
    return errors


def check(folder: Path, expected: dict, published_root: Path | None = None) -> list[str]:
    """Mismatches of the folders scored against `expected`, any file that changed, and where
    `benchbook analyze` disagrees with the score on a run."""
    before = digests(folder)
    found = score(folder)
    analyze_errors = analyzed_like_scored(folder, found)
    errors = [f"{name}: {'changed' if name in before else 'written'} by scoring"
              for name, digest in digests(folder).items() if before.get(name) != digest]
    errors += [f"{name}: found, not in expected.yaml" for name in sorted(set(found) - set(expected))]
    for name, want in expected.items():
        got = found.get(name)
        if got is None:
            errors.append(f"{name}: not found")
            continue
        for key in ("round", "benchmark", "submitter", "system"):
            if got[key] != (rules.BENCHMARK_ALIASES.get(want[key], want[key]) if key == "benchmark" else want[key]):
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
    return errors + analyze_errors


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
