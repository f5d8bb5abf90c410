"""An accelerator as a reader compares them: vendor and model out of the systems file's free-text
`accelerator_model_name` ("NVIDIA A100-SXM4-40GB (400W)", "tpu-v3", "NVIDIA H100-SXM5-80GB"), the memory its
`accelerator_memory_capacity` says, and the raw name kept beside them. A name no pattern knows keeps its
raw text as the model, the vendor unknown; "N/A", "-" or nothing is no accelerator (a CPU system)."""

from __future__ import annotations

import re

# (pattern, vendor, how the model is written: the match's group 1, upper-cased and spaced as the vendor does).
_FAMILIES = (
    (r"\b(?:tesla\s*|nvidia\s*|geforce\s*)*((?:GB|B|H|A|V|L|T)\d{2,3}[A-Z]?|RTX\s*\d{4}(?:\s*Ti)?|A\d{1,2}0?)\b",
     "NVIDIA"),
    (r"\bTPU[-\s]?(v\d+[a-z]*)", "Google"),
    (r"\b(?:instinct\s*)?(MI\d{3}[A-Z]?)\b", "AMD"),
    (r"\b(Gaudi\s*\d?)", "Intel Habana"),
    (r"\b(Ascend\s*\d+\w*)", "Huawei"),
    (r"\b(IPU[-\s]?\w*|Bow\s*IPU)", "Graphcore"),
)
_NOTHING = {"", "n/a", "na", "-", "none", "null", "cpu"}


def normalise(name: object, memory: object = None) -> dict[str, str | None]:
    """{'vendor', 'model', 'memory', 'raw'} of a systems file's accelerator."""
    raw = None if name is None else str(name).strip()
    out = {"vendor": None, "model": None, "memory": None, "raw": raw}
    if raw is None or raw.lower() in _NOTHING:
        return out
    for pattern, vendor in _FAMILIES:
        m = re.search(pattern, raw, re.IGNORECASE)
        if m:
            out |= {"vendor": vendor, "model": _model(m.group(1), vendor)}
            break
    else:
        out["model"] = raw
    text = None if memory is None else str(memory).strip()
    out["memory"] = text if text and text.lower() not in _NOTHING else None
    return out


def _model(found: str, vendor: str) -> str:
    """One spelling per model: 'TPU v3', 'Gaudi2', 'RTX 4090', 'A100'."""
    model = re.sub(r"\s+", " ", found).strip()
    if vendor == "Google":
        return f"TPU {model.lower()}"
    if vendor == "Intel Habana":
        return model.title().replace(" ", "")
    if vendor == "Huawei":
        return model.title()
    return re.sub(r"RTX\s*", "RTX ", model.upper())


def label(found: dict[str, str | None]) -> str:
    """'NVIDIA A100 (40 GB)', as the table shows it."""
    name = " ".join(x for x in (found["vendor"], found["model"]) if x) or "-"
    return f"{name} ({found['memory']})" if found["memory"] else name
