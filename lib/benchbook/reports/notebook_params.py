"""The parameters of the model notebooks, typed and checked before anything runs.

papermill passes `-p NAME VALUE` as whatever the text parses to: `-p launch notabool` arrives as the
string "notabool", which is true, and launched the study; `-p warmup x` (now `skip_records`) ended in a
raw ValueError deep in the report. `check` validates every parameter on entry and raises
`NotebookParameterError` naming the parameter, the value and what is expected. The parameters cell
carries the same types as annotations, so that `papermill --help-notebook` shows them. A parameter
left unset is None (in the cell and as `-p NAME None`), never a sentinel such as -1 or "" that a
reader has to know.

A notebook executes nothing unless asked: `launch` is off by default, and `interactive` left unset is on
only in a live notebook (a kernel a Jupyter server started for it), never under papermill. `given`
collects the parameters from the notebook's namespace and, under papermill, refuses a name it injected
that the parameters cell does not declare (`-p logdir DIR` for `log_dir`), which was silently ignored,
the notebook then running with its defaults.

Every path parameter is found as `core.project.locate` finds it (the current folder, then the repository): JupyterLab
and `jupyter nbconvert --execute` run the kernel in notebooks/, papermill and `benchbook publish` at the
root. A benchbook error raised in a cell shows as its one-line message, not a traceback through the
library (`show_errors_plainly`, installed when this module is imported in an IPython kernel, as every
notebook's first code cell does).
"""

from __future__ import annotations

import os
import sys
import typing
from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..core import project
from ..errors import BenchbookError, RuleError, UnknownNameError
from ..logs import parsers
from ..logs.rules import Rule

ROOT = project.ROOT  # the repository, or an installed copy of its files


class NotebookParameterError(BenchbookError, ValueError):
    """Raised when a notebook parameter (papermill `-p NAME VALUE`) has a value of the wrong type or
    outside what it accepts; the message names the parameter, the value and what is expected."""


OUT = ("the folder the page's files go to (summary.json, the data files, the log copies; benchbook publish passes "
       "'.', the report's folder); None: nowhere")


class NotebookParameters(BaseModel):
    """What a model notebook's parameters cell holds (the parameters cell of notebooks/<model>.py)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    study: str | None = Field(None, min_length=1, description="study file (params/...)")
    log_dir: str | None = Field(None, min_length=1, description="analysis-only mode: the folder of logs; when set, "
                                "`study` is ignored")
    runs_dir: str = Field(min_length=1, description="folder of study folders")
    launch: bool = Field(False, description="run the study before the analysis (launch mode only)")
    reference: str | None = Field(None, min_length=1, description="name of a file in params/references/; "
                                  "None: the study's own")
    # The rule's parts: checked whole by `logs.rules.Rule` (the CLI's one validation), in `check`.
    skip_records: int | None = Field(None, description="records to skip as warm-up; None: the log format's rule")
    method: str | None = Field(None, description="recompute method; None: the rule's own")
    rule: str | None = Field(None, description="named throughput rule (benchbook formats): nvidia, the default, "
                             "or dlperf; None: nvidia")
    window: int | None = Field(None, description="records used after the warm-up; None: the rule's own")
    tolerance: float | None = Field(None, description="relative gap to the reported value that warns; None: 0.03")

    def throughput_rule(self) -> Rule:
        """The rule these parameters choose, as `benchbook analyze --rule ... --window ...` would."""
        parts = {"name": self.rule, "skip_records": self.skip_records, "window": self.window, "method": self.method}
        return parsers.choose(**parts, **({} if self.tolerance is None else {"tolerance": self.tolerance}))

    title: str | None = Field(None, min_length=1, description="the page's title (a published set's, as the index "
                              "shows it); None: the model, what was measured and the logs or study")
    interactive: bool | None = Field(None, description="show the ipywidgets explorer; None: only in a live "
                                     "notebook (JupyterLab), never under papermill")
    out: str | None = Field(None, min_length=1, description=OUT)


class MLPerfParameters(BaseModel):
    """What the MLPerf notebook's parameters cell holds (notebooks/mlperf.py)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    results: str = Field(min_length=1, description="MLPerf result folders or archives, comma-separated")
    benchmark: str | None = Field(None, min_length=1, description="one benchmark (resnet, maskrcnn...)")
    round: str | None = Field(None, min_length=1, description="the round (v1.0) where the paths do not say it")
    submitters: str | None = Field(None, min_length=1, description="comma-separated submitters to show")
    check: bool = Field(False, description="also run mlperf-logging's compliance and RCP checkers")
    expected: str | None = Field(None, min_length=1, description="a published set's expected.yaml")
    interactive: bool | None = Field(None, description="the round's table with its filters (ipywidgets); None: "
                                     "only in a live notebook")
    title: str | None = Field(None, min_length=1, description="the page's title; None: MLPerf Training results")
    out: str | None = Field(None, min_length=1, description=OUT)


