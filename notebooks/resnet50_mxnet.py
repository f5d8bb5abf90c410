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

study: str = "params/resnet50_mxnet/cpu.yaml"  # study file (params/...): what to run, and the reference to compare with
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
summary_path: Optional[str] = None  # where to write the headline numbers as JSON (benchbook publish sets it)

# %%
from benchbook.reports.notebook_params import check, given
from benchbook.reports.report import Report
from benchbook.reports.sections import Page
from benchbook.studies import follow

p = check(**given(globals()))  # each parameter typed and checked; a name the parameters cell lacks is refused

# %%
report = Report(p.study, p.log_dir, p.runs_dir, reference=p.reference,
                rule=p.throughput_rule())
if p.launch and report.mode == "launch":  # the study is run (resumed) first; the report reads its folder
    follow.launch(report.study, p.runs_dir, quiet=True)
# one cell per section below, each shown only where it has something to show
page = Page(report, "ResNet-50 v1.5 on MXNet (NGC DeepLearningExamples)", p.summary_path, p.interactive, p.title)

# %%
page.show("opening")

# %%
page.show("reproduction_plot")

# %%
page.show(
    "about",
    rule="NVIDIA's MXNet benchmark.py runs 1 and 8 GPUs in one invocation and prints a summary table "
         "(train.total_ips, a row per GPU count, a column per batch size); every Horovod rank logs its own "
         "lines (newer containers: rank 0 alone, in DLLogger form). The published number is benchmark.py's: "
         "the harmonic mean of the per-epoch rates after the warm-up epoch, and that is benchbook's default "
         "rule.",
    cpu="With no GPU, the study runs the project's own MXNet ResNet-50 v1.5 on the CPU in its own environment "
        "(MXNet 1.9.1 needs numpy < 1.24).")

# %%
page.show("description")

# %%
page.show("setup")

# %%
page.show("setup_needed")

# %% [markdown]
# ## 2. Analysis
# ### Runs
# One row per run found in the logs: metadata, the value the script reported and the value recomputed by the
# rule above.

# %%
page.show("runs")

# %%
page.show("scaling")

# %%
page.show("scaling_plot")

# %% [markdown]
# ### Throughput over time
# Every logged iteration of every run; warm-up records shaded, the recomputed value as a line.

# %%
page.show("throughput_over_time")

# %%
page.show("repeats")

# %%
page.show("time_to_train", heading="Time to train and accuracy",
          intro="First evaluation at or above the target top-1, in seconds since the run's first log line.")

# %%
page.show("epoch_rates", heading="Epoch rates")

# %%
page.show("reproduction")

# %%
page.show("differences")

# %%
page.show("failures")

# %%
page.show("explore")

# %%
report.save_summary(p.summary_path);
