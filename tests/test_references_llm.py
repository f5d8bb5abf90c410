"""References with any measure (issues 46 and 50): a published row names its headline `measure` (throughput by
default) and states any measure of the catalog with its printed digits; the comparison sets the runs' same
measure beside it (`measure_stats` of the measures frame), and the grid shows it in its unit. The shipped LLM
references (Megatron-Bridge's performance summary, torchtitan's benchmarks) load with their sources."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from benchbook import analyze
from benchbook.logs.rules import Rule
from benchbook.reports import grid, metrics, references
from test_parsers_llm import _times, megatron

ROOT = Path(__file__).resolve().parents[1]

LLM = {
    "schema_version": 1, "title": "t", "model": "llm_pretraining", "statistic": "one run",
    "source": {"title": "a table"}, "hardware": {"gpu": "H100", "gpus_per_node": 8, "nodes": 4},
    "software": {},
}
# The fixture log's configuration (tests/test_parsers_llm.py: 32 GPUs, GBS 64, MBS 1, sequence 4096, TP 2, PP 4, CP 2).
CONFIG = {"gpus": 32, "batch_size": 1, "global_batch_size": 64, "precision": "bf16", "seq_len": 4096,
          "tensor_parallel": 2, "pipeline_parallel": 4, "context_parallel": 2}


def _ref(tmp_path: Path, rows: list[dict], name: str = "llm.yaml", **more):
    path = tmp_path / name
    path.write_text(yaml.safe_dump({**copy.deepcopy(LLM), **more, "rows": rows}, sort_keys=False), encoding="utf-8")
    return references.load(path)


def _measured(tmp_path: Path):
    path = tmp_path / "log.txt"
    path.write_text(megatron())
    result = analyze([path], Rule(name="all"))
    stats = metrics.aggregate(result.runs)
    return stats, references.measure_stats(result.runs, result.measures), result


def test_the_shipped_llm_references_name_their_source_container_and_measures():
    names = [n for n in references.available() if n.startswith(("megatron_bridge_", "torchtitan_"))]
    assert {"megatron_bridge_26.02_gb300", "megatron_bridge_25.11_h100", "torchtitan_llama3_h100_202412",
            "torchtitan_llama3_8b_h200_202506"} <= set(names)
    for name in names:
        ref = references.load(name)
        assert ref.model == "llm_pretraining" and ref.unit == "tokens/s/GPU" and ref.source.commit
        assert ref.source.url.startswith(("https://github.com/NVIDIA-NeMo/Megatron-Bridge/blob/",
                                          "https://github.com/pytorch/torchtitan/blob/"))
        assert all(r.measure == "tokens_per_gpu" and r.tokens_per_gpu for r in ref.rows)
        if name.startswith("megatron_bridge_"):
            assert ref.software.container.startswith("nvcr.io/nvidia/nemo:")
            assert all(r.global_batch_size and r.seq_len and r.tensor_parallel and r.tflops_per_gpu for r in ref.rows)


def test_a_megatron_bridge_row_as_the_page_printed_it():
    """26.02, DGX-GB300, LLAMA3_70B NVFP4: 64 GPUs, GBS 256, MBS 1, 8192, TP 1, PP 4, CP 1, 6798 and 3056."""
    ref = references.load("megatron_bridge_26.02_gb300")
    row = next(r for r in ref.rows if r.table == "LLAMA3_70B" and r.precision == "nvfp4")
    assert (row.gpus, row.global_batch_size, row.batch_size, row.seq_len, row.tensor_parallel,
            row.pipeline_parallel, row.context_parallel, row.expert_parallel) == (64, 256, 1, 8192, 1, 4, 1, None)
    assert (row.published, row.tflops_per_gpu, row.as_printed("tokens_per_gpu")) == (6798, 3056, "6798")
    assert ref.hardware.gpus_per_node == 4 and ref.hardware.nodes == 64  # 256 GPUs in trays of 4
    pair = [r for r in references.load("megatron_bridge_25.11_gb200").rows if r.table == "LLAMA3_8B"]
    assert [(r.precision, r.tokens_per_gpu, r.tflops_per_gpu) for r in pair] == [("fp8", 31508, 1622),
                                                                                 ("mxfp8", 29789, 1533)]


def test_a_row_is_compared_with_the_runs_same_measure(tmp_path):
    stats, by_measure, result = _measured(tmp_path)
    tokens = 4096 * 64 / (sum(_times(50)) / 50 / 1000) / 32  # computed here, as dgxc-benchmarking states it
    measured = result.measures.set_index("measure")["value"]
    assert measured["tokens_per_gpu"] == pytest.approx(tokens, rel=1e-3)
    ref = _ref(tmp_path, [
        {**CONFIG, "measure": "tokens_per_gpu", "tokens_per_gpu": round(tokens * 1.02, 1),
         "tflops_per_gpu": 300.0},
        {**CONFIG, "table": "step", "measure": "step_time", "step_time": 1.2},  # lower is better
        {**CONFIG, "table": "tp4", "tensor_parallel": 4, "measure": "tokens_per_gpu", "tokens_per_gpu": 9000.0}],
        tables={"step": "step time", "tp4": "another TP"})
    out = references.compare(stats, ref, measures=by_measure)
    assert out["measured"][0] == pytest.approx(measured["tokens_per_gpu"])
    assert out["verdict"].tolist() == ["reproduced", "faster", "not measured"]
    assert out["published_printed"][0] == str(round(tokens * 1.02, 1))
    tflops = measured["tflops_per_gpu"]
    assert f"also published: TFLOP/s/GPU 300.0 TFLOP/s/GPU, measured {tflops:.6g} ({(tflops / 300 - 1) * 100:+.1f}%)" \
        in out["differences"][0]
    assert out["measured"][1] == pytest.approx(measured["step_time"])
    assert any("logged only with TP 2 (published: TP 4)" in n for n in out["differences"][2])
    bare = references.compare(stats, ref)  # no statistics of the measures: not measured, and why
    assert bare["verdict"].tolist() == ["not measured"] * 3
    assert "compare() was given no statistics of it" in bare["differences"][0][-1]


def test_the_grid_shows_the_published_measure_in_its_unit(tmp_path):
    stats, by_measure, result = _measured(tmp_path)
    ref = _ref(tmp_path, [{**CONFIG, "measure": "tokens_per_gpu", "tokens_per_gpu": 8800.0}])
    comparison = references.compare(stats, ref, measures=by_measure)
    (table,) = grid.grids(stats, comparison, ref)
    (cell,) = table.cells.to_dict("records")
    assert cell["published"] == "8800.0" and cell["measured"] == pytest.approx(comparison["measured"][0])
    assert "tokens/s/GPU" in grid.render(table, ref.unit).plain.splitlines()[0]
    mixed = _ref(tmp_path, [{**CONFIG, "measure": "tokens_per_gpu", "tokens_per_gpu": 8800.0, "table": "a"},
                            {**CONFIG, "throughput": 68.0, "table": "b"}], name="mixed.yaml",
                 tables={"a": "tokens", "b": "sequences"})
    assert mixed.unit == "sequences/s"  # (rows of two measures: the model's unit, each table its own)
    grids = grid.grids(stats, references.compare(stats, mixed, measures=by_measure), mixed)
    assert [g.unit for g in grids] == ["tokens/s/GPU", None]
    assert grid.render(grids[0], mixed.unit).plain.startswith("tokens (tokens/s/GPU)")


@pytest.mark.parametrize(("row", "said"), [
    ({"measure": "tokens_per_sec"}, "measure 'tokens_per_sec' is no measure benchbook knows: one of throughput"),
    ({"measure": "mfu"}, "the row's measure is mfu: give its published value, `mfu: ...`"),
    ({"measure": "tokens_per_gpu", "tokens_per_gpu": -3.0}, "tokens_per_gpu"),
    ({"measure": "tokens_per_gpu", "tokens_per_gpu": 1.0, "precision": "fp4"}, "precision"),
])
def test_a_bad_measure_row_is_refused_naming_its_line_and_field(tmp_path, row, said):
    with pytest.raises(references.ReferenceError) as err:
        _ref(tmp_path, [{**CONFIG, **row}])
    assert f"{tmp_path / 'llm.yaml'}:" in str(err.value) and said in str(err.value)


def test_the_generator_of_the_megatron_bridge_files_reads_the_pages_layout(tmp_path):
    """tools/write_megatron_bridge_references.py on a page of the summary's layout (numbers made up here)."""
    import subprocess
    import sys

    page = tmp_path / "summary.md"
    head = ("| Model | #-GPUs | Precision | GBS | MBS | Sequence Length | FSDP | TP | PP | CP | VP | EP | GA | "
            "Tokens / sec / GPU | Model TFLOP / sec / GPU |\n" + "|---" * 15 + "|")
    page.write_text(f"## 99.01 NeMo Container\n\n#### System: DGX-H100\n\n{head}\n"
                    "| LLAMA3_8B | 8 | FP8-CS (FP8-MX) | 128 | 1 | 8192 | 1 | 1 | 1 | 1 | n/a | 1 | 16 | 100 (90) | "
                    "50 (45) |\n\n## 99.00 NeMo Container\n\n#### System: DGX-H100\n\n"
                    "| Model | #-GPUs | GBS |\n|---|---|---|\n| LLAMA3_8B | 8 | 128 |\n")
    out = subprocess.run([sys.executable, str(ROOT / "tools" / "write_megatron_bridge_references.py"), str(page),
                          "--commit", "0123456789abcdef", "--out", str(tmp_path)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "left out" in out.stderr and "no Precision column" in out.stderr  # (the 25.09 layout)
    ref = references.load(tmp_path / "megatron_bridge_99.01_h100.yaml")
    assert [(r.precision, r.tokens_per_gpu, r.tflops_per_gpu, r.expert_parallel) for r in ref.rows] == \
        [("fp8", 100, 50, 1), ("mxfp8", 90, 45, 1)]
    assert ref.rows[0].note == "FP8-CS; FSDP 1, VP n/a, GA 16"


def test_the_llm_model_is_the_runs_of_every_llm_format_and_launches_nothing(tmp_path):
    from benchbook import models
    from benchbook.core.catalog import default
    from benchbook.logs import parsers
    from benchbook.studies import commands, study
    from test_models import _study

    spec = models.get("llm_pretraining")
    frameworks = {f.framework for f in parsers.FORMATS.values() if f.model == "llm"}
    assert frameworks == {"megatron", "megatron-deepspeed", "primus", "nemo", "torchtitan"}
    assert all(models.of_logs("llm", fw) is spec and default().unit_of("llm", fw) == "sequences/s" for fw in frameworks)
    assert {"seq_len", "tensor_parallel", "pipeline_parallel"} <= {a.key for a in spec.axes}
    # a study of it is refused when its file loads, at the model's line, before any sweep or launcher is read
    text = ("schema_version: 1\nmodel: llm_pretraining\nruntime: ngc\n"
            "code: {repository: https://example.invalid/x.git, commit: abcdef0}\n"
            "container: {image: nvcr.io/nvidia/x:1}\nsweep: {batch_size: 8, data: synthetic}\niterations: 10\n")
    (tmp_path / "llm.yaml").write_text(text)
    with pytest.raises(study.StudyError, match=r"llm\.yaml:2: model: llm_pretraining: LLM pre-training logs are "
                                               r"analyzed, not launched.*give their logs to `benchbook analyze`"):
        study.load(tmp_path / "llm.yaml")
    # and the command builder still refuses, should a study reach it some other way
    s = _study("resnet50_tf").model_copy(update={"model": "llm_pretraining"})
    with pytest.raises(models.llm_pretraining.LlmStudyError, match="analyzed, not launched"):
        commands.command(s, study.expand(s)[0], tmp_path)


def test_a_megatron_run_of_a_shipped_rows_configuration_is_compared_with_it(tmp_path):
    """A log of the 26.02 DGX-H100 LLAMA3_70B recipe's configuration (64 GPUs, GBS 256, MBS 1, 8192, TP 4, PP 8,
    FP8) whose step time gives 1% under the published 1621 tokens/s/GPU: that row reproduced, by the nvidia rule."""
    args = {"tensor_model_parallel_size": 4, "pipeline_model_parallel_size": 8, "context_parallel_size": 1,
            "seq_length": 8192, "micro_batch_size": 1, "global_batch_size": 256, "world_size": 64,
            "train_iters": 50, "fp8": "hybrid", "fp8_recipe": "tensorwise", "bf16": True}
    step = 8192 * 256 / (1621 * 0.99) / 64  # s
    lines = ["------------------------ arguments ------------------------",
             *(f"  {k} {'.' * (48 - len(k))} {v}" for k, v in args.items()),
             "-------------------- end of arguments ---------------------"]
    lines += [f"[2026-08-22 15:{i // 60:02d}:{i % 60:02d}] iteration {i:8d}/{50:8d} | consumed samples: {256 * i:12d} |"
              f" elapsed time per iteration (ms): {step * 1000:.1f} | throughput per GPU (TFLOP/s/GPU): 720.5 | "
              f"learning rate: 1.0E-04 | global batch size: {256:5d} | lm loss: 7.0E+00 | loss scale: 1.0 | grad norm: "
              "1.0 | number of skipped iterations:   0 | number of nan iterations:   0 |" for i in range(1, 51)]
    path = tmp_path / "llama3_70b.log"
    path.write_text("\n".join(lines) + "\n")
    result = analyze([path])  # the default rule: dgxc-benchmarking's iterations 35-44
    assert result.runs.iloc[0]["precision"] == "fp8" and result.runs.iloc[0]["rule_status"] == "SUCCESS"
    ref = references.load("megatron_bridge_26.02_h100")
    out = references.compare(metrics.aggregate(result.runs), ref,
                             measures=references.measure_stats(result.runs, result.measures))
    row = out[out["table"] == "LLAMA3_70B"].iloc[0]
    assert row["verdict"] == "reproduced" and row["delta_pct"] == pytest.approx(-1.0, abs=0.01)
    assert "also published: TFLOP/s/GPU 728 TFLOP/s/GPU, measured 720.5 (-1.0%)" in row["differences"]
    assert set(out[out["table"] != "LLAMA3_70B"]["verdict"]) == {"not measured"}
    # a report of that log against that reference says the same (Report.reproduction reads the measures)
    from benchbook.reports.report import Report

    report = Report(log_dir=tmp_path, reference="megatron_bridge_26.02_h100")
    shown = report.reproduction()
    assert shown.loc[shown["table"] == "LLAMA3_70B", "verdict"].tolist() == ["reproduced"]
