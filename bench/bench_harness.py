"""Benchmark: the cost of `benchbook run` over running the same CPU workload command directly.

Runs one CPU training configuration in pairs, alternating (direct, through the harness) so that
drift in the machine's speed hits both sides alike: directly with `subprocess` and its output in
a file, and through `benchbook.runner.run_study` (tee to the log, progress, run record, analysis).
Both throughputs are the workload's measured images/s, recomputed by benchbook from each log by
the same rule. Prints every pair and the median ratio harness/direct, which must be >= 0.98 (the
harness costs under 2%); `--check` makes the exit code say so.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from benchbook import analyze, commands, envs, runner, study

STUDY = """\
schema_version: 1
name: harness
model: {model}
runtime: cpu
cpu: {{image_size: {image}, threads: 0}}
sweep: {{batch_size: {batch}, precision: fp32, data: synthetic}}
repeats: 1
iterations: {iterations}
warmup: {warmup}
timeout: 30m
"""


def throughput(log: Path) -> float:
    runs = analyze([log]).runs
    if len(runs) != 1 or runs.iloc[0]["status"] != "complete":
        raise SystemExit(f"{log}: not one complete run: {runs[['status', 'warnings']].to_dict('records')}")
    return float(runs.iloc[0]["recomputed_throughput"])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="resnet50_tf", choices=["resnet50_tf", "resnet50_mxnet"])
    p.add_argument("--pairs", type=int, default=3)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--image", type=int, default=32)
    p.add_argument("--iterations", type=int, default=30)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--check", action="store_true", help="exit 1 when the ratio is below 0.98")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        path = tmp / "harness.yaml"
        path.write_text(STUDY.format(model=args.model, image=args.image, batch=args.batch,
                                     iterations=args.iterations, warmup=args.warmup))
        s = study.load(path)
        python = envs.ensure(s.framework)
        (spec,) = study.expand(s)
        cmd = commands.command(s, spec.config, tmp, str(python))
        print(f"workload: {cmd.shell()}")
        ratios = []
        for i in range(args.pairs):
            log = tmp / f"direct-{i}.log"
            with open(log, "wb") as out:
                subprocess.run(cmd.argv, stdout=out, stderr=subprocess.STDOUT, check=True, env=None)
            direct = throughput(log)
            (rec,) = runner.run_study(s, tmp / f"runs-{i}", progress=False, say=lambda m: None).values()
            harness = throughput(tmp / f"runs-{i}" / s.name / rec["run_id"] / rec["log"])
            ratios.append(harness / direct)
            print(f"pair {i + 1}: direct {direct:.2f} images/s, benchbook run {harness:.2f} images/s, "
                  f"ratio {ratios[-1]:.3f}", flush=True)
    ratio = statistics.median(ratios)
    verdict = "OK, under 2%" if ratio >= 0.98 else "ABOVE 2%"
    print(f"harness/direct throughput ratio (median of {len(ratios)} pairs): {ratio:.3f}: {verdict}")
    return 1 if args.check and ratio < 0.98 else 0


if __name__ == "__main__":
    sys.exit(main())
