"""Capture the software and hardware stack a benchmark runs on, as one JSON-serializable record.

Throughput depends on the whole stack (GPU model and clocks, driver, CUDA/cuDNN/NCCL, framework
build, container, model code, CPU, variables), so every run records all of it. Two rules shape
this module:

- What a machine does not have is recorded as absent, never raised: each section is a dict with
  `available` (and a `reason` when false), each probe is wrapped, each external command has a
  short timeout. A laptop without GPU gets a complete record.
- It uses the standard library only and Python 3.8 syntax, and imports nothing from benchbook,
  so that the same folder runs inside a container or another environment with that environment's
  own interpreter: `python3 capture/ [--code DIR] [--image NAME]` prints the record as JSON
  (`__main__.py`). Each module imports its siblings as a package (`from .probe import ...`) or,
  run that way, as plain files (`from probe import ...`).

Probes look at the machine through a `Probe` (environment variables, a file-system root, a
command runner), so that tests can replay recorded `nvidia-smi` output or a fake `/proc`. One
module per section: `system` (OS, CPU, memory), `gpus`, `libraries` (CUDA, cuDNN, NCCL),
`container`, `python_env` (packages, frameworks), `model_code`, `infiniband`, `variables`; `probe`
holds what they share and `record` puts the record together.
"""

from __future__ import annotations

from .gpus import GPU_QUERY, GPU_SETTINGS_QUERY, parse_gpu_csv, parse_smi_header, parse_topology
from .model_code import PATCH_LIMIT
from .probe import COMMAND_TIMEOUT, Absent, Probe, TimedOut, section
from .python_env import PYTHON_SNIPPET, PYTHON_TIMEOUT
from .record import SCHEMA_VERSION, SECTIONS, capture, main
from .system import parse_cpuinfo, parse_lscpu, parse_os_release
from .variables import VARIABLE_NAMES, VARIABLE_PREFIXES, variables

__all__ = ["COMMAND_TIMEOUT", "GPU_QUERY", "GPU_SETTINGS_QUERY", "PATCH_LIMIT", "PYTHON_SNIPPET", "PYTHON_TIMEOUT",
           "SCHEMA_VERSION", "SECTIONS", "VARIABLE_NAMES", "VARIABLE_PREFIXES", "Absent", "Probe", "TimedOut",
           "capture", "main", "parse_cpuinfo", "parse_gpu_csv", "parse_lscpu", "parse_os_release", "parse_smi_header",
           "parse_topology", "section", "variables"]
