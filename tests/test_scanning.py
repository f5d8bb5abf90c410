"""The scanning loop: records of rules read one at a time (STEP) join the bulk rule's columns in
text order, and every other hit stays an event between them."""

from __future__ import annotations

import re

from benchbook.logs import events as ev
from benchbook.logs.parsers import scanning

_BULK = scanning.BulkRule(layout=scanning.Layout("step ", scanning.Int("iteration"), " rate ",
                                                 scanning.Num("throughput")), line_start=True)
_RULES = [
    (re.compile(r"old (\d+) ips ([0-9.]+)"),
     lambda m: (ev.STEP, ev.step(0, int(m.group(1)), "2021-04-02 09:00:00.5", float(m.group(2))))),
    (re.compile(r"EVAL top1 ([0-9.]+)"), lambda m: (ev.EVAL, {"top1": float(m.group(1))})),
]


def test_step_hits_and_bulk_lines_are_one_set_of_columns_in_text_order():
    text = "step 1 rate 10\nold 2 ips 20.5\nstep 3 rate 30\nEVAL top1 0.5\nstep 4 rate 40\n"
    events = scanning.scan(text, 11, _RULES, _BULK)
    assert [e[2] for e in events] == [ev.BULK, ev.EVAL, ev.BULK]
    first = events[0][3].columns()
    assert first["iteration"].tolist() == [1, 2, 3] and first["throughput"].tolist() == [10.0, 20.5, 30.0]
    assert first["line"].tolist() == [11, 12, 13] and first["end_line"].tolist() == [11, 12, 13]
    assert first["timestamp"][1] == 1617354000.5 and first["epoch"].tolist() == [-1, 0, -1]
    assert events[1][0] == 14 and events[2][3].columns()["line"].tolist() == [15]


def test_step_hits_alone_are_columns_too():
    events = scanning.scan("old 7 ips 1.5\n[1,2]<stdout>:old 8 ips 2.5\n", 1, _RULES)
    assert len(events) == 1 and events[0][2] == ev.BULK
    cols = events[0][3].columns()
    assert cols["iteration"].tolist() == [7, 8] and cols["rank"].tolist() == [-1, 2]
