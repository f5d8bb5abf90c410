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
from .ngc_bert_pytorch import BERT_QUALITY, diverged_note, end_of_run, per_step, seq_len, seq_len_note, seq_len_warnings
from .ngc_bert_pytorch import finish as global_batch
from .registry import LogFormat, register

if TYPE_CHECKING:
    from ..rules import Run

# Releases whose hook logs on every rank add `Rank : N` (run_pretraining.py@23a6382c): rank 0's records are
# read, the others (the same global rate, as each rank timed its step) are left out, said among the warnings.
# A step whose total_loss is NaN or infinite is no bulk record: `_ODD_STEP` reads its rate and `_LOSS_LINE`
# says the run diverged. (The `DLL ` that begins a record is at a line's start, told by the character before it:
# the look ahead for such a loss is made once a line, not once each candidate on a long one.)
_BULK = scanning.BulkRule(
    pattern=rf"DLL (?<![^\n]DLL )(?P<timestamp>{scanning.STAMP}) - Iteration: (?P<iteration>{scanning.INT}) +"
            r"(?![^\n]*total_loss : [-+]?(?i:nan|inf))(?:Rank : 0 +)?"
            rf"throughput_train : (?P<throughput>{scanning.NUM})"
            rf"(?:[^\n]*?total_loss : (?P<loss>{scanning.NUM}))?(?:[^\n]*?learning_rate : (?P<lr>{scanning.NUM}))?"
            r"[^\n]*",  # (the rest of the line: a scan for a later key is then made once a line, not once a candidate)
    types={"timestamp": "stamp", "iteration": "int", "throughput": "float", "loss": "float", "lr": "float"},
)
_OTHER_RANK = re.compile(rf"DLL {scanning.STAMP} - Iteration: {scanning.INT} +Rank : [1-9]")
OTHER_RANK_NOTE = "records of ranks other than 0 (`Rank : N`, each the global rate as that rank timed it), left out"
# Older DLLogger step formats print the step as a tuple: `DLL <time> - (N) throughput_train : X`.
_TUPLE_STEP = re.compile(rf"DLL ({scanning.STAMP}) - \(({scanning.INT})\) +throughput_train : ({scanning.NUM})"
                         rf"(?:[^\n]*?total_loss : ({scanning.NUM}))?[^\n]*")
# A step line the bulk pattern does not read (a rate of `nan`, `inf`): its record, read without a rate.
_ODD_STEP = re.compile(rf"(?m)^DLL ({scanning.STAMP}) - Iteration: ({scanning.INT}) +(?:Rank : 0 +)?"
                       r"throughput_train : (\S+)")
_LOSS_LINE = re.compile(rf"DLL {scanning.STAMP} - (?:Iteration: {scanning.INT}|\({scanning.INT}\)) ([^\n]*)")
_TOTAL_LOSS = re.compile(r"total_loss : (\S+)")
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
# The line's last masked_lm_accuracy, found by `_eval` in the rest of the line (a greedy `[^\n]*` backing off to
# the key is retried from each next candidate of a line that lacks it: quadratic in the line's length).
_EVAL = re.compile(r"INFO:tensorflow:Saving dict for global step (\d+): ([^\n]*)")
_ACCURACY = re.compile(rf"masked_lm_accuracy = ({scanning.NUM})")


def _eval(m: re.Match):
    rest, found = m.group(2), None
    at = rest.rfind("masked_lm_accuracy = ")
    while at >= 0 and not (found := _ACCURACY.match(rest, at)):  # (the last one a number follows)
        at = rest.rfind("masked_lm_accuracy = ", 0, at)
    if found is None:
        return None
    return scanning.EVAL, {"epoch": None, "iteration": int(m.group(1)), "mlm_accuracy": scanning.number(found[1])}


# The precisions scripts/run_pretraining_lamb.sh takes (its 6th argument: fp16 turns --amp on, fp32 off,
# NVIDIA/DeepLearningExamples TensorFlow/LanguageModeling/BERT/scripts/run_pretraining_lamb_phase1.sh@23a6382c),
# and the names benchbook's other formats read; any other word is said, not taken.
_PRECISIONS = ("fp16", "amp", "fp32", "tf32", "bf16", "manual_fp16")


