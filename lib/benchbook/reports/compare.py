"""Several studies (or folders of logs) side by side: same configurations, different stacks.

Used by `notebooks/compare.ipynb`: frameworks against each other, two machines, two containers,
or a reproduction against the logs it reproduces. Configurations are matched on the axes marked
`compared` (`core.config`: GPUs, per-GPU batch, precision and XLA); ratios are medians against the
baseline source's medians.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..core import config
from ..errors import BenchbookError
from ..logs.analysis import analyze
from ..runfolder import records
from . import metrics


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
        frames = [metrics.aggregate(a.runs).assign(label=label) for label, a in zip(self.labels, self.analyses,
                                                                                     strict=True)]
        return pd.concat(frames, ignore_index=True)

    def table(self) -> pd.DataFrame:
        """Median throughput (the models' unit): a row per configuration, a column per source."""
        s = self.stats()
        if s.empty:
            return pd.DataFrame()
        table = s.pivot_table(index=config.compared(), columns="label", values="median", aggfunc="first")
        return table[self.labels].round(2)

    def ratios(self) -> pd.DataFrame:
        """Each source's median over the baseline's, for configurations the baseline measured."""
        t = self.table()
        if t.empty:
            return t
        base = t[self.labels[self.baseline]]
        return t.drop(columns=[self.labels[self.baseline]]).div(base, axis=0).round(3).dropna(how="all")

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

    def save_summary(self, path: str | Path | None) -> dict:
        data = {"title": "comparison: " + " vs ".join(self.labels), "mode": "comparison",
                "source": ", ".join(map(str, self.sources)),
                "runs": int(sum(len(a.runs) for a in self.analyses)),
                "complete": int(sum((a.runs["status"] == "complete").sum() for a in self.analyses if len(a.runs))),
                "verdict": "comparison", "configurations": int(len(self.table()))}
        if path:
            records.write(Path(path), data)  # whole or not at all
        return data


def _first_environment(folder: Path) -> dict | None:
    for rec in records.find(folder).values():
        if isinstance(rec.get("environment"), dict):
            return rec["environment"]
    return None
