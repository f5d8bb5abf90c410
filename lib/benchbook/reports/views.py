"""What the notebook cells show, section by section: readable tables, one line where a section is empty.

`Report` computes (frames and numbers); these functions decide what a reader sees of them: the opening
verdict and published-form table, the set-up as the logs describe it in analysis-only mode, and each
later table through `display.table`, collapsed to one line that says why when there is nothing to show.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from ..core import config
from . import configs, display, grid, headline, logged_setup, machine, metrics, references
from .configs import gpu_counts
from .logged_setup import log_differences, logs_description  # noqa: F401 -- shown here

if TYPE_CHECKING:
    from .report import Report


def measured_on(report: Report) -> str:
    """What the numbers were measured on, as far as the logs (analysis-only) or this machine say."""
    runs = report.analysis.runs
    gpus = gpu_counts(runs)
    if report.log_dir is not None:
        count = (configs.join_counts(gpus) + " GPU" + "s" * (gpus != [1])) if gpus and gpus != [0] \
            else ("the CPU" if gpus == [0] else "an unknown number of GPUs")
        return f"{count} (GPU type not in the logs)" if gpus and gpus != [0] else count
    if gpus in ([], [0]):
        cpu = ((machine.capture(report).get("system") or {}).get("cpu") or {}).get("model")
        return f"this machine's CPU ({cpu})" if cpu else "this machine's CPU"
    return configs.join_counts(gpus) + " GPUs of this machine"


def measured_what(report: Report) -> str:
    runs = report.analysis.runs
    files = runs["source"].nunique() if len(runs) else 0
    if report.log_dir is not None:
        return (f"{len(runs)} run{'s' * (len(runs) != 1)} in {files} log file{'s' * (files != 1)} of "
                f"{report.log_dir.name or report.log_dir}")
    return f"{report.title} ({len(runs)} run{'s' * (len(runs) != 1)})"


def words(report: Report) -> headline.Words:
    """How this report says its verdicts: "reproduced" of our own runs, "consistent" of other logs."""
    return headline.words_for(report.log_dir, report.source)


def comparison_of(report: Report) -> pd.DataFrame | None:
    """The comparison with the reference when some published configuration was measured, else None."""
    if report.reference is None:
        return None
    comparison = report.reproduction()
    return comparison if references.verdict_summary(comparison)["measured"] > 0 else None


def opening(report: Report):
    """The first screen: the verdict with its size, the published grid(s), one line of set-up."""
    comparison = report.reproduction() if report.reference is not None else None
    summary = references.verdict_summary(comparison) if comparison is not None else None
    unit, said = report.unit, words(report)
    runs = report.analysis.runs
    _source, url = logged_setup.rule_source(runs, report.rule.name)
    first = headline.sentence(measured_what(report), measured_on(report), report.reference, comparison, summary,
                              report.stats, unit, said, report.rule.name, url)
    tables = grid.render_all(grid.grids(report.stats, comparison_of(report), report.reference), unit, said)
    parts = [first, tables]
    if comparison_of(report) is not None:
        tol = headline.percent(comparison.attrs.get("tolerance", report.reference.tolerance))
        parts.append(display.note(f"Δ %: measured / published - 1; green within ±{tol} ({said('reproduced')}), "
                                  "orange outside it. Measured: the median over repeats, to the published digits."))
    line = headline.setup_line(logged_setup.settings(runs), report.reference)
    parts += [line] if line is not None else []
    return together(*parts)


# --------------------------------------------------------------------------------- sections after the opening

VARIABLE_CV = 0.10  # repeats that vary more than this (coefficient of variation) are flagged


def setup_used(report: Report):
    """Analysis-only: the set-up as the logs describe it, beside the published one. Launch mode: this
    machine (which ran the study), whether it fits the study, and repeats that ran on different stacks."""
    if report.log_dir is not None:
        return display.table(logs_description(report), empty="the logs hold no run")
    env = machine.environment(report).reset_index()
    env.columns = ["", "value"]
    parts = [display.table(env, empty="no capture of this machine"),
             display.table(machine.fits(report), empty="nothing to check"),
             display.table(machine.drift(report), empty="every repeat of a configuration ran on the same stack")]
    return display.Html("".join(p.markup for p in parts), "\n\n".join(p.plain for p in parts))


def setup_intro(report: Report) -> str:
    if report.log_dir is not None:
        return ("What the logs say about the set-up that produced them, beside the published one (never this "
                "machine's).")
    return ("This machine, whether it can run the study, and repeats that ran on different stacks; then what the "
            "study needs.")


def failures_heading(report: Report) -> tuple[str, str]:
    """Section 4's heading and paragraph: launch-mode text only where something was launched."""
    n = 4 if report.reference is not None else 3
    if report.log_dir is not None:
        return (f"{n}. Failures and problems", "Runs that did not complete, with the cause, then files that could "
                "not be analyzed.")
    return (f"{n}. Launch, failures and problems", "The study runs in a separate process (benchbook run --resume), "
            "never in this kernel; its run records are shown here. Runs that did not complete follow, with the "
            "cause and the last log lines, then files that could not be analyzed.")


