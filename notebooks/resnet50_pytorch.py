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
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # ResNet-50 v1.5 on PyTorch (NGC DeepLearningExamples ConvNets): training throughput

# %% tags=["parameters"]
from typing import Optional  # unset parameters are None (papermill -p NAME None)

study: str = "params/resnet50_pytorch/cpu.yaml"  # study file (params/...): what to run, and the reference to compare with
log_dir: Optional[str] = None  # analysis-only mode: analyze the logs in this folder (`study` is then ignored); nothing is launched
runs_dir: str = "runs"  # folder of study folders (runs/<study name>/<run id>/...)
launch: bool = False  # launch mode: run the study (finishing what is not complete) before the analysis; off unless asked
reference: Optional[str] = None  # published reference (params/references/NAME.yaml); None: the study's own
skip_records: Optional[int] = None  # records to skip as warm-up in every run; None: the log format's documented rule
method: Optional[str] = None  # recompute method (see `benchbook formats`); None: the rule's own
rule: Optional[str] = None  # named throughput rule: nvidia (each format's default) or dlperf; None: nvidia
interactive: Optional[bool] = None  # show the ipywidgets explorer; None: only in a live JupyterLab, never under papermill
summary_path: Optional[str] = None  # where to write the headline numbers as JSON (benchbook publish sets it)

# %%
from benchbook.reports import plots, record_views, views
from benchbook.reports.notebook_params import check, given
from benchbook.reports.report import Report

p = check(**given(globals()))  # each parameter typed and checked; a name the parameters cell lacks is refused

# %%
report = Report(p.study, p.log_dir, p.runs_dir, reference=p.reference,
                rule=p.throughput_rule())
launched = report.launch(quiet=True) if p.launch and report.mode == "launch" else None
views.opening(report)

# %%
views.reproduction_plot(report)

# %% [markdown]
# NVIDIA's ConvNets `main.py` (under `multiproc.py` for several GPUs) logs `train.total_ips` every iteration on
# rank 0: images/s over all GPUs. Its logger averages every iteration of the run, the first ones included, into
# the `Summary:` line and `benchmark.json`, and that mean is benchbook's default (`nvidia`) rule;
# `rule = "perf"` leaves out iterations 1-9, which gives the number PaddlePaddle's reproduction table publishes
# for its V100 1-GPU AMP log.
# With no GPU, the study trains the project's own PyTorch ResNet-50 v1.5 on the CPU (FP32 and bf16 autocast) in
# its own environment, or with the Python that `BENCHBOOK_PYTHON_PYTORCH` names.
#
# Details follow: 1. the set-up that produced the numbers, 2. analysis, 3. reproduction, 4. launch,
# failures and problems. Every number comes from a log line or a run record; the per-run table names
# the file and run of each.

# %%
views.description(report)

# %% [markdown]
# ## 1. Set-up
# In analysis-only mode, what the logs say about the set-up that produced them, beside the published one
# (never this machine's); in launch mode, this machine, whether it can run the study, and repeats that ran on
# different stacks.

# %%
views.setup_used(report)

# %%
views.setup_needed(report)

# %% [markdown]
# ## 2. Analysis
# ### Runs
# One row per run found in the logs: metadata, the value the script reported and the value recomputed by the
# rule above.

# %%
views.runs(report)

# %% [markdown]
# ### Scaling
# Median throughput over repeats; speedup against the 1-GPU median of the same batch and precision, where a
# 1-GPU run was measured (1 process on the CPU; none where no other run is compared with it).

# %%
views.scaling(report)

# %%
views.scaling_plot(report)

# %% [markdown]
# ### Throughput over time
# Every logged iteration of every run; warm-up records shaded, the recomputed value as a line.

# %%
views.throughput_over_time(report)

# %% [markdown]
# ### Repeats
# Each repeat as a point, the median marked: the spread between runs of one configuration.

# %%
views.repeats(report)

# %% [markdown]
# ### Time to train and accuracy
# First evaluation at or above the target top-1, in seconds since the run's first log line (only runs that
# evaluate).

# %%
views.time_to_train(report)

# %% [markdown]
# ### Per-iteration rates
# PyTorch's published mean keeps the first iterations, which run slower than the rest: per run, the first
# iteration's rate beside the median and the mean of all iterations, and the value the rule recomputed. A mean
# well below the median is that start-up cost; `rule = "perf"` leaves iterations 1-9 out.

# %%
record_views.iteration_rates(report)

# %% [markdown]
# ## 3. Reproduction
# Measured against the published numbers, every column; then what differs from the published set-up.

# %%
views.reproduction(report)

# %%
views.differences(report)

# %% [markdown]
# ## 4. Launch, failures and problems
# In launch mode the study runs in a separate process (`benchbook run --resume`), never in this kernel; its run
# records are shown here. Runs that did not complete follow, with the cause and the last log lines, then files
# that could not be analyzed.

# %%
views.launch_status(report)

# %%
views.failures(report)

# %%
views.problems(report)

# %% [markdown]
# ### Explore
# In JupyterLab: pick configurations and the metric, and re-plot.

# %%
plots.explore(report.analysis) if p.interactive else None

# %%
report.save_summary(p.summary_path);
