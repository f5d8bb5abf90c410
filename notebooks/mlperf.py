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

results: str = "examples/published/mlperf/results.tar.xz"  # comma-separated results folders or archives (a clone, a submitter, one result); the default: the shipped set's, read in place
benchmark: Optional[str] = None  # one benchmark (resnet, maskrcnn...); None: every benchmark found
round: Optional[str] = None  # the round (v1.0) where the paths do not say it (training_results_v1.0)
submitters: Optional[str] = None  # comma-separated submitters to show; None: all
check: bool = False  # also run mlperf-logging's compliance and RCP checkers (pip install 'benchbook[mlperf]')
expected: Optional[str] = "examples/published/mlperf/expected.yaml"  # a published set's expected.yaml: each result's published score, to compare with; None: none
interactive: Optional[bool] = None  # the round's table with its filters (ipywidgets); None: only in a live JupyterLab, never under papermill
title: Optional[str] = None  # the page's title (benchbook publish gives a published set's); None: MLPerf Training results
summary_path: Optional[str] = None  # where to write the headline numbers as JSON (benchbook publish sets it)

# %%
from benchbook.mlperf import page
from benchbook.mlperf.report import MLPerfReport
from benchbook.reports import display, notebook_params

notebook_params.given(globals(), ["results", "benchmark", "round", "submitters", "check", "expected", "interactive",
                                  "title", "summary_path"]);  # refuses a name not among them

# %%
# each path found in the current folder, else in the repository (JupyterLab runs this in notebooks/)
report = MLPerfReport(notebook_params.located(results, "results", "MLPerf result folders or archives, comma-separated"),
                      benchmark, round, submitters, check,
                      expected and notebook_params.located(expected, "expected", "a published set's expected.yaml"),
                      title=title)

# %%
page.opening(report, notebook_params.summary_to(summary_path), title, page.ABOUT)

# %%
display.table(report.published(), empty="no result folder", formats={"minutes": 4})

# %%
# Every score beside the one published for it: params/references/mlperf/, else the set's expected.yaml
display.table(report.against_published(),
              empty="no published score of these results in params/references/mlperf/",
              formats={"published": 4, "minutes": 4, "deviation": lambda d: display.signed(100 * d, 4, "%")})

# %% [markdown]
# ## The round by benchmark
# Every result, by round and benchmark, fastest first; in a live notebook, choose a benchmark, an accelerator
# or a division (`results` may be a whole clone, `training_results_v4.1`, or several rounds, comma-separated).

# %%
from benchbook.mlperf import explore

explore.round_view(report.folders, interactive)

# %% [markdown]
# ## Best time to train
# Each benchmark's fastest valid result per accelerator count, and per round.

# %%
explore.best_plot(report.folders) or display.note("no valid result")

# %%
display.table(explore.best(report.folders, "round"), empty="no valid result", formats={"minutes": 4})

# %% [markdown]
# ## Per accelerator
# Minutes times accelerators: what a result costs in accelerator time, fastest first.

# %%
display.table(report.per_accelerator(), empty="no result folder",
              formats={"minutes": 4, "accelerator-minutes": 1})

# %% [markdown]
# ## The spread of the runs
# Every run of every result, and what the score did with it: counted, or dropped as the fastest, the slowest,
# or a run that did not converge (which takes a slowest slot).

# %%
display.table(report.spread(), empty="no run", formats={"minutes": 4})

# %% [markdown]
# ## Convergence
# Accuracy against epoch, a line per run; the round's quality target dashed.

# %%
report.curves() or display.note("no run logged an evaluation")

# %% [markdown]
# ## Initialisation
# `init_start` to `init_stop` of each run, outside the time to train.

# %%
display.table(report.initialisation(), empty="no run logged init_start and init_stop", formats={"seconds": 1})

# %%
report.checks_section()  # mlperf-logging's own checks (check=True); nothing where they were not run

# %%
report.save_summary(notebook_params.summary_to(summary_path));