def _wrapper(m: re.Match):
    """The launch script's arguments (phase 1's batch, accumulation; precision, XLA, GPUs)."""
    values = dict(zip(_WRAPPER_ARGS, m.group(1).split(), strict=False))
    precision = values.get("precision")
    meta: dict = {"precision": "amp" if precision in ("fp16", "amp") else "fp16" if precision == "manual_fp16"
                  else precision if precision in _PRECISIONS else None, "xla": truthy(values.get("xla"))}
    for key in ("batch_size", "gpus", "accumulation"):
        if values.get(key, "").isdigit() and len(values[key]) <= 18:
            meta[key] = int(values[key])
    return scanning.META, {k: v for k, v in meta.items() if v is not None}


def _wrapper_note(m: re.Match):
    """A precision the launch script does not take, said."""
    precision = dict(zip(_WRAPPER_ARGS, m.group(1).split(), strict=False)).get("precision")
    if precision is None or precision in _PRECISIONS:
        return None
    return scanning.NOTE, (f"a precision no launch script takes ({ascii(precision[:40])}, run_pretraining_lamb.sh's "
                           f"6th argument; expected one of {', '.join(_PRECISIONS)}): left out")


def _loss_note(m: re.Match):
    """A step line whose total_loss is NaN or infinite: the run diverged."""
    found = _TOTAL_LOSS.search(m.group(1))
    return diverged_note(found[1]) if found else None


def _flag(m: re.Match):
    """Rank 0's flag dump (absl): sequence length, per-GPU batch, accumulation, precision, XLA, phase."""
    key, value = m.group(1), m.group(2).strip()
    if key == "max_seq_length":  # (one that is none, 0 or 10**12, said: _flag_note)
        return (scanning.META, {"seq_len": seq_len(value)}) if seq_len(value) is not None else None
    if key in ("train_batch_size", "num_accumulation_steps") and value.isdigit() and len(value) <= 18:
        return scanning.META, {"batch_size" if key == "train_batch_size" else "accumulation": int(value)}
    if key in ("amp", "use_fp16") and truthy(value) is not None:  # automatic mixed precision (TF-AMP)
        return scanning.META, {"precision": "amp"} if truthy(value) else {"amp_off": True}
    if key == "manual_fp16" and truthy(value):  # the model cast to fp16 by hand (@23a6382c's --manual_fp16)
        return scanning.META, {"precision": "fp16"}
    if key == "use_xla" and truthy(value) is not None:
        return scanning.META, {"xla": truthy(value)}
    if key == "output_dir" and (phase := re.search(r"/phase_(\d)$", value)):
        return scanning.META, {"phase": int(phase.group(1))}
    return None


def _shape(m: re.Match):
    """The input's shape: the per-GPU batch and the sequence length (where it is one)."""
    meta = {"batch_size": int(m.group(1))} if len(m.group(1)) <= 18 else {}
    if seq_len(m.group(2)) is not None:
        meta["seq_len"] = seq_len(m.group(2))
    return scanning.META, meta


def _tuple_step(m: re.Match):
    loss = m.group(4)
    return scanning.STEP, scanning.step(None, int(m.group(2)), m.group(1), scanning.number(m.group(3)),
                                        scanning.number(loss) if loss else None)


_RULES = [
    (_START, lambda m: (scanning.RUN_START, {})),
    (_WRAPPER, _wrapper),
    (_WRAPPER, _wrapper_note),
    (_FLAG, _flag),
    (_FLAG, lambda m: seq_len_note(m.group(2).strip()) if m.group(1) == "max_seq_length" else None),
    (_SHAPE, _shape),
    (_SHAPE, lambda m: seq_len_note(m.group(2))),
    (_LOSS_LINE, _loss_note),
    (_PHASE_DIR, lambda m: (scanning.META, {"phase": int(m.group(1))})),
    (_TUPLE_STEP, _tuple_step),
    (_OTHER_RANK, lambda m: (scanning.NOTE, OTHER_RANK_NOTE)),
    (_ODD_STEP, lambda m: (scanning.STEP, scanning.step(None, int(m.group(2)), m.group(1),
                                                        scanning.number(m.group(3))))),
    (_END_RATE, lambda m: (scanning.STEP, scanning.step(None, None, m.group(1), scanning.number(m.group(2))))),
    (_END_RATE, lambda m: (scanning.SUMMARY, {"throughput": scanning.number(m.group(2))})),
    (_END_LOSS, lambda m: (scanning.SUMMARY, {"final_loss": scanning.number(m.group(2))})),
    (_AVERAGE, lambda m: (scanning.SUMMARY, {"throughput_average": scanning.number(m.group(1))})),
    (_EVAL, _eval),
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
