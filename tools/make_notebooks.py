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
            "default rule benchbook recomputes with. The DLPerf tables skip the first 20 of 120 iterations\n"
            "and report the median of 5 runs; speedup is against the 1-GPU median of the same batch and precision.\n"
            "With no GPU, the study runs the project's own TensorFlow ResNet-50 v1.5 on the CPU, through the same\n"
            "launcher, logs, parsers and report."),
    },
    "resnet50_mxnet": {
        "title": "ResNet-50 v1.5 on MXNet (NGC DeepLearningExamples): training throughput",
        "study": "params/resnet50_mxnet/cpu.yaml",
        "about": (
            "NVIDIA's MXNet `benchmark.py` runs 1 and 8 GPUs in one invocation and prints a summary table\n"
            "(`train.total_ips`, a row per GPU count, a column per batch size); every Horovod rank logs its own\n"
            "lines. benchbook recomputes from the lowest rank's records after the first (warm-up) epoch.\n"
            "With no GPU, the study runs the project's own MXNet ResNet-50 v1.5 on the CPU in its own\n"
            "environment (MXNet 1.9.1 needs numpy < 1.24)."),
    },
    "maskrcnn_tf2": {
        "title": "Mask R-CNN on TensorFlow 2 (NGC DeepLearningExamples): training throughput",
        "study": "params/maskrcnn_tf2/cpu.yaml",
        "about": (
            "NVIDIA's `scripts/benchmark_training.py` launches `horovodrun` with XLA and logs `[MaskRCNN] INFO`\n"
            "blocks with a throughput per logged interval; the launch command (GPUs, batch, AMP) is printed at the\n"
            "end. benchbook recomputes the median of the logged rates after the first interval.\n"
            "With no GPU, the study trains the project's own TensorFlow 2 Mask R-CNN (ResNet-50 FPN, RPN,\n"
            "ROI Align, box and mask heads) on the CPU on generated images, through the same launcher and report."),
    },
}

PARAMETERS = '''\
study = "{study}"  # study file (params/...): what to run, and the reference to compare with
log_dir = ""  # analysis-only mode: analyze the logs in this folder; nothing is launched
runs_dir = "runs"  # folder of study folders (runs/<study name>/<run id>/...)
launch = True  # launch mode: run the study (finishing what is not complete) before the analysis
reference = ""  # published reference (params/references/NAME.yaml); empty: the study's own
warmup = -1  # records to skip as warm-up in every run; -1: the log format's documented rule
method = ""  # recompute method: mean, median, harmonic or elapsed; empty: the format's rule
interactive = True  # show the ipywidgets explorer (JupyterLab); publish sets it to False
summary_path = ""  # where to write the headline numbers as JSON (benchbook publish sets it)'''


def model_notebook(model: str, spec: dict) -> nbformat.NotebookNode:
    md, code = new_markdown_cell, new_code_cell
    cells = [
        md(f"# {spec['title']}\n\n{spec['about']}\n\n"
           "Sections: 1. environment, 2. set-up, 3. launch, 4. analysis, 5. reproduction. Every number below\n"
           "comes from a log line or a run record; the per-run table names the file and run of each."),
        code(PARAMETERS.format(study=spec["study"]), metadata={"tags": ["parameters"]}),
        code("from benchbook import plots\nfrom benchbook.report import Report\n\n"
             "report = Report(study, log_dir, runs_dir, reference=reference, warmup=warmup, method=method)\n"
             "report.describe()"),
        md("## 1. Environment\nWhat this machine is, and whether it can run the study."),
        code("report.environment()"),
        code("report.fits()"),
        md("Repeats of one configuration that ran on different environments (driver, container, code...) "
           "are listed here; an empty table means every repeat ran on the same stack."),
        code("report.drift()"),
        md("## 2. Set-up\nWhat the study needs (code at its commit, container image, data, or the CPU environment) "
           "and its state."),
        code("report.setup()"),
        md("## 3. Launch\nThe study runs in a separate process (`benchbook run --resume`), never in this kernel; "
           "this cell follows its run records. In analysis-only mode it shows what is there."),
        code("report.launch() if launch and report.mode == \"launch\" else report.status()"),
        md("## 4. Analysis\n### Runs\nOne row per run found in the logs: metadata, the value the script reported "
           "and the value recomputed by the rule above."),
        code("report.runs()"),
        md("### In the layout of the published reports\nA row per GPU count, a column per precision x batch size: "
           "median and mean over repeats (images/s) and speedup against the 1-GPU median."),
        code("report.summary()"),
        md("### Scaling"),
        code("report.scaling()"),
        code("plots.scaling(report.stats)"),
        md("### Throughput over time\nEvery logged iteration of every run; warm-up records shaded, the "
           "recomputed value as a line."),
        code("plots.throughput_over_time(report.analysis.iterations, report.analysis.runs)"),
        md("### Repeats\nEach repeat as a point, the median marked: the spread between runs of one configuration."),
        code("plots.repeats(report.analysis.runs)"),
        md("### Time to train and accuracy\nFirst evaluation at or above the target top-1, in seconds since the "
           "run's first log line (only runs that evaluate)."),
        code("report.time_to_train()"),
        code("plots.time_to_train(report.analysis.evaluations, report.analysis.runs, target=report.target)"),
        md("## 5. Reproduction\nMeasured against the published numbers: the ratio, and a verdict per "
           "configuration with what differs from the published set-up."),
        code("report.reproduction()"),
        code("plots.comparison(report.reproduction())"),
        md("What differs between the published set-up and this one (hardware, container, framework, flags):"),
        code("report.reference_differences()"),
        md("### Failures and problems\nRuns that did not complete (with the cause and the last log lines), "
           "and files that could not be analyzed."),
        code("report.failures()"),
        code("report.problems()"),
        md("### Explore\nIn JupyterLab: pick configurations and the metric, and re-plot."),
        code("plots.explore(report.analysis) if interactive else None"),
        code("report.save_summary(summary_path);"),
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
        code("from benchbook import plots\nfrom benchbook.compare import Comparison\n\n"
             "comparison = Comparison(sources, labels, baseline)\ncomparison.describe()"),
        md("## Configurations in each source\nMedian images/s over repeats, per source."),
        code("comparison.table()"),
        md("## Ratios\nEach source's median against the baseline's, for the configurations both measured."),
        code("comparison.ratios()"),
        code("comparison.figure()"),
        md("## What differs\nEnvironments of the sources' runs (from their run records), most significant first."),
        code("comparison.environment_differences()"),
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
