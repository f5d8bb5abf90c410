"""Write notebooks/*.ipynb: one per model plus compare.ipynb, thin, without outputs.

The notebooks are generated so that the four stay consistent and their diffs stay reviewable;
edit this file, run `python tools/make_notebooks.py`, and commit both (a test checks they match).
Each notebook has one papermill `parameters` cell; every other cell calls the library.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

ROOT = Path(__file__).resolve().parents[1]

MODELS = {
    "resnet50_tf": {
        "title": "ResNet-50 v1.5 on TensorFlow 1 (NGC DeepLearningExamples): training throughput and time to train",
        "study": "params/resnet50_tf/cpu.yaml",
        "about": (
            "NVIDIA's ConvNets `main.py` logs one DLLogger line per step with `total_ips` (images/s over all GPUs);\n"
            "its summary is the arithmetic mean of those rates from `warmup_steps` on, and that is the\n"
            "default (`nvidia`) rule benchbook recomputes with. The DLPerf tables (`rule = \"dlperf\"`) round each\n"
            "rate to 2 decimals, skip the first 20 iterations, average the next 100 and report the median of 5 runs;\n"
            "speedup is against the 1-GPU median of the same batch and precision.\n"
            "With no GPU, the study runs the project's own TensorFlow ResNet-50 v1.5 on the CPU, through the same\n"
            "launcher, logs, parsers and report."),
    },
    "resnet50_mxnet": {
        "title": "ResNet-50 v1.5 on MXNet (NGC DeepLearningExamples): training throughput",
        "study": "params/resnet50_mxnet/cpu.yaml",
        "about": (
            "NVIDIA's MXNet `benchmark.py` runs 1 and 8 GPUs in one invocation and prints a summary table\n"
            "(`train.total_ips`, a row per GPU count, a column per batch size); every Horovod rank logs its own\n"
            "lines (newer containers: rank 0 alone, in DLLogger form). The published number is benchmark.py's: the\n"
            "harmonic mean of the per-epoch rates after the warm-up epoch, and that is benchbook's default rule.\n"
            "With no GPU, the study runs the project's own MXNet ResNet-50 v1.5 on the CPU in its own\n"
            "environment (MXNet 1.9.1 needs numpy < 1.24)."),
    },
    "resnet50_pytorch": {
        "title": "ResNet-50 v1.5 on PyTorch (NGC DeepLearningExamples ConvNets): training throughput",
        "study": "params/resnet50_pytorch/cpu.yaml",
        "about": (
            "NVIDIA's ConvNets `main.py` (under `multiproc.py` for several GPUs) logs `train.total_ips` every\n"
            "iteration on rank 0: images/s over all GPUs. Its logger averages every iteration of the run, the\n"
            "first ones included, into the `Summary:` line and `benchmark.json`, and that mean is benchbook's\n"
            "default (`nvidia`) rule; `rule = \"perf\"` leaves out iterations 1-9, which gives the number\n"
            "PaddlePaddle's reproduction table publishes for its V100 1-GPU AMP log.\n"
            "With no GPU, the study trains the project's own PyTorch ResNet-50 v1.5 on the CPU (FP32 and bf16\n"
            "autocast) in its own environment, or with the Python that `BENCHBOOK_PYTHON_PYTORCH` names."),
    },
    "maskrcnn_tf2": {
        "title": "Mask R-CNN on TensorFlow 2 (NGC DeepLearningExamples): training throughput",
        "study": "params/maskrcnn_tf2/cpu.yaml",
        "about": (
            "NVIDIA's `scripts/benchmark_training.py` launches `horovodrun` with XLA and logs `[MaskRCNN] INFO`\n"
            "blocks with a throughput per logged interval; the launch command (GPUs, batch, AMP) is printed at the\n"
            "end. After `warmup_steps` (100) every logged throughput is a running mean of the steps so far, so the\n"
            "published number is the last one logged, and that is benchbook's default rule.\n"
            "With no GPU, the study trains the project's own TensorFlow 2 Mask R-CNN (ResNet-50 FPN, RPN,\n"
            "ROI Align, box and mask heads) on the CPU on generated images, through the same launcher and report."),
    },
}

PARAMETERS = '''\
study: str = "{study}"  # study file (params/...): what to run, and the reference to compare with
log_dir: str = ""  # analysis-only mode: analyze the logs in this folder (`study` is then ignored); nothing is launched
runs_dir: str = "runs"  # folder of study folders (runs/<study name>/<run id>/...)
launch: bool = True  # launch mode: run the study (finishing what is not complete) before the analysis
reference: str = ""  # published reference (params/references/NAME.yaml); empty: the study's own
warmup: int = -1  # records to skip as warm-up in every run; -1: the log format's documented rule
method: str = ""  # recompute method (see `benchbook formats`); empty: the rule's own
rule: str = ""  # named throughput rule: nvidia (each format's default) or dlperf; empty: nvidia
interactive: bool = True  # show the ipywidgets explorer (JupyterLab); publish sets it to False
summary_path: str = ""  # where to write the headline numbers as JSON (benchbook publish sets it)'''

CHECK = ("from benchbook import plots, views\nfrom benchbook.notebook_params import check\n"
         "from benchbook.report import Report\n\np = check(study=study, log_dir=log_dir, runs_dir=runs_dir, "
         "launch=launch, reference=reference, "
         "warmup=warmup, method=method, rule=rule, interactive=interactive, summary_path=summary_path)")


def model_notebook(model: str, spec: dict) -> nbformat.NotebookNode:
    md, code = new_markdown_cell, new_code_cell
    cells = [
        md(f"# {spec['title']}"),
        code(PARAMETERS.format(study=spec["study"]), metadata={"tags": ["parameters"]}),
        code(CHECK),
        code("report = Report(p.study, p.log_dir, p.runs_dir, reference=p.reference, warmup=p.warmup, "
             "method=p.method, rule=p.rule)\n"
             "launched = report.launch(quiet=True) if p.launch and report.mode == \"launch\" else None\n"
             "views.opening(report)"),
        code("views.reproduction_plot(report)"),
        md(f"{spec['about']}\n\nDetails follow: 1. the set-up that produced the numbers, 2. analysis, "
           "3. reproduction, 4. launch, failures and problems. Every number comes from a log line or a run "
           "record; the per-run table names the file and run of each."),
        code("views.description(report)"),
        md("## 1. Set-up\nIn analysis-only mode, what the logs say about the set-up that produced them, beside "
           "the published one (never this machine's); in launch mode, this machine, whether it can run the study, "
           "and repeats that ran on different stacks."),
        code("views.setup_used(report)"),
        code("views.setup_needed(report)"),
        md("## 2. Analysis\n### Runs\nOne row per run found in the logs: metadata, the value the script reported "
           "and the value recomputed by the rule above."),
        code("views.runs(report)"),
        md("### Scaling\nMedian throughput over repeats; speedup against the 1-GPU median of the same batch and "
           "precision, where a 1-GPU run was measured."),
        code("views.scaling(report)"),
        code("views.scaling_plot(report)"),
        md("### Throughput over time\nEvery logged iteration of every run; warm-up records shaded, the "
           "recomputed value as a line."),
        code("views.throughput_over_time(report)"),
        md("### Repeats\nEach repeat as a point, the median marked: the spread between runs of one configuration."),
        code("views.repeats(report)"),
        md("### Time to train and accuracy\nFirst evaluation at or above the target top-1, in seconds since the "
           "run's first log line (only runs that evaluate)."),
        code("views.time_to_train(report)"),
        md("## 3. Reproduction\nMeasured against the published numbers, every column; then what differs from "
           "the published set-up."),
        code("views.reproduction(report)"),
        code("views.differences(report)"),
        md("## 4. Launch, failures and problems\nIn launch mode the study runs in a separate process "
           "(`benchbook run --resume`), never in this kernel; its run records are shown here. Runs that did not "
           "complete follow, with the cause and the last log lines, then files that could not be analyzed."),
        code("views.launch_status(report)"),
        code("views.failures(report)"),
        code("views.problems(report)"),
        md("### Explore\nIn JupyterLab: pick configurations and the metric, and re-plot."),
        code("plots.explore(report.analysis) if p.interactive else None"),
        code("report.save_summary(p.summary_path);"),
    ]
    return _notebook(cells)


def compare_notebook() -> nbformat.NotebookNode:
    md, code = new_markdown_cell, new_code_cell
    cells = [
        md("# Studies side by side\nFrameworks, machines, containers, or a reproduction against its reference: "
           "the same configurations measured in several study folders (or folders of logs), compared."),
        code('sources = "runs/resnet50_tf-cpu,runs/resnet50_mxnet-cpu"  # comma-separated study folders or log '
             'folders\nlabels = ""  # comma-separated labels, one per source; empty: the folder names\n'
             'baseline = 0  # index of the source the ratios are taken against\n'
             'summary_path = ""  # where to write the headline numbers as JSON (benchbook publish sets it)',
             metadata={"tags": ["parameters"]}),
        code("from benchbook import display\nfrom benchbook.compare import Comparison\n\n"
             "comparison = Comparison(sources, labels, baseline)\n"
             "display.table(comparison.describe(), empty=\"no source\")"),
        md("## Configurations in each source\nMedian images/s over repeats, per source."),
        code("display.table(comparison.table(), empty=\"no configuration measured in any source\",\n"
             "              formats=dict.fromkeys(comparison.labels, 2))"),
        md("## Ratios\nEach source's median against the baseline's, for the configurations both measured."),
        code("display.table(comparison.ratios(),\n"
             "              empty=\"no configuration measured by the baseline and another source\",\n"
             "              formats=dict.fromkeys(comparison.labels, display.significant))"),
        code("comparison.figure()"),
        md("## What differs\nEnvironments of the sources' runs (from their run records), most significant first."),
        code("display.table(comparison.environment_differences(),\n"
             "              empty=\"no difference between the sources' run records (or no run records to compare)\")"),
        code("comparison.save_summary(summary_path);"),
    ]
    return _notebook(cells)


def _notebook(cells) -> nbformat.NotebookNode:
    nb = new_notebook(cells=cells, metadata={
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
    })
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"cell-{i:02d}"  # stable ids: regenerating gives the same file
    return nb


def notebooks() -> dict[str, nbformat.NotebookNode]:
    out = {f"{m}.ipynb": model_notebook(m, spec) for m, spec in MODELS.items()}
    out["compare.ipynb"] = compare_notebook()
    return out


def main(out: Path = ROOT / "notebooks") -> int:
    out.mkdir(exist_ok=True)
    for name, nb in notebooks().items():
        nbformat.validate(nb)
        (out / name).write_text(nbformat.writes(nb) + "\n", encoding="utf-8")
        print(f"wrote {out / name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "notebooks"))
