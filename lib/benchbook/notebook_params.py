"""The parameters of the model notebooks, typed and checked before anything runs.

papermill passes `-p NAME VALUE` as whatever the text parses to: `-p launch notabool` arrives as the
string "notabool", which is true, and launched the study; `-p warmup x` ended in a raw ValueError deep in
the report. `check` validates every parameter on entry and raises `NotebookParameterError` naming the
parameter, the value and what is expected. The parameters cell carries the same types as annotations,
so that `papermill --help-notebook` shows them.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .errors import BenchbookError
from .rules import METHODS

ROOT = Path(__file__).resolve().parents[2]


class NotebookParameterError(BenchbookError, ValueError):
    """Raised when a notebook parameter (papermill `-p NAME VALUE`) has a value of the wrong type or
    outside what it accepts; the message names the parameter, the value and what is expected."""


class NotebookParameters(BaseModel):
    """What a model notebook's parameters cell holds (the parameters cell of notebooks/<model>.py)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    study: str = Field(description="study file (params/...)")
    log_dir: str = Field(description="analysis-only mode: the folder of logs; when set, `study` is ignored")
    runs_dir: str = Field(description="folder of study folders")
    launch: bool = Field(description="run the study before the analysis (launch mode only)")
    reference: str = Field(description="name of a file in params/references/; empty: the study's own")
    warmup: int = Field(ge=-1, description="records to skip as warm-up; -1: the log format's rule")
    method: str = Field(pattern="^(" + "|".join(["", *METHODS]) + ")$", description="recompute method")
    rule: str = Field("", description="named throughput rule (benchbook formats): nvidia, the default, or dlperf")

    @field_validator("rule")
    @classmethod
    def _known_rule(cls, name: str) -> str:
        from . import parsers
        known = sorted({rule for f in parsers.FORMATS.values() for rule in f.rules()})
        if name.strip() and name not in known:
            raise ValueError(f"one of {', '.join(known)}, or empty for each format's default")
        return name
    interactive: bool = Field(description="show the ipywidgets explorer")
    summary_path: str = Field(description="where to write the headline numbers as JSON")


EXPECTED = {"str": "text", "bool": "True or False", "int": "a whole number"}


def check(**values) -> NotebookParameters:
    """The parameters, validated; the first wrong one raises a `NotebookParameterError`."""
    try:
        params = NotebookParameters(**values)
    except ValidationError as exc:
        lines = []
        for e in exc.errors():
            name = ".".join(str(p) for p in e["loc"]) or "parameters"
            field = NotebookParameters.model_fields.get(name)
            kind = EXPECTED.get(getattr(field.annotation, "__name__", ""), "") if field else ""
            if e["type"] == "extra_forbidden":
                lines.append(f"notebook parameter {name!r} is not one of {', '.join(NotebookParameters.model_fields)}")
                continue
            what = f"{field.description}; " if field else ""
            lines.append(f"notebook parameter {name} = {e.get('input')!r}: expected {kind or 'another value'} "
                         f"({what}{e['msg'][0].lower()}{e['msg'][1:]})")
        raise NotebookParameterError("\n".join(lines)) from None
    if params.log_dir.strip():
        params = params.model_copy(update={"study": "", "launch": False})  # analysis-only: the study is ignored
    elif params.study.strip():
        params = params.model_copy(update={"study": str(locate(params.study))})
    return params


def locate(study: str) -> Path:
    """A study file relative to the current folder, else to the repository (a notebook run elsewhere)."""
    path = Path(study).expanduser()
    if path.is_absolute() or path.exists() or not (ROOT / path).exists():
        return path
    return ROOT / path
