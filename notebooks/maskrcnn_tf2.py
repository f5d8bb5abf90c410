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

study: str = "params/maskrcnn_tf2/cpu.yaml"  # study file (params/...): what to run, and the reference to compare with
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

page = model_page(globals(), "maskrcnn_tf2")  # the parameters checked by type, the report made, its study run where asked

# %%
page.show_all(
    about=dict(
        rule="NVIDIA's scripts/benchmark_training.py launches horovodrun with XLA and logs [MaskRCNN] INFO blocks "
             "with a throughput per logged interval; the launch command (GPUs, batch, AMP) is printed at the end. "
             "After warmup_steps (100) every logged throughput is a running mean of the steps so far, so the "
             "published number is the last one logged, and that is benchbook's default rule.",
        cpu="With no GPU, the study trains the project's own TensorFlow 2 Mask R-CNN (ResNet-50 FPN, RPN, ROI "
            "Align, box and mask heads) on the CPU on generated images, through the same launcher and report."),
    loss=dict(
        heading="Loss",
        intro="Each logged block carries the total loss (Total loss:) beside the throughput: per run, the loss of "
              "the first and last logged interval, and how many intervals logged one. A throughput benchmark only "
              "means something if training went on, and a falling loss says it did."),
    loss_components=dict(
        heading="Loss components",
        intro="The total loss is the sum of its parts, which the script logs beside it (RPN box loss, RPN score "
              "loss, FastRCNN class loss, FastRCNN box loss, Mask loss, L2 loss and the totals of the RPN and Fast "
              "R-CNN heads): per run, the first and last value of each; then each over the iterations, a colour per "
              "configuration. Over a benchmark's few hundred iterations a part may rise before it falls (the "
              "FastRCNN box loss rises early in NGC's published runs, as the proposals it is fitted to change): a "
              "last value above the first is no sign by itself of a head that did not learn."),
    iteration_rates=dict(
        heading="Logged rates and the running mean",
        intro="Up to step 100 each block logs the rate of its own step; after it, the running mean since step 100. "
              "Per run: the first logged rate, the median and mean of all logged rates, and the last running mean "
              "(the rule's value)."),
)

# %%
page.finish();  # the page's files (summary.json, data files, log copies) where `out` says; nothing in JupyterLab
