"""The frames of an analysis: each frame's columns in words (`*_COLUMNS`: the frame's shape as the README
and the reports read it), and the builders of the frames of records and loss components from every file's
columns (`iterations`, `file_losses`, `loss_frame`) and of the long frame of measures from the runs
(`measures`); `analysis` reads the logs and builds the run rows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.catalog import Catalog
from ..core.catalog import default as default_catalog
from .rules import Rule

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from .assemble import RunDraft

_SOURCE = {
    "source": "path of the log file",
    "run": "0-based index of the run in its file, in file order",
    "format": "log format (registry name)",
}
# After them, the configuration's axes (`core.config`: framework, model, GPUs ... repeat), then these.
_RUN = {
    "line_start": "first line of the run in its file",
    "line_end": "last line of the run in its file",
    "reported_throughput": "throughput the script reported in its summary, in its model's unit (ModelSpec.unit)",
    "recomputed_throughput": "throughput recomputed from the records by the rule",
    "elapsed_throughput": "throughput from wall-clock timestamps of the measured records",
    "rule": "the recompute rule in words",
    "iterations": "records used by the rule",
    "warmup_records": "records skipped as warm-up",
    "ranks": "ranks that logged records or a line every rank logs (MXNet's `Starting epoch`)",
    "status": "complete, incomplete or failed",
    "failure": "cause of failure, when failed",
}
# After them, `final_<metric>` of each quality metric a model declares `final` (core.config), then these.
_RUN_END = {
    "start_time": "first timestamp of the run, seconds since the epoch",
    "warnings": "what looked wrong, as sentences",
}


def run_columns(catalog: Catalog) -> dict[str, str]:
    """The columns of the `runs` frame in words, the configuration's axes as the catalog holds them (the
    common ones, then the models' own)."""
    finals = {m.final_key: f"last evaluated {m.name}, {m.unit}" for m in catalog.metrics if m.final}
    return {**_SOURCE, **{a.key: a.doc for a in catalog.axes}, **_RUN, **finals, **_RUN_END}


def row_columns(catalog: Catalog) -> list[str]:
    """A row of `runs`: its columns (`run_columns`), then the reported values and the metadata as logged."""
    return [*run_columns(catalog), "reported", "meta"]


def __getattr__(name: str):
    """RUN_COLUMNS and ROW_COLUMNS: the frames' columns of the default catalog, built on first use (never at
    import: the catalog imports the registries, which may be importing this module)."""
    columns = {"RUN_COLUMNS": run_columns, "ROW_COLUMNS": row_columns}
    if name in columns:
        return columns[name](default_catalog())
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

ITERATION_COLUMNS = {
    "source": "path of the log file",
    "run": "run index in the file",
    "line": "line of the record",
    "rank": "mpirun rank that logged it (-1 when untagged)",
    "epoch": "epoch as logged (-1 when not logged)",
    "iteration": "iteration as logged (-1 when not logged)",
    "timestamp": "seconds since the epoch",
    "elapsed": "seconds since the run's first timestamp",
    "throughput": "throughput as logged (all GPUs), the model's unit (ModelSpec.unit)",
    "loss": "loss as logged",
    "lr": "learning rate as logged",
    "steps": "iterations the record covers",
    "warmup": "skipped as warm-up by the rule",
    "measured": "used by the rule",
}
#: One row per evaluation and quality metric it logged (long: the metrics are values of `metric`, never columns).
EVAL_COLUMNS = {
    "source": "path of the log file",
    "run": "run index in the file",
    "line": "line of the evaluation",
    "epoch": "epoch evaluated",
    "metric": "the quality metric: a catalog key (a model's: mlm_accuracy, box_ap...), or the name a log gives its own "
              "(MLLOG's accuracy, BBOX, SEGM); empty where the evaluation logged no quality, only its throughput",
    "value": "its value: in the metric's unit for a catalog metric (a percent logged as a fraction is in %), as "
             "logged for a log's own name (a fraction: 0.759 is 75.9%)",
    "unit": "the metric's unit (%, AP); empty for a log's own name",
    "eval_throughput": "evaluation throughput, the model's unit",
    "timestamp": "seconds since the epoch",
    "elapsed": "seconds since the run's first timestamp",
}


