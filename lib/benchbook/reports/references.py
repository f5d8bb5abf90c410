"""Published numbers as data (`params/references/*.yaml`), and how a measurement compares with them.

A reference file holds what one report published (throughput rows, time to train, final accuracy)
together with the report's address and the hardware and software it ran on, so that a notebook can
say "reproduced" or "5% slower, on another GPU" instead of leaving the reader to look it up.

- `load(name_or_path)` validates a file, or raises a `ReferenceError` that names the file, the line,
  the field and what is allowed; `available()` lists the shipped names.
This module is the public entry point; the parts live in `models/reference_schema` (the schema,
finding and loading files: below the studies, which check a study's `reference:` when they load it),
`reference_compare` (compare, verdict_summary, time_to_train_check) and `reference_differences`
(differences), each under 500 lines:

- `compare(stats, ref)` puts the statistics of `metrics.aggregate` next to the published rows: one
  row per published row with a verdict (columns in `COLUMNS`); `verdict_summary` condenses it. A row may
  publish any measure (`measure:`, throughput by default; an LLM table's tokens/s/GPU): `compare(stats, ref,
  measures=measure_stats(runs, measures))` compares it with the same measure of the runs.
- `differences(ref, environment, config)` says in words how the measured set-up (an environment
  capture, a run's configuration) differs from the published one, most significant first.
- `time_to_train_check(evaluations, ref)` compares time to the target accuracy and final top-1.
"""

from ..models.reference_schema import (
                               DEFAULT_ROOT,
                               ENV_VAR,
                               FLAGS,
                               LOG_NAMES,
                               PRECISIONS,
                               SCHEMA_VERSION,
                               STATED,
                               VERDICTS,
                               Hardware,
                               Outcome,
                               Reference,
                               ReferenceError,
                               ReferenceOutsideError,
                               Row,
                               Software,
                               Source,
                               UnknownReferenceError,
                               available,
                               load,
                               references_root,
)
from .reference_compare import COLUMNS, TIME_COLUMNS, compare, measure_stats, time_to_train_check, verdict_summary
from .reference_differences import differences

__all__ = ["COLUMNS", "DEFAULT_ROOT", "ENV_VAR", "FLAGS", "LOG_NAMES", "PRECISIONS", "SCHEMA_VERSION", "STATED",
           "TIME_COLUMNS",
           "VERDICTS", "Hardware", "Outcome", "Reference", "ReferenceError", "ReferenceOutsideError", "Row", "Software",
           "Source", "UnknownReferenceError", "available", "compare", "differences", "load", "measure_stats",
           "references_root",
           "time_to_train_check", "verdict_summary"]
