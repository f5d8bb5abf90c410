"""Measured against published: a verdict per published row (`compare`), the verdicts condensed
(`verdict_summary`), time to train and final accuracy (`time_to_train_check`). Used through
`benchbook.reports.references`, which re-exports these names."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from ..core import config
from ..core.catalog import default as catalog
from ..core.config import Metric
from ..models.reference_schema import (
    BATCH,
    DEFAULT_MEASURE,
    FLAGS,
    LOG_NAMES,
    LOGGED_AS,
    MATCHED,
    NODES,
    ROW_AXES,
    STATED,
    VERDICTS,
    Outcome,
    Reference,
    ReferenceError,
    Row,
    catalog_measure,
)
from . import metrics


def _axis_columns() -> dict[str, str]:
    """The configuration's part of a comparison row: a published row's axes (`ROW_AXES`), in words."""
    out = {}
    for key in ROW_AXES:
        axis = catalog().axis(key)
        if key in FLAGS:
            out[key] = f"{axis.doc} in the published row; None: the report does not say, any measured value matches"
        elif key in STATED:
            out[key] = f"{axis.doc} in the published row (an axis of its model); None: not stated, any matches"
        elif key == NODES:
            out[key] = f"{axis.doc} of the published row (stated, or its GPUs over the reference's GPUs per node)"
        else:
            out[key] = f"{axis.doc}, as published"
    return out


COLUMNS = {
    "table": "label of the report's table the row comes from (None when the report has one table)",
    **_axis_columns(),
    "published": "the row's published number (its headline measure, the throughput by default), in the "
                 "reference's unit (the measure's own where the row's measure has one)",
    "published_printed": "that number as the report printed it (3038.730 keeps its zero)",
    "measured": "the measured statistic (`value`, the median by default) of the same measure in the matching "
                "configuration; NaN when none matches",
    "runs": "measured runs behind `measured` (0 when not measured)",
    "ratio": "measured / published",
    "delta_pct": "(ratio - 1) x 100: percent faster (+) or slower (-) than published",
    "verdict": "reproduced (|ratio - 1| <= tolerance), slower, faster, or not measured",
    "exact_rule": "False where the reference says no rule gives the published number from its log exactly",
    "published_speedup": "speedup the report gives for the row (NaN when it gives none)",
    "published_speedup_printed": "that speedup as the report printed it (None when it gives none)",
    "measured_speedup": "speedup of the matching configuration (metrics.aggregate's DLPerf rule)",
    "differences": "how the measured configuration differs from the published row, in words (a list)",
}
TIME_COLUMNS = {
    "kind": "time_to_train (seconds to the quality target) or accuracy (quality at the end of the run)",
    "source": "log file of the measured run (None when not measured)",
    "run": "run index in its file",
    **{key: f"{catalog().axis(key).doc}, as published" for key in MATCHED},
    "epochs": "epochs of the published run",
    "measured_epochs": "last evaluated epoch of the measured run, as logged (NaN when unknown)",
    "metric": "the quality metric compared: a key of the model's ModelSpec.quality (box_ap, ...)",
    "target": "the entry's target in the metric's unit (NaN when it has none)",
    "published_seconds": "published time to train, seconds", "measured_seconds": "measured time to the target",
    "ratio": "measured_seconds / published_seconds", "delta_pct": "(ratio - 1) x 100",
    "published_quality": "published value of the metric at the end of the run, in its unit",
    "measured_quality": "the metric's last value in the measured run",
    "quality_delta": "measured_quality - published_quality, in the metric's unit",
    "reached": "the measured run reached the target",
    "verdict": "time_to_train: reproduced, slower, faster, not reached, not measured; "
               "accuracy: reproduced (within the reference's quality_tolerance), lower, higher, not measured",
    "differences": "what to know about the comparison, in words (a list)",
}



# ----------------------------------------------------------------------------------------------- compare


def _as_float(v: Any) -> float:
    try:
        return float(v) if not config.missing(v) else math.nan
    except (TypeError, ValueError):
        return math.nan


def flag_text(flag: str, value: bool | None) -> str:
    """A flag's value in a comparison's notes: a switch as "XLA on"/"DALI off", another in its own words
    ("synthetic data", "real data"), "<key> unknown" where not known."""
    if value is None:
        return f"{flag} unknown"
    words = catalog().axis(flag).words
    if words[False] == f"no {words[True]}":
        return f"{words[True]} {'on' if value else 'off'}"
    return words[value]


def _said(key: str, value) -> str:
    """A row's or a configuration's value of an axis in a note: a flag's words, else "sequence length 128"."""
    return flag_text(key, value) if key in FLAGS else catalog().axis(key).say(value)


