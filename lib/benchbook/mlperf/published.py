"""Published MLPerf Training scores as data: `params/references/mlperf/<file>.yaml`, one file per
results repository (a round), each with its source (repository, commit, results page) and a row per
result (submitter, system, benchmark, minutes, its folder in the repository, where the number was
confirmed). The NGC reference schema (`models/reference_schema.py`: a benchbook model, throughput
rows) does not fit a table of results of many systems, hence this small schema beside it.

`lookup` gives the published score of one result; the report, `tools/check_mlperf_results.py` and
`benchbook mlperf run --score` compare with it. Errors read `file:line: field = value: what is allowed`.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..core import project, yamlfile
from ..errors import BenchbookError
from . import rules

ROOT = project.REFERENCES / "mlperf"
MAX_YAML_NODES = 20_000
TOLERANCE_MINUTES = 0.0001  # the 4 decimals the results are published with


class PublishedScoreError(BenchbookError, ValueError):
    """A file of published MLPerf scores that cannot be used as written."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class Source(_Strict):
    """Where the scores were published: the results repository at a commit, and the results page."""

    repository: str = Field(pattern=r"^mlcommons/training_results_v\d+\.\d+$")
    commit: str = Field(pattern=r"^[0-9a-f]{7,40}$")
    url: str = Field(pattern=r"^https://\S+$", description="the results page of the round")
    note: str = ""


class Score(_Strict):
    """One published result."""

    submitter: str = Field(pattern=r"^[A-Za-z0-9_.+-]{1,64}$")
    system: str = Field(pattern=r"^[A-Za-z0-9_.+-]{1,128}$")
    benchmark: str = Field(pattern=r"^[a-z0-9_]{1,32}$")
    minutes: float = Field(gt=0)
    folder: str = Field(pattern=r"^[A-Za-z0-9_.+-]+/results/[A-Za-z0-9_.+-]+/[a-z0-9_]+$",
                        description="<Submitter>/results/<system>/<benchmark> in the repository")
    published: str = Field(min_length=1, description="where the number was confirmed")


class PublishedScores(_Strict):
    """A round's published scores."""

    schema_version: Literal[1]
    title: str = Field(min_length=1)
    round: str = Field(pattern=r"^v\d+\.\d+$")
    source: Source
    scores: list[Score] = Field(min_length=1)
    path: Path = Field(exclude=True)

    @model_validator(mode="after")
    def _consistent(self):
        if self.source.repository != f"mlcommons/training_results_{self.round}":
            raise ValueError(f"source.repository {self.source.repository!r} is not the repository of round "
                             f"{self.round} (mlcommons/training_results_{self.round})")
        seen = set()
        for s in self.scores:
            key = (s.submitter, s.system, s.benchmark)
            if key in seen:
                raise ValueError(f"two scores for {'/'.join(key)}")
            seen.add(key)
            if s.folder != f"{s.submitter}/results/{s.system}/{s.benchmark}":
                raise ValueError(f"folder {s.folder!r} is not {s.submitter}/results/{s.system}/{s.benchmark}")
        return self

    def where(self, score: Score) -> str:
        """repository@commit:folder, as the sources elsewhere in benchbook are written."""
        return f"{self.source.repository}@{self.source.commit}:{score.folder}"


def load(path: str | Path) -> PublishedScores:
    path = Path(path)
    doc = yamlfile.read_mapping(path, PublishedScoreError, "file of published scores",
                                "schema_version, title, round, source, scores", MAX_YAML_NODES)
    return yamlfile.validated(doc, path, PublishedScores, PublishedScoreError)


@cache
def _all(root: Path) -> tuple[PublishedScores, ...]:
    return tuple(load(p) for p in sorted(root.glob("*.yaml")))


def files(root: str | Path | None = None) -> tuple[PublishedScores, ...]:
    """Every file of published scores (of `root`, default params/references/mlperf/)."""
    return _all(Path(root or ROOT))


def lookup(round_: str | None, submitter: str | None, system: str, benchmark: str,
           root: str | Path | None = None) -> tuple[Score, PublishedScores] | None:
    """The published score of one result, with its file; None when none is published here. A benchmark
    is matched by its official name (v0.6's folder `mask` is `maskrcnn`)."""
    alias = rules.BENCHMARK_ALIASES
    for f in files(root):
        if f.round != round_:
            continue
        for s in f.scores:
            if (s.submitter, s.system, alias.get(s.benchmark, s.benchmark)) == \
                    (submitter, system, alias.get(benchmark, benchmark)):
                return s, f
    return None
