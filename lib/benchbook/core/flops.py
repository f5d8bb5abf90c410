"""Model FLOPs per token by each tool's formula, and TFLOP/s per GPU derived from them for logs that print none.

The tools count a model's FLOPs differently, so a TFLOP/s figure is only comparable with one of the same formula;
each is a named function with its source, and the measure's rule says which one gave a number:

- `megatron`: Megatron-LM's `num_floating_point_operations` (dense GPT: attention with its causal half, MLP with
  or without SwiGLU, the logit layer; forward and backward, 3 x 2 FLOPs a multiply-add),
- `torchtitan`: torchtitan's 6 x parameters (the embedding table left out) + the attention's 6 x heads x
  (qk + v head dims) x sequence length a layer, causal sparsity not counted,
- `six_n`: 6 x parameters, the convention of the scaling-law papers.

A mixture-of-experts model is never given a derived figure: which parameters a token meets depends on its
router, which no log line states (`tflops_per_gpu` says so instead).
"""

from __future__ import annotations

from collections.abc import Mapping

from .config import as_int

MEGATRON_SOURCE = "NVIDIA/Megatron-LM megatron/training/training.py@001b00c2 num_floating_point_operations"
TORCHTITAN_SOURCE = "pytorch/torchtitan torchtitan/models/utils.py@01c01c88 quadratic_attention_flops_per_token " \
                    "and get_nparams_and_active_nparams (6 x active parameters + attention)"
SIX_N_SOURCE = "6N: 6 FLOPs a parameter and a token (Kaplan et al. 2020, Scaling Laws for Neural Language Models, " \
               "section 2.1)"


def megatron(layers: int, hidden: int, heads: int, vocab: int, seq_len: int, ffn_hidden: int | None = None,
             query_groups: int | None = None, kv_channels: int | None = None, swiglu: bool = False) -> float:
    """Training FLOPs a token of a dense GPT by Megatron-LM's `transformer_flops` (its total over batch x sequence
    length): `ffn_hidden` defaults to 4 x hidden, `query_groups` to the heads (no GQA), `kv_channels` to
    hidden / heads, as Megatron's arguments do."""
    ffn = ffn_hidden or 4 * hidden
    groups = query_groups or heads
    channels = kv_channels or hidden // heads
    query, key_value = channels * heads, channels * groups
    fwd_bwd, fma = 3, 2  # each GEMM forward, wgrad and dgrad; a multiply-add is 2 FLOPs
    attention = fwd_bwd * fma * (hidden * (query + 2 * key_value)  # qkv projections
                                 + query * seq_len / 2 * 2  # QK^T and (QK^T)V over the causal half
                                 + query * hidden)  # output projection
    mlp = fwd_bwd * fma * hidden * ffn * (3 if swiglu else 2)
    logits = fwd_bwd * fma * hidden * vocab
    return layers * (attention + mlp) + logits


def torchtitan(params: int, layers: int, heads: int, head_dim: int, seq_len: int) -> float:
    """Training FLOPs a token by torchtitan: 6 x the parameters a token meets (the embedding table left out) plus
    each layer's attention, 6 x heads x (qk + v head dims) x sequence length (equal head dims: 12 x heads x
    head_dim x sequence length, the older `get_num_flop_per_token`)."""
    return 6 * params + layers * 6 * heads * (2 * head_dim) * seq_len


def six_n(params: int) -> float:
    """Training FLOPs a token as 6 x the parameters: forward 2, backward 4 FLOPs a parameter."""
    return 6.0 * params


def _int(meta: Mapping, name: str) -> int | None:
    """An argument of the log (`num_layers` or `arg_num_layers`, as the format keeps it) as an int, or None."""
    for key in (name, f"arg_{name}"):
        value = meta.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, str) and value.isdigit():
            return int(value)
    return None


def _on(meta: Mapping, name: str) -> bool:
    return str(meta.get(f"arg_{name}", meta.get(name))).lower() in ("true", "1")


def mixture_of_experts(meta: Mapping) -> int | None:
    """The experts of a mixture-of-experts model as its arguments give them (`num_experts` above 1), else None."""
    experts = _int(meta, "num_experts")
    return experts if experts and experts > 1 else None


def megatron_per_token(meta: Mapping, seq_len: int | None) -> tuple[float | None, str]:
    """FLOPs a token by Megatron's formula from a log's arguments, and the shape in words; (None, what is missing)."""
    shape = {name: _int(meta, name) for name in ("num_layers", "hidden_size", "num_attention_heads")}
    vocab = _int(meta, "padded_vocab_size") or _int(meta, "vocab_size")
    missing = [name for name, value in shape.items() if not value] + ([] if vocab else ["padded_vocab_size"]) + \
        ([] if seq_len else ["seq_length"])
    if missing:
        return None, f"the log gives no {', '.join(missing)}"
    groups = _int(meta, "num_query_groups") if _on(meta, "group_query_attention") else None
    ffn, channels, swiglu = _int(meta, "ffn_hidden_size"), _int(meta, "kv_channels"), _on(meta, "swiglu")
    per_token = megatron(shape["num_layers"], shape["hidden_size"], shape["num_attention_heads"], vocab,
                         int(seq_len), ffn, groups, channels, swiglu)
    words = (f"{shape['num_layers']} layers, hidden {shape['hidden_size']}, ffn {ffn or 4 * shape['hidden_size']}, "
             f"{shape['num_attention_heads']} heads, {groups or shape['num_attention_heads']} query groups, vocabulary "
             f"{vocab}, sequence {seq_len}{', SwiGLU' if swiglu else ''}")
    return per_token, words


def tflops_per_gpu(row: Mapping, measures: Mapping[str, float]) -> tuple[float | None, str]:
    """TFLOP/s per GPU for a run whose log prints none: Megatron's FLOPs a token (from the log's arguments) times
    the run's tokens/s/GPU; (None, why) for a mixture-of-experts model or where the log lacks the model's shape."""
    meta = row.get("meta") or {}
    tokens = measures.get("tokens_per_gpu")
    if tokens is None or tokens != tokens:
        return None, "TFLOP/s/GPU not derived: the run has no tokens/s/GPU"
    experts = mixture_of_experts(meta)
    if experts:
        return None, (f"TFLOP/s/GPU not derived: a mixture-of-experts model ({experts} experts), whose FLOPs a "
                      "token only its own tool's figure states")
    per_token, words = megatron_per_token(meta, as_int(row.get("seq_len")))
    if per_token is None:
        return None, f"TFLOP/s/GPU not derived: {words}"
    return per_token * tokens / 1e12, (f"TFLOP/s/GPU = {per_token:.4g} model FLOPs a token by Megatron-LM's formula "
                                       f"({words}) x tokens/s/GPU / 1e12 [{MEGATRON_SOURCE}]")
