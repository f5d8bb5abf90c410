"""Megatron-DeepSpeed pre-training logs (microsoft/Megatron-DeepSpeed megatron/training.py, training_log): Megatron's
iteration line with DeepSpeed's fields after it, `samples per second`, `tokens per gpu per second (tgs)` and
`TFLOPs` (model TFLOP/s a GPU), launched by `deepspeed.launcher`.

The line, the arguments dump and the rules are Megatron-LM's (`megatron_lm`): this module tells the fork apart, so
that its runs' `format` and `framework` say which code printed them.
"""

from __future__ import annotations

import dataclasses

from . import megatron_lm
from .registry import register


def sniff(head: str) -> bool:
    """Megatron's lines with DeepSpeed's fields or its launcher."""
    return megatron_lm.sniff(head) and ("tokens per gpu per second (tgs):" in head or "samples per second:" in head
                                        or "deepspeed.launcher" in head)


# Megatron's `opens`: the formats that share them are one family (registry.scan), a file of it no mixture.
FORMAT = register(dataclasses.replace(megatron_lm.FORMAT, name="megatron_deepspeed", framework="megatron-deepspeed",
                                      sniff=sniff))
