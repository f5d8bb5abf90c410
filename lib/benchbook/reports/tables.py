"""Tables in the layout of the published reports: a row per GPU count, a column per precision x batch."""

from __future__ import annotations

import pandas as pd


def _column(row: pd.Series, vary_xla: bool) -> str:
    label = f"{str(row['precision']).upper()} bs{row['batch_size']}"
    if vary_xla:  # unknown XLA is said so: never counted as "no XLA"
        label += {True: " XLA", False: " no XLA"}.get(row["xla"], " XLA unknown")
    return label


def published_layout(stats: pd.DataFrame, values: tuple[str, ...] = ("median", "mean", "speedup")) -> pd.DataFrame:
    """Pivot `metrics.aggregate` output: rows (model, nodes, GPUs), columns (precision x batch, statistic).

    When a study mixes XLA on and off, the column label says which; so do separate models.
    """
    if stats.empty:
        return pd.DataFrame()
    vary_xla = stats["xla"].nunique() > 1 or not stats["xla"].isin([True, False]).all()
    data = stats.assign(config=stats.apply(_column, axis=1, vary_xla=vary_xla))
    index = ["model", "nodes", "gpus"] if data["model"].nunique() > 1 else ["nodes", "gpus"]
    if "processes" in data and data["processes"].astype(str).nunique() > data["gpus"].astype(str).nunique():
        index.append("processes")  # CPU runs of 1 and 2 MPI ranks: a row each
    table = data.pivot_table(index=index, columns="config", values=list(values), aggfunc="first", dropna=False)
    table = table.swaplevel(0, 1, axis=1)
    order = [(c, v) for c in sorted(data["config"].unique(), key=_sort_key) for v in values]
    table = table.reindex(columns=pd.MultiIndex.from_tuples(order))
    return table.dropna(how="all")


def _sort_key(label: str):
    precision, _, rest = label.partition(" bs")
    batch = rest.split(" ")[0]
    return (precision != "FP32", precision, int(batch) if batch.isdigit() else 0, label)
