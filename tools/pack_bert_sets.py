"""Pack the published NVIDIA BERT logs (PaddlePaddle/Perf) as examples/published/ ships its sets: one
`logs.tar.xz` a set (`<set>/<path>` inside, byte for byte), its NOTICE and its expected.yaml, whose `rule`
names the format's named rule that gives each cell (`benchbook formats`), or `none exact`.

Usage: python tools/pack_bert_sets.py ../shared/reference-logs-bert examples/published

The archive is the same from the same logs: members sorted, times, owners and modes fixed.
"""

from __future__ import annotations

import argparse
import io
import lzma
import sys
import tarfile
from pathlib import Path

import yaml

SOURCE_COMMIT = "e7a07c4d"
SETS = {  # set: (the publisher's rule in expected.yaml's words -> the format's named rule), logs' folder there
    "ngc-pytorch-bert": ({"final training_sequences_per_second (the log's own end-of-run DLL line)": "nvidia"},
                         "Bert/OtherReports/PyTorch/logs"),
    "ngc-tf1-bert": ({"arithmetic mean of every per-iteration throughput_train record, warm-up included": "perf"},
                     "Bert/OtherReports/TensorFlow/logs"),
}
NONE_EXACT = "none exact"
KEEP = ("file", "run", "gpus", "batch_size", "precision", "seq_len", "phase", "gpu", "reported", "published",
        "published_in", "published_also", "note")


def _archive(folder: Path, name: str, files: list[str]) -> bytes:
    """A tar.xz of `name/<file>` for each file, reproducible: sorted, mtime 0, root-owned, mode 0644."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        dirs = sorted({str(Path(name, f).parent) for f in files} | {name})
        for d in dirs:
            info = tarfile.TarInfo(d + "/")
            info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, 0
            tar.addfile(info)
        for f in sorted(files):
            data = (folder / name / f).read_bytes()
            info = tarfile.TarInfo(f"{name}/{f}")
            info.size, info.mode, info.mtime = len(data), 0o644, 0
            tar.addfile(info, io.BytesIO(data))
    return lzma.compress(raw.getvalue(), preset=9 | lzma.PRESET_EXTREME)


def _runs(spec: dict, rules: dict[str, str]) -> list[dict]:
    out = []
    for run in spec["runs"]:
        row = {k: run[k] for k in KEEP if k in run}
        rule = run["rule"]
        if rule != NONE_EXACT and rule not in rules:
            raise SystemExit(f"{run['file']}: rule {rule!r} is none this tool knows ({', '.join(rules)})")
        row["rule"] = rules.get(rule, NONE_EXACT)
        row["check"] = run["check"]
        out.append(row)
    return out


def pack(shared: Path, out: Path) -> None:
    expected = yaml.safe_load((shared / "expected.yaml").read_text(encoding="utf-8"))
    for name, (rules, logs_path) in SETS.items():
        spec = expected[name]
        files = [r["file"] for r in spec["runs"]]
        target = out / name
        target.mkdir(parents=True, exist_ok=True)
        (target / "logs.tar.xz").write_bytes(_archive(shared, name, files))
        default = next(iter(rules.values()))
        head = {k: spec[k] for k in ("source", "hardware", "software", "format")}
        doc = {name: {**head, "rule": default, "runs": _runs(spec, rules)}}
        (target / "expected.yaml").write_text(
            "# NVIDIA BERT pre-training logs published by PaddlePaddle/Perf and the numbers published from them,\n"
            "# written by tools/pack_bert_sets.py from ../shared/reference-logs-bert/expected.yaml.\n"
            "# rule: the log format's named rule (benchbook formats) that gives the published cell within 0.2%,\n"
            "#       or 'none exact' (tools/check_bert_reference.py then shows how far each rule lands);\n"
            "# check: the publisher-side recomputation (by_rule, delta_pct, printed_digits) as the source states it.\n"
            + yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=120), encoding="utf-8")
        (target / "NOTICE").write_text(
            f"logs.tar.xz holds {name}/: {len(files)} training logs copied unchanged from\n"
            f"https://github.com/PaddlePaddle/Perf at commit {SOURCE_COMMIT}, path {logs_path}\n"
            f"({', '.join(files)}),\n"
            "licensed under the Apache License, Version 2.0 (https://www.apache.org/licenses/LICENSE-2.0).\n"
            "expected.yaml holds the numbers published from them (the repository's results tables).\n",
            encoding="utf-8")
        print(f"{target}: {len(files)} logs")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("shared", type=Path, help="the reference-logs-bert folder (expected.yaml and the logs)")
    p.add_argument("out", type=Path, help="examples/published")
    args = p.parse_args(argv)
    pack(args.shared, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
