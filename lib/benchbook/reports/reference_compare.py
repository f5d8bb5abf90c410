"""Measured against published: a verdict per published row (`compare`), the verdicts condensed
(`verdict_summary`), time to train and final accuracy (`time_to_train_check`). Used through
`benchbook.reports.references`, which re-exports these names."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from ..core import config
from ..core.config import Metric
from ..models.reference_schema import FLAGS, LOG_NAMES, VERDICTS, Outcome, Reference, ReferenceError, Row
from . import metrics

COLUMNS = {
    "table": "label of the report's table the row comes from (None when the report has one table)",
    "gpus": "GPUs of the published row, all nodes",
    "nodes": "nodes of the published row (stated, or GPUs over the reference's GPUs per node)",
    "batch_size": "per-GPU batch size",
    "precision": "fp32, amp, fp16, tf32 or bf16",
    "xla": "XLA on in the published row; None: the report does not say, any measured value matches",
    "dali": "DALI on in the published row; None: not stated, any measured value matches",
    "synthetic": "synthetic data in the published row; None: not stated, any measured value matches",
    "published": "the published throughput, in the reference's unit",
    "published_printed": "the published throughput as the report printed it (3038.730 keeps its zero)",
    "measured": "the measured statistic (`value`, the median by default) of the matching configuration; "
                "NaN when none matches",
    "runs": "measured runs behind `measured` (0 when not measured)",
    "ratio": "measured / published",
    "delta_pct": "(ratio - 1) x 100: percent faster (+) or slower (-) than published",
    "verdict": "reproduced (|ratio - 1| <= tolerance), slower, faster, or not measured",
    "published_speedup": "speedup the report gives for the row (NaN when it gives none)",
    "published_speedup_printed": "that speedup as the report printed it (None when it gives none)",
    "measured_speedup": "speedup of the matching configuration (metrics.aggregate's DLPerf rule)",
    "differences": "how the measured configuration differs from the published row, in words (a list)",
}
TIME_COLUMNS = {
    "kind": "time_to_train (seconds to the quality target) or accuracy (quality at the end of the run)",
    "source": "log file of the measured run (None when not measured)",
    "run": "run index in its file",
    "gpus": "GPUs of the published entry", "batch_size": "per-GPU batch size", "precision": "precision",
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


def is_unknown(v: Any) -> bool:
    if v is None or v is pd.NA or v is pd.NaT:
        return True
    if isinstance(v, float | np.floating):
        return bool(np.isnan(v))
    return isinstance(v, str) and v.strip() in ("", "?")


def as_int(v: Any) -> int | None:
    if is_unknown(v) or isinstance(v, bool | np.bool_):
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return int(f) if math.isfinite(f) and f.is_integer() else None


def as_bool(v: Any) -> bool | None:
    if is_unknown(v):
        return None
    if isinstance(v, bool | np.bool_):
        return bool(v)
    if isinstance(v, int | float | np.integer | np.floating) and v in (0, 1):
        return bool(v)
    text = str(v).strip().lower()
    return True if text in ("true", "yes", "on", "1") else False if text in ("false", "no", "off", "0") else None


def _as_float(v: Any) -> float:
    try:
        return float(v) if not is_unknown(v) else math.nan
    except (TypeError, ValueError):
        return math.nan


def flag_text(flag: str, value: bool | None) -> str:
    if value is None:
        return f"{flag} unknown"
    if flag == "synthetic":
        return "synthetic data" if value else "real data"
    return f"{flag.upper() if flag == 'xla' else 'DALI'} {'on' if value else 'off'}"


def _records(stats: pd.DataFrame, value: str) -> list[dict]:
    out = []
    for raw in stats.to_dict("records"):
        out.append({
            "framework": raw.get("framework"), "model": raw.get("model"),
            "gpus": as_int(raw.get("gpus")), "nodes": as_int(raw.get("nodes")),
            "batch_size": as_int(raw.get("batch_size")),
            "precision": None if is_unknown(raw.get("precision")) else str(raw["precision"]).strip().lower(),
            **{flag: as_bool(raw.get(flag)) for flag in FLAGS},
            "value": _as_float(raw.get(value)), "runs": as_int(raw.get("runs")) or 0,
            "speedup": _as_float(raw.get("speedup")),
        })
    return out


def _same_model(rec: dict, ref: Reference) -> bool:
    """Whether a measured configuration is of the reference's model (parser names or the study name)."""
    framework, model = LOG_NAMES[ref.model]
    got_model, got_fw = rec.get("model"), rec.get("framework")
    if got_model == ref.model:
        return True
    if is_unknown(got_model):
        return is_unknown(got_fw) or got_fw == framework
    return got_model == model and (is_unknown(got_fw) or got_fw == framework)


