"""How a measured set-up differs from a reference's, in words, most significant first (`differences`):
GPU, container, framework and libraries from environment captures or run records, then the run's
configuration against the published rows. Used through `benchbook.reports.references`."""

from __future__ import annotations

import re
from typing import Any

from ..core import config as axes
from ..models.reference_schema import BATCH, FLAGS, GPUS, LOGGED_AS, PRECISION, SYNTHETIC, Reference
from .reference_compare import flag_text

GPU_SECTION = "gpus"  # an environment capture's GPU section (environment.capture), not a configuration's axis

# ------------------------------------------------------------------------------------------- differences


def _captures(environment: Any) -> list[dict]:
    """The captures in what was given: a capture, a run record ({"environment": ...}) or a list."""
    if environment is None:
        return []
    if isinstance(environment, list | tuple):
        return [c for item in environment for c in _captures(item)]
    if not isinstance(environment, dict):
        return []
    inner = environment.get("environment")
    if inner is not None and GPU_SECTION not in environment:
        return _captures(inner)
    return [environment]


def _section(capture: dict, name: str) -> dict | None:
    """A section of a capture: its dict, or None when the capture does not have it."""
    sec = capture.get(name)
    return sec if isinstance(sec, dict) else None


def _norm_gpu(name: str) -> str:
    return re.sub(r"[\s_-]+", "", re.sub(r"^(tesla|nvidia|geforce|quadro)\s+", "", name.strip().lower()))


def _same_gpu(measured: str, published: str) -> bool:
    a, b = _norm_gpu(measured), _norm_gpu(published)
    return bool(a and b) and (a in b or b in a)


def _norm_image(image: str) -> str:
    image = image.strip().lower().split("@", 1)[0]
    return re.sub(r"^(nvcr\.io/|docker\.io/|index\.docker\.io/)", "", image)


def _same_version(measured: Any, published: str) -> bool:
    m, p = str(measured).split("+", 1)[0].strip(), str(published).split("+", 1)[0].strip()
    return m == p or m.startswith(p + ".") or p.startswith(m + ".")


_LIBRARY_LABELS = {"cuda": "CUDA", "cudnn": "cuDNN", "nccl": "NCCL", "dali": "DALI", "horovod": "Horovod"}


def _environment_differences(ref: Reference, caps: list[dict]) -> list[str]:
    out: list[str] = []
    hw, sw = ref.hardware, ref.software
    # GPU model, count, driver
    models: list[str] = []
    counts: list[int] = []
    drivers: list[str] = []
    no_gpu = recorded = False
    for cap in caps:
        gpus = _section(cap, GPU_SECTION)
        if gpus is None:
            continue
        recorded = True
        if gpus.get("available") is False:
            no_gpu = True
            continue
        names = gpus.get("models") or [d.get("name") for d in gpus.get("devices") or [] if isinstance(d, dict)]
        models += [str(n) for n in names if n]
        if axes.as_int(gpus.get("count")) is not None:
            counts.append(axes.as_int(gpus.get("count")))
        if gpus.get("driver"):
            drivers.append(str(gpus["driver"]))
    models = list(dict.fromkeys(models))
    if models:
        if not all(_same_gpu(m, hw.gpu) for m in models):
            out.append(f"GPU: measured on {', '.join(models)} vs published {hw.gpu}")
    elif no_gpu:
        out.append(f"GPU: measured on CPU (no GPU) vs published {hw.gpu}")
    elif not recorded:
        out.append(f"GPU: not recorded vs published {hw.gpu}")
    widest = min(max((getattr(r, GPUS) for r in ref.rows), default=1), hw.gpus_per_node)
    if counts and max(counts) < widest:
        out.append(f"GPU count: {max(counts)} per machine measured vs {hw.gpus_per_node} per node published"
                   + (f" ({hw.nodes} nodes)" if hw.nodes > 1 else ""))
    if hw.driver and drivers and not all(_same_version(d, hw.driver) for d in drivers):
        out.append(f"GPU driver: {', '.join(dict.fromkeys(drivers))} measured vs published {hw.driver}")
    first = caps[0]
    # container
    published_images = [x for x in (sw.container, sw.image) if x]
    if published_images:
        shown = sw.container or sw.image
        cont = _section(first, "container")
        image = cont.get("image") if cont else None
        if cont is None:
            out.append(f"container: not recorded vs published {shown}")
        elif image:
            if not any(_norm_image(str(image)) == _norm_image(p) for p in published_images):
                out.append(f"container: {image} measured vs published {shown}")
        elif cont.get("available") is False or cont.get("inside") is False:
            out.append(f"container: none (not in a container) vs published {shown}")
        else:
            out.append(f"container: image not recorded vs published {shown}")
    # framework and libraries
    frameworks = _section(first, "frameworks") or {}
    fw = ref.framework
    info = frameworks.get(fw) if isinstance(frameworks.get(fw), dict) else None
    wanted = f"{fw} {sw.framework_version}" if sw.framework_version else fw
    if info is None:
        out.append(f"framework: {fw} not found in the measured environment vs published {wanted}")
    elif sw.framework_version and info.get("version") and not _same_version(info["version"], sw.framework_version):
        out.append(f"framework: {fw} {info['version']} measured vs published {sw.framework_version}")
    for name, version in sw.libraries.items():
        sec = _section(first, name) if name in ("cuda", "cudnn", "nccl") else frameworks.get(name)
        got = sec.get("version") if isinstance(sec, dict) else None
        if got and not _same_version(got, version):
            out.append(f"{_LIBRARY_LABELS.get(name, name)}: {got} measured vs published {version}")
    # model code
    if sw.commit:
        code = _section(first, "code") or {}
        commit = code.get("commit")
        if not commit:
            out.append(f"model code: commit not recorded vs published {sw.commit[:12]}")
        elif not (str(commit).startswith(sw.commit) or sw.commit.startswith(str(commit))):
            out.append(f"model code: commit {str(commit)[:12]} measured vs published {sw.commit[:12]}")
        if code.get("dirty"):
            stated = "; ".join(sw.changes) if sw.changes else "none stated"
            out.append(f"model code: local changes on top of the commit (published changes: {stated})")
        elif code.get("dirty") is False and sw.changes:
            out.append(f"model code: no local changes, but the report changed the code ({'; '.join(sw.changes)})")
    return out