def _records(stats: pd.DataFrame, value: str) -> list[dict]:
    """Each measured configuration with its axes converted once (core.config), its statistic and runs."""
    axes = [catalog().axis(key) for key in catalog().run_keys()]
    out = []
    for raw in stats.to_dict("records"):
        rec = {axis.key: axis.value(raw.get(axis.key)) for axis in axes}
        rec.update({k: rec[k].strip().lower() for k in MATCHED if isinstance(rec[k], str)})
        rec.update(value=_as_float(raw.get(value)), runs=config.as_int(raw.get("runs")) or 0,
                   speedup=_as_float(raw.get("speedup")))
        out.append(rec)
    return out


def _same_model(rec: dict, ref: Reference) -> bool:
    """Whether a measured configuration is of the reference's model (parser names or the study name)."""
    framework, model = LOG_NAMES[ref.model]
    got_fw, got_model = (rec.get(key) for key in LOGGED_AS)
    if got_model == ref.model:
        return True
    if config.missing(got_model):
        return config.missing(got_fw) or got_fw == framework
    return got_model == model and (config.missing(got_fw) or got_fw == framework)


def _fmt(x: float) -> str:
    return f"{x:.6g}"


def _same_matched(row: Row, rec: dict, leave: str | None = None) -> bool:
    """Whether `rec` has the row's GPUs, batch and precision (`MATCHED`), but for `leave`."""
    return all(rec[k] == getattr(row, k) for k in MATCHED if k != leave)


def _match(row: Row, rec: dict) -> tuple[bool, list[str]]:
    """Whether `rec` can stand for `row`, and which stated flags the measurement does not know."""
    if not _same_matched(row, rec):
        return False, []
    unknown = []
    for flag in FLAGS:
        want, got = getattr(row, flag), rec[flag]
        if want is None:
            continue
        if got is None:
            unknown.append(flag)
        elif got != want:
            return False, []
    for key in STATED:  # a model's own axis the row states (a sequence length): that value only
        want, got = getattr(row, key), rec[key]
        if want is not None and got is None and key in _UNGROUPED:
            unknown.append(key)  # (the statistics do not group by it: the global batch)
        elif want is not None and got != want:
            return False, []
    return True, unknown


def _ungrouped() -> frozenset:
    """The axes a row may state that the statistics over repeats do not group by (the global batch, derived from
    the per-GPU batch): a measured configuration without them matches, and says so."""
    return frozenset(k for k in STATED if k not in catalog().identity())


_UNGROUPED = _ungrouped()


def _chosen_notes(row: Row, nodes: int, candidates: list, unit: str) -> list[str]:
    """What to know of the configuration that stands for the row: flags not known or not stated, its
    nodes, and the other matching configurations, not used."""
    (_, chosen, unknown), notes = candidates[0], []
    for flag in unknown:
        published = flag_text(flag, getattr(row, flag)) if flag in FLAGS else _said(flag, getattr(row, flag))
        notes.append(f"{flag}: not known from the {'logs' if flag in FLAGS else 'statistics'} (published: "
                     f"{published})")
    for flag in FLAGS:
        if getattr(row, flag) is None and chosen[flag] is not None:
            notes.append(f"{flag}: not stated by the report; logged with {flag_text(flag, chosen[flag])}")
    if chosen[NODES] is not None and chosen[NODES] != nodes:
        notes.append(f"{NODES}: {chosen[NODES]} measured vs {nodes} published")
    for _, other, _ in candidates[1:]:
        what = ", ".join(_said(f, other[f]) for f in (*FLAGS, *STATED) if other[f] != chosen[f])
        if other[NODES] != chosen[NODES]:
            what = ", ".join(filter(None, [what, f"{other[NODES]} {NODES}"]))
        runs = f"{other['runs']} run" + ("" if other["runs"] == 1 else "s")
        notes.append(f"also logged with {what or 'the same flags'}: {_fmt(other['value'])} {unit} "
                     f"({runs}), not used")
    return notes


