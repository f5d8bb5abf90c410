"""What differs between environments, most significant first, and loading what to compare.

A capture (see `capture/`) is nested and full of things that differ without mattering (when it
was taken, where a version was read from, the topology as text). `view` flattens it into the
fields that matter, with stable dotted keys (`gpus.driver`, `python.packages.numpy`); `diff` and
`drift` compare views and rank each difference by how much it can move throughput: GPU model
first, Python packages and host names last.

`load` accepts, and `benchbook env diff` therefore compares:

- a capture: the JSON of `benchbook env --json` (or of the `capture/` folder run inside a container);
- a run record: a JSON object with the capture under `environment` (the run's `run.json`), or the
  run folder holding `run.json`; `environment` may also be a list of captures, one per host of a
  multi-node run; the record's `config` (batch size, flags) is compared too;
- a study folder: every `run.json` below it; the study's environment is what its runs share, and
  what differs between its runs is its drift. Runs whose record holds no capture (an old record,
  a capture that failed) are skipped and named in `Loaded.problems`.

Every file is read through `studies.records` (the one module that reads run records), so a run folder's
run.json is held to what a run record is (`config` and `status`) here as in `benchbook status`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core import userfiles
from ..errors import BenchbookError
from ..runfolder import records
from . import capture_shape

# Categories in order of significance, each with the keys it covers (regular expressions matched at
# the start of a key). GPU settings (clocks, power limit, topology) come right after model and count:
# like them they describe the hardware and move throughput more than a software version does.
CATEGORIES: list[tuple[str, str]] = [
    ("GPU model", r"gpus\.model$"),
    ("GPU count", r"gpus\.count$"),
    ("GPU settings", r"gpus\.(memory_mib|clock_\w+|power_limit_w|persistence_mode|ecc_mode|topology)$"),
    ("driver", r"gpus\.(driver|cuda_driver)$"),
    ("CUDA", r"cuda\."),
    ("cuDNN", r"cudnn\."),
    ("NCCL", r"nccl\."),
    ("framework", r"frameworks\."),
    ("container", r"container\."),
    ("model code", r"code\."),
    ("batch size", r"config\..*batch"),
    ("flags", r"config\."),
    ("variables", r"variables\."),
    ("CPU", r"system\.cpu\."),
    ("memory", r"system\.memory"),
    ("InfiniBand", r"infiniband\."),
    ("OS", r"system\."),
    ("Python", r"python\.(version|implementation)$"),
    ("Python packages", r"python\.packages\."),
    ("other", r""),
    # Which machine, interpreter path or checkout path: says that two runs ran in different places,
    # not that they ran on something different. Matched before everything else.
    ("identity", r"hostname$|python\.(executable|prefix)$|code\.(path|root)$|gpus\.(uuid|pci_bus_id)$"),
]
_RULES = [(rank, name, re.compile(pattern)) for rank, (name, pattern) in enumerate(CATEGORIES)]
_IDENTITY = _RULES[-1]


def classify(key: str) -> tuple[int, str]:
    """(rank, category) of a view key; a lower rank is a more significant difference."""
    if _IDENTITY[2].match(key):
        return _IDENTITY[0], _IDENTITY[1]
    for rank, name, pattern in _RULES[:-1]:
        if pattern.match(key):
            return rank, name
    raise AssertionError("unreachable: the 'other' category matches every key")


class Varies(tuple):
    """The distinct values a field takes within a group (the runs of a study, the hosts of a run)."""

    def __repr__(self) -> str:
        return f"Varies{tuple(self)!r}"


@dataclass(frozen=True)
class Difference:
    """One field that differs: its key, the value on each side, and how significant it is.

    In `drift`, `a` is the first capture's value, `b` another value, and `where` the positions of
    the captures that have `b`.
    """

    key: str
    a: Any
    b: Any
    rank: int
    category: str
    where: tuple[int, ...] = ()

    def to_json(self) -> dict[str, Any]:
        out = {"key": self.key, "category": self.category, "rank": self.rank, "a": _jsonable(self.a),
               "b": _jsonable(self.b)}
        if self.where:
            out["where"] = list(self.where)
        return out


def _jsonable(value: Any) -> Any:
    if isinstance(value, Varies):
        return {"varies": [_jsonable(v) for v in value]}
    if isinstance(value, tuple):
        return [_jsonable(v) for v in value]
    return value


def describe(value: Any) -> str:
    """A value as a table cell: `absent` for what a machine does not have."""
    if value is None:
        return "absent"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, Varies):
        return "varies: " + " | ".join(describe(v) for v in value)
    if isinstance(value, tuple):
        return ", ".join(describe(v) for v in value)
    return str(value)


# ---------------------------------------------------------------- views


def _same(values: list[Any]) -> Any:
    """One value when all devices agree, else the per-device tuple (a mixed box shows as such)."""
    values = [_freeze(v) for v in values]
    return values[0] if values and all(v == values[0] for v in values) else (tuple(values) if values else None)


def _freeze(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    return value


def _flatten(prefix: str, value: Any, out: dict[str, Any]) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            _flatten(f"{prefix}.{k}", v, out)
    else:
        out[prefix] = _freeze(value)


def _available(section: Any) -> dict[str, Any]:
    return section if isinstance(section, dict) and section.get("available", True) else {}


# Config keys that tell runs apart without configuring anything: the repeat number.
CONFIG_IGNORED = frozenset({"repeat", "run_id"})  # what differs between repeats by design

_DEVICE_FIELDS = ("memory_mib", "clock_max_sm_mhz", "clock_max_mem_mhz", "clock_app_sm_mhz", "clock_app_mem_mhz",
                  "power_limit_w", "persistence_mode", "ecc_mode")


def view(capture: dict[str, Any], config: dict[str, Any] | None = None) -> dict[str, Any]:
    """The comparable fields of a capture (and a run's config), flat, in a fixed order.

    Left out on purpose: `captured_at` and `schema_version`, where each version was read from, the
    topology and patch texts (their summary and hash stand for them), and free memory (never
    recorded). Memory is compared in whole GiB because the kernel's count of usable memory moves
    by a few MiB between kernel versions on the same hardware.
    """
    c = capture
    v: dict[str, Any] = {}
    g = _available(c.get("gpus"))
    devices = g.get("devices") or []
    v["gpus.model"] = _same([d.get("name") for d in devices]) if devices else None
    v["gpus.count"] = g.get("count", len(devices)) if g else 0
    for name in _DEVICE_FIELDS:
        v[f"gpus.{name}"] = _same([d.get(name) for d in devices]) if devices else None
    v["gpus.topology"] = _available(g.get("topology")).get("summary")
    v["gpus.driver"] = g.get("driver")
    v["gpus.cuda_driver"] = g.get("cuda_driver")
    for lib in ("cuda", "cudnn", "nccl"):
        v[f"{lib}.version"] = _available(c.get(lib)).get("version")
    for name, info in sorted(_available(c.get("frameworks")).items()):
        if isinstance(info, dict):
            _flatten(f"frameworks.{name}", info, v)
    container = _available(c.get("container"))
    for name in ("inside", "runtime", "image", "digest", "image_id", "build_id"):
        v[f"container.{name}"] = container.get(name)
    for name, value in sorted((container.get("env") or {}).items()):
        v[f"container.env.{name}"] = value
    code = _available(c.get("code"))
    # Not the count of untracked files: benchmarks that write results into the checkout change it.
    for name in ("repository", "commit", "dirty", "patch_sha256"):
        v[f"code.{name}"] = code.get(name)
    if config:
        _flatten("config", {k: x for k, x in config.items() if k not in CONFIG_IGNORED}, v)
    for name, value in sorted((c.get("variables") or {}).items()):
        v[f"variables.{name}"] = value
    system = _available(c.get("system"))
    for name, value in (system.get("cpu") or {}).items():
        v[f"system.cpu.{name}"] = value
    memory = system.get("memory") or {}
    v["system.memory_gib"] = _gib(memory.get("total_bytes"))
    v["system.memory_limit_gib"] = _gib(memory.get("cgroup_limit_bytes"))
    for dev, info in sorted((_available(c.get("infiniband")).get("devices") or {}).items()):
        for name in ("hca_type", "fw_ver"):
            v[f"infiniband.{dev}.{name}"] = info.get(name)
        for port, state in sorted((info.get("ports") or {}).items()):
            for name, value in state.items():
                v[f"infiniband.{dev}.port{port}.{name}"] = value
    for name in ("os", "kernel", "arch"):
        v[f"system.{name}"] = system.get(name)
    v["system.distro"] = (system.get("distro") or {}).get("pretty")
    python = _available(c.get("python"))
    v["python.version"] = python.get("version")
    v["python.implementation"] = python.get("implementation")
    for name, version in sorted((python.get("packages") or {}).items()):
        v[f"python.packages.{name}"] = version
    v["hostname"] = c.get("hostname")
    v["python.executable"] = python.get("executable")
    v["code.path"] = code.get("path")
    v["gpus.uuid"] = _same([d.get("uuid") for d in devices]) if devices else None
    v["gpus.pci_bus_id"] = _same([d.get("pci_bus_id") for d in devices]) if devices else None
    return v


def _gib(n: Any) -> int | None:
    return round(n / 2**30) if isinstance(n, int | float) else None


def consensus(views: list[dict[str, Any]]) -> dict[str, Any]:
    """One view for a group: each field's shared value, or `Varies` of the values its members have."""
    keys = list(dict.fromkeys(k for v in views for k in v))
    out = {}
    for key in keys:
        values = list(dict.fromkeys(v.get(key) for v in views))
        out[key] = values[0] if len(values) == 1 else Varies(values)
    return out


def _ordered(keys: Iterable[str]) -> list[tuple[str, int, str]]:
    """Keys with (rank, category), most significant first, the view's order kept within a rank."""
    ranked = [(key, *classify(key)) for key in dict.fromkeys(keys)]
    return sorted(ranked, key=lambda item: item[1])


# ---------------------------------------------------------------- loading


@dataclass(frozen=True)
class Entry:
    """One capture to compare: where it came from, the capture, and its run's config if any."""

    label: str
    environment: dict[str, Any]
    config: dict[str, Any] | None = None


@dataclass
class Loaded:
    """A capture, a run record or a study, read by `load`."""

    path: Path
    kind: str  # "capture", "run" or "study"
    entries: list[Entry]
    problems: list[str] = field(default_factory=list)

    def view(self) -> dict[str, Any]:
        """The environment all entries share (`Varies` where they do not)."""
        return consensus([view(e.environment, e.config) for e in self.entries])

    def drift(self) -> list[Difference]:
        """What differs between the environments of the entries (the runs of a study, the hosts of a
        run); their configs are left out: in a study they differ by design (the sweep)."""
        return drift([e.environment for e in self.entries])

    def repeat_drift(self) -> list[tuple[dict[str, Any], list[Entry], list[Difference]]]:
        """(config, entries, drift) for each configuration whose repeats ran on environments that
        differ: the repeats a report should flag."""
        groups: dict[str, list[Entry]] = {}
        for e in self.entries:
            config = {k: v for k, v in (e.config or {}).items() if k not in CONFIG_IGNORED}
            groups.setdefault(json.dumps(config, sort_keys=True, default=str), []).append(e)
        out = []
        for key, group in groups.items():
            differences = drift([e.environment for e in group])
            if differences:
                out.append((json.loads(key), group, differences))
        return out


_EXPECTED = ("expected a capture (`benchbook env --json`), a run record (run.json with `environment`), "
             "a run folder or a study folder")


def _read(path: Path, *, run_record: bool) -> dict[str, Any]:
    """A JSON object through `studies.records`, the one reader of run records: `run_record` when the
    path is a run folder's run.json (a record with `config` and `status`), else any JSON object (a capture,
    or a record named on the command line); the error names the file and says what `load` accepts."""
    try:
        return records.read(path) if run_record else records.read_json(path)
    except records.RecordError as exc:
        raise records.RecordError(f"{exc}; {_EXPECTED}") from None


def _is_capture(obj: Any) -> bool:
    return isinstance(obj, dict) and ("schema_version" in obj or "system" in obj) and "environment" not in obj


def entries(record: Any, label: str, source: Path | str) -> list[Entry]:
    """The captures in a capture or run record (one per host); BenchbookError naming `source` if none, and
    CaptureError naming it and the field when one holds what `view` cannot compare (`capture_shape`)."""
    if _is_capture(record):
        capture_shape.check(record, str(source))
        return [Entry(label, record)]
    if isinstance(record, dict) and "environment" in record:
        env, config = record["environment"], record.get("config")
        config = config if isinstance(config, dict) else None
        if config is not None:
            capture_shape.check(config, str(source), "config", capture_shape.ANY)
        if _is_capture(env):
            capture_shape.check(env, str(source), "environment")
            return [Entry(label, env, config)]
        if isinstance(env, list) and env and all(_is_capture(e) for e in env):
            for i, e in enumerate(env):
                capture_shape.check(e, str(source), f"environment[{i}]")
            return [Entry(f"{label} [{e.get('hostname') or i}]", e, config) for i, e in enumerate(env)]
        error = env.get("capture_error") if isinstance(env, dict) else None
        raise BenchbookError(f"{source}: its `environment` is not a capture nor a list of captures"
                             + (f" (the capture failed: {error})" if error else "")
                             + "; `benchbook env --json` shows what a capture holds")
    raise BenchbookError(f"{source}: not an environment capture (no `schema_version`/`system`) nor a run record "
                         f"(no `environment`); {_EXPECTED}")


def load(path: str | Path) -> Loaded:
    """Read a capture, a run record, a run folder or a study folder (see the module docstring).

    A study's runs without an environment (recorded before captures existed) are skipped and named
    in `problems`; a study where none has one is an error.
    """
    path = Path(path)
    if not path.exists():
        raise BenchbookError(f"{path}: no such file or folder; {_EXPECTED}")
    if path.is_file():
        record = _read(path, run_record=False)
        kind = "capture" if _is_capture(record) else "run"
        return Loaded(path, kind, entries(record, str(path), path))
    if (path / records.RECORD).is_file():
        return Loaded(path, "run", entries(_read(path / records.RECORD, run_record=True), str(path),
                                           path / records.RECORD))
    runs = []
    for root, folders, names in userfiles.walk(path):  # (no recursion: Path.rglob's ends past ~1,000 levels)
        folders[:] = [f for f in folders if not f.startswith(".")]
        runs += [Path(root, records.RECORD)] if records.RECORD in names else []
    runs.sort()
    if not runs:
        raise BenchbookError(f"{path}: no run.json in this folder or below; {_EXPECTED}")
    found, problems = [], []
    for run in runs:
        try:
            found += entries(_read(run, run_record=True), str(run.parent.relative_to(path)), run)
        except BenchbookError as exc:  # one run without a capture must not hide the others' drift
            problems.append(f"skipped: {exc}")
    if not found:
        raise BenchbookError(f"{path}: none of its {len(runs)} run records holds an environment capture "
                             f"({problems[0]})")
    return Loaded(path, "study", found, problems)


# ---------------------------------------------------------------- comparing


def _as_view(x: Any) -> dict[str, Any]:
    if isinstance(x, Loaded):
        return x.view()
    return consensus([view(e.environment, e.config) for e in entries(x, "record", "the record")])


def diff(a: Any, b: Any) -> list[Difference]:
    """What differs between two environments, most significant first.

    `a` and `b` are each a capture, a run record (dict) or what `load` returned; a group (a study,
    a multi-host run) is compared through the values its members share. Run configs are compared
    only when both sides have one.
    """
    va, vb = _as_view(a), _as_view(b)
    if not (_has_config(va) and _has_config(vb)):  # a bare capture has no config to compare with
        va, vb = ({k: x for k, x in v.items() if not k.startswith("config.")} for v in (va, vb))
    out = []
    for key, rank, category in _ordered([*va, *vb]):
        x, y = va.get(key), vb.get(key)
        if not _equal(x, y):
            out.append(Difference(key, x, y, rank, category))
    return out


def _has_config(v: dict[str, Any]) -> bool:
    return any(k.startswith("config.") for k in v)


def _equal(x: Any, y: Any) -> bool:
    if isinstance(x, Varies) or isinstance(y, Varies):
        return isinstance(x, Varies) and isinstance(y, Varies) and set(x) == set(y)
    # 16160 and 16160.0 are the same memory; True and 1 are not the same thing in a capture.
    if isinstance(x, bool) or isinstance(y, bool):
        return x is y
    return x == y


def drift(captures: list[dict[str, Any]], *, identity: bool = False) -> list[Difference]:
    """What differs between captures that should be alike (repeats of one configuration).

    `captures` may also be run records (their configs are compared too, the repeat number aside).
    For each field that is not the same everywhere: one Difference per value other than the first
    capture's, with `where` the positions that have it. Identity fields (host names, GPU UUIDs) are
    left out unless `identity`: repeats on two identical nodes did not drift.
    """
    views = []
    for i, c in enumerate(captures):
        group = entries(c, f"#{i}", f"capture #{i}")
        views.append(consensus([view(e.environment, e.config) for e in group]))
    if len(views) < 2:
        return []
    out = []
    for key, rank, category in _ordered(k for v in views for k in v):
        if category == "identity" and not identity:
            continue
        ref = views[0].get(key)
        others: dict[Any, list[int]] = {}
        for i, v in enumerate(views[1:], start=1):
            value = v.get(key)
            if not _equal(ref, value):
                match = next((o for o in others if _equal(o, value)), value)
                others.setdefault(match, []).append(i)
        out += [Difference(key, ref, value, rank, category, tuple(where)) for value, where in others.items()]
    return out
