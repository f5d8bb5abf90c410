"""Benchmark: what writing a report's tables as data (`reports/data_files.py`) costs, against publishing the report.

In one process, taking turns (best of `--repeat`): one report published as a pool worker publishes it
(`publish._execute`: the notebook executed, its data written by its opening section, both pages converted), and
the data alone (`data_files.write` of the same report's tables, its analysis done before the clock starts: the
kernel has it already when it writes them). Prints both and the share of the data in the report's publish;
`--check FRACTION` exits 1 when it is larger.

    python bench/bench_data_files.py [--set params/published/ngc_tf1_resnet50.yaml] [--repeat 3] [--check 0.03]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--set", type=Path, default=ROOT / "params" / "published" / "ngc_tf1_resnet50.yaml")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--check", type=float, metavar="FRACTION", help="exit 1 when the data's share is larger")
    args = p.parse_args(argv)
    sys.path.insert(0, str(ROOT / "lib"))
    from benchbook.reports import data_files, publish
    from benchbook.reports.report import Report

    target = publish.for_published(args.set)
    params = target.parameters
    report = Report(log_dir=ROOT / params["log_dir"], reference=params.get("reference"))
    report.stats, report.reproduction(), report.summary()  # the kernel's analysis, done before the data
    times: dict[str, list[float]] = {"publish": [], "data": []}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeat):
            out = Path(tmp) / f"report{i}"
            out.mkdir()
            start = time.perf_counter()
            result = publish._execute(target, out, "bench")
            times["publish"].append(time.perf_counter() - start)
            assert result["status"] == "ok" and data_files.present(out), result
            folder = Path(tmp) / f"data{i}"
            folder.mkdir()
            start = time.perf_counter()
            data_files.write(folder, data_files.report_tables(report))
            times["data"].append(time.perf_counter() - start)
    best = {k: min(v) for k, v in times.items()}
    for k, v in times.items():
        print(f"{k:8s} best {best[k]:.3f} s  ({', '.join(f'{x:.3f}' for x in v)})")
    share = best["data"] / best["publish"]
    print(f"data / publish of {target.name}: {share:.2%}")
    return 1 if args.check is not None and share > args.check else 0


if __name__ == "__main__":
    sys.exit(main())
