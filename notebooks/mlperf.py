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
out: Optional[str] = None  # the folder the page's files go to (summary.json, data files, result file copies; benchbook publish passes "."); None: nowhere

# %%
from benchbook.mlperf.page import MLPerfPage
from benchbook.mlperf.report import MLPerfReport
from benchbook.reports import notebook_params

# %%
# each parameter typed and checked, a name the parameters cell lacks refused; each path found in the current
# folder, else in the repository (JupyterLab runs this in notebooks/)
p = notebook_params.check_mlperf(**notebook_params.given(globals(), notebook_params.MLPerfParameters))
report = MLPerfReport(p.results, p.benchmark, p.round, p.submitters, p.check, p.expected, title=p.title)
page = MLPerfPage(report, p.out, p.title, p.interactive)

# %%
page.show("opening")

# %%
page.show("scores")

# %%
# Every score beside the one published for it: params/references/mlperf/, else the set's expected.yaml
page.show("against_published")

# %% [markdown]
# ## The round by benchmark
# Every result, by round and benchmark, fastest first; in a live notebook, choose a benchmark, an accelerator
# or a division (`results` may be a whole clone, `training_results_v4.1`, or several rounds, comma-separated).

# %%
page.show("round")

# %% [markdown]
# ## Best time to train
# Each benchmark's fastest valid result per accelerator count, and per round.

# %%
page.show("best_plot")

# %%
page.show("best_by_round")

# %% [markdown]
# ## Per accelerator
# Minutes times accelerators: what a result costs in accelerator time, fastest first.

# %%
page.show("per_accelerator")

# %% [markdown]
# ## The spread of the runs
# Every run of every result, and what the score did with it: counted, or dropped as the fastest, the slowest,
# or a run that did not converge (which takes a slowest slot).

# %%
page.show("spread")

# %% [markdown]
# ## Convergence
# Accuracy against epoch, a line per run; the round's quality target dashed.

# %%
page.show("curves")

# %% [markdown]
# ## Initialisation
# `init_start` to `init_stop` of each run, outside the time to train.

# %%
page.show("initialisation")

# %%
page.show("checks")  # mlperf-logging's own checks (check=True); nothing where they were not run

# %%
page.finish();  # the page's files (summary.json, data files, result file copies) where `out` says
