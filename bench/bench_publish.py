"""Benchmark: publishing one analysis-only report, with and without what a report does not need.

Each side runs in a fresh process, taking turns (best of `--repeat`), on the same logs
(`tests/fixtures/ngc_mxnet` by default, with the MXNet reference):

- lean: what `benchbook publish` does now: the notebook executed with papermill, saved once at the
  end, jsonschema's rfc3987-syntax format check never imported, then converted to the two HTML pages
  (`publish._execute`, the work of one pool worker);
- full: the same, with rfc3987-syntax imported first (as jsonschema does when it is installed) and
  papermill saving the notebook after every cell (its default), as publish did before.

It also times the whole command a user runs, `benchbook publish --logs DIR --model M --force` in a
fresh process (interpreter start, pool, index included), and with `--before DIR` the same command from
another checkout of benchbook taking turns with this one (`git archive COMMIT | tar -x -C DIR`: its
`lib/` first on the path, in this environment), so that a change is measured before and after in one
session. Prints the times and the ratio full/lean; with `--check SECONDS` exits 1 when the command
takes longer.

    python bench/bench_publish.py [--logs DIR --model M --reference R] [--repeat 3] [--check 4] [--before DIR]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

WORKER = """
import sys, time
from pathlib import Path
full = sys.argv[1] == "full"
if full:
    import papermill
    import rfc3987_syntax  # noqa: F401 -- what jsonschema imports when it is installed
    plain = papermill.execute_notebook
    def saving(*args, **kwargs):
        kwargs["request_save_on_cell_execute"] = True
        return plain(*args, **kwargs)
    papermill.execute_notebook = saving
from benchbook.reports import publish
target = publish.for_logs(sys.argv[2], sys.argv[3], "bench", sys.argv[4] or None)
out = Path(sys.argv[5])
out.mkdir(parents=True, exist_ok=True)
start = time.perf_counter()
result = publish._execute(target, out, "bench")
assert result["status"] == "ok", result
print(time.perf_counter() - start)
"""


def _worker(side: str, args, out: Path) -> float:
    """Seconds of one report's execution and conversion, its interpreter start and imports included."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", WORKER, side, str(args.logs), args.model, args.reference or "", str(out)],
                   check=True, cwd=ROOT, capture_output=True)
    return time.perf_counter() - start


def _command(args, reports: Path, root: Path = ROOT) -> float:
    """Seconds of `benchbook publish --logs` in a fresh process, with the benchbook of checkout `root`."""
    env = dict(os.environ, PYTHONPATH=str(root / "lib")) if root != ROOT else None
    start = time.perf_counter()
    argv = [sys.executable, "-m", "benchbook", "publish", "--logs", str(args.logs), "--model", args.model,
            "--reports", str(reports), "--force", "--quiet", "--jobs", "1", "--name", "bench"]
    subprocess.run(argv + (["--reference", args.reference] if args.reference else []), check=True, cwd=root,
                   capture_output=True, env=env)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--logs", type=Path, default=ROOT / "tests" / "fixtures" / "ngc_mxnet")
    p.add_argument("--model", default="resnet50_mxnet")
    p.add_argument("--reference", default="ngc_mxnet_resnet50")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--check", type=float, metavar="SECONDS", help="exit 1 when the command takes longer")
    p.add_argument("--before", type=Path, metavar="DIR", help="also time the command from this checkout")
    args = p.parse_args(argv)
    times: dict[str, list[float]] = {"lean": [], "full": [], "command": []} | ({"before": []} if args.before else {})
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeat):
            for side in (("lean", "full") if i % 2 == 0 else ("full", "lean")):
                times[side].append(_worker(side, args, Path(tmp) / f"{side}{i}"))
            times["command"].append(_command(args, Path(tmp) / "reports"))
            if args.before:
                times["before"].append(_command(args, Path(tmp) / "before", args.before.resolve()))
    best = {k: min(v) for k, v in times.items()}
    for k, v in times.items():
        print(f"{k:8s} best {best[k]:.2f} s  ({', '.join(f'{x:.2f}' for x in v)})")
    print(f"full / lean: {best['full'] / best['lean']:.2f}; `benchbook publish --logs` of one report: "
          f"{best['command']:.2f} s" + (f" ({best['before']:.2f} s from {args.before})" if args.before else ""))
    return 1 if args.check is not None and best["command"] > args.check else 0


if __name__ == "__main__":
    sys.exit(main())
