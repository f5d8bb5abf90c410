"""Write params/references/megatron_bridge_<container>_<system>.yaml from Megatron-Bridge's performance summary.

NVIDIA-NeMo/Megatron-Bridge `docs/performance-summary.md` prints, per NeMo container (`## 26.02 NeMo Container`) and
system (`#### System: DGX-GB300`), a table of pre-training runs: model, GPUs, precision, GBS, MBS, sequence
length, FSDP, TP, PP, CP, VP, EP, GA, tokens/s/GPU and model TFLOP/s/GPU. Each (container, system) becomes one
reference file of the LLM pre-training model (whose runs the LLM formats name `llm`): its rows state the
configuration and both measures, tokens/s/GPU the headline; a cell `A (B)` under `FP8-CS (FP8-MX)` is two rows,
one per precision. A container whose tables print no precision (25.09) is left out, and said.

    python tools/write_megatron_bridge_references.py performance-summary.md --commit df0289c1... [--out DIR]
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REPOSITORY = "https://github.com/NVIDIA-NeMo/Megatron-Bridge"
PRECISION = {"BF16": "bf16", "FP8-CS": "fp8", "FP8-MX": "mxfp8", "NVFP4": "nvfp4"}
GPUS_PER_NODE = {"GB300": 4, "GB200": 4, "B300": 8, "B200": 8, "H100": 8}  # a GB tray's 4 GPUs, a DGX's 8
COLUMNS = {"Model": "model", "#-GPUs": "gpus", "Precision": "precision", "GBS": "global_batch_size",
           "MBS": "batch_size", "Sequence Length": "seq_len", "FSDP": "fsdp", "TP": "tensor_parallel",
           "PP": "pipeline_parallel", "CP": "context_parallel", "VP": "vp", "EP": "expert_parallel", "GA": "ga",
           "Tokens / sec / GPU": "tokens_per_gpu", "Model TFLOP / sec / GPU": "tflops_per_gpu"}


class TableError(ValueError):
    """A table of the page that is not the layout this tool reads; names the line."""


def sections(text: str):
    """(container, system, [(line number, {column: cell})]) per table of the page."""
    container = system = None
    header: list[str] | None = None
    rows: list = []
    for number, line in enumerate(text.splitlines(), 1):
        if m := re.match(r"## ([0-9.]+) NeMo Container", line):
            container = m.group(1)
        elif m := re.match(r"#### System: DGX-(\w+)", line):
            if header and rows:
                yield container, system, rows
            system, header, rows = m.group(1), None, []
        elif line.startswith("|") and system:
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if header is None:
                header = cells
            elif not set("".join(cells)) <= set("-: "):
                if len(cells) != len(header):
                    raise TableError(f"line {number}: {len(cells)} cells under a header of {len(header)}")
                rows.append((number, dict(zip(header, cells, strict=True))))
        elif header and rows and not line.startswith("|"):
            yield container, system, rows
            header, rows = None, []
    if header and rows:
        yield container, system, rows


def _split(cell: str) -> list[str]:
    """`A (B)` -> [A, B]; `A` -> [A]."""
    m = re.fullmatch(r"(.+?) \((.+)\)", cell)
    return [m.group(1).strip(), m.group(2).strip()] if m else [cell.strip()]


def rows_of(table: list, where: str) -> list[dict]:
    """The reference rows of one table: a row per precision of each line."""
    out = []
    for number, cells in table:
        if "Precision" not in cells:
            raise TableError(f"{where} line {number}: no Precision column")
        fields = {COLUMNS[k]: v for k, v in cells.items() if k in COLUMNS}
        precisions = _split(fields["precision"])
        for i, precision in enumerate(precisions):
            row = {"table": fields["model"].replace(" ", "_").replace("(", "").replace(")", "").replace("/", ""),
                   "model": fields["model"], "precision_printed": precision, "line": number}
            for key, cell in fields.items():
                if key in ("model", "precision"):
                    continue
                parts = _split(cell)
                row[key] = parts[min(i, len(parts) - 1)]
            row["precision"] = PRECISION[precision]
            out.append(row)
    return out


def _model() -> str:
    """The registry's name of the model whose logs the LLM formats name `llm`."""
    sys.path.insert(0, str(ROOT / "lib"))
    from benchbook import models

    return models.of_logs("llm").name


