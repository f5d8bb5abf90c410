"""Folding events into runs: the records of a file's runs share one set of columns, each run a
range of them, joined from their blocks once and handed over whole."""

from __future__ import annotations

import math

import numpy as np

from benchbook.logs import events as ev
from benchbook.logs.assemble import Records, fold


def _bulk(first_line: int, rates: list[float], rank: int = -1) -> ev.Event:
    n = len(rates)
    cols = {"line": np.arange(first_line, first_line + n), "rank": np.full(n, rank),
            "epoch": np.zeros(n, dtype=np.int64), "iteration": np.arange(n) * 10,
            "timestamp": 1e9 + np.arange(n, dtype=float), "throughput": np.array(rates, dtype=float),
            "loss": np.full(n, np.nan), "lr": np.full(n, np.nan), "steps": np.full(n, np.nan)}
    cols["end_line"] = cols["line"]
    return ev.Event(first_line, None, ev.BULK, ev.Bulk(cols, 0, n))


def test_records_join_many_blocks_once_in_their_order_and_hand_them_over():
    records = Records()
    expected = []
    for block in range(40):
        rates = [block * 1000.0 + i for i in range(997)]
        records.extend(_bulk(len(expected) + 1, rates)[3])
        expected += rates
    assert len(records) == len(expected)
    cols = records.release()
    assert cols["throughput"].tolist() == expected
    assert cols["line"].tolist() == list(range(1, len(expected) + 1))
    assert cols["rank"].dtype == np.int64 and cols["loss"].dtype == np.float64
    assert len(records) == 0 and len(records.release()["line"]) == 0  # handed over


def test_a_field_goes_to_the_last_record_of_its_rank_in_an_earlier_block_but_not_before_since():
    records = Records()
    records.extend(_bulk(1, [1.0, 2.0], rank=0)[3])
    records.extend(_bulk(3, [3.0], rank=1)[3])
    records.update_last(0, {"loss": 0.5, "timestamp": "2021-04-02 09:00:00,250"})
    records.update_last(1, {"loss": 0.7}, since=3)  # rank 1's record is record 2, before `since`
    cols = records.columns()
    assert cols["loss"][1] == 0.5 and math.isnan(cols["loss"][0]) and math.isnan(cols["loss"][2])
    assert cols["timestamp"][1] == 1617354000.25  # read as UTC to the microsecond
    assert records.columns()["throughput"].tolist() == [1.0, 2.0, 3.0]  # kept: columns() again


def _two_runs(field_rank) -> list[ev.Event]:
    return [ev.Event(1, None, ev.RUN_START, {"gpus": 1}), _bulk(2, [10.0, 11.0, 12.0], rank=0),
            ev.Event(5, None, ev.END, "done"),
            ev.Event(6, None, ev.RUN_START, {"gpus": 8}), _bulk(7, [80.0, 81.0]),
            ev.Event(9, field_rank, ev.FIELD, {"loss": 2.5})]


def test_the_runs_of_a_file_are_consecutive_ranges_of_one_set_of_columns():
    runs, _, _ = fold(_two_runs(0))  # rank 0 has no record in the second run: the field is not the first run's
    assert [r.count for r in runs] == [3, 2]
    assert runs[0].store is runs[1].store
    assert [r.start for r in runs] == [0, 3]
    cols = runs[0].store.release()
    assert cols["throughput"].tolist() == [10.0, 11.0, 12.0, 80.0, 81.0]
    assert all(math.isnan(x) for x in cols["loss"])
    runs, _, _ = fold(_two_runs(None))
    loss = runs[0].store.release()["loss"].tolist()
    assert math.isnan(loss[3]) and loss[4] == 2.5  # the last record of the rank, in the current run