def one_metric(evaluations: pd.DataFrame, key: str) -> pd.DataFrame:
    """The evaluations of one metric, its values in a column named by its key (what a plot or a time to target
    reads): from the long `evaluations` frame, or from a frame that has that column already."""
    if key in evaluations.columns:
        return evaluations[evaluations[key].notna()]
    if "metric" not in evaluations.columns:
        return evaluations.iloc[0:0].assign(**{key: []})
    rows = evaluations[(evaluations["metric"] == key) & evaluations["value"].notna()]
    return rows.rename(columns={"value": key})


LOSS_COLUMNS = {
    "source": "path of the log file",
    "run": "run index in the file",
    "line": "line of the loss component",
    "iteration": "iteration of the run's last record at or before that line (-1 when none)",
    "component": "the component's name as logged, e.g. \"FastRCNN box loss\"",
    "value": "its value as logged",
}
EPOCH_COLUMNS = {  # only runs whose rule is per epoch (MXNet's benchmark.py: `rules.METHODS["epochs"]`)
    "source": "path of the log file",
    "run": "run index in the file",
    "epoch": "epoch as logged",
    "rate": "throughput the rule gives the epoch (all GPUs): its logged per-epoch rate, else the samples / "
            "time of the run's measured records from the first to the epoch's end",
    "used": "the rule's value is the harmonic mean of the used epochs' rates (the first epoch is benchmark.py's "
            "-w 1 warm-up, unless it is the only one)",
    "line_start": "first line of the epoch's records the rule reads",
    "line_end": "last line of the epoch's records the rule reads",
}
EPOCH_TYPES = {"run": "int64", "epoch": "int64", "rate": "float64", "used": "bool", "line_start": "int64",
               "line_end": "int64"}  # the epochs frame's dtypes, empty or not


def iterations(files: list[tuple[str, dict[str, np.ndarray]]]) -> pd.DataFrame:
    """One frame of the records of every run of every file, built once."""
    import numpy as np
    import pandas as pd
    if not files:
        return pd.DataFrame().reindex(columns=list(ITERATION_COLUMNS))
    sizes = [len(cols["line"]) for _, cols in files]
    sources = np.repeat(np.array([source for source, _ in files], dtype=object), sizes)
    text = pd.Series(["text"]).dtype  # how this pandas stores a column of strings
    data = {"source": pd.array(sources, dtype=text)}  # typed here: cheaper than pandas guessing it
    from .parsers.scanning import LOGGED_FIELDS

    logged = [name for name in LOGGED_FIELDS if any(name in cols for _, cols in files)]  # LLM logs' own fields
    for name in (*ITERATION_COLUMNS, *logged):
        if name not in data:
            data[name] = np.concatenate([cols[name] if name in cols else np.full(len(cols["line"]), np.nan)
                                         for _, cols in files]) if len(files) > 1 else files[0][1][name]
    return pd.DataFrame(data, columns=[*ITERATION_COLUMNS, *logged], copy=False)  # the arrays are the frame's own


#: The fields an LLM log states per record (`scanning.LOGGED_FIELDS`), after ITERATION_COLUMNS in a frame of
#: files whose records have them (NaN in the others' rows).
LOGGED_COLUMNS = {
    "step_time": "seconds of the iteration as logged (Megatron's interval average, NeMo's train_step_timing)",
    "tflops_per_gpu": "model TFLOP/s a GPU as logged",
    "tokens_per_gpu": "tokens a second a GPU as logged (torchtitan's tps)",
    "mfu": "model FLOPs utilisation as logged, in %",
    "skipped_iterations": "Megatron's count of skipped iterations in the interval",
    "nan_iterations": "Megatron's count of NaN iterations in the interval",
    "nan_grad_norm": "1 where the logged grad norm is NaN",
}


