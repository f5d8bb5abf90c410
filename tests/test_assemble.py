"""Folding events into runs: the records of a file's runs share one set of columns, each run a
range of them, joined from their blocks once and handed over whole."""

from __future__ import annotations

import math

import numpy as np

from benchbook.logs.assemble import Records, fold
from benchbook.logs.parsers import scanning as ev


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
    loss = records["loss"]
    assert loss[1] == 0.5 and math.isnan(loss[0]) and math.isnan(loss[2])
    assert records["timestamp"][1] == 1617354000.25  # read as UTC to the microsecond
    assert records["throughput"].tolist() == [1.0, 2.0, 3.0]


def _two_runs(field_rank) -> list[ev.Event]:
    return [ev.Event(1, None, ev.RUN_START, {"gpus": 1}), _bulk(2, [10.0, 11.0, 12.0], rank=0),
            ev.Event(5, None, ev.END, "done"),
            ev.Event(6, None, ev.RUN_START, {"gpus": 8}), _bulk(7, [80.0, 81.0]),
            ev.Event(9, field_rank, ev.FIELD, {"loss": 2.5})]


def test_the_runs_of_a_file_are_consecutive_ranges_of_one_set_of_columns():
    runs, _, _ = fold(_two_runs(0))  # rank 0 has no record in the second run: the field is not the first run's
    assert [r.count for r in runs] == [3, 2]
    assert runs[0].store is runs[1].store
    cols = runs[0].store.release()
    assert cols["throughput"].tolist() == [10.0, 11.0, 12.0, 80.0, 81.0]
    assert all(math.isnan(x) for x in cols["loss"])
    runs, _, _ = fold(_two_runs(None))
    loss = runs[0].store.release()["loss"].tolist()
    assert math.isnan(loss[3]) and loss[4] == 2.5  # the last record of the rank, in the current run


def _steps(first_line: int, steps: list[tuple[int, int, float]], rank: int = -1) -> ev.Event:
    """A BULK event of records (epoch, iteration, timestamp) of one rank."""
    event = _bulk(first_line, [100.0] * len(steps), rank)
    cols = event[3].cols
    cols["epoch"], cols["iteration"], cols["timestamp"] = (np.array(c) for c in zip(*steps, strict=True))
    return event


def test_a_run_pasted_after_another_begins_where_the_step_counter_goes_back_and_the_clock_jumps():
    start = ev.Event(1, None, ev.RUN_START, {"gpus": 1})
    first = _steps(2, [(0, 100, 1e9), (0, 200, 1e9 + 10)])
    # The next chunk: the pasted run's records, its counter back at 100 and its clock 5 minutes on.
    second = _steps(20, [(0, 100, 1e9 + 310), (0, 200, 1e9 + 320), (0, 100, 1e9 + 700), (0, 200, 1e9 + 710)])
    runs, _, _ = fold([start, first, second])
    assert [(r.count, r.first_line, r.last_line) for r in runs] == [(2, 1, 3), (2, 20, 21), (2, 22, 23)]
    assert runs[0].restarted is None
    assert runs[1].restarted == ("a new run begins at line 20 without a start line: the step counter went back "
                                 "from 200 to 100 and the clock jumped 300 s")
    assert "line 22" in runs[2].restarted and "jumped 380 s" in runs[2].restarted
    assert runs[1].meta == {} and runs[0].meta == {"gpus": 1}


def test_no_restart_for_a_new_epoch_a_short_pause_or_another_rank():
    events = [ev.Event(1, None, ev.RUN_START, {}),
              _steps(2, [(0, 100, 1e9), (0, 200, 1e9 + 10)], rank=0),
              _steps(4, [(0, 100, 1e9 + 500)], rank=1),  # rank 1's first record: nothing to go back from
              _steps(5, [(1, 0, 1e9 + 900)], rank=0),  # a new epoch counts from 0 again
              _steps(6, [(1, 100, 1e9 + 910), (1, 50, 1e9 + 920)], rank=0),  # back, but 10 s later
              _steps(8, [(1, 0, 1e9 + 2000), (0, 300, 1e9 + 2010)], rank=1)]  # rank 1 goes on from its own last record
    runs, _, _ = fold(events)
    assert len(runs) == 1 and runs[0].count == 8 and runs[0].ranks == {0, 1}


def test_seconds_reads_numbers_and_date_times_and_gives_nan_for_the_rest():
    from benchbook.logs.parsers.scanning import seconds, seconds_array

    assert seconds("2021-04-02 09:00:00,250") == seconds("2021-04-02T09:00:00.250") == 1617354000.25
    assert seconds(12.5) == seconds("12.5") == 12.5
    assert all(math.isnan(seconds(x)) for x in (None, "", "2021-02-30 00:00:00", "soon"))
    got = seconds_array(["2021-04-02 09:00:00.5", None, "2021-02-30 00:00:00", 0, 7.5]).tolist()
    assert got[0] == 1617354000.5 and math.isnan(got[1]) and math.isnan(got[2]) and got[3:] == [0.0, 7.5]
    assert seconds_array([None, "1.5"]).tolist()[1] == 1.5 and seconds_array([]).dtype == np.float64


def test_a_field_goes_to_its_own_ranks_last_record_when_ranks_log_in_turns():
    events = [ev.Event(1, None, ev.RUN_START, {})]
    for turn in range(6):  # ranks 0, 1, 2 in turns, two records each, a loss line after each block
        events += [_steps(2 + 3 * turn, [(0, 10 * turn, 1e9 + turn), (0, 10 * turn + 5, 1e9 + turn)], rank=turn % 3),
                   ev.Event(4 + 3 * turn, turn % 3, ev.FIELD, {"loss": float(turn)})]
    events.append(ev.Event(30, 1, ev.FIELD, {"lr": 0.1}))  # rank 1 again: its last record is in turn 4
    runs, _, _ = fold(events)
    cols = runs[0].store.release()
    assert len(runs) == 1 and runs[0].ranks == {0, 1, 2}
    assert [None if math.isnan(x) else x for x in cols["loss"]] == [None, 0.0, None, 1.0, None, 2.0,
                                                                    None, 3.0, None, 4.0, None, 5.0]
    assert np.flatnonzero(~np.isnan(cols["lr"])).tolist() == [9]


def test_a_phase_event_lets_the_step_counter_start_again_in_the_same_run():
    # An evaluation after training (a PHASE event between): its steps count from 0 minutes later.
    training = _steps(2, [(1, 38, 1e9), (1, 39, 1e9 + 1)])
    evaluation = _steps(9, [(0, 30, 1e9 + 300), (0, 31, 1e9 + 301), (0, 30, 1e9 + 700)])
    runs, _, _ = fold([ev.Event(1, None, ev.RUN_START, {}), training, ev.Event(5, None, ev.PHASE, None), evaluation])
    assert [(r.count, r.first_line) for r in runs] == [(4, 1), (1, 11)]  # within the phase, a restart is still one
    assert "from 31 to 30" in runs[1].restarted


def test_a_rank_event_counts_its_rank_among_the_runs_ranks():
    events = [ev.Event(1, 0, ev.RUN_START, {}), ev.Event(2, 1, ev.RANK, None), ev.Event(3, 2, ev.RANK, None),
              _steps(4, [(0, 19, 1e9)], rank=0)]
    runs, _, _ = fold(events)
    assert len(runs) == 1 and runs[0].ranks == {0, 1, 2} and runs[0].count == 1