def failures_and_problems(report: Report) -> display.Html:
    """The run records (launch mode), runs that did not complete, files that could not be analyzed."""
    return together(*filter(None, [launch_status(report), failures(report), problems(report)]))


def setup_needed(report: Report):
    """Launch mode: what the study needs and its state; nothing in analysis-only mode (nothing to set up)."""
    if report.log_dir is not None:
        return None
    return display.table(machine.setup(report), empty="the study needs nothing beyond benchbook")


def launch_status(report: Report):
    """Launch mode: the run records, one row per run; nothing in analysis-only mode (nothing was launched)."""
    if report.log_dir is not None:
        return None
    status = report.status()
    if "gpus" in status:
        status = status.assign(gpus=_cpu_as_word(status["gpus"]))
    headers = {**STATUS_HEADERS, "throughput": f"throughput {report.unit}"}
    return display.table(status.rename(columns=headers),
                         empty=f"no run record in {report.source}: the study has not run yet",
                         formats={"started": display.utc, "ended": display.utc, "duration s": 1,
                                  f"throughput {report.unit}": 2, "exit code": display.text})


# The run records' fields as a reader reads them (times are shown in UTC).
STATUS_HEADERS = {**config.headers(), "run_id": "run id", "started_at": "started", "ended_at": "ended",
                  "duration_s": "duration s", "exit_code": "exit code"}


def _cpu_as_word(gpus: pd.Series) -> pd.Series:
    """A GPU count for reading: 0 (a CPU run) is "CPU"."""
    return gpus.astype(object).where(pd.to_numeric(gpus, errors="coerce") != 0, "CPU")


def _one_process_per_gpu(gpus: pd.Series, processes: pd.Series) -> bool:
    """Every run whose process count is known ran one per GPU: the GPU count says it all (a CPU run's
    processes say more)."""
    processes, gpus = pd.to_numeric(processes, errors="coerce"), pd.to_numeric(gpus, errors="coerce")
    known = processes.notna()
    return bool((processes[known] == gpus[known]).all())


def _constant_flags(table: pd.DataFrame, names=("XLA", "DALI", "synthetic data", "nodes", "repeat")) -> list[str]:
    """Flag columns with one value in every row: the set-up line says it once (MXNet's "XLA no" on every
    row says nothing)."""
    return [c for c in names if c in table and table[c].astype(str).nunique() <= 1 and len(table) > 1]


