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
from typing import Any

import pandas as pd

from ..errors import UnknownNameError
from ..logs.parsers import registry
from . import configs, display

# What these functions are given: a `reports.report.Report`, whose `reference_differences` calls
# `log_differences` (naming the type here would be an import back up to it).
Report = Any

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


def logs_description(report: Report) -> pd.DataFrame:
    """Analysis-only mode: what the logs say about the set-up that produced them, beside the
    reference's, and "not in the logs" for what they do not say (never this machine's set-up)."""
    runs = report.analysis.runs
    ref = report.reference
    unknown = "not in the logs"
    meta = [m for m in runs["meta"] if isinstance(m, dict)] if len(runs) else []

    def from_meta(*keys) -> str:
        found = sorted({str(m[k]) for m in meta for k in keys if m.get(k) not in (None, "", "None")})
        if len(found) > 2:  # one per run (launch commands): the first, and how many more
            return f"{found[0]} (and {len(found) - 1} more, one per run)"
        return "; ".join(found) if found else unknown

    env = _recorded_environment(report)

    def recorded(value, fallback: str) -> str:
        """A run record's value (records beside the logs), else what the logs said."""
        return f"{value} (run record)" if value not in (None, "", []) and fallback == unknown else fallback

    gpus = configs.gpu_counts(runs)
    frameworks = sorted({str(f) for f in runs["framework"] if isinstance(f, str) and f}) if len(runs) else []
    versions = {k: v if isinstance(v, str) else v.get("version") for k, v in (env.get("frameworks") or {}).items()
                if isinstance(v, str) or (isinstance(v, dict) and v.get("version"))}
    framework_text = (", ".join(frameworks) + " (version not in the logs)" if frameworks else unknown)
    if versions:
        framework_text = ", ".join(f"{k} {v}" for k, v in sorted(versions.items())) + " (run record)"
    starts = [t for t in runs["start_time"] if isinstance(t, int | float) and t == t] if len(runs) else []
    rows = [
        ("GPUs per run", configs.join_counts(gpus) if gpus else unknown,
         f"up to {ref.hardware.gpus_per_node * ref.hardware.nodes} ({ref.hardware.nodes} node(s) x "
         f"{ref.hardware.gpus_per_node})" if ref else "-"),
        ("GPU type", recorded(" + ".join((env.get("gpus") or {}).get("models") or []),
                              from_meta("gpu", "gpu_name", "device")), ref.hardware.gpu if ref else "-"),
        ("container", recorded((env.get("container") or {}).get("image"),
                               from_meta("container", "image", "docker_image")),
         (ref.software.container or ref.software.image or "-") if ref else "-"),
        ("framework", framework_text,
         f"{ref.framework} {ref.software.framework_version or ''}".strip() if ref else "-"),
        ("model code", recorded((env.get("code") or {}).get("commit"), from_meta("code", "commit", "git_commit")),
         f"{ref.software.code or '-'} at {ref.software.commit or 'no commit given'}" if ref else "-"),
        ("launch command", from_meta("command"), "-"),
        ("log format", ", ".join(sorted({str(f) for f in runs["format"]})) if len(runs) else unknown, "-"),
        ("first run started", (display.utc(min(starts)) if report.words.own_runs
          else display.logged_time(min(starts)))
         if starts else unknown, "-"),
    ]
    return pd.DataFrame(rows, columns=["", "in the logs", "published set-up" if ref else "no reference"])


def _recorded_environment(report: Report) -> dict:
    """The environment capture of the first run record beside the logs (a study folder analysed as
    logs); empty when there is none (published logs)."""
    from ..runfolder import records
    if not report.source.is_dir():
        return {}
    for rec in records.find(report.source).values():
        if isinstance(rec.get("environment"), dict):
            return rec["environment"]
    return {}


def log_differences(report: Report) -> pd.DataFrame:
    """Analysis-only: what the logs say that differs from the published set-up; what they do not say
    is listed as not in the logs, never filled in with the analysing machine's set-up."""
    table = logs_description(report)
    lines, unknown = [], []
    for _, row in table.iterrows():
        mine, theirs = row.iloc[1], row.iloc[2]
        if theirs in ("-", "") or row.iloc[0] == "GPUs per run":
            continue
        if "not in the logs" in str(mine):
            unknown.append(str(row.iloc[0]))
        elif str(theirs).lower() not in str(mine).lower():
            lines.append(f"{row.iloc[0]}: {mine} measured vs {theirs} published")
    if unknown:
        lines.append(f"not in the logs, so not compared: {', '.join(unknown)}")
    return pd.DataFrame({"difference": lines})


