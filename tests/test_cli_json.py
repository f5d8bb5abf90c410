"""`formats --json` and `status --json`: what the terminal tables show, as data for other tools (issue 40)."""

from __future__ import annotations

import json

from benchbook import cli
from benchbook.logs import parsers
from benchbook.runfolder import records
from conftest import cpu_log_text


def test_formats_json_lists_every_format_with_its_rules_default_first(capsys):
    assert cli.main(["formats", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [f["format"] for f in listed] == sorted(parsers.FORMATS)
    for entry in listed:
        rules = parsers.FORMATS[entry["format"]].rules
        assert [r["name"] for r in entry["rules"]] == [r.name for r in rules]
        assert all(r["source"] and r["method"] for r in entry["rules"]), entry


def test_status_json_gives_a_line_per_run_with_its_folder_and_unit(tmp_path, capsys):
    folder = tmp_path / "runs" / "s"
    for repeat, status in ((1, "complete"), (2, "failed")):
        run_id = f"cpu_fp32_bs8_syn_r{repeat}"
        (folder / run_id).mkdir(parents=True)
        (folder / run_id / f"{run_id}.log").write_text(cpu_log_text(10.0 * repeat))
        records.write(folder / run_id / "run.json", {
            "run_id": run_id, "status": status, "log": f"{run_id}.log", "duration_s": 12.5, "ended_at": "x",
            "failure": {"cause": "crash"} if status == "failed" else None,
            "config": {"model": "resnet50_tf", "gpus": 0, "batch_size": 8, "precision": "fp32", "repeat": repeat},
            "analysis": [{"recomputed_throughput": 10.0 * repeat}]})
    (folder / "broken").mkdir()
    (folder / "broken" / "run.json").write_text("{not json")
    code = cli.main(["status", "--json", str(folder)])
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert code == 1  # an unreadable record is a problem, as in the table
    by_id = {line["run_id"]: line for line in lines}
    assert set(by_id) == {"cpu_fp32_bs8_syn_r1", "cpu_fp32_bs8_syn_r2", "broken"}
    first = by_id["cpu_fp32_bs8_syn_r1"]
    assert first["study_folder"] == str(folder) and first["unit"] == "images/s" and first["throughput"] == 10.0
    assert by_id["cpu_fp32_bs8_syn_r2"]["cause"] == "crash" and by_id["broken"]["status"] == "unreadable"
    assert by_id["broken"]["throughput"] is None  # NaN in the table, null in JSON
