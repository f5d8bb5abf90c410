"""NGC TensorFlow 2 Mask R-CNN `mask_rcnn_main.py` logs (`[MaskRCNN] INFO    : ...` lines).

Every 5 iterations rank 0 prints a block: `timestamp:`, `iteration:`, `throughput: x samples/sec`
(all GPUs), then losses; the run ends with `Average throughput`, `Total processed steps` and
`Total processing time`, and the test scripts print the launch command (`horovodrun -np N ...
--train_batch_size B [--amp] [--xla]`) after it, so that command describes the run before it.
The logging hook (`AutoLoggingHook`, warmup_steps=100) prints the rate of the logging step itself
up to step 100; past it, every `throughput:` is the running mean (a moving-average meter, window
1000) of the steps since 100 that did not log, and `Average throughput` is that meter's last value.
So the default (`nvidia`) rule is the last logged rate after step 100: the meter as last printed.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ..rules import NamedRule
from . import scanning
from .registry import LogFormat, register

if TYPE_CHECKING:  # a rule reads one run; the analysis imports run.py, listing the formats does not
    from ..rules import Run

# Every line begins with `[MaskRCNN] INFO    : `. A logged block is `name: number` lines: its
# `timestamp:` line opens a record, the others add to it (whatever lines come in between), and the
# loss components it prints after its throughput (`FastRCNN box loss: 0.52801`, `L2 loss`,
# `Mask loss`, `RPN total loss`..., whatever their names; `Total loss` is the record's loss) are the
# losses frame. One split reads them all.
_BULK = scanning.BulkRule(
    values=re.compile(r"(\[MaskRCNN\] INFO    : (timestamp|iteration|throughput|Total loss|Learning rate"
                      r"|[A-Za-z0-9 ]+ loss): ([0-9.eE+-]+))"),
    opens="timestamp",
    fields=(("timestamp", "timestamp"), ("iteration", "iteration"), ("throughput", "throughput"),
            ("Total loss", "loss"), ("Learning rate", "lr")),
)
# Every other line that means something, in one pattern.
_INFO = re.compile(r"\[MaskRCNN\] INFO    : (?:(Horovod successfully initialized|  +Start Training)"
                   r"|\[train\] (AMP|XLA) is activated|Average throughput: ([0-9.eE+-]+)"
                   r"|Total process(?:ed steps: (\d+)|ing time: (\d+)h (\d+)m (\d+)s)"
                   r"|(Job finished with status: `SUCCESS`))")
# The launch command stands on a line of its own, after the run.
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
    return scanning.TRAILER, meta


def _info(m: re.Match):
    start, feature, average, steps, h, mi, sec, _ = m.groups()
    if start is not None:
        return scanning.RUN_START, {}
    if feature is not None:
        return scanning.META, {"precision": "amp"} if feature == "AMP" else {"xla": True}
    if average is not None and float(average) < 0:  # the hook's "nothing measured" (see `warn`)
        return scanning.META, {"average_throughput": float(average)}
    if average is not None:
        return scanning.SUMMARY, {"throughput": float(average)}
    if steps is not None:
        return scanning.SUMMARY, {"steps": int(steps)}
    if h is not None:
        return scanning.SUMMARY, {"seconds": int(h) * 3600 + int(mi) * 60 + int(sec)}
    return scanning.END, "Job finished with status: SUCCESS"


_RULES = [
    (_INFO, _info),
    (_COMMAND, _command),
]


def sniff(head: str) -> bool:
    """The `[MaskRCNN]` logger prefix."""
    return "[MaskRCNN] " in head


WARMUP_STEPS = 100  # distributed_executer.py: AutoLoggingHook(..., warmup_steps=100)
_SOURCE = ("NVIDIA/DeepLearningExamples TensorFlow2/Segmentation/MaskRCNN/mask_rcnn/hooks/logging_hook.py@e5428044 "
           "(MovingAverageMeter after warmup_steps) and mask_rcnn/distributed_executer.py@93578b88 (warmup_steps=100)")


def warmup(run: Run):
    """Records at or before step 100: rates of one step, before the hook's running mean starts."""
    return run["iteration"] <= WARMUP_STEPS


def warn(meta: dict) -> list[str]:
    """logging_hook.py@e5428044 prints `Average throughput: -1` when its meter read nothing
    (`except ValueError: avg_throughput = -1`): no step after warmup_steps was measured."""
    if meta.get("average_throughput") is None:
        return []
    return [f"the log's Average throughput is {meta['average_throughput']:g}: the logging hook measured no step "
            f"after its warmup_steps ({WARMUP_STEPS}), so the run reports no throughput"]


def finish(meta: dict, ranks: set) -> dict:
    """Precision is fp32 unless the log or command says AMP; XLA is off unless said."""
    return {"precision": meta.get("precision") or "fp32", "xla": bool(meta.get("xla"))}


NVIDIA = NamedRule(
    "nvidia", "last", f"records at or before step {WARMUP_STEPS} (the hook's warmup_steps: one step's rate each)",
    _SOURCE, mark_warmup=warmup)


FORMAT = register(
    LogFormat(
        name="ngc_tf2_maskrcnn",
        framework="tensorflow2",
        model="maskrcnn",
        sniff=sniff,
        patterns=_RULES,
        bulk=_BULK,
        rules=(NVIDIA,),
        finish=finish,
        warn=warn,
        opens=(re.compile(r"\[MaskRCNN\] INFO    : (?:Horovod successfully initialized|  +Start Training)"),),
    )
)
