"""What a format's warm-up rule reads: one rank's records of every run of a file, at once.

A file may hold hundreds of runs (a benchmark script's repeats); asking the format about each run
alone would cost a few numpy calls per run. A format's `mark_warmup` instead gets all of them as
columns with the run of each record, reads per-run values broadcast to the records (`least`,
`most`, `meta`) and answers with one boolean array.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

import numpy as np


class RunRecords(Mapping):
    """Columns of records grouped by run, in run order: `records["iteration"]`, and

    - `run`: the run (0-based, in file order) of each record;
    - `least(name)`, `most(name)`: each record's run's smallest and largest value of a column;
    - `meta(key, convert)`: each record's run's metadata value, as `convert` turns it (None
      where the run has none) into a number.

    Columns are read from the file's columns at `rows` (a slice or an index array) when first
    asked for: a warm-up rule reads one or two of them.
    """

    def __init__(self, columns: Mapping[str, np.ndarray], rows, run: np.ndarray, metas: list[dict]) -> None:
        self._columns, self._rows, self._cache = columns, rows, {}
        self.run = run
        self._metas = metas
        sizes = np.bincount(run, minlength=len(metas)) if len(run) else np.zeros(len(metas), dtype=np.int64)
        self._starts = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.int64)
        self._filled = np.flatnonzero(sizes)

    def __getitem__(self, name: str) -> np.ndarray:
        if name not in self._cache:
            self._cache[name] = self._columns[name][self._rows]
        return self._cache[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._columns)

    def __len__(self) -> int:
        return len(self._columns)

    def _per_record(self, reduce: np.ufunc, name: str) -> np.ndarray:
        values = self[name]
        if not len(values):
            return values
        per_run = np.zeros(len(self._metas), dtype=values.dtype)
        per_run[self._filled] = reduce.reduceat(values, self._starts[self._filled])
        return per_run[self.run]

    def least(self, name: str) -> np.ndarray:
        """Each record's run's smallest value of the column."""
        return self._per_record(np.minimum, name)

    def most(self, name: str) -> np.ndarray:
        """Each record's run's largest value of the column."""
        return self._per_record(np.maximum, name)

    def meta(self, key: str, convert: Callable[[object], float]) -> np.ndarray:
        """Each record's run's metadata value of `key`, converted (`convert(None)` where the run has none)."""
        per_run = np.array([convert(m.get(key)) for m in self._metas])
        return per_run[self.run] if len(per_run) else per_run
