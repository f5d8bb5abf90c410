"""Words that say what was done (issue 39, items 5, 6 and 10): "recomputed" where nothing ran, the page's title a
published set's own, a fastest configuration named only when it stands out from the spread of its repeats, and a
verdict by a rule fitted to the published number that says what the script itself printed."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from benchbook.reports import headline, index_page, metrics, publish
from benchbook.reports.report import Report
from benchbook.reports.sections import Page, opening
from test_views import study_folder

ROOT = Path(__file__).parent.parent
FIXTURES = Path(__file__).parent / "fixtures"
FIXED = {"framework": "tensorflow", "model": "resnet50", "nodes": 1, "status": "complete", "xla": False,
         "dali": False, "synthetic": False, "gpus": 0, "precision": "fp32"}


def _stats(rows):
    """Statistics of runs (batch size, rate), one run per pair: repeats of a batch size share a configuration."""
    return metrics.aggregate(pd.DataFrame([{**FIXED, "batch_size": b, "recomputed_throughput": v} for b, v in rows]))


def test_logs_re_read_say_recomputed_where_our_own_runs_say_measured(tmp_path, monkeypatch):
    text = (ROOT / "params" / "references" / "ngc_mxnet_resnet50.yaml").read_text()
    (tmp_path / "one.yaml").write_text(text[:text.index("rows:")] + "rows:\n  - {gpus: 1, batch_size: 64, "
                                                                     "precision: amp, throughput: 605.100}\n")
    monkeypatch.setenv("BENCHBOOK_REFERENCES", str(tmp_path))
    shown = opening.verdict(Report(log_dir=FIXTURES / "ngc_mxnet", reference="one"))
    header = shown.markup.split("<thead>")[1].split("</thead>")[0]
    assert "<th>recomputed</th>" in header and "<th>measured</th>" not in header
    assert "Δ %: recomputed / published - 1" in shown.plain and "measured" not in shown.plain.replace(
        "not measured", "")
    assert headline.Words(own_runs=True)("measured") == "measured"
    assert headline.Words(own_runs=False)("measured") == "recomputed"
    assert headline.Words(own_runs=False)("not measured") == "not measured"  # a verdict, kept


def test_an_analysis_only_page_without_a_reference_says_its_configurations_are_recomputed():
    line = opening.verdict(Report(log_dir=FIXTURES / "ngc_mxnet")).plain
    assert "configurations recomputed" in line and "measured" not in line.split(":")[1]


def test_a_published_sets_page_is_titled_as_its_index_row():
    target = publish.for_published(ROOT / "params" / "published" / "ngc_mxnet_resnet50.yaml")
    assert target.parameters["title"] == target.about["title"]
    other = publish.for_published(ROOT / "params" / "published" / "ngc_mxnet_resnet50_dllogger.yaml")
    assert other.parameters["title"] != target.parameters["title"]  # V100 19.07 and A100 22.x apart
    report = Report(log_dir=FIXTURES / "ngc_mxnet")
    page = Page(report, "resnet50_mxnet", title=target.parameters["title"])
    assert page.heading == page.summary().title == target.about["title"] and "logs.tar.xz" not in page.heading
    assert Page(report, "model", None, None, "a set").show("opening").plain.startswith("a set")


def test_a_cpu_studys_title_names_benchbooks_own_workload_not_ngcs_code(tmp_path):
    report = study_folder(tmp_path, [10.0, 11.0])
    shown = Page(report, "resnet50_tf").heading
    assert shown == ("ResNet-50 on the CPU (benchbook's own TensorFlow workload, workloads/resnet50_tf.py): "
                     "training throughput, study s")


def test_the_fastest_is_named_only_when_its_repeats_stand_apart_from_the_next():
    apart = _stats([(8, 100.0), (8, 102.0), (16, 90.0), (16, 95.0)])
    assert headline.fastest(apart)[2] == "apart"
    assert headline.fastest_words(apart, "images/s").startswith("the fastest 101.00 images/s (CPU, FP32, batch 8)")
    overlap = _stats([(8, 100.0), (8, 117.0), (16, 104.0), (16, 106.0)])  # a 17% spread of repeats
    assert headline.fastest(overlap)[2] == "overlap"
    said = headline.fastest_words(overlap, "images/s")
    assert "indistinguishable" in said and "fastest 1" not in said and headline.FASTEST_RULE in said
    single = _stats([(8, 100.0), (16, 90.0)])
    assert headline.fastest(single)[2] == "single" and "not named the fastest" in headline.fastest_words(
        single, "images/s")
    assert headline.fastest(_stats([(8, 100.0)]))[2] == "alone"


def test_the_index_does_not_crown_a_best_configuration_inside_the_noise(tmp_path):
    report = study_folder(tmp_path, [10.0, 11.0])  # one configuration: nothing to tell it from
    assert report.summary().best.apart is True
    best = {"label": "CPU, FP32, batch 8", "apart": False, "how": "overlap"}
    assert index_page._best_label(best) == "CPU, FP32, batch 8 (not told from the next: their repeats overlap)"
    assert index_page._best_label(dict(best, apart=True, how="apart")) == "CPU, FP32, batch 8"
    assert index_page._best_label({"label": "x"}) == "x"  # an entry written before: as it was


def test_a_rule_fitted_to_the_published_number_says_what_the_script_printed():
    runs = pd.DataFrame({"reported_throughput": [782.08], "recomputed_throughput": [790.033]})
    said = headline.script_caveat(runs, "images/s", "perf", "PaddlePaddle/Perf README.md: no script is published")
    assert said.startswith("The script itself printed 782.08 images/s, 1.0% less than the 790.03 of the perf rule")
    assert said.endswith("the rule's source: PaddlePaddle/Perf README.md: no script is published.")
    close = pd.DataFrame({"reported_throughput": [381.46], "recomputed_throughput": [381.49]})
    assert headline.script_caveat(close, "images/s", None, "x") is None


def test_the_published_grid_carries_nvidias_speedups_beside_the_throughputs():
    """Item 7: with a reference, the grid has the speedups NVIDIA's tables carry (1 -> 8 GPUs, FP32 -> mixed
    precision), the published ratio beside the recomputed one; the Reproduction table repeats none of them."""
    from benchbook.reports import grid, references

    ref = tmp_reference()
    stats = metrics.aggregate(pd.DataFrame([{**FIXED, "gpus": g, "batch_size": 128, "precision": p,
                                             "recomputed_throughput": v}
                                            for g, p, v in ((1, "fp32", 400.0), (8, "fp32", 3000.0),
                                                            (1, "amp", 1000.0), (8, "amp", 7600.0))]))
    plain = grid.render_all(grid.grids(stats, references.compare(stats, ref), ref), "images/s").plain.splitlines()
    rows = {line.split(" | ")[0]: line.split(" | ")[1:] for line in plain[2:]}
    # published 3038.730 / 398.300 = 7.63 beside 3000 / 400 = 7.50: -1.69%; AMP's 8-GPU number is not published
    assert rows["speedup 1 → 8 GPUs"] == ["7.63", "7.50", "-1.69", "–", "7.60", "–"]
    assert rows["speedup FP32 → mixed, 1 GPU"] == ["", "", "", "2.51", "2.50", "-0.42"]


def tmp_reference():
    import tempfile

    from benchbook.reports import references

    text = ("schema_version: 1\ntitle: t\nmodel: resnet50_tf\nstatistic: one run\nsource: {title: t}\n"
            "hardware: {gpu: V100, gpus_per_node: 8}\nsoftware: {container: c}\nrows:\n"
            "  - {gpus: 1, batch_size: 128, precision: fp32, throughput: 398.300}\n"
            "  - {gpus: 8, batch_size: 128, precision: fp32, throughput: 3038.730}\n"
            "  - {gpus: 1, batch_size: 128, precision: amp, throughput: 1000.000}\n")
    path = Path(tempfile.mkdtemp()) / "speedups.yaml"
    path.write_text(text)
    return references.load(path)


def test_publish_of_an_unchanged_set_says_how_to_force_it(monkeypatch, capsys, tmp_path):
    """Item 11: a report whose inputs did not change is not executed again, and the table says how to force it."""
    from benchbook import cli

    seen = {}

    def unchanged(targets, reports, **kwargs):
        seen.update(kwargs)
        return [{"name": t.name, "status": "ok", "skipped": True, "summary": {"verdict": "consistent"}}
                for t in targets]

    monkeypatch.setattr(publish, "publish", unchanged)
    monkeypatch.setenv("COLUMNS", "200")
    code = cli.main(["publish", str(ROOT / "params" / "published" / "ngc_tf1_resnet50.yaml"),
                     "--reports", str(tmp_path / "reports")])
    assert code == 0 and seen["force"] is False
    assert "unchanged, not executed again (--force executes it anyway)" in " ".join(capsys.readouterr().out.split())


def test_the_index_fits_a_phone_with_each_rows_verdict_first(tmp_path):
    """Item 11: a viewport, and under 1100 px (narrower than its columns need) each row a block whose verdict
    comes right after the set's name."""
    entry = {"name": "set", "status": "ok", "summary": {"verdict": "consistent", "within": 8, "published": 8,
                                                        "tolerance": "±5%", "deviation": "ratios 1.0000–1.0002"},
             "target": {"about": {"publisher": "p", "hardware": "h", "software": "s", "title": "A set"}}}
    page = index_page.write_index(tmp_path, [entry]).read_text()
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in page
    assert '<td class="verdict" data-label="verdict">consistent</td>' in page
    narrow = page[page.index("@media (max-width: 1100px)"):]
    assert ".scroll td.verdict { order: 1; }" in narrow and ".scroll thead { display: none; }" in narrow


def test_a_cpu_page_describes_benchbooks_workload_not_ngcs_script(tmp_path):
    cpu = Page(study_folder(tmp_path, [10.0, 11.0])).show("about", rule="NGC's main.py logs", cpu="our workload")
    assert "our workload" in cpu.plain and "NGC's main.py" not in cpu.plain
    gpu = Page(Report(log_dir=FIXTURES / "ngc_mxnet")).show("about", rule="NGC's main.py logs", cpu="our workload")
    assert "NGC's main.py" in gpu.plain and "our workload" not in gpu.plain


def test_the_terminals_run_table_names_the_throughput_unit(tmp_path, capsys, monkeypatch):
    """Item 11: `benchbook status` (and `run`'s closing table) says what the throughput counts: its model's unit."""
    import json

    from benchbook import cli

    study_folder(tmp_path, [10.0])
    record = next((tmp_path / "runs" / "s").glob("*/run.json"))
    data = json.loads(record.read_text())
    data["config"]["model"] = "maskrcnn_tf2"
    record.write_text(json.dumps(data))
    monkeypatch.setenv("COLUMNS", "200")
    cli.main(["status", str(tmp_path / "runs" / "s")])
    assert "throughput samples/s" in capsys.readouterr().out