def _unmatched_notes(row: Row, records: list[dict], unit: str) -> list[str]:
    """Why no configuration stands for the row: logged with other flags, or at other batch sizes."""
    notes = []
    near = [r for r in records if _same_matched(row, r) and not math.isnan(r["value"])]
    for r in near:
        wrong = [f for f in (*FLAGS, *STATED) if getattr(row, f) is not None and r[f] != getattr(row, f)
                 and (r[f] is not None or (f in STATED and f not in _UNGROUPED))]
        notes.append(f"logged only with {', '.join(_said(f, r[f]) for f in wrong)} (published: "
                     f"{', '.join(_said(f, getattr(row, f)) for f in wrong)}): {_fmt(r['value'])} {unit}")
    if not near:
        other = sorted({r[BATCH] for r in records if _same_matched(row, r, leave=BATCH) and r[BATCH] is not None})
        if other:
            notes.append(f"batch size: logged at {', '.join(map(str, other))} per GPU, published at "
                         f"{getattr(row, BATCH)}")
    return notes


def row_unit(row: Row, ref: Reference) -> str:
    """The unit of a row's headline number: its measure's own (tokens/s/GPU), else the reference's."""
    measure = catalog_measure(row.measure)
    return measure.unit if measure is not None and measure.unit else ref.unit


def _other_measures(row: Row, chosen: dict | None, by_measure: dict[str, list[dict]]) -> list[str]:
    """The row's other published measures (TFLOP/s/GPU beside tokens/s/GPU) beside the same configuration's."""
    notes = []
    for key, value in list(row.measures().items())[1:]:
        measure = catalog_measure(key)
        got = next((r for r in by_measure.get(key, []) if chosen is not None and _same_configuration(r, chosen)),
                   None)
        text = f"also published: {measure.name} {row.as_printed(key)} {measure.unit or ''}".rstrip()
        if got is not None and not math.isnan(got["value"]):
            text += f", measured {_fmt(got['value'])} ({(got['value'] / value - 1) * 100:+.1f}%)"
        notes.append(text)
    return notes


def _same_configuration(a: dict, b: dict) -> bool:
    return all(a.get(k) == b.get(k) for k in catalog().identity())


def _compare_row(row: Row, ref: Reference, records: list[dict], duplicates: list[Row],
                 by_measure: dict[str, list[dict]] | None = None) -> dict:
    unit = row_unit(row, ref)
    nodes = row.nodes_of(ref.hardware.gpus_per_node)
    candidates = []
    for rec in records:
        ok, unknown = _match(row, rec)
        if ok and not math.isnan(rec["value"]):
            node_miss = rec[NODES] is not None and rec[NODES] != nodes
            flags = tuple(str(rec[f]) for f in (*FLAGS, *STATED))
            candidates.append(((len(unknown), node_miss, -rec["runs"], flags, str(rec[NODES])), rec, unknown))
    candidates.sort(key=lambda c: c[0])
    chosen = candidates[0][1] if candidates else None
    notes = _chosen_notes(row, nodes, candidates, unit) if chosen is not None else _unmatched_notes(row, records, unit)
    for dup in duplicates:
        notes.append(f"the same configuration is also published in table {dup.table!r}: "
                     f"{_fmt(dup.published)} {row_unit(dup, ref)}")
    notes += _other_measures(row, chosen, by_measure or {})
    measured = chosen["value"] if chosen is not None else math.nan
    ratio = measured / row.published if chosen is not None else math.nan
    return {
        "table": row.table, **{k: getattr(row, k) for k in ROW_AXES}, NODES: nodes,
        "published": row.published, "measured": measured, "runs": chosen["runs"] if chosen is not None else 0,
        "ratio": ratio, "delta_pct": (ratio - 1) * 100,
        "published_speedup": row.speedup if row.speedup is not None else math.nan,
        "published_printed": row.as_printed(row.measure), "published_speedup_printed": row.as_printed("speedup"),
        "measured_speedup": chosen["speedup"] if chosen is not None else math.nan,
        "differences": notes, "exact_rule": row.exact_rule,
    }


