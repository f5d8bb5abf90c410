"""Several studies (or folders of logs) side by side: same configurations, different stacks.

Used by `notebooks/compare.ipynb`: frameworks against each other, two machines, two containers,
or a reproduction against the logs it reproduces. Configurations are matched on the axes marked
`compared` (`core.config`: GPUs, per-GPU batch, precision and XLA; a source's runs that differ only in other
axes are pooled); ratios are medians against the baseline source's medians, each with its spread as asv's
`compare` gives it: a percentile bootstrap interval of the ratio, resampling each side's runs (a fixed seed:
the same runs give the same interval), and "not told apart" where the interval includes 1.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ..core.catalog import default as catalog
from ..errors import BenchbookError
from ..logs.analysis import analyze
from ..runfolder import records
from . import data_files, display, metrics, page_contract

CONFIDENCE = 0.95  # of the ratio's interval
RESAMPLES = 2000  # bootstrap resamples of each side
SEED = 0  # the bootstrap's: the same runs give the same interval
INTERVAL_COLUMNS = {
    "source": "the source's label", "baseline": "the baseline source's label",
    "runs": "the source's complete runs of the configuration", "baseline_runs": "the baseline's",
    "median": "the source's median throughput, the models' unit", "baseline_median": "the baseline's",
    "ratio": "median / baseline_median", "low": "the interval's lower bound (bootstrap percentile; empty: a single "
    "run on a side, no spread)", "high": "its upper bound",
    "verdict": "faster or slower (the interval excludes 1), not told apart (it includes 1), or single runs",
}
VERDICTS = {"faster": "faster", "slower": "slower", "apart": "not told apart: the interval includes 1",
            "single": "single runs: no spread to tell them apart"}


def ratio_interval(these, baseline, confidence: float = CONFIDENCE, resamples: int = RESAMPLES,
                   seed: int = SEED) -> tuple[float, float]:
    """The percentile bootstrap interval of median(these) / median(baseline): each side's runs resampled with
    replacement, `resamples` times, with a fixed seed; (NaN, NaN) where a side has fewer than two runs (no spread
    to resample). asv's `compare` gives each side's spread the same way before calling a change significant."""
    these, baseline = np.asarray(these, float), np.asarray(baseline, float)
    if len(these) < 2 or len(baseline) < 2:
        return float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    top = np.median(rng.choice(these, (resamples, len(these))), axis=1)
    bottom = np.median(rng.choice(baseline, (resamples, len(baseline))), axis=1)
    tail = (1 - confidence) / 2
    low, high = np.quantile(top / bottom, [tail, 1 - tail])
    return float(low), float(high)


def told_apart(low: float, high: float) -> str:
    """The interval in words: faster (wholly above 1), slower (below), not told apart (it includes 1)."""
    if not (np.isfinite(low) and np.isfinite(high)):
        return VERDICTS["single"]
    return VERDICTS["faster"] if low > 1 else VERDICTS["slower"] if high < 1 else VERDICTS["apart"]


def _readable(frame: pd.DataFrame) -> pd.DataFrame:
    """The configuration's axes named as the report's tables name them ("GPUs", "per-GPU batch"), not by key."""
    headers = catalog().headers()
    frame.index = frame.index.set_names([headers.get(n, n) for n in frame.index.names])
    frame.columns.name = None
    return frame


def _split(text: str | list | None) -> list[str]:
    """Comma-separated text or a list, as stripped non-empty items; None (an unset notebook parameter) is none."""
    if text is None:
        return []
    items = text if isinstance(text, list) else str(text).split(",")
    return [s.strip() for s in items if s and s.strip()]


class Comparison:
    """Analyses of several sources, with labels and a baseline for ratios.

    `labels` names the sources in order; None (or empty) labels each source by its folder name.
    """

    def __init__(self, sources: str | list, labels: str | list | None = None, baseline: int = 0):
        self.sources = [Path(s) for s in _split(sources)]
        if len(self.sources) < 2:
            raise BenchbookError(f"a comparison needs at least two sources; got {len(self.sources)}: {sources!r}")
        missing = [str(s) for s in self.sources if not s.exists()]
        if missing:
            raise BenchbookError(f"no such folder: {', '.join(missing)}")
        names = _split(labels) or [s.name for s in self.sources]
        if len(names) != len(self.sources):
            raise BenchbookError(f"{len(names)} labels for {len(self.sources)} sources; give one label per source")
        if not 0 <= baseline < len(self.sources):
            raise BenchbookError(f"baseline {baseline} is not a source index (0..{len(self.sources) - 1})")
        self.labels, self.baseline = names, baseline
        self.analyses = [analyze([s]) for s in self.sources]

    def describe(self) -> pd.DataFrame:
        return pd.DataFrame([{"label": label, "source": str(s), "runs": len(a.runs),
                              "complete": int((a.runs["status"] == "complete").sum()) if len(a.runs) else 0,
                              "baseline": i == self.baseline}
                             for i, (label, s, a) in enumerate(zip(self.labels, self.sources, self.analyses,
                                                                   strict=True))])

    def stats(self) -> pd.DataFrame:
        """metrics.aggregate of every source, with a `label` column (tidy: one row per source x config)."""
        frames = [metrics.aggregate(
            a.runs, catalog=a.catalog).assign(label=label) for label, a in zip(self.labels, self.analyses,
                                                                                     strict=True)]
        return pd.concat(frames, ignore_index=True)

    def samples(self) -> pd.DataFrame:
        """Every complete run with a throughput: its source's label, the compared axes (unknown as "?") and
        `value` (recomputed throughput, the models' unit): what the medians and the intervals are made of."""
        keys = catalog().compared()
        frames = []
        for label, a in zip(self.labels, self.analyses, strict=True):
            runs = a.runs
            if runs.empty:
                continue
            runs = runs[(runs["status"] == "complete") & runs["recomputed_throughput"].notna()]
            axes = {k: runs[k].astype(object).where(runs[k].notna(), "?") if k in runs else "?" for k in keys}
            frames.append(pd.DataFrame({**axes, "label": label, "value": runs["recomputed_throughput"]}))
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=[*keys, "label", "value"])

    def table(self) -> pd.DataFrame:
        """Median throughput (the models' unit): a row per configuration (readable headings), a column per source."""
        s = self.samples()
        if s.empty:
            return pd.DataFrame()
        table = s.groupby([*catalog().compared(), "label"], sort=True)["value"].median().unstack("label")
        return _readable(table.reindex(columns=self.labels).round(2))

    def intervals(self, confidence: float = CONFIDENCE) -> pd.DataFrame:
        """Tidy: one row per configuration and source other than the baseline, both measured: the two medians and
        runs, their ratio, its bootstrap interval (`ratio_interval`) and `verdict` (`told_apart`)."""
        s = self.samples()
        base = self.labels[self.baseline]
        keys = catalog().compared()
        rows = []
        for key, group in s.groupby(keys, sort=True):
            values = {label: g["value"].to_numpy(float) for label, g in group.groupby("label")}
            if base not in values:
                continue
            for label in (x for x in self.labels if x != base and x in values):
                these, baseline = values[label], values[base]
                low, high = ratio_interval(these, baseline, confidence)
                rows.append({**dict(zip(keys, key, strict=True)), "source": label, "baseline": base,
                             "runs": len(these), "baseline_runs": len(baseline), "median": float(np.median(these)),
                             "baseline_median": float(np.median(baseline)),
                             "ratio": float(np.median(these) / np.median(baseline)), "low": low, "high": high,
                             "verdict": told_apart(low, high)})
        return pd.DataFrame(rows, columns=[*keys, *INTERVAL_COLUMNS])

    def ratios(self, confidence: float = CONFIDENCE) -> pd.DataFrame:
        """Each source's median over the baseline's, for configurations both measured: per source its ratio
        (the column named by its label), the interval and whether the two are told apart."""
        tidy = self.intervals(confidence)
        if tidy.empty:
            return pd.DataFrame()
        percent = f"{confidence:.0%}"
        tidy = tidy.assign(interval=[display.significant(lo) + "–" + display.significant(hi) if np.isfinite(lo)
                                     else display.DASH for lo, hi in zip(tidy["low"], tidy["high"], strict=True)])
        wide = tidy.pivot(index=catalog().compared(), columns="source", values=["ratio", "interval", "verdict"])
        columns = {}
        for label in (x for x in self.labels if x in set(tidy["source"])):
            columns |= {label: wide[("ratio", label)].astype(float).round(3),
                        f"{label}: {percent} interval": wide[("interval", label)],
                        f"{label}: told apart?": wide[("verdict", label)]}
        return _readable(pd.DataFrame(columns, index=wide.index))

    def figure(self):
        from . import plots
        stats = self.stats()
        if stats.empty:
            return plots.repeats(self.analyses[0].runs)
        every = pd.concat([a.runs for a in self.analyses], ignore_index=True)
        labelled = pd.concat([a.runs.assign(model=label) for label, a in zip(self.labels, self.analyses, strict=True)],
                             ignore_index=True)
        labelled.attrs["unit"] = plots.rate_unit(every)  # the sources' models' unit, not their labels'
        return plots.repeats(labelled)

    def environment_differences(self) -> pd.DataFrame:
        """What differs between the first run record's environment of each source and the baseline's."""
        envs = [_first_environment(s) for s in self.sources]
        base = envs[self.baseline]
        rows = []
        try:
            from ..environment.diff import diff as env_diff
        except Exception:
            env_diff = None
        for label, env in zip(self.labels, envs, strict=True):
            if env is base or env is None or base is None or env_diff is None:
                continue
            for d in env_diff(base, env):
                rows.append({"source": label, "field": d.key, "baseline": d.a, "this source": d.b})
        return pd.DataFrame(rows, columns=["source", "field", "baseline", "this source"])

    def summary(self, title: str | None = None):
        """What the index shows of the comparison (`summary.Summary`)."""
        from .publish_files import portable
        from .summary import Summary
        return Summary(kind="comparison", title=title or "comparison: " + " vs ".join(self.labels), mode="comparison",
                       source=", ".join(portable(s, home=True) for s in self.sources), verdict="comparison",
                       runs=int(sum(len(a.runs) for a in self.analyses)),
                       complete=int(sum((a.runs["status"] == "complete").sum() for a in self.analyses if len(a.runs))),
                       configurations=int(len(self.table())))

    def tables(self) -> dict:
        """The tables as data (`data_files`): every source's configurations with their statistics, and the ratios
        with their intervals."""
        axes = {a.key: a.doc for a in catalog().axes}
        from .plot_base import rate_unit
        unit = rate_unit(pd.concat([a.runs for a in self.analyses], ignore_index=True))
        return {"configurations": (self.stats(), {**axes, **metrics.STAT_COLUMNS, "label": "the source's label"}, unit),
                "ratios": (self.intervals(), {**axes, **INTERVAL_COLUMNS}, unit)}