def _config_differences(ref: Reference, config: dict) -> list[str]:
    out: list[str] = []
    entries = [*ref.rows, *ref.time_to_train, *ref.accuracy]
    precision = None if axes.missing(config.get(PRECISION)) else str(config[PRECISION]).lower()
    batch, gpus = axes.as_int(config.get(BATCH)), axes.as_int(config.get(GPUS))
    precisions = list(dict.fromkeys(getattr(e, PRECISION) for e in entries))
    if precision and precision not in precisions:
        out.append(f"precision: {precision} measured, not published (published: {', '.join(precisions)})")
    same_precision = [e for e in entries if getattr(e, PRECISION) == precision] or entries
    batches = sorted({getattr(e, BATCH) for e in same_precision})
    if batch is not None and batch not in batches:
        where = f" for {precision}" if precision in precisions else ""
        out.append(f"batch size: {batch} per GPU measured vs published {'/'.join(map(str, batches))}{where}")
    counts = sorted({getattr(e, GPUS) for e in entries})
    if gpus is not None and gpus not in counts:
        out.append(f"GPUs: {gpus} measured, not among the published counts ({', '.join(map(str, counts))})")
    rows = [r for r in ref.rows if getattr(r, PRECISION) == precision and getattr(r, BATCH) == batch] \
        or [r for r in ref.rows if getattr(r, PRECISION) == precision] or list(ref.rows)
    for flag in FLAGS:
        got = axes.as_bool(config.get(flag))
        if got is None and flag == SYNTHETIC and not axes.missing(config.get("data")):
            got = str(config["data"]).lower() == SYNTHETIC  # a study's `data: synthetic`
        published = {getattr(r, flag) for r in rows} - {None}
        if got is not None and published and got not in published:
            out.append(f"{flag}: {flag_text(flag, got)} measured vs "
                       f"{' or '.join(flag_text(flag, v) for v in sorted(published))} published")
    return out


def differences(ref: Reference, environment: dict | list | None = None, config: dict | None = None) -> list[str]:
    """What differs between the published set-up and the measured one, in words, most significant first.

    `environment` is a capture (`benchbook.environment.capture.capture()`, `benchbook env --json`),
    a run record holding one under `environment` (its `config` is used when `config` is not given),
    a list of captures (one per host), or None when nothing was captured. Missing sections and
    fields are tolerated: what cannot be read is reported as not recorded, never raised. `config`
    is a run's configuration (batch_size, precision, gpus, xla, dali, synthetic or data, model).
    Order: model, GPU model, GPU count, driver, container, framework, libraries, model code,
    precision, batch size, GPU count of the run, flags.
    """
    if config is None and isinstance(environment, dict) and isinstance(environment.get("config"), dict):
        config = environment["config"]
    out: list[str] = []
    model = config.get(LOGGED_AS[1]) if config else None
    if not axes.missing(model) and model != ref.model:
        out.append(f"model: {model} measured vs published {ref.model}")
    caps = _captures(environment)
    if caps:
        out += _environment_differences(ref, caps)
    else:
        published = ", ".join(filter(None, [ref.hardware.gpu, ref.software.container or ref.software.image]))
        out.append(f"environment: not captured, so the GPU, container, framework and code cannot be compared "
                   f"with the published set-up ({published})")
    if config:
        out += _config_differences(ref, config)
    return out