def runs(report: Report):
    """One row per run, in the page's order; the processes column only where a run had other than one per
    GPU (CPU runs); throughputs to the digits the grid shows their configuration with."""
    rates = [f"reported {report.unit}", f"recomputed {report.unit}"]
    table = report.runs()
    if table.empty:
        return display.note(f"no run found in {report.source}")
    keys = table.rename(columns={"GPUs": "gpus", "per-GPU batch": "batch_size"})
    table = table.loc[configs.sort_frame(keys, report.reference).index]
    digits = grid.decimals_by_configuration(grid.grids(report.stats, comparison_of(report), report.reference))
    places = [configs.place(g, p)[0] for g, p in zip(table["GPUs"], table["processes"], strict=True)]
    decimals = [digits.get((g, str(p), configs.as_int(b)), 2)
                for g, p, b in zip(places, table["precision"], table["per-GPU batch"], strict=True)]
    table = table.assign(**{r: [display.fixed(v, d) for v, d in zip(table[r], decimals, strict=True)]
                            for r in rates})
    if {"processes", "GPUs"} <= set(table) and _one_process_per_gpu(table["GPUs"], table["processes"]):
        table = table.drop(columns=["processes"])
    table = table.drop(columns=_constant_flags(table)).assign(GPUs=_cpu_as_word(table["GPUs"]))
    return display.table(table, empty=f"no run found in {report.source}", numeric=rates,
                         formats={"records used": display.text})


def scaling(report: Report):
    """Speedup and efficiency per configuration against a measured 1-GPU run (1 process on the CPU), in the
    page's order; the medians are the grid's. None where no configuration has a speedup."""
    cols = ["gpus", "nodes", "processes", "precision", "batch_size", "xla", "runs", "median", "speedup", "efficiency"]
    table = report.stats[cols].sort_values(["precision", "batch_size", "xla", "gpus", "processes"])
    table = table.reset_index(drop=True)
    if table.empty or table["speedup"].map(display.missing).all():
        return None
    table = configs.sort_frame(table, report.reference)
    if pd.Series(table["nodes"]).astype(str).isin(["?", "<NA>", "nan", "None"]).all():
        table = table.drop(columns=["nodes"])
    if _one_process_per_gpu(table["gpus"], table["processes"]):
        table = table.drop(columns=["processes"])
    table = table.drop(columns=["median"]).assign(
        efficiency=pd.to_numeric(table["efficiency"], errors="coerce") * 100, gpus=_cpu_as_word(table["gpus"]))
    table = table.rename(columns={**config.headers(), "efficiency": "efficiency %"})
    table = table.drop(columns=_constant_flags(table))
    return display.table(table, empty="no run gave a throughput", formats={"speedup": 2, "efficiency %": 1})


def scaling_plot(report: Report):
    """The scaling plot where there is a 1-GPU baseline and another GPU count; None otherwise."""
    from . import plots
    gpus = gpu_counts(report.analysis.runs)
    if len([g for g in gpus if g > 0]) < 2 or 1 not in gpus:
        return None
    return plots.scaling(report.stats)


def throughput_over_time(report: Report):
    from . import plots
    if report.analysis.iterations.empty:
        return display.note("no run logged per-iteration records: no throughput over time")
    return plots.throughput_over_time(report.analysis.iterations, report.analysis.runs)


def repeats(report: Report):
    """The spread between repeats, only when a configuration ran more than once; configurations whose
    repeats vary by more than 10% (coefficient of variation) are flagged."""
    from . import plots
    stats = report.stats
    if stats.empty or (pd.to_numeric(stats["runs"], errors="coerce").fillna(0) <= 1).all():
        return None
    variable = stats[pd.to_numeric(stats["cv"], errors="coerce") > VARIABLE_CV]
    fig = plots.repeats(report.analysis.runs)
    if variable.empty:
        return together(fig)
    lines = [f"{configs.column_on(r)}: "
             f"CV {100 * float(r['cv']):.1f}% over {int(r['runs'])} runs" for _, r in variable.iterrows()]
    return together(display.note("repeats vary by more than 10%: " + "; ".join(lines)), fig)


