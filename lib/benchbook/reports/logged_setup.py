"""What the logs state about how they were produced, for the first screen's set-up line, and where the
rule that recomputes their numbers comes from.

TF1, MXNet 20.12+ and PyTorch ConvNets logs open with a DLLogger `PARAMETER` line (the parsers keep it
as `meta["params"]`), MXNet 19.07 with its `Namespace(...)` arguments, Mask R-CNN ends with its launch
command (`meta["command"]`). `settings` keeps the settings every run shares (what varies between runs is
the grid's rows and columns), named for reading; `rule_source` gives the rule's script as a link.
"""

from __future__ import annotations

import re
import shlex

import pandas as pd

from ..errors import UnknownNameError
from ..logs.parsers import registry

# Settings of the scripts' PARAMETER lines a reader of a throughput table needs, in the order shown (not
# MXNet's `amp`, False in its float16 runs: `dtype` says it).
SETTINGS = {
    "mode": "mode", "num_iter": "iterations", "benchmark_iters": "iterations", "prof": "iterations",
    "iter_unit": "iteration unit", "num_epochs": "epochs", "epochs": "epochs", "warmup_steps": "warm-up steps",
    "use_xla": "XLA", "use_dali": "DALI", "data_backend": "data", "use_tf_amp": "AMP", "dtype": "dtype",
    "data_format": "data format", "memory_format": "memory format", "kv_store": "kv-store",
}
_GITHUB = re.compile(r"^([\w.-]+/[\w.-]+) (\S+?)@([0-9a-f]{7,40})\b")


def _params(meta) -> dict:
    if not isinstance(meta, dict):
        return {}
    params = meta.get("params")
    if isinstance(params, dict):
        return {k: str(v) for k, v in params.items()}
    command = meta.get("command")
    return _flags(command) if isinstance(command, str) else {}


def _flags(command: str) -> dict:
    """A launch command's options (`--total_steps 200`, `--xla`), paths left out."""
    try:
        words = shlex.split(command)
    except ValueError:
        return {}
    out = {}
    for i, word in enumerate(words):
        if not word.startswith("--"):
            continue
        value = words[i + 1] if i + 1 < len(words) and not words[i + 1].startswith("-") else "on"
        if "/" not in value:
            out[word] = value
    return out


def settings(runs: pd.DataFrame) -> list[tuple[str, str]]:
    """(name, value) of the settings every run logged alike; options of a launch command as written."""
    all_params = [_params(m) for m in runs["meta"]] if len(runs) and "meta" in runs else []
    if not all_params or not all(all_params):
        return []
    shared = {k: v for k, v in all_params[0].items() if all(p.get(k) == v for p in all_params[1:])}
    if any(k.startswith("--") for k in shared):
        return [(k, v) for k, v in shared.items() if k.startswith("--")]
    out, seen = [], set()
    for key, name in SETTINGS.items():
        if key in shared and name not in seen and shared[key] not in ("None", "-1", ""):
            seen.add(name)
            out.append((name, {"True": "on", "False": "off"}.get(shared[key], shared[key])))
    return out


def rule_source(runs: pd.DataFrame, rule: str | None) -> tuple[str, str | None]:
    """The script whose arithmetic the rule repeats (repository path@commit, in words) and its address on
    GitHub where the text names one; of the first run's log format."""
    formats = list(dict.fromkeys(runs["format"])) if len(runs) else []
    if not formats:
        return "", None
    try:
        source = registry.get(str(formats[0])).rule(rule).source
    except UnknownNameError:
        return "", None
    found = _GITHUB.match(source)
    url = f"https://github.com/{found[1]}/blob/{found[3]}/{found[2]}" if found else None
    return source, url
