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
out: Optional[str] = None  # the folder the page's files go to (summary.json, data files; benchbook publish passes "."); None: nowhere

# %%
from benchbook.reports import notebook_params
from benchbook.reports.compare import Comparison, ComparisonPage

# %%
# each parameter typed and checked, a name the parameters cell lacks refused; each source found in the current
# folder, else in the repository (JupyterLab runs this in notebooks/)
p = notebook_params.check_comparison(**notebook_params.given(globals(), notebook_params.ComparisonParameters))
comparison = Comparison(p.sources, p.labels, p.baseline)
page = ComparisonPage(comparison, p.out)
page.show("describe")

# %%
page.show("data")  # on a published page: its tables as CSV and JSON

# %% [markdown]
# ## Configurations in each source
# Median images/s over repeats, per source.

# %%
page.show("table")

# %% [markdown]
# ## Ratios
# Each source's median against the baseline's, for the configurations both measured, with its 95% bootstrap
# interval over the runs; "not told apart" where the interval includes 1.

# %%
page.show("ratios")

# %%
page.show("figure")

# %% [markdown]
# ## What differs
# Environments of the sources' runs (from their run records), most significant first.

# %%
page.show("environment_differences")

# %%
page.finish();  # the page's files (summary.json, data files) where `out` says
