"""NGC TensorFlow 1 BERT pre-training logs: DeepLearningExamples TensorFlow/LanguageModeling/BERT
`run_pretraining.py` under Horovod, launched by `scripts/run_pretraining_lamb.sh` (phase 1 at sequence
length 128, then phase 2 at 512 where the script runs it: two runs in one log).

What a log holds (DLE@e2bef9b7 scripts, NGC 20.06-tf1 logs): the `set -x` trace of the wrapper
(`bash scripts/run_pretraining_lamb.sh <batch1> <batch2> <eval batch> <lr1> <lr2> <precision> <xla> <gpus>
...`); absl/glog lines of every rank (`INFO:tensorflow:***** Running training *****`, rank 0's flag dump
`INFO:tensorflow:  max_seq_length: 128`, `  name = input_ids, shape = (batch, seq_len)`); rank 0's DLLogger
line a logged step, `DLL <time> - Iteration: N  throughput_train : X sequences/s ... total_loss : ...`
(`seq/s` in other releases; `Iteration: 1` repeats while the loss scaler backs off); at the end
`Throughput Average (sentences/sec) = X` (glog) and `DLL <time> -  throughput_train : X sequences/s`
(the same number, DLLogger); an evaluation's `masked_lm_accuracy`. Under `mpirun --timestamp-output` the
lines are rank-tagged (textio takes the tags off). `throughput_train` is the global rate: every GPU's
sequences of one optimizer step over its time.

The end-of-run figure is a record too (epoch and iteration -1), so that the `nvidia` rule reads it;
the other rules read the per-step records only. A published set names its rule (PaddlePaddle/Perf's
tables changed rule from release to release).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import numpy as np

from ...core.measures import THROUGHPUT, TOKENS
from ..rules import NamedRule
from . import scanning
from .dllogger import truthy
from .ngc_bert_pytorch import BERT_QUALITY, end_of_run, per_step, seq_len_warnings
from .ngc_bert_pytorch import finish as global_batch
from .registry import LogFormat, register

if TYPE_CHECKING:
    from ..rules import Run

# Releases whose hook logs on every rank add `Rank : N` (run_pretraining.py@23a6382c): rank 0's records are
# read, the others (the same global rate, as each rank timed its step) are left out, said among the warnings.
_BULK = scanning.BulkRule(
    pattern=rf"DLL (?P<timestamp>{scanning.STAMP}) - Iteration: (?P<iteration>{scanning.INT}) +(?:Rank : 0 +)?"
            rf"throughput_train : (?P<throughput>{scanning.NUM})"
            rf"(?:[^\n]*?total_loss : (?P<loss>{scanning.NUM}))?(?:[^\n]*?learning_rate : (?P<lr>{scanning.NUM}))?",
    types={"timestamp": "stamp", "iteration": "int", "throughput": "float", "loss": "float", "lr": "float"},
)
_OTHER_RANK = re.compile(rf"DLL {scanning.STAMP} - Iteration: {scanning.INT} +Rank : [1-9]")
OTHER_RANK_NOTE = "records of ranks other than 0 (`Rank : N`, each the global rate as that rank timed it), left out"
# Older DLLogger step formats print the step as a tuple: `DLL <time> - (N) throughput_train : X`.
_TUPLE_STEP = re.compile(rf"DLL ({scanning.STAMP}) - \(({scanning.INT})\) +throughput_train : ({scanning.NUM})"
                         rf"(?:[^\n]*?total_loss : ({scanning.NUM}))?")
# A step line the bulk pattern does not read (a rate of `nan`, `inf`): its record, read without a rate.
_ODD_STEP = re.compile(rf"(?m)^DLL ({scanning.STAMP}) - Iteration: ({scanning.INT}) +(?:Rank : 0 +)?"
                       r"throughput_train : (\S+)")
_END_RATE = re.compile(rf"DLL ({scanning.STAMP}) - +(?:\(\) +)?throughput_train : ({scanning.NUM})")
_END_LOSS = re.compile(rf"DLL ({scanning.STAMP}) - +(?:\(\) +)?total_loss : ({scanning.NUM})")
_AVERAGE = re.compile(rf"INFO:tensorflow:Throughput Average \(sentences/sec\) = ({scanning.NUM})\n")
_START = re.compile(r"INFO:tensorflow:\*\*\*\*\* Running training \*\*\*\*\*")
# scripts/run_pretraining_lamb.sh's positional arguments, as the `set -x` trace shows them.
_WRAPPER = re.compile(r"\+ bash scripts/run_pretraining_lamb\.sh ([^\n]*)")
_WRAPPER_ARGS = ("batch_size", "batch_size_phase2", "eval_batch_size", "learning_rate", "learning_rate_phase2",
                 "precision", "xla", "gpus", "warmup_steps", "warmup_steps_phase2", "train_steps", "save_steps",
                 "accumulation", "accumulation_phase2", "bert_model")
_FLAG = re.compile(r"INFO:tensorflow:  (max_seq_length|train_batch_size|num_accumulation_steps|amp|use_fp16|"
                   r"manual_fp16|use_xla|horovod|output_dir): ([^\n]*)")
_SHAPE = re.compile(r"INFO:tensorflow:  name = input_ids, shape = \((\d+), (\d+)\)")
_PHASE_DIR = re.compile(r"INFO:tensorflow:Using config: \{'_model_dir': '[^'\n]*/phase_(\d)'")
_EVAL = re.compile(rf"INFO:tensorflow:Saving dict for global step (\d+): [^\n]*masked_lm_accuracy = ({scanning.NUM})")


def _wrapper(m: re.Match):
    """The launch script's arguments (phase 1's batch, accumulation; precision, XLA, GPUs)."""
    values = dict(zip(_WRAPPER_ARGS, m.group(1).split(), strict=False))
    meta: dict = {"precision": "amp" if values.get("precision") in ("fp16", "amp") else values.get("precision"),
                  "xla": truthy(values.get("xla"))}
    for key in ("batch_size", "gpus", "accumulation"):
        if values.get(key, "").isdigit():
            meta[key] = int(values[key])
    return scanning.META, {k: v for k, v in meta.items() if v is not None}


def _flag(m: re.Match):
    """Rank 0's flag dump (absl): sequence length, per-GPU batch, accumulation, precision, XLA, phase."""
    key, value = m.group(1), m.group(2).strip()
    if key in ("max_seq_length", "train_batch_size", "num_accumulation_steps") and value.isdigit():
        name = {"max_seq_length": "seq_len", "train_batch_size": "batch_size",
                "num_accumulation_steps": "accumulation"}[key]
        return scanning.META, {name: int(value)}
    if key in ("amp", "use_fp16") and truthy(value) is not None:  # automatic mixed precision (TF-AMP)
        return scanning.META, {"precision": "amp"} if truthy(value) else {"amp_off": True}
    if key == "manual_fp16" and truthy(value):  # the model cast to fp16 by hand (@23a6382c's --manual_fp16)
        return scanning.META, {"precision": "fp16"}
    if key == "use_xla" and truthy(value) is not None:
        return scanning.META, {"xla": truthy(value)}
    if key == "output_dir" and (phase := re.search(r"/phase_(\d)$", value)):
        return scanning.META, {"phase": int(phase.group(1))}
    return None