def together(*parts) -> display.Html:
    """Notes, tables and figures shown as one output, in order."""
    markup = [p.markup if isinstance(p, display.Html) else p._repr_html_() for p in parts]
    plain = [p.plain if isinstance(p, display.Html) else repr(p) for p in parts]
    return display.Html("".join(markup), "\n\n".join(plain))


def time_to_train(report: Report):
    """Time to the target and the final value of the model's quality metric (ModelSpec.quality: top-1), of
    runs that evaluate; None (no section) otherwise."""
    from . import plots
    if report.analysis.evaluations.empty:
        return None
    metric = plots.quality_of(report.analysis.runs)
    reached = metrics.time_to_target(report.analysis.evaluations, report.target or 0.0, metric.key)
    table = display.table(reached, empty="no evaluation reached the target",
                          formats={"seconds": 1, metric.key: 2, metric.final_key: 2})
    return together(table, plots.time_to_train(report.analysis.evaluations, report.analysis.runs,
                                               target=report.target, metric=metric))


# Reproduction table headers for reading; GPUs, published, measured and verdict are the headers by which
# tools/check_reference_reports.py finds the table.
REPRODUCTION_HEADERS = {**config.headers(), "delta_pct": "Δ %", "published_speedup": "published speedup",
                        "measured_speedup": "measured speedup", "differences": "notes"}


def reproduction(report: Report):
    """Per published row, what the grid does not show: its verdict in words, the published and measured
    speedups, and how the measured configuration differs (the numbers themselves are in the grid, once).
    None without a reference."""
    if report.reference is None:
        return None
    table = report.reproduction()
    summary = references.verdict_summary(table)
    if summary["measured"] == 0:
        return display.note(f"none of the configurations in the logs is among the {summary['rows']} published by "
                            f"{report.reference.name}: no ratio to show")
    table = configs.sort_frame(table, report.reference)
    said = words(report)
    table = table.assign(verdict=table["verdict"].map(said))
    if "published_speedup_printed" in table:
        table = table.assign(published_speedup=table["published_speedup_printed"])
    cols = [c for c in ("table", "gpus", "nodes", "batch_size", "precision", "xla", "dali", "synthetic", "runs",
                        "verdict", "published_speedup", "measured_speedup", "differences")
            if c in table and not table[c].map(display.missing).all()]
    if "table" in cols:
        table = table.assign(table=table["table"].map(lambda t: report.reference.tables.get(t, t)))
    cols = [c for c in cols if c not in ("nodes", *config.flags()) or table[c].astype(str).nunique() > 1]
    tol = table.attrs.get("tolerance", report.reference.tolerance)
    shown = display.table(table[cols].rename(columns=REPRODUCTION_HEADERS), empty="nothing published", formats={
        "published speedup": display.as_printed, "measured speedup": 2, "runs": display.text})
    return together(shown, display.note(
        f"Published: {report.reference.statistic}; measured: the median over repeats. The verdict is "
        f"{said('reproduced')} when measured / published is within 1 ± {headline.percent(tol)} (the reference's "
        "tolerance), otherwise slower or faster."))


def reproduction_plot(report: Report):
    """Measured against published as a plot, only where some configuration is off (a screen of dots on
    the 1.000 line says nothing the verdict does not)."""
    from . import plots
    comparison = comparison_of(report)
    if comparison is None or (comparison["verdict"].isin(["reproduced", "not measured"])).all():
        return None
    return plots.comparison(comparison)


def differences(report: Report):
    """What differs from the published set-up; None without a reference."""
    if report.reference is None:
        return None
    return display.table(machine.reference_differences(report),
                         empty="nothing differs from the published set-up as far as the records say")


def failures(report: Report):
    return display.table(machine.failures(report), empty="every run completed")


def problems(report: Report):
    return display.table(report.problems(), empty="every file was analysed")


def description(report: Report):
    """Title, mode, logs, study, reference and its address, the throughput rule: every value whole."""
    frame = machine.describe(report).reset_index()
    frame.columns = ["", "value"]
    return display.table(frame, empty="nothing to describe")
