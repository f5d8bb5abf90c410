"""NGC PyTorch BERT pre-training logs: DeepLearningExamples PyTorch/LanguageModeling/BERT
`run_pretraining.py`'s DLLogger stdout, launched by `scripts/run_pretraining.sh` (phase 1 at sequence
length 128, then phase 2 at 512: two runs in one log where the script runs both).

What a log holds (run_pretraining.py@042e8724 and @e5428044; NGC 20.x to 22.x logs): the `set -x` trace of the
wrapper (`bash scripts/run_pretraining.sh <batch> <lr> <precision> <gpus> ...`, `torch.distributed.launch
--nproc_per_node=N`); `DLL <time> - PARAMETER Config : ["Namespace(...)"]` after setup, whose
`train_batch_size` is already per GPU and per micro-batch (the script divides it by
`gradient_accumulation_steps` first), `fp16`/`amp` the precision, `max_seq_length` and `phase2` the phase;
`DLL <time> - Training Epoch: E Training Iteration: I  average_loss : x  step_loss : x  learning_rate : x`
every `log_freq` optimizer steps (the iteration repeats while the fp16 loss scaler skips steps); `... final_loss :
x` at the last step; and `DLL <time> -  e2e_train_time : x  training_sequences_per_second : x  final_loss : x
raw_train_time : x`, the script's figure: `train_batch_size * gradient_accumulation_steps * world_size * steps /
raw_train_time`. tqdm bars (`Iteration:  30%|...`) share physical lines with the DLL lines, and the multi-node
logs are rank-tagged tails (`mpirun --timestamp-output`) without the Namespace: textio splits and untags them.

The per-step lines log no rate: the end-of-run figure is the run's one rate record (epoch and iteration -1),
read by the `nvidia` rule; the loss records carry the loss curve. This module also holds what both BERT formats
share: the MLM accuracy metric, the sequence length and phase axes (which the BERT models declare), and the
record selections their rules use.
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING

from ...core.config import Axis, Metric
from ...core.measures import THROUGHPUT, TOKENS
from ..rules import NamedRule
from . import scanning
from .dllogger import truthy, values
from .registry import LogFormat, register

if TYPE_CHECKING:
    from ..rules import Run

MLM_ACCURACY = Metric("mlm_accuracy", "MLM accuracy", "%", final=True)
BERT_QUALITY = (MLM_ACCURACY,)
# The BERT models declare these axes and this metric: their modules import them from here (one declaration).
SEQ_LEN = Axis("seq_len", int, "identity", "sequence length", "tokens a sequence (BERT: 128 in phase 1, 512 in "
                                                               "phase 2)")
PHASE = Axis("phase", int, "identity", "phase", "BERT pre-training phase (1 or 2)")
# The longest sequence a BERT model reads is its position embeddings' (max_position_embeddings: 512 in
# NVIDIA/DeepLearningExamples PyTorch/LanguageModeling/BERT/bert_configs/large.json@042e8724, as in
# google-research/bert's configs): a logged length from 1 to MAX_SEQ_LEN is taken, 0 or 10**12 is no run's.
MAX_SEQ_LEN = 1 << 16


def seq_len(text: str) -> int | None:
    """A logged sequence length, where it is one (digits from 1 to MAX_SEQ_LEN)."""
    return int(text) if text.isdigit() and len(text) <= 6 and 1 <= int(text) <= MAX_SEQ_LEN else None


def shown_digits(text: str) -> str:
    """Digits as a warning shows them: a 309-digit number is its first digits and its length."""
    return text if len(text) <= 20 else f"{text[:8]}... ({len(text)} digits)"


def seq_len_note(text: str):
    """A NOTE event for a logged sequence length that is none (0, 10**12), else None."""
    if not text.isdigit() or seq_len(text) is not None:
        return None
    return scanning.NOTE, f"a sequence length of {shown_digits(text)} (not from 1 to {MAX_SEQ_LEN}): left out"


DIVERGED_NOTE = "steps whose loss is NaN or infinite (the run diverged; their records are kept)"


def diverged_note(loss: str | None):
    """A NOTE event for a step whose logged loss is NaN or infinite, else None."""
    value = scanning.number(loss or "")
    return (scanning.NOTE, DIVERGED_NOTE) if value is not None and not math.isfinite(value) else None

_BULK = scanning.BulkRule(
    pattern=rf"DLL (?P<timestamp>{scanning.STAMP}) - Training Epoch: (?P<epoch>{scanning.INT}) Training Iteration: "
            rf"(?P<iteration>{scanning.INT}) +(?:average_loss|final_loss) : (?P<loss>{scanning.NUM})(?!\S)"  # (-inf:
            rf"(?:[^\n]*?learning_rate : (?P<lr>{scanning.NUM}))?[^\n]*",  # _ODD_STEP's) (the rest of the line: _END)
    types={"timestamp": "stamp", "epoch": "int", "iteration": "int", "loss": "float", "lr": "float"},
)
_TUPLE_STEP = re.compile(rf"DLL ({scanning.STAMP}) - \(({scanning.INT}), ({scanning.INT})\) +"
                         rf"(?:average_loss|final_loss) : ({scanning.NUM})")
# A step line the bulk pattern does not read (a loss of `nan`): its record, with the loss as float() reads it.
_ODD_STEP = re.compile(rf"(?m)^DLL ({scanning.STAMP}) - Training Epoch: ({scanning.INT}) Training Iteration: "
                       rf"({scanning.INT}) +(?:average_loss|final_loss) : (\S+)")
# A step line after other text on its physical line: a progress bar (tqdm, no newline) before an mpirun tag,
# which textio leaves in the line (one tag, not at its start): its rank is not known, its record is left out.
_MIDLINE_STEP = re.compile(rf"(?<=[^\n])DLL {scanning.STAMP} - Training Epoch: {scanning.INT} Training Iteration: ")
MIDLINE_NOTE = ("step lines after other text on their physical line (a progress bar before an mpirun tag), "
                "their loss records left out")
# benchbook's CPU BERT workload (workloads/) adds an evaluation on held-out text in the same step form:
# `Training Epoch: E Training Iteration: I  mlm_accuracy : 0.31` (a fraction), one EVAL a line.
_EVAL = re.compile(rf"DLL ({scanning.STAMP}) - Training Epoch: ({scanning.INT}) Training Iteration: ({scanning.INT}) +"
                   rf"mlm_accuracy : ({scanning.NUM})")
_CONFIG = re.compile(rf"DLL ({scanning.STAMP}) - PARAMETER Config : \[[\"']Namespace\(([^\n]*)")  # to `)"]`: _namespace
_NAMESPACE_ITEM = re.compile(r"(\w+)=('[^']*'|\"[^\"]*\"|\[[^\]]*\]|[^,\s]+)")
_PER_GPU = re.compile(rf"DLL {scanning.STAMP} - PARAMETER batch_size_per_gpu : (\d+)")
# The fp16 loss scaler's overflow: the step is skipped and its counter may repeat or go back (21.11 logs
# `Training Iteration: 1` then `0` minutes apart); no new run begins there.
_LOSS_SCALE = re.compile(rf"DLL {scanning.STAMP} - PARAMETER loss_scale : ")
# The end-of-run line: its step `tuple()` printed as nothing by run_pretraining.py's format_step, as `()` by
# DLLogger's own; its keys in any order (`_END_KEY` among them: the handlers look). Every pattern here that
# scans a line for a later key takes the rest of the line and looks in Python: a scan for a key absent
# from a line, or a greedy one backing off to a literal, is retried from each next candidate on the line,
# quadratic in its length (one line of repeated `DLL <date> - a : b ` prefixes: 273 s at 1 MiB; issue 49).
_END = re.compile(rf"DLL ({scanning.STAMP}) - +(?:\(\) +)?(\S+ : [^\n]*)")
_END_KEY = "training_sequences_per_second : "
_WRAPPER = re.compile(r"\+ bash scripts/run_pretraining\.sh ([^\n]*)")
_LAUNCH = re.compile(r"torch(?:\.distributed\.(?:launch|run)|run) ([^\n]*)")  # up to run_pretraining.py: _launch


def _namespace(m: re.Match):
    """The Config PARAMETER: argparse's Namespace after setup_training (per-GPU micro-batch), up to the
    line's last `)"]` (none: no Config line)."""
    rest = m.group(2)
    end = max(rest.rfind(')"]'), rest.rfind(")']"))
    if end < 0:
        return None
    args = {k: v.strip("'\"") for k, v in _NAMESPACE_ITEM.findall(rest[:end])}
    meta: dict = {"params": args, "start_time": m.group(1), "precision": _precision(args)}
    if args.get("device") == "cpu":  # the CPU workload's Namespace (NVIDIA's names no device: its GPUs are CUDA's)
        meta.update(device="cpu", gpus=0, nodes=1, processes=1)
    for key, name in (("train_batch_size", "batch_size"), ("gradient_accumulation_steps", "accumulation")):
        if args.get(key, "").isdigit() and len(args[key]) <= 18:
            meta[name] = int(args[key])
    if seq_len(args.get("max_seq_length", "")) is not None:  # (else said: _config_note)
        meta["seq_len"] = seq_len(args["max_seq_length"])
    if truthy(args.get("phase2")) is not None:
        meta["phase"] = 2 if truthy(args["phase2"]) else 1
    return scanning.RUN_START, meta


