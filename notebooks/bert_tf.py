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

study: str = "params/bert_tf/ngc.yaml"  # study file (params/...): what to run, and the reference to compare with
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

page = model_page(globals(), "bert_tf")  # the parameters checked by type, the report made, its study run where asked

# %%
page.show_all(
    about=dict(
        rule="NVIDIA's TensorFlow 1 run_pretraining.py (started by scripts/run_pretraining_lamb.sh, one Horovod "
             "process a GPU) logs throughput_train on rank 0 every logged step: sequences/s over all GPUs, "
             "gradient accumulation included; at the end its hook prints 'Throughput Average (sentences/sec)', its "
             "own figure (rule nvidia). PaddlePaddle/Perf's tables changed rule from release to release: the mean "
             "of every logged record, warm-up included (rule perf, its 2023 tables), or the mean from the first "
             "'Iteration: 3' (rule perf_from_3); rule steady is benchbook's window from iteration 10, no "
             "publisher's. Its 32-GPU cells follow no rule exactly: the reference's notes give how far each lands.",
        cpu="No CPU runtime: the CPU BERT study is PyTorch's (notebooks/bert_pytorch); this notebook reads NGC "
            "TensorFlow logs (log_dir) or the runs of an NGC study."),
    iteration_rates=dict(
        heading="Per-step rates",
        intro="The perf rule averages every logged step, the loss scaler's repeated first steps and the slow first "
              "ones included: per run, the first step's rate beside the median and the mean of all steps, and the "
              "value the rule recomputed."),
    loss=dict(
        heading="Total loss",
        intro="Per run, the total_loss of the first and last logged steps (MLM and next-sentence losses): whether "
              "the loss fell."),
    quality_by_step=dict(
        heading="Masked LM accuracy at evaluations",
        intro="Per run, the masked_lm_accuracy of each evaluation (a run with do_eval) against the step it "
              "followed; left out where the logs hold none, as the benchmark runs'."),
)

# %%
page.finish();  # the page's files (summary.json, data files, log copies) where `out` says; nothing in JupyterLab