def _expected_nodes(row: Row, ref: Reference) -> int:
    return row.nodes or max(1, -(-row.gpus // ref.hardware.gpus_per_node))


def _fmt(x: float) -> str:
    return f"{x:.6g}"


def _match(row: Row, rec: dict) -> tuple[bool, list[str]]:
    """Whether `rec` can stand for `row`, and which stated flags the measurement does not know."""
    if (rec["gpus"], rec["batch_size"], rec["precision"]) != (row.gpus, row.batch_size, row.precision):
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
    return True, unknown


def _compare_row(row: Row, ref: Reference, records: list[dict], duplicates: list[Row]) -> dict:
    unit = ref.unit
    nodes = _expected_nodes(row, ref)
    notes: list[str] = []
    candidates = []
    for rec in records:
        ok, unknown = _match(row, rec)
        if ok and not math.isnan(rec["value"]):
            node_miss = rec["nodes"] is not None and rec["nodes"] != nodes
            flags = tuple(str(rec[f]) for f in FLAGS)
            candidates.append(((len(unknown), node_miss, -rec["runs"], flags, str(rec["nodes"])), rec, unknown))
    candidates.sort(key=lambda c: c[0])
    chosen = candidates[0][1] if candidates else None
    if chosen is not None:
        for flag in candidates[0][2]:
            notes.append(f"{flag}: not known from the logs (published: {flag_text(flag, getattr(row, flag))})")
        for flag in FLAGS:
            if getattr(row, flag) is None and chosen[flag] is not None:
                notes.append(f"{flag}: not stated by the report; measured with {flag_text(flag, chosen[flag])}")
        if chosen["nodes"] is not None and chosen["nodes"] != nodes:
            notes.append(f"nodes: {chosen['nodes']} measured vs {nodes} published")
        for _, other, _ in candidates[1:]:
            what = ", ".join(flag_text(f, other[f]) for f in FLAGS if other[f] != chosen[f])
            if other["nodes"] != chosen["nodes"]:
                what = ", ".join(filter(None, [what, f"{other['nodes']} nodes"]))
            runs = f"{other['runs']} run" + ("" if other["runs"] == 1 else "s")
            notes.append(f"also measured with {what or 'the same flags'}: {_fmt(other['value'])} {unit} "
                         f"({runs}), not used")
    else:
        near = [r for r in records if (r["gpus"], r["batch_size"], r["precision"]) ==
                (row.gpus, row.batch_size, row.precision) and not math.isnan(r["value"])]
        for r in near:
            wrong = [f for f in FLAGS if getattr(row, f) is not None and r[f] is not None and r[f] != getattr(row, f)]
            notes.append(f"measured only with {', '.join(flag_text(f, r[f]) for f in wrong)} (published: "
                         f"{', '.join(flag_text(f, getattr(row, f)) for f in wrong)}): {_fmt(r['value'])} {unit}")
        if not near:
            other = sorted({r["batch_size"] for r in records if r["gpus"] == row.gpus
                            and r["precision"] == row.precision and r["batch_size"] is not None})
            if other:
                notes.append(f"batch size: measured at {', '.join(map(str, other))} per GPU, published at "
                             f"{row.batch_size}")
    for dup in duplicates:
        notes.append(f"the same configuration is also published in table {dup.table!r}: "
                     f"{_fmt(dup.throughput)} {unit}")
    measured = chosen["value"] if chosen is not None else math.nan
    ratio = measured / row.throughput if chosen is not None else math.nan
    return {
        "table": row.table, "gpus": row.gpus, "nodes": nodes, "batch_size": row.batch_size,
        "precision": row.precision, "xla": row.xla, "dali": row.dali, "synthetic": row.synthetic,
        "published": row.throughput, "measured": measured, "runs": chosen["runs"] if chosen is not None else 0,
        "ratio": ratio, "delta_pct": (ratio - 1) * 100,
        "published_speedup": row.speedup if row.speedup is not None else math.nan,
        "published_printed": row.as_printed("throughput"), "published_speedup_printed": row.as_printed("speedup"),
        "measured_speedup": chosen["speedup"] if chosen is not None else math.nan,
        "differences": notes,
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


def compare(stats: pd.DataFrame, ref: Reference, tolerance: float | None = None,
            value: str = "median") -> pd.DataFrame:
    """One row per published row: the published and measured throughput, their ratio and a verdict.

    `stats` is the frame of `metrics.aggregate` (any frame with gpus, batch_size, precision and the
    `value` column will do; framework, model, nodes, xla, dali, synthetic, runs and speedup are used
    when present). Rows of other models are ignored. A published row matches a measured
    configuration of the same GPU count, per-GPU batch size and precision whose xla, dali and
    synthetic agree with the ones the row states (a flag the row leaves as None matches anything; a
    flag the logs did not reveal matches too, and is named in `differences`). When several
    configurations match, the one with the fewest unknown flags, then the published node count,
    then the most runs is used and the others are named in `differences`.

    A configuration published twice (the same configuration in two tables of a report) gives two
    rows, one per published number, told apart by `table`: both are reported, neither wins.

    Columns are documented in `COLUMNS`; `attrs` holds the reference name, tolerance, value and unit.
    """
    tol = ref.tolerance if tolerance is None else _check_tolerance(tolerance)
    if not isinstance(stats, pd.DataFrame):
        raise ReferenceError(f"compare() takes the DataFrame of metrics.aggregate, not {type(stats).__name__}")
    missing = [c for c in ("gpus", "batch_size", "precision", value) if c not in stats.columns]
    if missing and not stats.empty:
        expected = ", ".join([*config.identity(), *metrics.STAT_COLUMNS])
        raise ReferenceError(f"the statistics lack the column(s) {', '.join(missing)}; compare() takes the "
                             f"frame of metrics.aggregate (columns: {expected})")
    records = [r for r in _records(stats, value) if _same_model(r, ref)] if not stats.empty else []
    rows = []
    for row in ref.rows:
        duplicates = [r for r in ref.rows if r is not row and r.key == row.key]
        out = _compare_row(row, ref, records, duplicates)
        out["verdict"] = _verdict(out["ratio"], tol)
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
    if not {"source", "run", "elapsed", metric.key} <= set(measured.columns):
        raise ReferenceError(f"time_to_train_check() takes the `evaluations` frame of an Analysis (source, run, "
                             f"epoch, {metric.key}, elapsed) or the frame of metrics.time_to_target (source, run, "
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
                base = {"kind": kind, "gpus": entry.gpus, "batch_size": entry.batch_size,
                        "precision": entry.precision, "epochs": entry.epochs, "metric": metric.key,
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
