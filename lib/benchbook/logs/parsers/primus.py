"""AMD Primus pre-training logs (AMD-AGI/Primus, its Megatron backend): Megatron's iteration line behind Primus's
coloured logger prefix (`[20260515 17:10:32][rank-7/8][DEBUG] [utils.py:425] : ...`), with `instant/running-average`
pairs in its fields (`596.2/596.2`) from the third iteration and `tokens per GPU (tokens/s/GPU)`.

The line, the arguments (Primus prints them as a command line, `--seq_length 4096`) and the rules are Megatron-LM's
(`megatron_lm`, which reads a pair's instant and the GPUs from `rank-R/WORLD`): this module tells the fork apart.
"""

from __future__ import annotations

import dataclasses

from . import megatron_lm
from .registry import register


def sniff(head: str) -> bool:
    """Megatron's lines in a log Primus's launcher or logger wrote."""
    return megatron_lm.sniff(head) and ("primus-cli" in head or "[Primus" in head or "/Primus" in head)


FORMAT = register(dataclasses.replace(megatron_lm.FORMAT, name="primus", framework="primus", sniff=sniff))
