"""A round's results (or several rounds') to explore in the `mlperf` notebook: the table by benchmark,
filters as ipywidgets (benchmark, accelerator, division), each benchmark's best time to train against the
accelerator count, and the best per round. Everything is read from the scored folders (`results.Folder`)."""

from __future__ import annotations

import pandas as pd

from .accelerators import label
from .results import Folder

COLUMNS = ["round", "benchmark", "submitter", "system", "division", "accelerators", "accelerator", "minutes",
           "accelerator-minutes", "valid"]


def round_table(folders: list[Folder]) -> pd.DataFrame:
    """One row per result, by round and benchmark, fastest first; `valid` says why not where it is not."""
    rows = [{"round": f.round, "benchmark": f.benchmark, "submitter": f.submitter, "system": f.system,
             "division": f.division, "accelerators": f.accelerators,
             "accelerator": label({"vendor": f.accelerator_vendor, "model": f.accelerator_model,
                                   "memory": f.accelerator_memory}),
             "minutes": f.score_minutes, "accelerator-minutes": f.accelerator_minutes,
             "valid": "yes" if f.valid else f"no: {f.reason}"} for f in folders]
    table = pd.DataFrame(rows, columns=COLUMNS)
    return table.sort_values(["round", "benchmark", "minutes"], na_position="last", kind="stable",
                             ignore_index=True)


def filtered(table: pd.DataFrame, benchmark: str = "all", accelerator: str = "all",
             division: str = "all") -> pd.DataFrame:
    """The rows of `table` that match each choice ('all': any)."""
    keep = pd.Series(True, index=table.index)
    for column, choice in (("benchmark", benchmark), ("accelerator", accelerator), ("division", division)):
        if choice != "all":
            keep &= table[column].astype(str) == choice
    return table[keep]


def filters(table: pd.DataFrame, show):
    """Dropdowns for benchmark, accelerator and division over `table`; what `show(frame)` returns for the
    rows chosen (a table) is displayed below them, again at each change: in a widget's callback a value
    returned is not shown, as a cell's last one is. Returns the widget to display."""
    import ipywidgets as widgets
    from IPython.display import display

    def options(column: str) -> list[str]:
        return ["all", *sorted({str(v) for v in table[column].dropna()})]

    boxes = {c: widgets.Dropdown(options=options(c), value="all", description=c) for c in
             ("benchmark", "accelerator", "division")}
    out = widgets.Output()

    def draw(_=None):
        out.clear_output(wait=True)
        with out:
            drawn = show(filtered(table, **{c: box.value for c, box in boxes.items()}))
            if drawn is not None:
                display(drawn)

    for box in boxes.values():
        box.observe(draw, names="value")
    draw()
    return widgets.VBox([widgets.HBox(list(boxes.values())), out])


def round_view(folders: list[Folder], interactive: bool | None = None):
    """The round's table as the notebook shows it: with the filters in a live notebook, the whole table
    otherwise (`interactive` None: `notebook_params.live()`): a widget is nothing on a published page."""
    from ..reports import display
    from ..reports.notebook_params import live

    def show(rows: pd.DataFrame):
        return display.table(rows, empty="no result folder", formats={"minutes": 4, "accelerator-minutes": 1})

    table = round_table(folders)
    return filters(table, show) if (live() if interactive is None else interactive) else show(table)


def best(folders: list[Folder], by: str) -> pd.DataFrame:
    """Each benchmark's fastest valid result per `by` ('accelerators' or 'round')."""
    columns = ["benchmark", by, *(c for c in ("minutes", "submitter", "system", "round", "accelerators") if c != by)]
    table = round_table([f for f in folders if f.valid and f.score_minutes is not None])
    if table.empty or table[by].isna().all():
        return pd.DataFrame(columns=columns)
    rows = table.dropna(subset=[by]).sort_values("minutes", kind="stable").groupby(["benchmark", by]).head(1)
    return rows[columns].sort_values(["benchmark", by], kind="stable", ignore_index=True)


def best_plot(folders: list[Folder]):
    """Best time to train against accelerator count (log-log), a line per benchmark; None without one."""
    import matplotlib.pyplot as plt
    from matplotlib import ticker

    found = best(folders, "accelerators")
    if found.empty:
        return None
    from ..reports.plot_base import ReportFigure

    fig, ax = plt.subplots(figsize=(8, 4.5), FigureClass=ReportFigure)  # shown with its description (alt text)
    ax.set_title("Best valid time to train against accelerators, a line per benchmark (log-log)")
    for name, group in found.groupby("benchmark"):
        ax.plot(group["accelerators"], group["minutes"], marker="o", label=name)
    ax.set_xscale("log")
    ax.set_yscale("log")
    for axis in (ax.xaxis, ax.yaxis):  # plain numbers (8, 40, 115), not 4.175 x 10^1 on a narrow log range
        axis.set_major_formatter(ticker.FormatStrFormatter("%g"))
        axis.set_minor_formatter(ticker.FormatStrFormatter("%g"))
    ax.set_xlabel("accelerators")
    ax.set_ylabel("minutes to train (best valid result)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    plt.close(fig)
    return fig