class ComparisonParameters(BaseModel):
    """What the comparison notebook's parameters cell holds (notebooks/compare.py)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    sources: str | list[str] = Field(min_length=1, description="study folders or log folders, comma-separated "
                                     "(or a list)")
    labels: str | list[str] | None = Field(None, description="one label per source, comma-separated (or a list)")
    baseline: int = Field(0, ge=0, description="index of the source the ratios are taken against")
    out: str | None = Field(None, min_length=1, description=OUT)


EXPECTED = {str: "text", bool: "True or False", int: "a whole number"}
UNSET = "None"  # how a parameter is left unset, in the parameters cell and in `papermill -p NAME None`


def _expected(annotation) -> str:
    """What a parameter takes, in words: `int | None` -> "a whole number or None"."""
    kinds = [EXPECTED.get(a, "") for a in typing.get_args(annotation) if a is not type(None)] or \
        [EXPECTED.get(annotation, "")]
    optional = type(None) in typing.get_args(annotation)
    return " or ".join(k for k in (*kinds, UNSET if optional else "") if k)


def validated(schema: type[BaseModel], values: dict):
    """`values` as `schema` types them; every wrong one said in a `NotebookParameterError` (a line each)."""
    try:
        return schema(**values)
    except ValidationError as exc:
        lines = []
        for e in exc.errors():
            name = str(e["loc"][0]) if e["loc"] else "parameters"
            field = schema.model_fields.get(name)
            kind = _expected(field.annotation) if field else ""
            if e["type"] == "extra_forbidden":
                lines.append(f"notebook parameter {name!r} is not one of {', '.join(schema.model_fields)}")
                continue
            if any(line.startswith(f"notebook parameter {name} = ") for line in lines):
                continue  # one line per parameter (a union's each member fails alone)
            what = f"{field.description}; " if field else ""
            lines.append(f"notebook parameter {name} = {values.get(name, e.get('input'))!r}: expected "
                         f"{kind or 'another value'} ({what}{e['msg'][0].lower()}{e['msg'][1:]})")
        raise NotebookParameterError("\n".join(lines)) from None


def check(**values) -> NotebookParameters:
    """A model notebook's parameters, validated; the first wrong one raises a `NotebookParameterError`."""
    params = validated(NotebookParameters, values)
    try:  # the rule's parts, by the rule's own validation
        params.throughput_rule()
    except (RuleError, UnknownNameError) as exc:
        name = "rule" if getattr(exc, "field", "name") == "name" else exc.field
        raise NotebookParameterError(f"notebook parameter {name} = {getattr(params, name)!r}: expected "
                                     f"{Rule.FIELDS['name' if name == 'rule' else name]}") from None
    if params.interactive is None:
        params = params.model_copy(update={"interactive": live()})
    here = params.out is None  # a page that writes its files (publish) takes the repository's paths first
    # every path as `project.locate` finds it: JupyterLab runs the kernel in notebooks/, papermill at the root
    params = params.model_copy(update={"runs_dir": str(project.locate(params.runs_dir, here))})
    if params.log_dir is not None:  # analysis-only: the study is ignored
        params = params.model_copy(update={"log_dir": str(project.locate(params.log_dir, here)), "study": None,
                                           "launch": False})
    elif params.study is not None:
        params = params.model_copy(update={"study": str(project.locate(params.study, here))})
    return params


def check_mlperf(**values) -> MLPerfParameters:
    """The MLPerf notebook's parameters, validated; its paths found (`located`)."""
    params = validated(MLPerfParameters, values)
    here = params.out is None
    update = {"results": located(params.results, "results", "MLPerf result folders or archives, comma-separated",
                                 here)}
    if params.expected is not None:
        update["expected"] = located(params.expected, "expected", "a published set's expected.yaml", here)
    if params.interactive is None:
        update["interactive"] = live()
    return params.model_copy(update=update)