def _check_tolerance(tolerance: float) -> float:
    if isinstance(tolerance, bool) or not isinstance(tolerance, int | float) or not 0 <= tolerance < 1:
        raise ReferenceError(f"tolerance {tolerance!r} must be a relative number in [0, 1), e.g. 0.05 for 5%")
    return float(tolerance)


def _verdict(ratio: float, tolerance: float, below: str = "slower", above: str = "faster") -> str:
    if math.isnan(ratio):
        return "not measured"
    # A little slack so that a ratio of exactly 1 +/- tolerance, rounded in binary, still counts.
    if abs(ratio - 1) <= tolerance + 1e-12:
        return "reproduced"
    return below if ratio < 1 else above


def measure_stats(runs: pd.DataFrame, measures: pd.DataFrame, complete_only: bool = True) -> dict[str, pd.DataFrame]:
    """Per measure of an analysis's long `measures` frame, its statistics over repeats per configuration
    (`metrics.aggregate` of each run's value of that measure): what `compare` reads for a row whose headline
    measure is no throughput, so that a published tokens/s/GPU is compared with measured tokens/s/GPU."""
    if measures is None or measures.empty or runs.empty:
        return {}
    wide = measures.pivot_table(index=["source", "run"], columns="measure", values="value", aggfunc="first")
    keys = [str(k) for k in wide.columns]
    wide.columns = [f"measure:{k}" for k in keys]
    joined = runs.merge(wide, left_on=["source", "run"], right_index=True, how="left")
    return {key: metrics.aggregate(joined, value=f"measure:{key}", complete_only=complete_only) for key in keys}


def compare(stats: pd.DataFrame, ref: Reference, tolerance: float | None = None,
            value: str = "median", measures: dict[str, pd.DataFrame] | None = None) -> pd.DataFrame:
    """One row per published row: the published and measured number of the row's measure, their ratio and a
    verdict.

    `stats` is the frame of `metrics.aggregate` (any frame with the `MATCHED` axes, GPUs, per-GPU batch
    and precision, and the `value` column will do; the other axes, runs and speedup are used when
    present). Rows of other models are ignored. A published row matches a measured configuration of
    the same GPU count, per-GPU batch size and precision whose flags (XLA, DALI, synthetic data)
    agree with the ones the row states (a flag the row leaves as None matches anything; a
    flag the logs did not reveal matches too, and is named in `differences`). When several
    configurations match, the one with the fewest unknown flags, then the published node count,
    then the most runs is used and the others are named in `differences`.

    A configuration published twice (the same configuration in two tables of a report) gives two
    rows, one per published number, told apart by `table`: both are reported, neither wins.

    A row whose headline `measure` is not the throughput (an LLM table's tokens/s/GPU) is compared with the
    statistics of that measure, `measures[key]` (`measure_stats` of the analysis's runs and measures): like with
    like; without them it is not measured, and says why. A measure where lower is better (step time) is
    "faster" below the published number.

    Columns are documented in `COLUMNS`; `attrs` holds the reference name, tolerance, value and unit.
    """
    tol = ref.tolerance if tolerance is None else _check_tolerance(tolerance)
    if not isinstance(stats, pd.DataFrame):
        raise ReferenceError(f"compare() takes the DataFrame of metrics.aggregate, not {type(stats).__name__}")
    missing = [c for c in (*MATCHED, value) if c not in stats.columns]
    if missing and not stats.empty:
        expected = ", ".join([*catalog().identity(), *metrics.STAT_COLUMNS])
        raise ReferenceError(f"the statistics lack the column(s) {', '.join(missing)}; compare() takes the "
                             f"frame of metrics.aggregate (columns: {expected})")
    records = [r for r in _records(stats, value) if _same_model(r, ref)] if not stats.empty else []
    by_measure = {DEFAULT_MEASURE: records, **{key: [r for r in _records(frame, value) if _same_model(r, ref)]
                                               for key, frame in (measures or {}).items() if not frame.empty}}
    rows = []
    for row in ref.rows:
        duplicates = [r for r in ref.rows if r is not row and r.key == row.key]
        out = _compare_row(row, ref, by_measure.get(row.measure, []), duplicates, by_measure)
        if row.measure not in by_measure and measures is None:
            out["differences"].append(f"the row publishes {row.measure}: compare() was given no statistics of it "
                                      "(measures=measure_stats(runs, measures))")
        lower = catalog_measure(row.measure).direction == "lower"
        out["verdict"] = _verdict(out["ratio"], tol, *(("faster", "slower") if lower else ("slower", "faster")))
        rows.append(out)
    frame = pd.DataFrame(rows, columns=list(COLUMNS))
    frame.attrs.update(reference=ref.name, tolerance=tol, value=value, unit=ref.unit)
    return frame


