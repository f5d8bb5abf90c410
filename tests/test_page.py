"""What a report page shows depends on its mode, model and reference: the title, links, paragraphs and
sections that apply (sections/), the set-up the logs state (logged_setup.py), one name and order for a
configuration (configs.py), and one way to write each number."""

from pathlib import Path

import pandas as pd
import pytest

from benchbook.reports import configs, display, logged_setup
from benchbook.reports.report import Report
from benchbook.reports.sections import Page, opening, parts, show

FIXTURES = Path(__file__).parent / "fixtures"
TF1 = FIXTURES / "ngc_tf1"


def test_the_title_says_time_to_train_only_where_a_run_evaluates(tmp_path):
    throughput = tmp_path / "throughput"
    throughput.mkdir()
    (throughput / "tf_gpu1_amp_bs256.log").write_text((TF1 / "tf_gpu1_amp_bs256.log").read_text())
    heading = Page(Report(log_dir=throughput), "ResNet-50 v1.5 on TensorFlow 1").heading
    assert heading == "ResNet-50 v1.5 on TensorFlow 1: training throughput, throughput (analysis-only)"
    evaluating = Page(Report(log_dir=TF1), "resnet50_tf")  # a model's name: its page's words
    assert evaluating.heading.startswith("ResNet-50 v1.5 on TensorFlow 1 (NGC DeepLearningExamples): ")
    assert "and time to train" in evaluating.heading
    assert evaluating.summary().title == evaluating.heading  # the index and the browser show it


def test_navigation_links_the_index_each_log_copied_beside_the_page_and_the_rule_source(tmp_path):
    report = Report(log_dir=TF1)
    summary = tmp_path / "reports" / "tf1" / "summary.json"
    summary.parent.mkdir(parents=True)
    page = Page(report, out=str(summary.parent))
    nav = opening.navigation(page)
    assert not any(summary.parent.iterdir())  # showing writes nothing: the page's finish does
    page.finish()
    assert 'href="../index.html"' in nav.markup and 'href="code.html"' in nav.markup
    assert "tf_gpu1_amp_bs256.log</a>" in nav.markup and "/work/" not in nav.plain
    links = [a.split('"')[1] for a in nav.markup.split("href=")[1:]]
    assert all(not link.startswith("/") for link in links)  # relative, never an absolute path
    log = next(link for link in links if link.endswith("tf_gpu1_amp_bs256.log.txt"))
    assert log == "logs/tf_gpu1_amp_bs256.log.txt"  # a copy beside the page (the folder may be moved or shared),
    # opened as text (issue 49, cause 1)
    assert (summary.parent / log).read_bytes() == (TF1 / "tf_gpu1_amp_bs256.log").read_bytes()
    assert any(link.startswith("https://github.com/NVIDIA/DeepLearningExamples/blob/") for link in links)
    assert opening.navigation(Page(report)) is None  # in JupyterLab: no published page to link from


def test_dlperf_and_cpu_paragraphs_only_where_they_apply():
    texts = {"rule": "NVIDIA's rule text.", "dlperf": "DLPerf text.", "cpu": "CPU workload text."}
    mine = show(Report(log_dir=TF1, reference="ngc_tf1_resnet50"), "about", **texts).plain
    assert "NVIDIA's rule text." in mine and "DLPerf text." not in mine and "CPU workload text." not in mine
    assert "launch" not in mine  # analysis-only: nothing was launched
    dlperf = show(Report(log_dir=TF1, reference="dlperf_tf1_resnet50"), "about", **texts).plain
    assert "DLPerf text." in dlperf


def test_a_section_with_nothing_to_show_is_left_out_heading_and_all():
    assert parts.section("Repeats", "intro", None) is None
    shown = parts.section("Loss", "intro", display.note("x"), level=3)
    assert shown.markup.startswith('<h3 id="loss">Loss</h3><p>intro</p>')