def check_comparison(**values) -> ComparisonParameters:
    """The comparison notebook's parameters, validated; its sources found (`located`)."""
    params = validated(ComparisonParameters, values)
    return params.model_copy(update={"sources": located(params.sources, "sources", "study folders or log folders, "
                                                        "comma-separated", params.out is None)})


def live() -> bool:
    """Whether this kernel serves a notebook open in JupyterLab (jupyter_server starts such kernels with
    JPY_SESSION_NAME, the notebook's path), not one papermill or nbclient executes."""
    return bool(os.environ.get("JPY_SESSION_NAME"))


_LITERALS = (str, int, float, bool, type(None), list, dict, tuple)  # what papermill `-p`/`-y` can inject


def given(namespace: dict, known: Iterable[str] | type[BaseModel] = NotebookParameters) -> dict:
    """The parameters of `known` found in a notebook's namespace (`globals()`), by name.

    Executed by papermill, the namespace holds only the parameters cell's names, the values papermill
    injected and the modules and functions the notebook imports: a plain value under any other name
    was injected under a name the notebook does not know, and is refused with the known ones. In a
    live notebook, names of the user's own cells are there too, and nothing is refused."""
    known = list(known.model_fields) if isinstance(known, type) else list(known)
    if not live():
        unknown = sorted(name for name, value in namespace.items() if name not in known and
                         not name.startswith("_") and name not in ("In", "Out") and isinstance(value, _LITERALS))
        if unknown:
            raise NotebookParameterError("\n".join(f"notebook parameter {name!r} is not one of {', '.join(known)}"
                                                    for name in unknown))
    return {name: namespace[name] for name in known if name in namespace}


def located(value, parameter: str, expected: str, here_first: bool = True) -> str | list[str]:
    """A path parameter (a path, comma-separated paths, or a list of paths: `benchbook publish` passes one)
    with each path as `core.project.locate` finds it, in the form it came in; a path found nowhere raises a
    `NotebookParameterError` naming the parameter, the missing paths, where they were looked for and what is
    expected (and that `make report` makes runs/, where the default studies' runs are)."""
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        given_paths = [v.strip() for v in value if v.strip()]
    elif isinstance(value, str):
        given_paths = [v.strip() for v in value.split(",") if v.strip()]
    else:
        raise NotebookParameterError(f"notebook parameter {parameter} = {value!r}: expected {expected}")
    found = [project.locate(p, here_first) for p in given_paths]
    missing = [p for p, f in zip(given_paths, found, strict=True) if not f.exists()]
    if not given_paths or missing:
        where = f"looked for in {Path.cwd()}" + ("" if Path.cwd() == ROOT else f", then in {ROOT}")
        runs = any(Path(p).parts[:1] == ("runs",) for p in missing)
        raise NotebookParameterError(
            f"notebook parameter {parameter} = {value!r}: "
            + (f"no such file or folder: {', '.join(missing)} ({where})" if missing else "no path")
            + f"; expected {expected}"
            + ("; runs/ holds the CPU studies' runs: run `make report` first" if runs else ""))
    return [str(f) for f in found] if isinstance(value, (list, tuple)) else ",".join(map(str, found))


def _one_line(shell, etype, value, tb, tb_offset=None) -> None:
    """IPython's custom exception handler: the cell's error shown as the error's type and message only (a
    custom handler shows the error itself; the kernel sends it as the cell's error output and reply)."""
    shell.showtraceback((etype, value, tb), exception_only=True)


def show_errors_plainly(shell=None) -> bool:
    """Make a `BenchbookError` raised in a cell of this IPython kernel show as its one-line message (the
    parameter or file, what was expected) instead of a traceback through the library's frames; any other
    exception, a bug, keeps its traceback. papermill still fails the notebook, with that line. Whether a
    kernel (an IPython shell) was there to change."""
    if shell is None and "IPython" in sys.modules:  # never imports IPython: the CLI does not need it
        shell = sys.modules["IPython"].get_ipython()
    if shell is None:
        return False
    shell.set_custom_exc((BenchbookError,), _one_line)
    return True


show_errors_plainly()
