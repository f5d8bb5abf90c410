"""A capture's main fields as rows a reader checks first (`benchbook env`, a report's environment section).

Rows hold rich markup (absent parts dimmed with their reason); the values from the capture are escaped.
"""

from __future__ import annotations

from typing import Any

from rich.markup import escape

from ..errors import shown


def _escape(text: str) -> str:
    """A captured value as rich markup that prints as itself: markup escaped, terminal escapes and bidi
    controls shown as `\\x1b` (a host name, a driver string or an environment value can hold anything)."""
    return escape(shown(text))


def _absent(section: dict[str, Any]) -> str:
    return f"[dim]absent: {_escape(str(section.get('reason', 'not recorded')))}[/]"


def _join(*parts: Any) -> str:
    return _escape(", ".join(str(p) for p in parts if p not in (None, "")))


def _count(n: Any, noun: str) -> str:
    return f"{n if n is not None else '?'} {noun}{'' if n == 1 else 's'}"


def summary_rows(record: dict[str, Any]) -> list[tuple[str, str]]:
    """The main fields of a capture as (part, rich markup) rows: what a reader checks first."""
    rows: list[tuple[str, str]] = []
    system = record.get("system") or {}
    if system.get("available"):
        distro = (system.get("distro") or {}).get("pretty")
        rows.append(("OS", _join(distro, f"{system.get('os')} {system.get('kernel')}", system.get("arch"))))
        cpu = system.get("cpu") or {}
        rows.append(("CPU", _join(cpu.get("model"), _count(cpu.get("sockets"), "socket"),
                                  _count(cpu.get("cores"), "core"), _count(cpu.get("threads"), "thread"),
                                  f"{cpu.get('usable_threads')} usable", cpu.get("governor"))))
        memory = system.get("memory") or {}
        total, limit = memory.get("total_bytes"), memory.get("cgroup_limit_bytes")
        rows.append(("memory", _join(f"{total / 2**30:.1f} GiB" if total else "unknown",
                                     f"limit {limit / 2**30:.1f} GiB" if limit else None)))
    else:
        rows.append(("system", _absent(system)))
    rows += _gpu_rows(record.get("gpus") or {})
    for name, label in (("cuda", "CUDA"), ("cudnn", "cuDNN"), ("nccl", "NCCL")):
        section = record.get(name) or {}
        rows.append((label, _escape(str(section.get("version"))) if section.get("available") else _absent(section)))
    rows.append(("frameworks", _frameworks(record.get("frameworks") or {})))
    container = record.get("container") or {}
    if container.get("available"):
        env = container.get("env") or {}
        versions = [f"{k}={v}" for k, v in env.items() if k.startswith("NVIDIA_") and k.endswith("_VERSION")]
        rows.append(("container", _join("inside " + str(container.get("runtime")) if container.get("inside")
                                        else "host", container.get("image"), container.get("digest"),
                                        container.get("build_id") and f"build {container.get('build_id')}",
                                        *versions)))
    else:
        rows.append(("container", _absent(container)))
    python = record.get("python") or {}
    rows.append(("Python", _join(python.get("version"), python.get("executable"),
                                 f"{len(python.get('packages') or {})} packages") if python.get("available")
                 else _absent(python)))
    code = record.get("code") or {}
    if code.get("available"):
        patch = f"local patch in {len(code.get('changed_files') or [])} files" if code.get("dirty") else "clean"
        rows.append(("code", _join(code.get("repository") or code.get("root"),
                                   (code.get("commit") or "no commit")[:12], code.get("branch"), patch)))
    else:
        rows.append(("code", _absent(code)))
    ib = record.get("infiniband") or {}
    if ib.get("available"):
        ports = [f"{dev}/{port} {p.get('state')} {p.get('rate') or ''}".strip()
                 for dev, info in (ib.get("devices") or {}).items() for port, p in (info.get("ports") or {}).items()]
        rows.append(("InfiniBand", _join(*ports)))
    else:
        rows.append(("InfiniBand", _absent(ib)))
    variables = record.get("variables") or {}
    rows.append(("variables", _join(*(f"{k}={v}" for k, v in variables.items())) or "[dim]none set[/]"))
    return rows


def _gpu_rows(gpus: dict[str, Any]) -> list[tuple[str, str]]:
    if not gpus.get("available"):
        return [("GPUs", _absent(gpus))]
    devices = gpus.get("devices") or []
    first = devices[0] if devices else {}
    models = " + ".join(str(m) for m in gpus.get("models") or [])
    clocks = f"max {first.get('clock_max_sm_mhz')}/{first.get('clock_max_mem_mhz')} MHz"
    if first.get("clock_app_sm_mhz"):
        clocks += f", application {first.get('clock_app_sm_mhz')}/{first.get('clock_app_mem_mhz')} MHz"
    rows = [("GPUs", _join(f"{gpus.get('count')} x {models}", f"{first.get('memory_mib')} MiB", clocks,
                           first.get("power_limit_w") and f"{first.get('power_limit_w')} W")),
            ("driver", _join(gpus.get("driver"), gpus.get("cuda_driver") and f"CUDA {gpus.get('cuda_driver')}"))]
    topology = gpus.get("topology") or {}
    rows.append(("topology", _escape(str(topology.get("summary"))) if topology.get("available")
                 else _absent(topology)))
    return rows


def _frameworks(section: dict[str, Any]) -> str:
    if not section.get("available"):
        return _absent(section)
    parts = []
    for name, info in section.items():
        if not isinstance(info, dict):
            continue
        build = [f"{k} {info[k]}" for k in ("cuda", "cudnn", "nccl") if info.get(k)]
        text = f"{name} {info.get('version')}" + (f" ({', '.join(build)})" if build else "")
        if info.get("import_error"):
            text += f" [import failed: {info['import_error']}]"
        parts.append(text)
    return _escape("; ".join(parts))
