"""The GPUs' dense peak TFLOP/s per precision, as data (`gpu_peaks.yaml` beside this module), and MFU from it.

MFU (model FLOPs utilisation) is a run's model TFLOP/s per GPU over its GPU's dense peak for the precision it
trained in, as NVIDIA/dgxc-benchmarking states it. A log that prints its own MFU (torchtitan's `mfu:`) keeps it;
for the others the peak comes from this table, which names each figure's datasheet. Where the table has no
peak (NVFP4 on an H100, a GPU it does not list, a log that names no GPU) MFU is not computed and `mfu` says why.
The table is read once, when first asked for (pydantic: an error names the field and its line).
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import BenchbookError

if TYPE_CHECKING:
    from pydantic import BaseModel

TABLE = Path(__file__).with_name("gpu_peaks.yaml")
#: The table's precisions, and the run precisions read at their rate: FP16 at BF16's (the same tensor-core rate on
#: every GPU listed), MXFP8 at FP8's.
PRECISIONS = ("bf16", "fp8", "nvfp4")
_READ_AS = (("bf16", "bf16"), ("fp16", "bf16"), ("fp8", "fp8"), ("mxfp8", "fp8"), ("nvfp4", "nvfp4"))


class PeakTableError(BenchbookError, ValueError):
    """Raised when the peak table cannot be read or is not what its schema says; names the file, line and field."""


def _schema() -> tuple[type[BaseModel], type[BaseModel]]:
    """The table's pydantic schema, built on first use (pydantic is imported only where MFU is derived)."""
    from pydantic import BaseModel, ConfigDict, Field, field_validator

    class Gpu(BaseModel):
        model_config = ConfigDict(extra="forbid", frozen=True)
        name: str = Field(min_length=1)
        pattern: str = Field(min_length=1)
        peaks: dict[str, float]
        source: str = Field(min_length=10)

        @field_validator("pattern")
        @classmethod
        def _compiles(cls, value: str) -> str:
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"not a regular expression ({exc})") from None
            return value

        @field_validator("peaks")
        @classmethod
        def _known(cls, value: dict[str, float]) -> dict[str, float]:
            for precision, tflops in value.items():
                if precision not in PRECISIONS:
                    raise ValueError(f"precision {precision!r}: expected one of {', '.join(PRECISIONS)}")
                if not 0 < tflops < 1e6:
                    raise ValueError(f"{precision}: {tflops} is no TFLOP/s peak (expected a number above 0)")
            return value

    class Table(BaseModel):
        model_config = ConfigDict(extra="forbid", frozen=True)
        path: Path
        schema_version: int = Field(ge=1, le=1)
        gpus: tuple[Gpu, ...] = Field(min_length=1)

    return Gpu, Table


def load(path: Path = TABLE):
    """The peak table at `path` (the shipped one by default), validated; PeakTableError names file, line and field."""
    from . import yamlfile

    doc = yamlfile.read_mapping(Path(path), PeakTableError, "GPU peak table", "schema_version, gpus", 10_000)
    return yamlfile.validated(doc, Path(path), _schema()[1], PeakTableError)


@functools.cache
def _shipped():
    return load(TABLE)


def gpu(gpu_type: str | None, table=None):
    """The table's entry for a GPU type as a log or a reference names it, or None."""
    if not gpu_type:
        return None
    for entry in (table or _shipped()).gpus:
        if re.search(entry.pattern, str(gpu_type), re.IGNORECASE):
            return entry
    return None


def peak(gpu_type: str | None, precision: str | None, table=None) -> tuple[float | None, str]:
    """The dense peak TFLOP/s of a GPU type at a run's precision and where it comes from; (None, why) where the
    table has none."""
    entry = gpu(gpu_type, table)
    if entry is None:
        return None, ("the log names no GPU type" if not gpu_type else
                      f"no GPU of the peak table (core/gpu_peaks.yaml) matches {str(gpu_type)[:60]!r}")
    column = next((col for run, col in _READ_AS if run == str(precision).lower()), None)
    if column is None:
        return None, f"the run's precision ({precision or 'unknown'}) has no column in the peak table"
    if column not in entry.peaks:
        return None, f"the peak table has no dense {column.upper()} peak for {entry.name}"
    return entry.peaks[column], f"{entry.name} dense {column.upper()} peak {entry.peaks[column]:g} TFLOP/s " \
                                f"[core/gpu_peaks.yaml: {entry.source.split(' ')[0]}]"


def mfu(tflops_per_gpu: float | None, gpu_type: str | None, precision: str | None) -> tuple[float | None, str]:
    """MFU in percent, the TFLOP/s/GPU over the dense peak, with its words; (None, why not) where it has no peak."""
    if tflops_per_gpu is None or tflops_per_gpu != tflops_per_gpu:
        return None, "MFU not computed: the run has no TFLOP/s/GPU"
    top, words = peak(gpu_type, precision)
    if top is None:
        return None, f"MFU not computed: {words}"
    return 100.0 * tflops_per_gpu / top, f"MFU = TFLOP/s/GPU over the {words}"