class ComparisonPage(page_contract.NamedSections):
    """The comparison's page (`page_contract`): its sections by name, in the page's order, each only showing;
    `finish` writes its tables into `out`."""

    SECTIONS = ("describe", "data", "table", "ratios", "figure", "environment_differences")

    def __init__(self, comparison: Comparison, out: str | None = None):
        self.comparison, self.out = comparison, out

    @property
    def heading(self) -> str:
        return "comparison: " + " vs ".join(self.comparison.labels)

    def show(self, name: str):
        """Section `name`'s content (None: nothing to show)."""
        c = self.comparison
        shown = {
            "describe": lambda: display.table(c.describe(), empty="no source"),
            "data": self.data_links,
            "table": lambda: display.table(c.table(), empty="no configuration measured in any source",
                                           formats=dict.fromkeys(c.labels, 2)),
            "ratios": lambda: display.table(c.ratios(), empty="no configuration measured by the baseline and another "
                                            "source", formats=dict.fromkeys(c.labels, display.significant)),
            "figure": c.figure,
            "environment_differences": lambda: display.table(
                c.environment_differences(),
                empty="no difference between the sources' run records (or no run records to compare)"),
        }
        if name not in shown:
            from ..errors import UnknownNameError
            raise UnknownNameError("section of the comparison page", name, list(self.SECTIONS))
        return shown[name]()

    def data_links(self) -> display.Html | None:
        """On a published page (one with a folder, `out`): the line that links the tables `finish` writes beside it,
        "data: configurations.csv · ..."; None in JupyterLab."""
        if self.out is None:
            return None
        markup, plain = data_files.link_line(page_contract.table_names(self.tables()))
        return display.Html(f'<p class="bb-nav">{markup}</p>', plain) if markup else None

    def tables(self) -> dict:
        return self.comparison.tables()

    def copies(self) -> list:
        return []

    def summary(self):
        return self.comparison.summary(self.heading)


def _first_environment(folder: Path) -> dict | None:
    for rec in records.find(folder).values():
        if isinstance(rec.get("environment"), dict):
            return rec["environment"]
    return None