def _config_note(m: re.Match):
    """The Config line's sequence length where it is none (0, 10**12), said."""
    found = re.search(r"\bmax_seq_length=(\d+)", m.group(2))
    return seq_len_note(found[1]) if found else None


def _precision(args: dict) -> str:
    """AMP where `--fp16`/`--amp` is on (NVIDIA's flags); else the CPU workload's `precision` (`bf16` autocast);
    else fp32."""
    if truthy(args.get("amp")) or truthy(args.get("fp16")):
        return "amp"
    if args.get("precision") in ("fp32", "bf16"):
        return args["precision"]
    return "bf16" if truthy(args.get("bf16")) else "fp32"


def _eval(m: re.Match):
    return scanning.EVAL, {"epoch": int(m.group(2)), "iteration": int(m.group(3)), "timestamp": m.group(1),
                           "mlm_accuracy": scanning.number(m.group(4))}


def _end(m: re.Match) -> dict:
    kv = {k: scanning.number(v) for k, v in values(m.group(2)).items()}
    return {k: v for k, v in kv.items() if v is not None}


def _end_record(m: re.Match):
    rate = _end(m).get("training_sequences_per_second") if _END_KEY in m.group(2) else None
    return None if rate is None else (scanning.STEP, scanning.step(None, None, m.group(1), rate))


