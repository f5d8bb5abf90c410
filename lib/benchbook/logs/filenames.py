"""Run metadata read from a log's path, the second source after the log itself.

Published logs encode their configuration in names: `tf_gpu8_amp_bs256.txt`,
`mxnet_gpu1_gpu8_fp32_bs128.txt` (two runs, in that order), `1n8g/r50_b128_fp32_3.log` (one node of
eight GPUs, batch 128, FP32, repeat 3). In an archive the member's path is read, below the
archive's name as a folder (`logs.tar.gz!1n8g/r50_b128_fp32_3.log` reads as `logs/1n8g/...`). The
run record written by `benchbook run` is the third source; records.py reads it (`records.config_beside`).
"""

from __future__ import annotations

import functools
import re
from pathlib import Path, PurePath

from .archives import ArchivePath

_NODES = re.compile(r"(?<![a-z0-9])(\d+)n(\d+)g(?![a-z0-9])")
_GPUS = re.compile(r"(?<![a-z])(?:gpus?|g)(\d+)(?![0-9])|(?<![a-z0-9])(\d+)gpus?(?![a-z0-9])")
_BATCH = re.compile(r"(?<![a-z])(?:bs|b|batch)(\d+)(?![0-9])")
_PRECISION = re.compile(r"(?<![a-z0-9])(fp32|fp16|amp|tf32|bf16)(?![a-z0-9])")
_REPEAT = re.compile(r"[_-](\d+)$")


def from_path(path: str | Path | ArchivePath, run_index: int = 0) -> dict:
    """Metadata the path names for the `run_index`-th run of the file (keys absent when unknown)."""
    nodes, gpus, rest = _parse(str(PurePath(*path.parts)) if isinstance(path, ArchivePath) else str(path))
    meta = dict(nodes)
    if gpus and "gpus" not in meta:
        # One GPU token per run when a file holds several runs (mxnet_gpu1_gpu8_...).
        meta["gpus"] = gpus[min(run_index, len(gpus) - 1)]
    meta.update(rest)
    return meta


@functools.lru_cache(maxsize=1024)
def _parse(path: str) -> tuple[dict, tuple[int, ...], dict]:
    """What a path names, read once per path (every run of a file asks): nodes and GPUs of an
    `NnMg` part, the GPU tokens in order, and the rest. The dicts are shared: copy, never change."""
    p = Path(path)
    stem = p.stem.lower()
    nodes: dict = {}
    for part in [q.lower() for q in p.parent.parts[-2:]] + [stem]:
        m = _NODES.search(part)
        if m:
            nodes["nodes"], nodes["gpus"] = int(m.group(1)), int(m.group(1)) * int(m.group(2))
    tokens = re.split(r"[_\-.]", stem)
    gpus = tuple(int(a or b) for t in tokens for a, b in _GPUS.findall(t) if not _NODES.fullmatch(t))
    meta: dict = {}
    for token in tokens:
        if "batch_size" not in meta and (m := _BATCH.fullmatch(token)):
            meta["batch_size"] = int(m.group(1))
        if "precision" not in meta and (m := _PRECISION.fullmatch(token)):
            meta["precision"] = "amp" if m.group(1) == "fp16" else m.group(1)
    if "xla" in tokens:
        meta["xla"] = True
    if "noxla" in tokens:
        meta["xla"] = False
    if "dali" in tokens:
        meta["dali"] = True
    if {"syn", "synthetic", "synth"} & set(tokens):
        meta["synthetic"] = True
    m = _REPEAT.search(stem)
    if m and not _BATCH.fullmatch(tokens[-1]) and not _GPUS.fullmatch(tokens[-1]):
        meta["repeat"] = int(m.group(1))
    return nodes, gpus, meta
