"""LLM pre-training as the field publishes it: Megatron-LM and its forks (Megatron-DeepSpeed, AMD Primus),
NeMo 2 / Megatron-Bridge and torchtitan runs of a decoder language model, read from their logs (the formats of
`logs/parsers/megatron_lm.py`, `nemo2.py`, `torchtitan.py`, whose runs all carry the model name `llm`), measured in
sequences/s, tokens/s/GPU, TFLOP/s/GPU, MFU and step time, and compared with the published tables of
Megatron-Bridge's `docs/performance-summary.md` and torchtitan's `benchmarks/*.md` (`params/references/`).

No study launches these recipes yet (issue 50, part 2: Megatron-Bridge's `scripts/performance`, dgxc-benchmarking's
launchers): a reference names this model, and a study that would launch it is refused by its NGC command, which says
what to do instead.
"""

from __future__ import annotations

from pathlib import Path

from ..core.measures import MFU, STEP_TIME, TFLOPS_PER_GPU, TOKENS_PER_GPU
from ..errors import BenchbookError
from ..logs.parsers.megatron_lm import CONTEXT_PARALLEL, EXPERT_PARALLEL, PIPELINE_PARALLEL, TENSOR_PARALLEL
from ..logs.parsers.ngc_bert_pytorch import SEQ_LEN  # the one sequence length axis, declared with BERT's format
from .spec import ModelSpec, Study, register

ANALYSIS_ONLY = ("LLM pre-training logs are analyzed, not launched, by this benchbook: the publishers' recipes "
                 "(NVIDIA-NeMo/Megatron-Bridge scripts/performance, NVIDIA/dgxc-benchmarking) run under their own "
                 "launchers (issue 50, part 2); give their logs to `benchbook analyze`")


class LlmStudyError(BenchbookError, ValueError):
    """Raised when a study asks benchbook to launch LLM pre-training."""


def ngc_command(study: Study, cfg: dict, run_dir: Path) -> list[str]:
    """No command: see ANALYSIS_ONLY (the error names the study's model and what to do instead)."""
    raise LlmStudyError(f"model {study.model}: {ANALYSIS_ONLY}")


SPEC = register(ModelSpec(
    name="llm_pretraining", framework="pytorch", title="LLM pre-training (Megatron-LM, NeMo / Megatron-Bridge, "
    "torchtitan)", log_names=("megatron", "llm"),
    also_logged_by=("megatron-deepspeed", "primus", "nemo", "torchtitan"), notebook=None, unit="sequences/s",
    ngc_command=ngc_command, ngc_script="scripts/performance (Megatron-Bridge), pretrain_gpt.py (Megatron-LM)",
    dataset="a tokenized corpus in Megatron's indexed format, or mock data", data_layout="megatron_indexed",
    data_name="Megatron indexed dataset", spawns_own_workers=False, ngc_xla="never", ngc_dali=False,
    ngc_synthetic=True, analysis_only=ANALYSIS_ONLY,
    axes=(SEQ_LEN, TENSOR_PARALLEL, PIPELINE_PARALLEL, CONTEXT_PARALLEL, EXPERT_PARALLEL),
    measures=(TOKENS_PER_GPU, TFLOPS_PER_GPU, MFU, STEP_TIME),
))