def _tuple_step(m: re.Match):
    loss = m.group(4)
    return scanning.STEP, scanning.step(None, int(m.group(2)), m.group(1), scanning.number(m.group(3)),
                                        scanning.number(loss) if loss else None)


_RULES = [
    (_START, lambda m: (scanning.RUN_START, {})),
    (_WRAPPER, _wrapper),
    (_FLAG, _flag),
    (_SHAPE, lambda m: (scanning.META, {"batch_size": int(m.group(1)), "seq_len": int(m.group(2))})),
    (_PHASE_DIR, lambda m: (scanning.META, {"phase": int(m.group(1))})),
    (_TUPLE_STEP, _tuple_step),
    (_OTHER_RANK, lambda m: (scanning.NOTE, OTHER_RANK_NOTE)),
    (_ODD_STEP, lambda m: (scanning.STEP, scanning.step(None, int(m.group(2)), m.group(1),
                                                        scanning.number(m.group(3))))),
    (_END_RATE, lambda m: (scanning.STEP, scanning.step(None, None, m.group(1), scanning.number(m.group(2))))),
    (_END_RATE, lambda m: (scanning.SUMMARY, {"throughput": scanning.number(m.group(2))})),
    (_END_LOSS, lambda m: (scanning.SUMMARY, {"final_loss": scanning.number(m.group(2))})),
    (_AVERAGE, lambda m: (scanning.SUMMARY, {"throughput_average": scanning.number(m.group(1))})),
    (_EVAL, lambda m: (scanning.EVAL, {"epoch": None, "iteration": int(m.group(1)),
                                       "mlm_accuracy": scanning.number(m.group(2))})),
]


