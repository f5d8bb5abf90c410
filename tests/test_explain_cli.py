"""`benchbook explain`: one published number against each run of a log, and a reference's rows against the
runs of their configuration (the shipped NGC TF1 BERT set: its two 32-GPU cells follow other rules than the
table's), as a table and as JSON; errors name the option, the file or the reference."""

from __future__ import annotations

import json
import statistics

from benchbook.cli import main
from conftest import ROOT
from test_rule_search import _rates, write_log

TF1_BERT = ROOT / "examples" / "published" / "ngc-tf1-bert"


def _json(capsys, argv: list[str]) -> tuple[int, list[dict], str]:
    code = main(argv)
    captured = capsys.readouterr()
    return code, [json.loads(line) for line in captured.out.splitlines()], captured.err


def test_a_published_value_as_json_lists_its_rules_simplest_first_with_their_options(tmp_path, capsys):
    rates = _rates(80, seed=11)
    log = write_log(tmp_path / "tf_bert.log", [rates])
    printed = f"{statistics.fmean(rates[-30:]):.4f}"

    code, cells, err = _json(capsys, ["explain", str(log), "--published", printed, "--json"])

    assert code == 0 and err == ""
    (cell,) = cells
    assert (cell["source"], cell["run"], cell["printed"], cell["verdict"]) == (str(log), 0, printed, "found")
    first = cell["candidates"][0]
    assert first["reproduces"] and first["rule"]["cli"] == "--rule perf --tail 30"
    assert first["rule"]["options"] == {"name": "perf", "tail": 30}
    assert first["rule"]["words"].startswith("perf: skip all but the last 30 records; arithmetic mean")
    named = [c for c in cell["candidates"] if c["rule"]["named"]]
    assert [c["rule"]["name"] for c in named] == ["nvidia", "perf", "perf_from_3", "steady"]
    assert all(set(c) == {"rule", "value", "relative_distance", "reproduces"} for c in cell["candidates"])


def test_the_table_says_when_no_rule_gives_the_number_with_the_nearest(tmp_path, capsys):
    log = write_log(tmp_path / "tf_bert.log", [_rates(30, seed=12)])

    assert main(["explain", str(log), "--published", "5000.0"]) == 0
    out = capsys.readouterr().out

    assert "no rule within the printed precision" in out
    assert "nearest --rule perf" in out and "named --rule steady" in out


def test_the_shipped_tf1_bert_set_explains_its_two_32_gpu_cells(capsys):
    code, cells, err = _json(capsys, ["explain", str(TF1_BERT), "--reference", "ngc_tf1_bert", "--json"])

    assert code == 0 and err == ""
    by_cell = {c["cell"]: c for c in cells}
    assert len(cells) == 10
    amp, fp32 = by_cell["V100: 32 GPUs, batch 96, amp"], by_cell["V100: 32 GPUs, batch 96, fp32"]
    first = amp["candidates"][0]
    assert (first["rule"]["cli"], first["reproduces"], round(first["value"], 3)) == ("--rule perf_from_3", True,
                                                                                    16142.922)
    # no stretch of its 27 records rounds to 4238.53: the mean after 9 records, 4238.5378, is cut to it, where
    # the table rounds its other numbers (7488.935 is printed 7488.94): a fit, said so
    best = fp32["candidates"][0]
    assert (best["rule"]["cli"], best["rule"]["digits"], fp32["verdict"]) == ("--rule perf --skip-records 9",
                                                                            "truncated", "found")
    assert fp32["digits_unlike_table"] and fp32["likely_fit"] and fp32["table_digits"] == "rounded"
    steady = next(c for c in fp32["candidates"] if c["rule"]["cli"] == "--rule steady")
    assert round(100 * steady["relative_distance"], 2) == 0.03
    assert {c["table_rule"]["cli"] for c in cells} == {"--rule perf"}
    assert [c["cell"] for c in cells if not c["follows_table_rule"]] == [
        "V100: 1 GPUs, batch 96, fp32", "V100: 32 GPUs, batch 96, amp", "V100: 32 GPUs, batch 96, fp32"]
    assert not amp["likely_fit"] and by_cell["V100: 1 GPUs, batch 96, fp32"]["likely_fit"]