def file_losses(chunks: list[dict], drafts: list[RunDraft], records: dict[str, np.ndarray]) -> dict:
    """The loss components of a file as columns run, line, iteration, value, and component (codes
    into `names`). `records` are the file's record columns with their `run`.

    NGC TF2 Mask R-CNN prints, after each logged block's throughput, `FastRCNN box loss: 0.52801`,
    `Mask loss`, `RPN total loss`... (NVIDIA/DeepLearningExamples TensorFlow2/Segmentation/MaskRCNN
    mask_rcnn/hooks/logging_hook.py: one line a metric of the block). The parser gives them as
    columns a chunk (`scanning.LOSSES`); here each gets its run (the run whose lines hold it) and its
    iteration (that of the run's last record at or before its line). Formats that log no component
    give an empty frame with the same columns."""
    import numpy as np

    names = sorted({name for c in chunks for name in c["names"]})
    if not chunks:
        return {"run": np.empty(0, np.int64), "line": np.empty(0, np.int64), "iteration": np.empty(0, np.int64),
                "component": np.empty(0, np.int32), "value": np.empty(0, float), "names": names}
    line = np.concatenate([c["line"] for c in chunks])
    value = np.concatenate([c["value"] for c in chunks])
    code = {name: i for i, name in enumerate(names)}
    component = np.concatenate([np.array([code[n] for n in c["names"]], dtype=np.int32)[c["component"]]
                                for c in chunks])
    # A run's lines reach up to where the next run starts (a component before the first run is the first's).
    run = np.maximum(np.searchsorted([d.first_line for d in drafts], line, side="right") - 1, 0)
    last = np.searchsorted(records["line"], line, side="right") - 1  # the file's records are in line order
    own = (last >= 0) & (records["run"][np.maximum(last, 0)] == run)
    iteration = np.where(own, records["iteration"][np.maximum(last, 0)], -1)
    return {"run": run.astype(np.int64), "line": line, "iteration": iteration.astype(np.int64),
            "component": component, "value": value, "names": names}


def loss_frame(files: list[tuple[str, dict]]) -> pd.DataFrame:
    """One frame of the loss components of every file, LOSS_COLUMNS in order. `source` and
    `component` are categorical: millions of rows repeat a few names."""
    import numpy as np
    import pandas as pd

    files = [(source, cols) for source, cols in files if len(cols["line"])]
    names = sorted({name for _, cols in files for name in cols["names"]})
    code = {name: i for i, name in enumerate(names)}
    sizes = [len(cols["line"]) for _, cols in files]
    data = {"source": pd.Categorical.from_codes(np.repeat(np.arange(len(files)), sizes),
                                                categories=pd.Index([source for source, _ in files], dtype=object))}
    for name in ("run", "line", "iteration", "value"):
        data[name] = np.concatenate([cols[name] for _, cols in files]) if files else \
            np.empty(0, float if name == "value" else np.int64)
    own = [np.array([code[n] for n in cols["names"]], dtype=np.int32)[cols["component"]] for _, cols in files]
    data["component"] = pd.Categorical.from_codes(np.concatenate(own) if own else np.empty(0, np.int32),
                                                  categories=pd.Index(names, dtype=object))
    return pd.DataFrame(data, columns=list(LOSS_COLUMNS))


# ---------------------------------------------------------------- the measures: a row per run and measure

MEASURE_COLUMNS = {
    "source": "path of the log file",
    "run": "0-based index of the run in its file",
    "measure": "the measure's key (core.measures: throughput, tokens_per_s)",
    "value": "its value, in `unit`",
    "unit": "the measure's unit: the model's sample unit a second for throughput (ModelSpec.unit), tokens/s",
    "rule": "how the value follows from the log's records, in words",
}

#: Per volume: the runs column each sample of a step is counted as (None: one sample), and the rule's words.
_PER_SAMPLE = {"samples": (None, ""), "tokens": ("seq_len", ", each sample counted as its sequence length"),
               "tokens_per_gpu": ("seq_len", ", each sample counted as its sequence length, over the GPUs")}


