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
interactive: Optional[bool] = None  # show the ipywidgets explorer; None: only in a live JupyterLab, never under papermill
summary_path: Optional[str] = None  # where to write the headline numbers as JSON (benchbook publish sets it)

# %%
from benchbook.reports import page, record_views, views
from benchbook.reports.notebook_params import check, given
from benchbook.reports.report import Report
from benchbook.studies import follow

p = check(**given(globals()))  # each parameter typed and checked; a name the parameters cell lacks is refused

# %%
report = Report(p.study, p.log_dir, p.runs_dir, reference=p.reference,
                rule=p.throughput_rule())
if p.launch and report.mode == "launch":  # the study is run (resumed) first; the report reads its folder
    follow.launch(report.study, p.runs_dir, quiet=True)

# %%
views.together(page.title(report, "Mask R-CNN on TensorFlow 2 (NGC DeepLearningExamples)"),
               *filter(None, [page.navigation(report, p.summary_path)]), views.opening(report))

# %%
views.reproduction_plot(report)

# %%
page.about(
    report,
    rule="NVIDIA's scripts/benchmark_training.py launches horovodrun with XLA and logs [MaskRCNN] INFO blocks "
         "with a throughput per logged interval; the launch command (GPUs, batch, AMP) is printed at the end. "
         "After warmup_steps (100) every logged throughput is a running mean of the steps so far, so the "
         "published number is the last one logged, and that is benchbook's default rule.",
    cpu="With no GPU, the study trains the project's own TensorFlow 2 Mask R-CNN (ResNet-50 FPN, RPN, ROI "
        "Align, box and mask heads) on the CPU on generated images, through the same launcher and report.")

# %%
views.description(report)

# %%
page.section("1. Set-up", views.setup_intro(report), views.setup_used(report))

# %%
views.setup_needed(report)

# %% [markdown]
# ## 2. Analysis
# ### Runs
# One row per run found in the logs: metadata, the value the script reported and the value recomputed by the
# rule above.

# %%
views.runs(report)

# %%
page.section("Scaling", "Speedup against the 1-GPU median of the same batch and precision (1 process on the "
             "CPU), and efficiency: speedup per GPU.", views.scaling(report), level=3)

# %%
views.scaling_plot(report)

# %% [markdown]
# ### Throughput over time
# Every logged iteration of every run; warm-up records shaded, the recomputed value as a line.

# %%
views.throughput_over_time(report)

# %%
page.section("Repeats", "Each repeat as a point, the median marked: the spread between runs of one "
             "configuration.", views.repeats(report), level=3)

# %%
page.section(
    "Loss",
    "Each logged block carries the total loss (Total loss:) beside the throughput: per run, the loss of the first "
    "and last logged interval, and how many intervals logged one. A throughput benchmark only means something if "
    "training went on, and a falling loss says it did.",
    record_views.loss(report), level=3)

# %%
page.section(
    "Loss components",
    "The total loss is the sum of its parts, which the script logs beside it (RPN box loss, RPN score loss, "
    "FastRCNN class loss, FastRCNN box loss, Mask loss, L2 loss and the totals of the RPN and Fast R-CNN heads): "
    "per run, the first and last value of each; then each over the iterations, a colour per configuration. A part "
    "that does not fall points at the head that did not learn.",
    record_views.loss_components(report), level=3)

# %%
page.section(
    "Logged rates and the running mean",
    "Up to step 100 each block logs the rate of its own step; after it, the running mean since step 100. Per run: "
    "the first logged rate, the median and mean of all logged rates, and the last running mean (the rule's value).",
    record_views.iteration_rates(report), level=3)

# %%
page.section("3. Reproduction", "Per published configuration, what the table at the top does not show: the "
             "verdict in words, speedups and how the measured configuration differs; then what differs from the "
             "published set-up.", views.reproduction(report))

# %%
views.differences(report)

# %%
page.section(*views.failures_heading(report), views.failures_and_problems(report))

# %%
page.explore(report, p.interactive)

# %%
report.save_summary(p.summary_path);