def verdict_summary(comparison: pd.DataFrame) -> dict[str, Any]:
    """Counts of each verdict, `rows`, `measured`, and `overall`.

    `overall` is "not measured" when no published row was measured, "reproduced" when every
    published row was reproduced, "not reproduced" when none was, and "partly reproduced" otherwise
    (rows not measured count against "reproduced": a claim is reproduced only as far as it was
    measured). Works on the frames of `compare` and `time_to_train_check`.
    """
    counts: dict[str, Any] = dict.fromkeys(VERDICTS, 0)
    verdicts = list(comparison["verdict"]) if "verdict" in comparison else []
    for v in verdicts:
        counts[v] = counts.get(v, 0) + 1
    total, reproduced = len(verdicts), counts["reproduced"]
    measured = total - counts["not measured"]
    if measured == 0:
        overall = "not measured"
    elif reproduced == total:
        overall = "reproduced"
    elif reproduced == 0:
        overall = "not reproduced"
    else:
        overall = "partly reproduced"
    return {**counts, "rows": total, "measured": measured, "overall": overall}


# ------------------------------------------------------------------------------------- time to train


def _last_epochs(evaluations: pd.DataFrame) -> dict[tuple, float]:
    if "epoch" not in evaluations or evaluations.empty:
        return {}
    epochs = pd.to_numeric(evaluations["epoch"], errors="coerce")
    return {key: float(v) for key, v in epochs.groupby([evaluations["source"], evaluations["run"]]).max().items()}


def _amount(metric: Metric, value: float, digits: str = "g") -> str:
    """A value of a quality metric with its unit: "76.1%", "37.7 AP"."""
    return f"{value:{digits}}" + ("%" if metric.unit == "%" else f" {metric.unit}" if metric.unit else "")


def _measured_runs(measured: pd.DataFrame, metric: Metric, target: float | None) -> pd.DataFrame:
    """Per measured run, its time to `target` and final value of `metric` (the frame of
    `metrics.time_to_target`), from an evaluations frame or from such a frame itself."""
    if "reached" in measured.columns:
        if metric.final_key not in measured.columns:
            raise ReferenceError(f"time_to_train_check(): the frame of metrics.time_to_target was computed for "
                                 f"another metric; the reference compares {metric.key}: pass the evaluations, or "
                                 f"metrics.time_to_target(evaluations, target, {metric.key!r})")
        return measured
    if not ({"source", "run", "elapsed"} <= set(measured.columns)
            and ({"metric", "value"} <= set(measured.columns) or metric.key in measured.columns)):
        raise ReferenceError(f"time_to_train_check() takes the `evaluations` frame of an Analysis (source, run, "
                             f"epoch, metric, value, elapsed) or the frame of metrics.time_to_target (source, run, "
                             f"reached, seconds, {metric.final_key}); got columns {', '.join(measured.columns)}")
    return metrics.time_to_target(measured, target if target is not None else math.inf, metric.key)


