"""The registry of log formats: `LogFormat` (what a format module declares), `register`, `get`, `detect`.

A module of its own, so that the format modules import it without importing the package that imports
them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ...errors import UnknownNameError
from ..events import Event
from ..presets import Preset
from ..textio import Chunk
from .runrecords import RunRecords


@dataclass(frozen=True)
class LogFormat:
    """A log format: how to recognise it, how to scan it, and its documented throughput rule.

    Attributes
    ----------
    name : registry name, also the `format` column of the analysis.
    framework, model : what runs in logs of this format.
    sniff : whether the head of a file (normalised text) is in this format.
    scan : pure function from a chunk (textio.Chunk: whole lines, their ranks) to events.
    method : default recompute method ("mean", "median", "harmonic" or "elapsed").
    warmup : how the format marks warm-up records by default, in words (shown to users).
    mark_warmup : (RunRecords: one rank's records of every run of a file, with each run's metadata)
        -> boolean array of the warm-up records.
    finish : (run metadata, ranks that logged) -> metadata completed from what only the whole run
        shows (GPU count from the ranks, per-GPU batch from a global one).
    priority : higher wins when several formats sniff the same head.
    source : the script whose arithmetic `method` and `mark_warmup` repeat (repository, path,
        commit): together they are the format's `nvidia` rule, the default.
    select : (RunRecords) -> boolean array of the records the default rule reads (None: all).
    presets : the format's other named rules (`dlperf`...).
    warn : (run metadata) -> what the format knows to be wrong with reading such a run, as sentences.
    """

    name: str
    framework: str
    model: str
    sniff: Callable[[str], bool]
    scan: Callable[[Chunk], list[Event]]
    method: str
    warmup: str
    mark_warmup: Callable[[RunRecords], Any]
    finish: Callable[[dict, set], dict] = lambda meta, ranks: {}
    priority: int = 0
    source: str = ""
    select: Callable[[RunRecords], Any] | None = None
    presets: tuple[Preset, ...] = ()
    warn: Callable[[dict], list[str]] = lambda meta: []

    def rules(self) -> dict[str, Preset]:
        """The format's named rules, `nvidia` (its default) first."""
        default = Preset(DEFAULT_RULE, self.method, self.warmup, self.source, mark_warmup=self.mark_warmup,
                         select=self.select)
        return {default.name: default, **{p.name: p for p in self.presets}}

    def rule(self, name: str | None) -> Preset:
        """The named rule (None: `nvidia`); UnknownNameError lists the format's rules."""
        rules = self.rules()
        try:
            return rules[name or DEFAULT_RULE]
        except KeyError:
            raise UnknownNameError(f"rule of the {self.name} format", name, list(rules)) from None


DEFAULT_RULE = "nvidia"


FORMATS: dict[str, LogFormat] = {}


def register(fmt: LogFormat) -> LogFormat:
    """Add a format to the registry (last registration of a name wins)."""
    FORMATS[fmt.name] = fmt
    return fmt


def get(name: str) -> LogFormat:
    """The format registered under `name`; UnknownNameError lists the known ones."""
    try:
        return FORMATS[name]
    except KeyError:
        raise UnknownNameError("log format", name, list(FORMATS)) from None


def detect(head: str) -> LogFormat | None:
    """The registered format that recognises this head of a file, or None."""
    matches = [f for f in FORMATS.values() if f.sniff(head)]
    return max(matches, key=lambda f: f.priority) if matches else None
