"""Tables in the layout of the published reports: a row per GPU count, a column per precision x batch."""

from __future__ import annotations

import pandas as pd

from ..core.catalog import default as catalog
from .configs import BATCH, GPUS, NODES, PRECISION, PROCESSES, XLA


def _varying(stats: pd.DataFrame) -> list[str]:
    """The configuration columns the labels must name: those with several values (XLA: or any unknown)."""
    names = ["framework"] if stats["framework"].nunique() > 1 else []
    for name in (f for f in catalog().flags() if f in stats):  # said where they vary (unknown is never "off")
        known = stats[name].isin([True, False])
        if stats[name][known].nunique() > 1 or (not known.all() and (name == XLA or known.any())):
            names.append(name)
    return names


def _column(row: pd.Series, varying: list[str]) -> str:
    label = f"{str(row[PRECISION]).upper()} bs{row[BATCH]}"
    words = catalog().flag_words()
    label += "".join(" " + words[n][row[n] if row[n] in (True, False) else None] for n in varying if n in words)
    return f"{label} ({row['framework']})" if "framework" in varying else label


def published_layout(stats: pd.DataFrame, values: tuple[str, ...] = ("median", "mean", "speedup")) -> pd.DataFrame:
    """Pivot `metrics.aggregate` output: rows (model, nodes, GPUs), columns (precision x batch, statistic).

    When a study mixes XLA on and off (or DALI, or synthetic and real data), the column label says
    which; so do separate models. Unknown XLA is said even alone: it is never "no XLA".
    """
    if stats.empty:
        return pd.DataFrame()
    data = stats.assign(config=stats.apply(_column, axis=1, varying=_varying(stats)))
    index = ["model", NODES, GPUS] if data["model"].nunique() > 1 else [NODES, GPUS]
    if PROCESSES in data and len(data[[GPUS, PROCESSES]].astype(str).drop_duplicates()) > data[GPUS].nunique():
        index.append(PROCESSES)  # CPU runs of 1 and 2 MPI ranks: a row each
    shared = data[data.duplicated([*index, "config"], keep=False)]
    if not shared.empty:  # a cell holds one configuration's numbers, never the first of several
        raise ValueError(f"configurations that differ in {_differing(shared)} share a cell of the published layout")
    table = data.pivot_table(index=index, columns="config", values=list(values), aggfunc="first", dropna=False)
    table = table.swaplevel(0, 1, axis=1)
    order = [(c, v) for c in sorted(data["config"].unique(), key=_sort_key) for v in values]
    table = table.reindex(columns=pd.MultiIndex.from_tuples(order))
    return table.dropna(how="all")


def _differing(rows: pd.DataFrame) -> str:
    return ", ".join(c for c in catalog().identity() if c in rows and rows[c].astype(str).nunique() > 1)


def _sort_key(label: str):
    precision, _, rest = label.partition(" bs")
    batch = rest.split(" ")[0]
    return (precision != "FP32", precision, int(batch) if batch.isdigit() else 0, label)