def _outcome_row(kind: str, entry: Outcome, metric: Metric, ref: Reference, run: dict, epochs: float,
                 tol: float) -> dict:
    """One measured run against one published entry, in one quality metric."""
    notes: list[str] = []
    if not math.isnan(epochs) and epochs < 0.9 * entry.epochs:
        notes.append(f"last evaluation at epoch {epochs:g}; the published run trained {entry.epochs} epochs")
    seconds, final = _as_float(run.get("seconds")), _as_float(run.get(metric.final_key))
    published = entry.quality.get(metric.key, math.nan)
    target = entry.target.get(metric.key)
    reached = bool(run.get("reached")) and not math.isnan(seconds)
    ratio = seconds / entry.seconds if kind == "time_to_train" and reached else math.nan
    delta = final - published
    if kind == "time_to_train":  # a ratio of seconds above 1 took longer: slower
        verdict = _verdict(ratio, tol, below="faster", above="slower") if reached else "not reached"
        if not reached:
            notes.append(f"never reached {metric.name} {_amount(metric, target)}"
                         + (f" (final {_amount(metric, final, '.2f')})" if not math.isnan(final) else ""))
    elif math.isnan(final):
        verdict = "not measured"
    elif abs(delta) <= ref.quality_tolerance_of(metric.key) + 1e-9:
        verdict = "reproduced"
    else:
        verdict = "lower" if delta < 0 else "higher"
    return {"source": run["source"], "run": run["run"], "measured_epochs": epochs,
            "measured_seconds": seconds if reached else math.nan, "ratio": ratio, "delta_pct": (ratio - 1) * 100,
            "measured_quality": final, "quality_delta": delta, "reached": reached, "verdict": verdict,
            "differences": notes}


def time_to_train_check(measured: pd.DataFrame, ref: Reference, tolerance: float | None = None) -> pd.DataFrame:
    """Measured time to a quality target and final quality against the published ones: one row per
    published entry, quality metric and measured run (one row with verdict "not measured" when there is no run).

    `measured` is the `evaluations` frame of an Analysis (time to target is then computed with each
    entry's own target) or the frame of `metrics.time_to_target` (computed by the caller, with the
    reference's target and metric). Time to train: measured seconds from the run's first log line to its
    first evaluation at or above the entry's target (`target: {metric: value}`), against the published
    seconds (which for a report that ran a fixed number of epochs is the whole run's); reproduced when
    within `tolerance` (relative, default the reference's). Accuracy: the run's last value of each metric
    of the entry's `quality` within the reference's `quality_tolerance` of the published one (in the
    metric's unit). Columns are documented in `TIME_COLUMNS`.
    """
    tol = ref.tolerance if tolerance is None else _check_tolerance(tolerance)
    if not isinstance(measured, pd.DataFrame):
        raise ReferenceError(f"time_to_train_check() takes a DataFrame, not {type(measured).__name__}")
    last_epoch = {} if "reached" in measured.columns else _last_epochs(measured)
    rows = []
    for kind, entries in (("time_to_train", ref.time_to_train), ("accuracy", ref.accuracy)):
        for entry in entries:
            keys = list(entry.target) if kind == "time_to_train" else list(entry.quality)
            for metric in map(ref.metric, keys):
                base = {"kind": kind, **{k: getattr(entry, k) for k in MATCHED}, "epochs": entry.epochs,
                        "metric": metric.key,
                        "target": entry.target.get(metric.key, math.nan),
                        "published_seconds": entry.seconds if entry.seconds is not None else math.nan,
                        "published_quality": entry.quality.get(metric.key, math.nan)}
                runs = _measured_runs(measured, metric, entry.target.get(metric.key))
                if runs.empty:
                    rows.append({**base, "source": None, "run": None, "measured_epochs": math.nan,
                                 "measured_seconds": math.nan, "ratio": math.nan, "delta_pct": math.nan,
                                 "measured_quality": math.nan, "quality_delta": math.nan, "reached": False,
                                 "verdict": "not measured", "differences": ["no evaluated run"]})
                for run in runs.to_dict("records"):
                    epochs = last_epoch.get((run["source"], run["run"]), math.nan)
                    rows.append({**base, **_outcome_row(kind, entry, metric, ref, run, epochs, tol)})
    frame = pd.DataFrame(rows, columns=list(TIME_COLUMNS))
    frame.attrs.update(reference=ref.name, tolerance=tol, quality_tolerance=dict(ref.quality_tolerance))
    return frame