def _value(text: str) -> str | None:
    return None if text in ("n/a", "") else text


def render(container: str, system: str, rows: list[dict], commit: str) -> str:
    """One reference file's YAML, the numbers written as the page printed them."""
    gpus_per_node = GPUS_PER_NODE[system]
    nodes = max(-(-int(r["gpus"]) // gpus_per_node) for r in rows)
    url = f"{REPOSITORY}/blob/{commit}/docs/performance-summary.md"
    tables = dict.fromkeys(r["table"] for r in rows)
    lines = [
        f"# Megatron-Bridge's performance summary, the NeMo {container} container's pre-training table on DGX-{system}"
        f" ({url}), written by tools/write_megatron_bridge_references.py.",
        "schema_version: 1",
        f"title: Megatron-Bridge performance summary, NeMo {container} container, DGX-{system}",
        f"model: {_model()}",
        "unit: tokens/s/GPU",
        "statistic: tokens/s/GPU and model TFLOP/s/GPU as the page prints them, one run of each recipe (its steps "
        "unnamed)",
        "method: Megatron-Bridge scripts/performance recipes; their regression check averages the steps after a "
        "skipped fraction (rules bridge_skip0.70, bridge_skip0.75, bridge_skip0.1)",
        "tolerance: 0.05",
        "source:",
        f"  title: Megatron-Bridge docs/performance-summary.md, {container} NeMo Container, DGX-{system}",
        f"  url: {url}",
        f"  commit: {commit}",
        "  note: MoE benchmarks force-balance the tokens among experts, token-dropless",
        "hardware:",
        f"  gpu: {system}",
        f"  gpus_per_node: {gpus_per_node}",
        f"  nodes: {nodes}",
        "software:",
        f"  container: nvcr.io/nvidia/nemo:{container}",
        f"  code: {REPOSITORY}",
        "  subfolder: scripts/performance",
        "tables:",
        *(f"  {t}: {next(r['model'] for r in rows if r['table'] == t)}" for t in tables),
        "rows:",
    ]
    for r in rows:
        lines.append(f"  - table: {r['table']}  # page line {r['line']}")
        lines.append(f"    gpus: {r['gpus']}")
        lines.append(f"    precision: {r['precision']}  # {r['precision_printed']}")
        for key in ("global_batch_size", "batch_size", "seq_len", "tensor_parallel", "pipeline_parallel",
                    "context_parallel", "expert_parallel"):
            if _value(r[key]) is not None:
                lines.append(f"    {key}: {r[key]}")
        lines.append("    measure: tokens_per_gpu")
        lines.append(f"    tokens_per_gpu: {r['tokens_per_gpu']}")
        lines.append(f"    tflops_per_gpu: {r['tflops_per_gpu']}")
        extra = ", ".join(f"{name} {r[key]}" for name, key in (("FSDP", "fsdp"), ("VP", "vp"), ("GA", "ga")))
        lines.append(f"    note: \"{r['precision_printed']}; {extra}\"")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("page", type=Path, help="a copy of docs/performance-summary.md")
    parser.add_argument("--commit", required=True, help="the page's commit in NVIDIA-NeMo/Megatron-Bridge")
    parser.add_argument("--out", type=Path, default=ROOT / "params" / "references")
    args = parser.parse_args(argv)
    for container, system, table in sections(args.page.read_text(encoding="utf-8")):
        where = f"{args.page}: {container} DGX-{system}"
        try:
            rows = rows_of(table, where)
        except TableError as exc:
            print(f"left out: {exc}", file=sys.stderr)
            continue
        path = args.out / f"megatron_bridge_{container}_{system.lower()}.yaml"
        path.write_text(render(container, system, rows, args.commit), encoding="utf-8")
        print(f"wrote {path} ({len(rows)} rows)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