def _end_summary(m: re.Match):
    if _END_KEY not in m.group(2):
        return None
    out = _end(m)
    if "training_sequences_per_second" in out:
        out["throughput"] = out["training_sequences_per_second"]
    return scanning.SUMMARY, out


def _wrapper(m: re.Match):
    """scripts/run_pretraining.sh's arguments: 3rd the precision, 4th the GPUs of the node."""
    args = m.group(1).split()
    meta: dict = {}
    if len(args) > 3 and args[3].isdigit():
        meta["gpus"] = int(args[3])
    if len(args) > 2 and args[2] in ("fp16", "amp", "fp32", "tf32", "bf16"):
        meta["precision"] = "amp" if args[2] in ("fp16", "amp") else args[2]
    return scanning.META, meta


def _launch(m: re.Match):
    """torch.distributed.launch's (torchrun's) processes: one a GPU, on each of its nodes. A launch opens a run (each
    phase of run_pretraining.sh has its own), which the Config line after it joins. Its options are what
    stands before the word that names run_pretraining.py."""
    rest = m.group(1)
    script = rest.find("run_pretraining.py")
    if script < 0:
        return None
    word = script
    while word > 0 and not rest[word - 1].isspace():
        word -= 1
    opts = dict(re.findall(r"--(nproc_per_node|nnodes)[= ](\d+)", rest[:word]))
    if "nproc_per_node" not in opts:
        return None
    return scanning.RUN_START, {"gpus": int(opts["nproc_per_node"]) * int(opts.get("nnodes", 1))}


