"""Issue 46: a model declared in one module outside the library (tests/plugins/tinylm.py: its own axis, heads,
and a tokens/s measure) reaches the runs table, the scaling table, the index's label, the plots' labels and the
four data files, through the catalog alone."""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path

from benchbook.core import catalog
from benchbook.reports import data_files, plots
from benchbook.reports.report import Report
from benchbook.reports.sections import runs as runs_section
from benchbook.reports.sections import scaling

PLUGINS = Path(__file__).parent / "plugins"
STAMP = "DLL 2026-11-20 09:00:0{} - "


@contextlib.contextmanager
def _plugin(monkeypatch):
    monkeypatch.syspath_prepend(str(PLUGINS))
    monkeypatch.setenv(catalog.PLUGINS_VAR, "tinylm")
    catalog.default.cache_clear()
    try:
        yield catalog.default()
    finally:
        monkeypatch.delenv(catalog.PLUGINS_VAR)
        catalog.default.cache_clear()
        sys.modules.pop("tinylm", None)


def _logs(tmp_path):
    """4 and 8 heads at 1 and 8 GPUs; the heads and sequence length in each log's run record."""
    folder = tmp_path / "logs"
    folder.mkdir()
    for heads in (4, 8):
        for gpus in (1, 8):
            rate = (1000.0 / heads) * gpus * 0.9 ** (gpus > 1)
            name = f"tinylm_heads{heads}_gpu{gpus}.txt"
            (folder / name).write_text("\n".join([
                STAMP.format(0) + f"PARAMETER arch : tinylm  batch_size : 32  amp : True  world_size : {gpus}  "
                "raport_file : experiment_raport.json ",
                *(STAMP.format(s) + f"Epoch: 0 Iteration: {s}  train.loss : 6.9 None train.compute_ips : "
                  f"{rate + 1} img/s train.total_ips : {rate} img/s train.lr : 0.1 " for s in (1, 2, 3)),
                STAMP.format(4) + f"Epoch: 0  train.loss : 6.85 None train.total_ips : {rate} img/s val.top1 : "
                f"{heads}.5 % val.top5 : 20.0 % val.total_ips : 870.0 img/s",
            ]) + "\n")
            (folder / f"{name}.run.json").write_text(json.dumps({"config": {"heads": heads, "seq_len": 256}}))
    return folder


def test_a_model_of_one_plugin_module_reaches_every_table_label_plot_and_data_file(tmp_path, monkeypatch):
    with _plugin(monkeypatch) as known:
        assert "heads" in known.own() and known.measures_of("pytorch", "tinylm")
        report = Report(log_dir=_logs(tmp_path))
        runs = report.analysis.runs
        assert set(runs["model"]) == {"tinylm"} and sorted(runs["heads"]) == [4, 4, 8, 8]

        assert "heads" in runs_section.table(report).columns
        shown = scaling.table(report)
        assert "<th>heads</th>" in shown.markup and str(shown).count("| amp | 32 |") == 4  # four configurations
        assert report.summary().best.label.endswith("heads 4")
        labels, _ = plots.config_labels(report.stats)
        assert len(set(labels)) == 4 and any(label.endswith("heads 8") for label in labels)

        measures = report.analysis.measures
        tokens = measures[measures["measure"] == "tokens_per_s"]
        assert len(tokens) == 4 and set(tokens["unit"]) == {"tokens/s"}
        throughput = measures[measures["measure"] == "throughput"]
        assert set(throughput["unit"]) == {"sequences/s"}
        assert sorted(tokens["value"].round(6)) == sorted((throughput["value"] * 256).round(6))

        out = tmp_path / "out"
        out.mkdir()
        data_files.write(out, data_files.report_tables(report))
        for name in ("runs", "configurations"):
            assert "heads" in data_files.load(out / f"{name}.csv").columns, name
        for name in ("iterations", "evaluations", "measures"):
            rows = data_files.load(out / f"{name}.csv")
            assert {c for c in rows["configuration"] if c.endswith("heads 8")}, name
        assert set(data_files.load(out / "measures.csv")["measure"]) == {"throughput", "tokens_per_s"}
    assert "heads" not in catalog.default().own()  # the plugin gone, the catalog is the library's again