def test_the_set_up_line_holds_what_every_run_logged_alike():
    runs = pd.DataFrame({"meta": [{"params": {"mode": "training_benchmark", "use_xla": "True", "batch_size": "128",
                                              "num_iter": "500"}},
                                  {"params": {"mode": "training_benchmark", "use_xla": "True", "batch_size": "256",
                                              "num_iter": "500"}}]})
    assert logged_setup.settings(runs) == [("mode", "training_benchmark"), ("iterations", "500"), ("XLA", "on")]
    command = pd.DataFrame({"meta": [{"command": "horovodrun -np 8 python main.py --total_steps 200 --xla "
                                                 "--data /data/x --amp"}]})
    assert logged_setup.settings(command) == [("--total_steps", "200"), ("--xla", "on"), ("--amp", "on")]


def test_log_times_without_a_zone_are_never_called_utc():
    report = Report(log_dir=TF1)
    started = dict(zip(logged_setup.logs_description(report)[""], logged_setup.logs_description(report)["in the logs"],
                       strict=True))["first run started"]
    assert "UTC" not in started and "the log's clock" in started
    assert display.logged_time(1607603387.9) == "2020-12-10 12:29:47 (the log's clock, no time zone)"


def test_one_order_of_configurations_the_references():
    class Ref:
        rows = [type("R", (), {"precision": p, "batch_size": b})() for p, b in
                (("fp32", 128), ("fp32", 256), ("amp", 128), ("amp", 256))]
    keys = [("amp", 256), ("amp", 128), ("fp32", 256), ("fp32", 128), ("tf32", 64)]
    assert configs.order(keys, Ref()) == [("fp32", 128), ("fp32", 256), ("amp", 128), ("amp", 256), ("tf32", 64)]
    assert configs.order(keys) == [("fp32", 128), ("fp32", 256), ("tf32", 64), ("amp", 128), ("amp", 256)]
    frame = pd.DataFrame({"precision": ["amp", "fp32", "fp32"], "batch_size": [256, 128, 128], "gpus": [1, 8, 1]})
    assert configs.sort_frame(frame, Ref()).index.tolist() == [2, 1, 0]


def test_the_runs_table_writes_a_throughput_to_the_grids_digits(tmp_path, monkeypatch):
    # A reference printing the 1-GPU AMP bs256 number with one decimal: the runs table shows the run's
    # throughputs with one decimal too, as the grid does (one number, one way).
    refs = tmp_path / "refs"
    refs.mkdir()
    (refs / "one.yaml").write_text(
        "schema_version: 1\ntitle: t\nmodel: resnet50_tf\nstatistic: one run\nsource: {title: s}\n"
        "hardware: {gpu: V100-SXM2-16GB, gpus_per_node: 8}\nsoftware: {framework: tensorflow}\n"
        "rows:\n  - {gpus: 1, batch_size: 256, precision: amp, throughput: 1000.5}\n")
    monkeypatch.setenv("BENCHBOOK_REFERENCES", str(refs))
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "tf_gpu1_amp_bs256.log").write_text((TF1 / "tf_gpu1_amp_bs256.log").read_text())
    report = Report(log_dir=logs, reference="one")
    lines = show(report, "runs").plain.split("\n\n", 1)[1].splitlines()  # below the section's heading
    row = dict(zip(lines[0].split(" | "), lines[1].split(" | "), strict=True))
    recomputed = row["recomputed images/s"]
    assert len(recomputed.partition(".")[2]) == 1, row
    assert f"| {recomputed} |" in opening.verdict(report).plain


def test_a_link_planted_as_the_reports_logs_folder_is_refused_and_nothing_written_through_it(tmp_path):
    """The copies of the logs go only into the report's real folder: a shared reports folder's `logs` link
    would send them elsewhere; the page fails naming it (the report is then published failed, error visible)."""
    from benchbook.reports.publish_files import ReportFolderError

    summary = tmp_path / "reports" / "tf1" / "summary.json"
    summary.parent.mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (summary.parent / "logs").symlink_to(elsewhere)
    with pytest.raises(ReportFolderError, match="logs is a symbolic link"):
        Page(Report(log_dir=TF1), out=str(summary.parent)).finish()
    assert not any(elsewhere.iterdir())
