"""Benchmark: the cost of `benchbook run` over running the same CPU workload command directly.

Runs one CPU training configuration in pairs: directly with `subprocess` and its output in a
file, and through `benchbook.studies.runner.run_study` (tee to the log, progress, run record, analysis).
The order alternates from pair to pair (direct first, then harness first) so that drift in the
machine's speed hits both sides alike. Both throughputs are the workload's measured images/s,
recomputed by benchbook from each log by the same rule. Prints every pair and the median ratio
harness/direct, which must be >= 0.98 (the harness costs under 2%); `--check` makes the exit code
say so.

Throughput ratios between two processes of the same training scatter by several percent on a
small shared machine, more than the 2% to resolve, so the benchmark also measures the cost
directly: the CPU time benchbook's own process spends over a whole `run_study` (record writing,
teeing, polling, environment capture, analysis: an upper bound of what it takes from the
workload) as a share of the CPU time of the workload it runs. That share does not depend on how
fast the machine happens to be, and a harness that costs 2% of the workload's throughput on a
saturated machine must spend about 2% of its CPU time.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from benchbook import analyze
from benchbook.environment import envs
from benchbook.studies import commands, runner, study

STUDY = """\
schema_version: 1
name: harness
model: {model}
runtime: cpu
cpu: {{image_size: {image}, threads: 0}}
sweep: {{batch_size: {batch}, precision: fp32, data: synthetic}}
repeats: 1
iterations: {iterations}
warmup_steps: {warmup}
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
        ratios, shares = [], []

        def direct_run(i: int) -> tuple[float, float]:
            log = tmp / f"direct-{i}.log"
            before = cpu(resource.RUSAGE_CHILDREN)
            with open(log, "wb") as out:
                subprocess.run(cmd.argv, stdout=out, stderr=subprocess.STDOUT, check=True, env=None)
            return throughput(log), cpu(resource.RUSAGE_CHILDREN) - before

        def harness_run(i: int) -> tuple[float, float]:
            before = cpu(resource.RUSAGE_SELF)
            (rec,) = runner.run_study(s, tmp / f"runs-{i}", progress=False, say=lambda m: None).values()
            own = cpu(resource.RUSAGE_SELF) - before  # the workload and the capture's probes are children
            return throughput(tmp / f"runs-{i}" / s.name / rec["run_id"] / rec["log"]), own

        for i in range(args.pairs):
            if i % 2 == 0:
                direct, workload_cpu = direct_run(i)
                harness, own_cpu = harness_run(i)
            else:
                harness, own_cpu = harness_run(i)
                direct, workload_cpu = direct_run(i)
            ratios.append(harness / direct)
            shares.append(own_cpu / workload_cpu)
            share = shares[-1]
            print(f"pair {i + 1} ({'direct' if i % 2 == 0 else 'harness'} first): direct {direct:.2f} images/s, "
                  f"benchbook run {harness:.2f} images/s, ratio {ratios[-1]:.3f}; benchbook's own CPU time "
                  f"{100 * share:.2f}% of the workload's", flush=True)
    ratio, share = statistics.median(ratios), max(shares)
    verdict = "OK, under 2%" if ratio >= 0.98 else "ABOVE 2%"
    print(f"harness/direct throughput ratio (median of {len(ratios)} pairs, range {min(ratios):.3f}-"
          f"{max(ratios):.3f}): {ratio:.3f}: {verdict}")
    print(f"benchbook's own CPU time per run, as a share of the workload's (largest of {len(shares)}): "
          f"{100 * share:.2f}%: {'OK, under 2%' if share < 0.02 else 'ABOVE 2%'}")
    return 1 if args.check and (ratio < 0.98 or share >= 0.02) else 0


def cpu(who: int) -> float:
    """User + system CPU seconds of this process (or of its finished children) so far."""
    r = resource.getrusage(who)
    return r.ru_utime + r.ru_stime


if __name__ == "__main__":
    sys.exit(main())
