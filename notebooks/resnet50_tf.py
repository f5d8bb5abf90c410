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

study: str = "params/resnet50_tf/cpu.yaml"  # study file (params/...): what to run, and the reference to compare with
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

page = model_page(globals(), "resnet50_tf")  # the parameters checked by type, the report made, its study run where asked

# %%
page.show_all(
    about=dict(
        rule="NVIDIA's ConvNets main.py logs one DLLogger line per step with total_ips (images/s over all GPUs); "
             "its summary is the arithmetic mean of those rates from warmup_steps on, and that is the default "
             "(nvidia) rule benchbook recomputes with.",
        dlperf="The DLPerf tables (rule dlperf) round each rate to 2 decimals, skip the first 20 iterations, average "
               "the next 100 and report the median of 5 runs; speedup is against the 1-GPU median of the same batch "
               "and precision.",
        cpu="With no GPU, the study runs the project's own TensorFlow ResNet-50 v1.5 on the CPU, through the same "
            "launcher, logs, parsers and report."),
    time_to_train=dict(
        heading="Time to train and top-1",
        intro="TF1 ConvNets runs in train_and_evaluate mode evaluate top-1 as they train (the ngc_time_to_train "
              "study: 120 epochs on one GPU, AMP, batch 256, to the published 76.10%; cpu_time_to_train on the "
              "CPU). Time to train is the first evaluation at or above the target top-1, in seconds since the run's "
              "first log line; the final top-1 is the last one evaluated."),
)

# %%
page.finish();  # the page's files (summary.json, data files, log copies) where `out` says; nothing in JupyterLab