def test_the_table_of_a_reference_says_each_table_s_rule_and_the_cells_that_follow_another(capsys):
    assert main(["explain", str(TF1_BERT), "--reference", "ngc_tf1_bert"]) == 0
    out = capsys.readouterr().out

    assert ("ngc_tf1_bert table V100: 3 of 6 cells follow --rule perf (its numbers rounded to their printed "
            "digits)") in out
    assert "V100: 32 GPUs, batch 96, amp (16142.9): --rule perf_from_3\n" in out
    assert ("V100: 32 GPUs, batch 96, fp32 (4238.53): --rule perf --skip-records 9 (truncated, unlike the table) "
            "(likely a fit)") in out
    assert "ngc_tf1_bert table A100: 4 of 4 cells follow --rule perf" in out


def test_two_editions_of_a_table_say_which_rule_each_follows_and_where_it_changed(tmp_path, capsys, monkeypatch):
    """Two editions of one publisher's table over the same logs: the first printed the mean of every record,
    the second the mean of the last 20 (the 2020 NGC TF1 BERT edition's arithmetic)."""
    runs = {(1, "amp"): _rates(60, seed=21), (8, "amp"): _rates(70, seed=22, centre=7000.0)}
    for gpus, _ in runs:
        write_log(tmp_path / f"tf_bert_pretraining_lamb_base_fp16_bs96_gpu{gpus}.log", [runs[gpus, "amp"]], gpus=gpus)
    refs = tmp_path / "references"
    refs.mkdir()
    for name, pick in (("edition_2019", lambda r: r), ("edition_2020", lambda r: r[-20:])):
        rows = "\n".join(f"  - {{gpus: {g}, batch_size: 96, precision: {p}, throughput: "
                         f"{statistics.fmean(pick(r)):.3f}}}" for (g, p), r in runs.items())
        (refs / f"{name}.yaml").write_text(
            f"schema_version: 1\ntitle: {name}\nmodel: bert_tf\nstatistic: one run\nsource: {{title: t}}\n"
            f"hardware: {{gpu: V100-SXM2-32GB, gpus_per_node: 8}}\nsoftware: {{}}\nrows:\n{rows}\n")
    monkeypatch.setenv("BENCHBOOK_REFERENCES", str(refs))

    assert main(["explain", str(tmp_path), "--reference", "edition_2019", "--reference", "edition_2020"]) == 0
    out = capsys.readouterr().out

    assert "edition_2019: 2 of 2 cells follow --rule perf (" in out
    assert "edition_2020: 2 of 2 cells follow --rule perf --tail 20 (" in out
    assert "the rule changed from edition_2019 (--rule perf) to edition_2020 (--rule perf --tail 20)" in out


def test_errors_name_the_option_the_file_or_the_reference(tmp_path, capsys):
    log = write_log(tmp_path / "tf_bert.log", [_rates(10, seed=13)])
    assert main(["explain", str(log), "--published", "12,5"]) == 2
    assert "published value '12,5': expected a number as a table prints it" in capsys.readouterr().err
    for wrong in ("-5", "0.000", "1e5", "nan", ""):
        assert main(["explain", str(log), "--published", wrong]) == 2, wrong
        assert f"published value {wrong!r}: expected a number" in capsys.readouterr().err
    assert main(["explain", str(log), "--reference", "no_such_reference"]) == 2
    assert "no_such_reference" in capsys.readouterr().err
    assert main(["explain", str(log), "--published", "100.0", "--measure", "mfu"]) == 2
    assert "--measure 'mfu'" in capsys.readouterr().err
    assert main(["explain", str(log), "--published", "100.0", "--run", "3"]) == 2
    assert "--run 3: no such run" in capsys.readouterr().err
    other = tmp_path / "notes.log"
    other.write_text("nothing to read here\n")
    assert main(["explain", str(other), "--published", "100.0"]) == 1
    assert f"{other}: no known log format" in capsys.readouterr().err
