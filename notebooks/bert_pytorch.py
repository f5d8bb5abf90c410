# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% tags=["parameters"]
from typing import Optional  # unset parameters are None (papermill -p NAME None)

study: str = "params/bert_pytorch/cpu.yaml"  # study file (params/...): what to run, and the reference to compare with
log_dir: Optional[str] = None  # analysis-only mode: analyze the logs in this folder (`study` is then ignored); nothing is launched
runs_dir: str = "runs"  # folder of study folders (runs/<study name>/<run id>/...)
launch: bool = False  # launch mode: run the study (finishing what is not complete) before the analysis; off unless asked
reference: Optional[str] = None  # published reference (params/references/NAME.yaml); None: the study's own
skip_records: Optional[int] = None  # records to skip as warm-up in every run; None: the log format's documented rule
method: Optional[str] = None  # recompute method (see `benchbook formats`); None: the rule's own
window: Optional[int] = None  # use at most this many records after the warm-up; None: the rule's own
tolerance: Optional[float] = None  # relative gap to the reported value that earns a warning; None: 0.03
rule: Optional[str] = None  # named throughput rule: nvidia (each format's default) or dlperf; None: nvidia
title: Optional[str] = None  # the page's title (benchbook publish gives a published set's); None: the model, what was measured and the logs or study
interactive: Optional[bool] = None  # show the ipywidgets explorer; None: only in a live JupyterLab, never under papermill
out: Optional[str] = None  # the folder the page's files go to (summary.json, data files, log copies; benchbook publish passes "."); None: nowhere

# %%
from benchbook.reports.sections import model_page

page = model_page(globals(), "bert_pytorch")  # the parameters checked by type, the report made, its study run where asked

# %%
page.show_all(
    about=dict(
        rule="NVIDIA's run_pretraining.py (started by scripts/run_pretraining.sh, torch.distributed.launch on the "
             "node's GPUs) logs the loss of every optimizer step and, once at the end, "
             "training_sequences_per_second: the sequences of every GPU, gradient accumulation included, over the "
             "training time it measured (raw_train_time). That printed figure is benchbook's default (nvidia) "
             "rule, and the number PaddlePaddle/Perf's NGC PyTorch BERT table publishes; the per-step lines log no "
             "rate, so there is no other rule to apply.",
        cpu="With no GPU, the study pre-trains the project's own small BERT (2 layers, hidden 64) with "
            "masked-language modelling on the standard library's docstrings, in its own PyTorch environment (or "
            "with the Python that BENCHBOOK_PYTHON_PYTORCH names); it logs in run_pretraining.py's own form, and "
            "adds its MLM accuracy on held-out docstrings."),
    loss=dict(
        heading="MLM loss",
        intro="Per run, the MLM loss of the first and last optimizer steps that logged one (the script's "
              "average_loss, then its final_loss): whether the loss fell."),
    quality_by_step=dict(
        heading="MLM accuracy by step",
        intro="Per run, the masked-language-model accuracy on held-out text (the CPU workload's evaluation: the "
              "fraction of masked tokens predicted right) at each evaluation, against the step it followed; the "
              "untrained model's is step 0. NVIDIA's logs hold no evaluation: the section is left out there."),
)

# %%
page.finish();  # the page's files (summary.json, data files, log copies) where `out` says; nothing in JupyterLab
