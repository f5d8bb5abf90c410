"""NGC TensorFlow 2 Mask R-CNN `mask_rcnn_main.py` logs (`[MaskRCNN] INFO    : ...` lines).

Every 5 iterations rank 0 prints a block: `timestamp:`, `iteration:`, `throughput: x samples/sec`
(all GPUs), then losses; the run ends with `Average throughput`, `Total processed steps` and
`Total processing time`, and the test scripts print the launch command (`horovodrun -np N ...
--train_batch_size B [--amp] [--xla]`) after it, so that command describes the run before it.
Logged rates are noisy under Horovod (input stalls of seconds), so the default rule is the median
of the logged rates after the first logged interval, which holds graph building.
"""

from __future__ import annotations

import re

from .. import events as ev
from . import LogFormat, register, scanning

_P = r"\[MaskRCNN\] INFO    : "
_TIMESTAMP = re.compile(_P + r"timestamp: ([0-9.]+)")
_ITERATION = re.compile(_P + r"iteration: (\d+)")
_THROUGHPUT = re.compile(_P + r"throughput: ([0-9.eE+-]+)")
_LOSS = re.compile(_P + r"(Total loss|Learning rate): ([0-9.eE+-]+)")
_AVERAGE = re.compile(_P + r"Average throughput: ([0-9.eE+-]+)")
_TOTALS = re.compile(_P + r"Total process(?:ed steps: (\d+)|ing time: (\d+)h (\d+)m (\d+)s)")
_FEATURE = re.compile(_P + r"\[train\] (AMP|XLA) is activated")
_START = re.compile(_P + r"(?:Horovod successfully initialized|  +Start Training)")
_DONE = re.compile(_P + r"Job finished with status: `SUCCESS`")
# The launch command stands on a line of its own; the leading newline is a literal to skip to.
_COMMAND = re.compile(r"\n((?:horovodrun|mpirun|mpiexec) [^\n]*mask_rcnn_main\.py[^\n]*)")


def _command(m: re.Match):
    cmd = m.group(1).strip()
    meta: dict = {"command": cmd}
    np_ = re.search(r"-np? (\d+)", cmd)
    if np_:
        meta["gpus"] = int(np_.group(1))
    bs = re.search(r"--train_batch_size[ =](\d+)", cmd)
    if bs:
        meta["batch_size"] = int(bs.group(1))
    meta["precision"] = "amp" if re.search(r"--amp\b", cmd) else "fp32"
    meta["xla"] = bool(re.search(r"--xla\b", cmd))
    return ev.TRAILER, meta


def _totals(m: re.Match):
    if m.group(1) is not None:
        return ev.SUMMARY, {"steps": int(m.group(1))}
    h, mi, s = (int(m.group(i)) for i in (2, 3, 4))
    return ev.SUMMARY, {"seconds": h * 3600 + mi * 60 + s}


_RULES = [
    (_START, lambda m: (ev.RUN_START, {})),
    (_FEATURE, lambda m: (ev.META, {"precision": "amp"} if m.group(1) == "AMP" else {"xla": True})),
    (_TIMESTAMP, lambda m: (ev.STEP, ev.step(timestamp=float(m.group(1))))),
    (_ITERATION, lambda m: (ev.FIELD, {"iteration": int(m.group(1))})),
    (_THROUGHPUT, lambda m: (ev.FIELD, {"throughput": float(m.group(1))})),
    (_LOSS, lambda m: (ev.FIELD, {"loss" if m.group(1) == "Total loss" else "lr": float(m.group(2))})),
    (_AVERAGE, lambda m: (ev.SUMMARY, {"throughput": float(m.group(1))})),
    (_TOTALS, _totals),
    (_DONE, lambda m: (ev.END, "Job finished with status: SUCCESS")),
    (_COMMAND, _command),
]


def scan(text: str, first_line: int):
    """Events of a chunk of an NGC TF2 Mask R-CNN log."""
    return scanning.scan(text, first_line, _RULES)


def sniff(head: str) -> bool:
    """The `[MaskRCNN]` logger prefix."""
    return "[MaskRCNN] " in head


def warmup(records: dict, meta: dict):
    """The first logged interval is warm-up: it holds graph building and the first steps."""
    return records["iteration"] <= records["iteration"].min()


def finish(meta: dict, ranks: set) -> dict:
    """Precision is fp32 unless the log or command says AMP; XLA is off unless said."""
    return {"precision": meta.get("precision") or "fp32", "xla": bool(meta.get("xla"))}


FORMAT = register(
    LogFormat(
        name="ngc_tf2_maskrcnn",
        framework="tensorflow2",
        model="maskrcnn",
        sniff=sniff,
        scan=scan,
        method="median",
        warmup="the first logged interval (graph building and first steps)",
        mark_warmup=warmup,
        finish=finish,
        priority=30,
    )
)
