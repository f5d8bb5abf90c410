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

study: str = "params/resnet50_pytorch/cpu.yaml"  # study file (params/...): what to run, and the reference to compare with
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

page = model_page(globals(), "resnet50_pytorch")  # the parameters checked by type, the report made, its study run where asked

# %%
page.show_all(
    about=dict(
        rule="NVIDIA's ConvNets main.py (under multiproc.py for several GPUs) logs train.total_ips every iteration "
             "on rank 0: images/s over all GPUs. Its logger averages every iteration of the run, the first ones "
             "included, into the Summary: line and benchmark.json, and that mean is benchbook's default (nvidia) "
             "rule; rule perf leaves out iterations 1-9, which gives the number PaddlePaddle's reproduction table "
             "publishes for its V100 1-GPU AMP log.",
        cpu="With no GPU, the study trains the project's own PyTorch ResNet-50 v1.5 on the CPU (FP32 and bf16 "
            "autocast) in its own environment, or with the Python that BENCHBOOK_PYTHON_PYTORCH names."),
    time_to_train=dict(
        heading="Time to train and accuracy",
        intro="First evaluation at or above the target top-1, in seconds since the run's first log line."),
    iteration_rates=dict(
        heading="Per-iteration rates",
        intro="PyTorch's published mean keeps the first iterations, which run slower than the rest: per run, the "
              "first iteration's rate beside the median and the mean of all iterations, and the value the rule "
              "recomputed. A mean well below the median is that start-up cost; rule perf leaves iterations 1-9 out."),
)

# %%
page.finish();  # the page's files (summary.json, data files, log copies) where `out` says; nothing in JupyterLab
