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

# %% [markdown]
# # Studies side by side
# Frameworks, machines, containers, or a reproduction against its reference: the same configurations measured
# in several study folders (or folders of logs), compared.

# %% tags=["parameters"]
from typing import Optional  # unset parameters are None (papermill -p NAME None)

sources: str = "runs/resnet50_tf-cpu,runs/resnet50_mxnet-cpu"  # comma-separated study folders or log folders (or a list: benchbook publish passes one)
labels: Optional[str] = None  # comma-separated labels, one per source (or a list); None: the folder names
baseline: int = 0  # index of the source the ratios are taken against
summary_path: Optional[str] = None  # where to write the headline numbers as JSON (benchbook publish sets it)

# %%
from benchbook.reports import display, notebook_params
from benchbook.reports.compare import Comparison

notebook_params.given(globals(), ["sources", "labels", "baseline", "summary_path"])  # refuses a name not among them
# each source found in the current folder, else in the repository (JupyterLab runs this in notebooks/)
comparison = Comparison(notebook_params.located(sources, "sources", "study folders or log folders, comma-separated"),
                        labels, baseline)
display.table(comparison.describe(), empty="no source")

# %%
comparison.data_links(notebook_params.summary_to(summary_path))  # on a published page: its tables as CSV and JSON

# %% [markdown]
# ## Configurations in each source
# Median images/s over repeats, per source.

# %%
display.table(comparison.table(), empty="no configuration measured in any source",
              formats=dict.fromkeys(comparison.labels, 2))

# %% [markdown]
# ## Ratios
# Each source's median against the baseline's, for the configurations both measured, with its 95% bootstrap
# interval over the runs; "not told apart" where the interval includes 1.

# %%
display.table(comparison.ratios(),
              empty="no configuration measured by the baseline and another source",
              formats=dict.fromkeys(comparison.labels, display.significant))

# %%
comparison.figure()

# %% [markdown]
# ## What differs
# Environments of the sources' runs (from their run records), most significant first.

# %%
display.table(comparison.environment_differences(),
              empty="no difference between the sources' run records (or no run records to compare)")

# %%
comparison.save_summary(notebook_params.summary_to(summary_path));