def measures(runs: pd.DataFrame, catalog: Catalog, iterations: pd.DataFrame | None = None,
             rule: Rule | None = None) -> pd.DataFrame:
    """The long frame of every run's measures (`MEASURE_COLUMNS`), in the runs' order and the format's order of
    measures. A run's measures are those its log format declares (`LogFormat.measures`), then its model's
    (`Catalog.measures_of`: `ModelSpec.measures`), each the rule's value
    over the run's measured records with the measure's volume a step: throughput the rule's samples a second
    (`recomputed_throughput`), tokens/s the same records with each sample counted as its sequence length
    (none where the log gives no sequence length); a measure the format reads from a logged field
    (`LogFormat.logged`) is that field over the same measured records (`iterations`, `_logged`), averaged as the
    rule (the user's `rule` resolved for the format) says: its median, its last record, else the mean."""
    import pandas as pd

    from . import parsers

    parts = []
    for (name, *model), group in runs.groupby(["format", "framework", "model"], sort=False, dropna=False):
        fmt = parsers.get(name)
        own = [m for m in catalog.measures_of(*model) if m not in fmt.measures]  # a model's beyond its format's
        done: dict[str, pd.Series] = {}  # the run's measures so far, by key: what a derived one is made of
        for order, measure in enumerate((*fmt.measures, *own)):
            field = fmt.logged.get(measure.key)
            if field is not None or measure.volume == "logged":
                how = _HOW.get((rule or Rule()).resolve(fmt).method, "mean")
                value = _logged(group, iterations, field, how)
                words = f"; {measure.name}: the {_HOW_WORDS[how]} logged {field} over the same measured records"
            else:
                value, words = _rate(group, measure.volume)
            units = [catalog.unit(measure, m, f) for m, f in zip(group["model"], group["framework"], strict=True)]
            rules = group["rule"].map({r: r + words for r in group["rule"].unique()})  # one string a rule
            keep = value.notna().to_numpy()
            if measure.derive is not None:  # where the log gives none: derived, or a row saying why not
                value, rules, keep = _derived(group, measure, value, rules, done)
            done[measure.key] = value
            parts.append(pd.DataFrame({"source": group["source"], "run": group["run"], "measure": measure.key,
                                       "value": value, "unit": units, "rule": rules,
                                       "_at": group.index, "_order": order})[keep])
    if not parts:
        return pd.DataFrame(columns=list(MEASURE_COLUMNS))
    frame = pd.concat(parts).sort_values(["_at", "_order"], kind="stable")
    return frame.drop(columns=["_at", "_order"]).reset_index(drop=True)


def _derived(group: pd.DataFrame, measure, value: pd.Series, rules: pd.Series, done: dict[str, pd.Series]):
    """A derivable measure (`Measure.derive`: MFU from TFLOP/s/GPU and the GPU's peak) of the runs whose log gives
    none, from each run's row and its measures before it; a run it cannot be derived for keeps a row with no value,
    its rule saying why (so that `analyze --json` says it). Only the runs without a logged value are looked at."""
    import numpy as np

    value, rules = value.copy(), rules.copy()
    for at in value.index[value.isna().to_numpy()]:
        row = group.loc[at]
        got, words = measure.derive(row, {key: float(series[at]) for key, series in done.items()})
        value[at] = np.nan if got is None else got
        rules[at] = f"{row['rule']}; {words}"
    return value, rules, np.ones(len(value), dtype=bool)


def _rate(group: pd.DataFrame, volume: str) -> tuple[pd.Series, str]:
    """A rate measure of a format's runs: the rule's samples a second, each sample counted as its volume."""
    import numpy as np
    import pandas as pd

    column, words = _PER_SAMPLE[volume]
    value = pd.to_numeric(group["recomputed_throughput"], errors="coerce").astype(float)
    if column is not None:
        value = value * (pd.to_numeric(group[column], errors="coerce").astype(float) if column in group else np.nan)
    if volume == "tokens_per_gpu":
        value = value / pd.to_numeric(group["gpus"], errors="coerce").astype(float)
    return value, words


#: How a logged field is averaged under each method of the rule (a rate's harmonic or elapsed mean is a time's mean).
_HOW = {"median": "median", "last": "last"}
_HOW_WORDS = {"mean": "mean of the", "median": "median of the", "last": "last"}


def _logged(group: pd.DataFrame, iterations: pd.DataFrame | None, field: str | None, how: str = "mean"
            ) -> pd.Series:
    """Per run of `group`, the mean of a field its records log over the records the rule measured (the rule's
    warm-up and window, as for its rate: dgxc-benchmarking's mean step time over a window); NaN where none logs
    it (the field is not the format's, or no iterations frame was given)."""
    import pandas as pd

    if iterations is None or field is None or field not in iterations:
        return pd.Series(float("nan"), index=group.index)
    own = iterations[iterations["measured"] & iterations["source"].isin(set(group["source"]))]
    grouped = own.dropna(subset=[field]).groupby(["source", "run"], sort=False)[field]
    means = grouped.median() if how == "median" else grouped.last() if how == "last" else grouped.mean()
    keys = pd.MultiIndex.from_arrays([group["source"], group["run"]])
    return pd.Series(means.reindex(keys).to_numpy(dtype=float), index=group.index)