def sniff(head: str) -> bool:
    """Rank 0's DLLogger `throughput_train` records with BERT's losses or unit (other DLE scripts log a
    `throughput_train` too), or the BERT launch script's trace, or a BERT flag."""
    return ("DLL " in head and " throughput_train : " in head
            and (" mlm_loss : " in head or "sequences/s" in head)) or (
        "scripts/run_pretraining_lamb.sh" in head or "  max_predictions_per_seq: " in head)


def finish(meta: dict, ranks: set) -> dict:
    """GPUs from the ranks that logged where the log names none (Horovod: a process a GPU), fp32 where the
    flags turn AMP off and no fp16 on, and the global batch of an optimizer step (GPUs x micro-batch x
    accumulation) where all are known."""
    tagged = {r for r in ranks if r is not None}
    out = {"gpus": len(tagged)} if len(tagged) > 1 and not meta.get("gpus") else {}
    if meta.get("amp_off") and not meta.get("precision"):  # neither AMP nor fp16 by hand
        out["precision"] = "fp32"
    return {**out, **global_batch({**meta, **out}, ranks)}


def _first_iteration_3(run: Run):
    """Records before the first `Iteration: 3` record (the loss scaler's repeats of 1, then 2)."""
    it = run["iteration"]
    at = np.flatnonzero(it >= 3)
    return np.arange(len(it)) < (at[0] if len(at) else len(it))


def _before_iteration_10(run: Run):
    return run["iteration"] < STEADY_FIRST_ITERATION


STEADY_FIRST_ITERATION = 10
_DLE = "NVIDIA/DeepLearningExamples TensorFlow/LanguageModeling/BERT/run_pretraining.py@23a6382c"
_PERF = "PaddlePaddle/Perf Bert/OtherReports/TensorFlow/README.md@e7a07c4d"

NVIDIA = NamedRule(
    "nvidia", "last", "no records (the script's own figure)",
    f"{_DLE} (_LogSessionRunHook: sequences over the time of the steps it keeps, printed at the end as "
    "'Throughput Average (sentences/sec)' and DLL throughput_train)",
    select=end_of_run)
PERF = NamedRule(
    "perf", "mean", "no records (warm-up included)",
    f"{_PERF} results table (2023 logs): the arithmetic mean of every per-iteration throughput_train record, "
    "the loss scaler's repeated 'Iteration: 1' records included; no script is published, the mean gives every "
    "single-node cell to 0.005%", select=per_step)
PERF_FROM_3 = NamedRule(
    "perf_from_3", "mean", "records before the first 'Iteration: 3'",
    f"{_PERF} v2.3 tables: the mean from the first 'Iteration: 3' record to the end (no script is published)",
    mark_warmup=_first_iteration_3, select=per_step)
STEADY = NamedRule(
    "steady", "harmonic", f"records before iteration {STEADY_FIRST_ITERATION}",
    "benchbook's steady state (no publisher's): sequences over the time the per-step rates imply, from "
    f"iteration {STEADY_FIRST_ITERATION} (past the loss scaler's back-off and the first steps, whose times {_DLE}'s "
    "hook itself skips as warm-up overhead)",
    mark_warmup=_before_iteration_10, select=per_step)


FORMAT = register(
    LogFormat(
        name="ngc_bert_tf1",
        framework="tensorflow",
        model="bert",
        sniff=sniff,
        patterns=_RULES,
        bulk=_BULK,
        rules=(NVIDIA, PERF, PERF_FROM_3, STEADY),
        quality=BERT_QUALITY,
        measures=(THROUGHPUT, TOKENS),  # sequences/s, and tokens/s: each sequence its seq_len tokens
        finish=finish,
        warn=seq_len_warnings,
        opens=(re.compile(r"\+ bash scripts/run_pretraining_lamb\.sh "),),
    )
)
