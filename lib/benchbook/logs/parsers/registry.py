"""The registry of log formats: `LogFormat` (what a format module declares), `register`, `get`, `detect`.

A module of its own, so that the format modules import it without importing the package that imports
them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...core import config
from ...core.catalog import plain
from ...core.measures import THROUGHPUT, Measure
from ...errors import UnknownNameError
from ..rules import NamedRule, Rule

if TYPE_CHECKING:
    from . import scanning


@dataclass(frozen=True)
class LogFormat:
    """A log format: how to recognise it, how to scan it, and its named throughput rules.

    Attributes
    ----------
    name : registry name, also the `format` column of the analysis.
    framework, model : what runs in logs of this format.
    sniff : whether the head of a file (normalised text) is in this format.
    patterns : the (pattern, handler) pairs `scanning.scan` runs over a chunk's text: a handler
        turns a match into an event (kind, data), or None.
    rules : the format's named rules (`rules.NamedRule`), declared in its module, its default
        (`nvidia`: the arithmetic of the script that printed the published number) first.
    bulk : the `scanning.BulkRule` of the lines that make up most of a log (one record each), or None.
    finish : (run metadata, ranks that logged) -> metadata completed from what only the whole run
        shows (GPU count from the ranks, per-GPU batch from a global one).
    warn : (run metadata) -> what the format knows to be wrong with reading such a run, as sentences.
    conclude : (assemble.RunDraft) -> None, for a format of keyed records (KEYED events, MLLOG): folds
        them into the run's metadata, reported values, evaluations and end; raises scanning.Refused.
    quality : the quality metrics its EVAL events carry (`core.config.Metric`): the catalog's evaluation columns.
    measures : what its runs measure (`core.measures`): throughput, and tokens/s where its model has a sequence
        length.
    arch : (run metadata) -> the name the log gives its model (NGC's `--arch`), or None; `named_model` reads it
        through the catalog's `arch`.
    opens : patterns of the lines that open a run of this format and of no other (each a literal
        first: sought in every chunk of a file in another format, that is refused if it holds one,
        `scan`; formats that share them, a family and its forks, are not told apart so). A format without any
        (MLLOG, whose logs hold their framework's lines) is not sought,
        and a file in it holds any other.
    logged : {measure key: record field} for the measures its records state (the LLM logs' step time, TFLOP/s/GPU,
        loss: `scanning.LOGGED_FIELDS` or `loss`): the rule's window over that field, not a rate of a volume.
    rate_scale : (run metadata) -> the factor that makes its records' logged rate the samples a second of all GPUs
        (torchtitan's tps, tokens a second a device: GPUs / sequence length; NaN where unknown), or None.
    axes : the configuration axes its metadata gives that no model declares (the LLM logs' parallel sizes).
    rates_per_step : False for a format whose step records carry a loss and no rate (the rate is one end-of-run
        record, NGC PyTorch BERT's): a record without a throughput is then no news and not said in the notes.
    """

    name: str
    framework: str
    model: str
    sniff: Callable[[str], bool]
    patterns: list[scanning.Rule]
    rules: tuple[NamedRule, ...]
    bulk: scanning.BulkRule | None = None
    finish: Callable[[dict, set], dict] = lambda meta, ranks: {}
    warn: Callable[[dict], list[str]] = lambda meta: []
    conclude: Callable[[Any], None] | None = None
    opens: tuple[re.Pattern, ...] = ()
    quality: tuple[config.Metric, ...] = ()
    measures: tuple[Measure, ...] = (THROUGHPUT,)
    arch: Callable[[dict], str | None] = lambda meta: meta.get("arch")
    rates_per_step: bool = True
    logged: dict[str, str] = field(default_factory=dict)
    rate_scale: Callable[[dict], float] | None = None
    axes: tuple[config.Axis, ...] = ()

    def named_model(self, meta: dict, catalog) -> tuple[str | None, list[str]]:
        """The `model` column of a run whose log names its model (`arch`) and whose metadata has none: the
        model whose `ModelSpec.log_arches` holds that name (the catalog's `arch`), or the format's own model
        where the name is its (`resnet50`); else the logged name itself (or "unknown", a name no column should
        hold), with a warning: a ResNeXt log is never labelled ResNet-50. None where the log names nothing."""
        logged = self.arch(meta)
        if logged is None or meta.get("model") is not None:
            return None, []
        arch = str(logged)
        model, _ = catalog.arch(self.framework, arch) or (None, None)
        if model is None and plain(arch) == plain(self.model):
            model = self.model
        if model is not None:
            return model, []
        shown = arch if _SAFE_NAME.fullmatch(arch) else "unknown"
        known = sorted({*catalog.arch_names(self.framework), self.model})
        return shown, [f"the log names its model {arch[:80]!r} (arch), none of those benchbook knows in "
                       f"{self.framework} logs ({', '.join(known)}): its runs are labelled {shown!r}, "
                       f"not {self.model!r}"]

    def rule(self, name: str | None) -> NamedRule:
        """The named rule (None: the format's default, its first); UnknownNameError lists the format's rules."""
        if name is None:
            return self.rules[0]
        for rule in self.rules:
            if rule.name == name:
                return rule
        raise UnknownNameError(f"rule of the {self.name} format", name, [r.name for r in self.rules])


FORMATS: dict[str, LogFormat] = {}
_SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")  # a logged name the model column may hold

# Which format a head is in when several recognise it, first first: the one place that orders them.
PRECEDENCE = (
    "mllog",  # its `:::MLLOG` token is MLPerf's alone: a framework's own lines around it are not the log
    "benchbook_cpu",  # `PARAMETER workload :`, this repository's workloads (their DLLogger lines as NGC's)
    "ngc_tf2_maskrcnn",  # the `[MaskRCNN]` prefix of every line
    "torchtitan",  # its `[titan]` logger prefix
    "nemo2",  # Lightning's `Training epoch E, iteration I/N |` line with NeMo's step timing
    "primus", "megatron_deepspeed",  # Megatron's line in a Primus log, or with DeepSpeed's fields
    "megatron_lm",  # the `iteration N/ M | consumed samples:` line of Megatron and its forks
    "ngc_bert_pytorch", "ngc_bert_tf1",  # BERT's `Training Epoch:` / `throughput_train` lines, no ConvNets key
    "ngc_mxnet_resnet50",  # its DLLogger logs print `train.total_ips` too, as PyTorch's and TF1's
    "ngc_pytorch_convnets",  # its `PARAMETER arch :` too, as TF1's
    "ngc_tf1_convnets",
)


def register(fmt: LogFormat) -> LogFormat:
    """Add a format to the registry (last registration of a name wins); ValueError where PRECEDENCE
    does not place it (a head that two formats recognise would have no answer), as a model
    registered twice is."""
    if fmt.name not in PRECEDENCE:
        raise ValueError(f"log format {fmt.name!r} is not placed in parsers/registry.py's PRECEDENCE: add its "
                            "name there, before the formats whose heads it may share")
    FORMATS[fmt.name] = fmt
    return fmt


def get(name: str) -> LogFormat:
    """The format registered under `name`; UnknownNameError lists the known ones."""
    try:
        return FORMATS[name]
    except KeyError:
        raise UnknownNameError("log format", name, list(FORMATS)) from None


def detect(head: str) -> LogFormat | None:
    """The registered format that recognises this head of a file (the first in PRECEDENCE), or None."""
    return next((FORMATS[name] for name in PRECEDENCE if name in FORMATS and FORMATS[name].sniff(head)), None)


def scan(chunk, fmt: LogFormat, others: bool = True) -> list:
    """The events of a chunk in `fmt` (`scanning.scan`). With `others` (the format told by the
    file's head, not forced by the user), scanning.Refused at the first line of the chunk that opens
    a run of another format: a file that holds several formats is read in none (read in the one its
    head tells, the others' runs were lost), the formats and the lines where they change named."""
    import numpy as np

    from . import scanning

    others = [other for other in FORMATS.values() if others and other is not fmt and other.opens != fmt.opens
              and any(pattern.search(chunk.text) for pattern in other.opens)]  # (same opens: one family, its forks)
    if others and fmt.opens:
        opened = sorted((m.start(), f.name) for f in (fmt, *others) for pattern in f.opens
                        for m in pattern.finditer(chunk.text))
        lines = (chunk.first_line + np.searchsorted(chunk.ends, [at for at, _ in opened])).tolist()
        changes, last = [], None
        for line, (_, name) in zip(lines, opened, strict=True):
            if name != last:
                changes.append(f"{name} from line {line}")
            last = name
        first = next(line for line, (_, name) in zip(lines, opened, strict=True) if name != fmt.name)
        raise scanning.Refused(first, f"a run of another log format than {fmt.name}, told by the file's head, "
                                      f"begins here ({', '.join(changes)}); refused, none of its runs read: split it "
                                      "into one file a format")
    return scanning.scan(chunk, fmt.patterns, fmt.bulk)


def choose(log_format: str | None = None, **parts) -> Rule:
    """The user's choice of rule (`Rule`'s fields, from the CLI's options or a notebook's
    parameters), checked whole: each part by `Rule` (RuleError), the name against the rules of
    `log_format`, else of every format (UnknownNameError: a name no format knows is a typo, not a
    problem per file)."""
    rule = Rule(**parts)
    if log_format is not None:
        get(log_format).rule(rule.name)
    elif rule.name is not None:
        known = {r.name for f in FORMATS.values() for r in f.rules}
        if rule.name not in known:
            raise UnknownNameError("rule", rule.name, sorted(known))
    return rule