def _tuple_step(m: re.Match):
    return scanning.STEP, scanning.step(int(m.group(2)), int(m.group(3)), m.group(1), None,
                                        scanning.number(m.group(4)))


_RULES = [
    (_CONFIG, _namespace),
    (_CONFIG, _config_note),
    (_PER_GPU, lambda m: (scanning.META, {"batch_size": int(m.group(1))})),
    (_WRAPPER, _wrapper),
    (_LAUNCH, _launch),
    (_TUPLE_STEP, _tuple_step),
    (_ODD_STEP, lambda m: (scanning.STEP, scanning.step(int(m.group(2)), int(m.group(3)), m.group(1), None,
                                                        scanning.number(m.group(4))))),
    (_ODD_STEP, lambda m: diverged_note(m.group(4))),
    (_MIDLINE_STEP, lambda m: (scanning.NOTE, MIDLINE_NOTE)),
    (_EVAL, _eval),
    (_LOSS_SCALE, lambda m: (scanning.PHASE, None)),
    (_END, _end_record),
    (_END, _end_summary),
]


def sniff(head: str) -> bool:
    """run_pretraining.py's DLLogger lines: its Training Epoch/Iteration steps, its Config or its figure."""
    return "DLL " in head and (" - Training Epoch: " in head or " training_sequences_per_second : " in head
                               or ("PARAMETER Config : " in head and "max_predictions_per_seq=" in head))


def finish(meta: dict, ranks: set) -> dict:
    """The global batch of an optimizer step (GPUs x micro-batch x accumulation) where all are known."""
    gpus, batch, accumulation = meta.get("gpus"), meta.get("batch_size"), meta.get("accumulation")
    if gpus and batch and accumulation:
        return {"global_batch_size": gpus * batch * accumulation}
    return {}


def seq_len_warnings(meta: dict) -> list[str]:
    """What a BERT run's metadata leaves unknown: the phase and sequence length of a log that names neither
    (the multi-node tails), which the analysis does not guess."""
    if meta.get("seq_len") is None and meta.get("phase") is None:
        return ["the log names neither the sequence length nor the phase (no Config line or flag dump): both "
                "unknown"]
    return []


def end_of_run(run: Run):
    """The end-of-run figure's record (epoch and iteration -1)."""
    return (run["iteration"] < 0) & (run["epoch"] < 0)


def per_step(run: Run):
    """The records of logged steps (not the end-of-run figure)."""
    return run["iteration"] >= 0


NVIDIA = NamedRule(
    "nvidia", "last", "no records (the script's own figure)",
    "NVIDIA/DeepLearningExamples PyTorch/LanguageModeling/BERT/run_pretraining.py@042e8724 (__main__: "
    "training_sequences_per_second = train_batch_size * gradient_accumulation_steps * world_size * (steps + "
    "skipped_steps) / raw_train_time, printed once at the end); PaddlePaddle/Perf Bert/OtherReports/PyTorch/"
    "README.md@e7a07c4d prints it", select=end_of_run)


FORMAT = register(
    LogFormat(
        name="ngc_bert_pytorch",
        framework="pytorch",
        model="bert",
        sniff=sniff,
        patterns=_RULES,
        bulk=_BULK,
        rules=(NVIDIA,),
        quality=BERT_QUALITY,
        measures=(THROUGHPUT, TOKENS),  # sequences/s, and tokens/s: each sequence its seq_len tokens
        finish=finish,
        warn=seq_len_warnings,
        opens=(re.compile(r" - PARAMETER Config : \[[\"']Namespace\("),),
        rates_per_step=False,
    )
)
