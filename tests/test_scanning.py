"""The scanning loop: records of rules read one at a time (STEP) join the bulk rule's columns in
text order, and every other hit stays an event between them."""

from __future__ import annotations

import re

import numpy as np

from benchbook.logs.parsers import scanning
from benchbook.logs.parsers import scanning as ev
from benchbook.logs.textio import Chunk

_BULK = scanning.BulkRule(pattern=r"step (?P<iteration>[0-9]+) rate (?P<throughput>[0-9.eE+-]+)",
                          types={"iteration": "int", "throughput": "float"})
_RULES = [
    (re.compile(r"old (\d+) ips ([0-9.]+)"),
     lambda m: (ev.STEP, ev.step(0, int(m.group(1)), "2021-04-02 09:00:00.5", float(m.group(2))))),
    (re.compile(r"EVAL top1 ([0-9.]+)"), lambda m: (ev.EVAL, {"top1": float(m.group(1))})),
]


def test_step_hits_and_bulk_lines_are_one_set_of_columns_in_text_order():
    text = "step 1 rate 10\nold 2 ips 20.5\nstep 3 rate 30\nEVAL top1 0.5\nstep 4 rate 40\n"
    events = scanning.scan(Chunk.of(text, 11), _RULES, _BULK)
    assert [e[2] for e in events] == [ev.BULK, ev.EVAL, ev.BULK]
    first = events[0][3].columns()
    assert first["iteration"].tolist() == [1, 2, 3] and first["throughput"].tolist() == [10.0, 20.5, 30.0]
    assert first["line"].tolist() == [11, 12, 13] and first["end_line"].tolist() == [11, 12, 13]
    assert first["timestamp"][1] == 1617354000.5 and first["epoch"].tolist() == [-1, 0, -1]
    assert events[1][0] == 14 and events[2][3].columns()["line"].tolist() == [15]


def test_a_bulk_record_begins_its_line_after_any_rank_tag_and_the_other_rules_read_the_rest():
    text = "step 1 rate 10\n[1,3]<stdout>:step 2 rate 20\nnote: step 3 rate 30 EVAL top1 0.5\n"
    events = scanning.scan(Chunk.of(text, 1), _RULES, _BULK)
    assert [e[2] for e in events] == [ev.BULK, ev.EVAL] and events[1][0] == 3
    cols = events[0][3].columns()
    assert cols["iteration"].tolist() == [1, 2] and cols["rank"].tolist() == [-1, 3]


def test_step_hits_alone_are_columns_too():
    events = scanning.scan(Chunk.of("old 7 ips 1.5\n[1,2]<stdout>:old 8 ips 2.5\n"), _RULES)
    assert len(events) == 1 and events[0][2] == ev.BULK
    cols = events[0][3].columns()
    assert cols["iteration"].tolist() == [7, 8] and cols["rank"].tolist() == [-1, 2]


_VALUES = scanning.BulkRule(values=re.compile(r"( (t|it|loss|[a-z]+ loss): ([0-9.eE+-]+))"), opens="t",
                            fields=(("t", "timestamp"), ("it", "iteration"), ("loss", "loss")))
_START = [(re.compile(r"START"), lambda m: (ev.RUN_START, {}))]


def test_named_values_open_records_fill_them_per_rank_and_the_others_are_losses():
    text = ("[1,0]<stdout>: it: 4\n"  # its record is in an earlier chunk: a FIELD event
            "[1,0]<stdout>: t: 100.5\n[1,1]<stdout>: t: 200.5\n[1,0]<stdout>: it: 5\n[1,1]<stdout>: it: 6\n"
            "[1,0]<stdout>: box loss: 0.25\n[1,0]<stdout>: loss: 2.5\nSTART\n"
            "[1,1]<stdout>: loss: 9.5\n")  # after a run start: not the record before it
    events = scanning.scan(Chunk.of(text, 10), _START, _VALUES)
    assert [e[2] for e in events] == [ev.FIELD, ev.BULK, ev.RUN_START, ev.FIELD, ev.LOSSES]
    assert events[0][:2] == (10, 0) and events[0][3] == {"iteration": 4.0}
    cols = events[1][3].columns()
    assert cols["timestamp"].tolist() == [100.5, 200.5] and cols["iteration"].tolist() == [5, 6]
    assert cols["rank"].tolist() == [0, 1] and cols["loss"][0] == 2.5 and np.isnan(cols["loss"][1])
    assert cols["line"].tolist() == [11, 12] and cols["end_line"].tolist() == [16, 14]
    assert events[3][:2] == (18, 1) and events[3][3] == {"loss": 9.5}
    losses = events[4][3]
    assert losses["names"] == ["box loss"] and losses["line"].tolist() == [15] and losses["value"].tolist() == [0.25]


def test_values_of_a_rank_that_opened_no_record_in_the_chunk_are_field_events():
    """Their record is in an earlier chunk (this used to raise IndexError: no record to index)."""
    text = "[1,1]<stdout>: it: 6\n[1,0]<stdout>: t: 100.5\n[1,1]<stdout>: loss: 9.5\n"
    events = scanning.scan(Chunk.of(text, 5), [], _VALUES)
    assert [e[:3] for e in events] == [(5, 1, ev.FIELD), (6, None, ev.BULK), (7, 1, ev.FIELD)]
    assert events[0][3] == {"iteration": 6.0} and events[2][3] == {"loss": 9.5}
    assert scanning.scan(Chunk.of(" it: 6\n loss: 1.5\n"), [], _VALUES) == [
        (1, None, ev.FIELD, {"iteration": 6.0}), (2, None, ev.FIELD, {"loss": 1.5})]


def test_the_lines_of_events_are_counted_in_characters_whatever_the_text():
    for text in ["".join(f"ü {i} EVAL top1 0.{i}\n" if i % 3 else f"[1,{i % 4}]<stdout>:step {i} rate 1\n"
                         for i in range(200)), "EVAL top1 0.5", "a\nb\n\nc EVAL top1 1\n"]:
        events = scanning.scan(Chunk.of(text, 3), _RULES, _BULK)
        lines = [e[0] for e in events if e[2] == ev.EVAL]
        assert lines == [3 + i for i, line in enumerate(text.split("\n")) if "EVAL" in line]
        records = [c for e in events if e[2] == ev.BULK for c in e[3].columns()["line"].tolist()]
        assert records == [3 + i for i, line in enumerate(text.split("\n")) if "step" in line]
