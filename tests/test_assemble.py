"""Folding events into runs: the records of a file's runs share one set of columns, each run a
range of them, grown in place and handed over whole."""

from __future__ import annotations

import math

import numpy as np

from benchbook.logs import events as ev
from benchbook.logs.assemble import FLUSH_ROWS, Records, fold


def _bulk(first_line: int, rates: list[float], rank: int = -1) -> ev.Event:
    n = len(rates)
    cols = {"line": np.arange(first_line, first_line + n), "rank": np.full(n, rank),
            "epoch": np.zeros(n, dtype=np.int64), "iteration": np.arange(n) * 10,
            "timestamp": 1e9 + np.arange(n, dtype=float), "throughput": np.array(rates, dtype=float),
            "loss": np.full(n, np.nan), "lr": np.full(n, np.nan), "steps": np.full(n, np.nan)}
    return ev.Event(first_line, None, ev.BULK, cols)


def test_records_grow_across_many_blocks_and_single_steps_and_keep_their_order():
    records = Records()
    expected = []
    for block in range(40):  # past several reallocations of the columns
        rates = [block * 1000.0 + i for i in range(997)]
        records.extend(_bulk(len(expected) + 1, rates)[3])
        expected += rates
        records.append(len(expected) + 1, 3, ev.step(0, 5, "2021-04-02 09:00:00,250", throughput=-1.0))
        expected.append(-1.0)
    assert len(records) == len(expected)
    cols = records.release()
    assert cols["throughput"].tolist() == expected
    assert cols["line"].tolist() == list(range(1, len(expected) + 1))
    assert cols["timestamp"][996 + 1] == 1617354000.25  # a step's stamp, read as UTC to the microsecond
    assert cols["rank"].dtype == np.int64 and len(records) == 0  # handed over


def test_many_single_steps_are_flushed_into_the_columns():
    records = Records()
    for i in range(FLUSH_ROWS + 5):
        records.append(i + 1, None, ev.step(0, i, float(i), throughput=float(i)))
    cols = records.columns()
    assert len(cols["line"]) == FLUSH_ROWS + 5 and cols["rank"][0] == -1
    assert cols["throughput"][-1] == FLUSH_ROWS + 4 and cols["timestamp"][7] == 7.0


def test_the_runs_of_a_file_are_consecutive_ranges_of_one_set_of_columns():
    events = [ev.Event(1, None, ev.RUN_START, {"gpus": 1}), _bulk(2, [10.0, 11.0, 12.0], rank=0),
              ev.Event(5, None, ev.END, "done"),
              ev.Event(6, None, ev.RUN_START, {"gpus": 8}), _bulk(7, [80.0, 81.0]),
              ev.Event(9, 0, ev.FIELD, {"loss": 2.5})]  # rank 0 has no record in this run: not the first run's
    runs, _ = fold(events)
    assert [r.count for r in runs] == [3, 2]
    assert runs[0].store is runs[1].store
    assert [r.start for r in runs] == [0, 3]
    cols = runs[0].store.release()
    assert cols["throughput"].tolist() == [10.0, 11.0, 12.0, 80.0, 81.0]
    assert all(math.isnan(x) for x in cols["loss"])
    runs, _ = fold(events[:-1] + [ev.Event(9, None, ev.FIELD, {"loss": 2.5})])
    loss = runs[0].store.release()["loss"].tolist()
    assert math.isnan(loss[3]) and loss[4] == 2.5  # the last record of the rank, in the current run
