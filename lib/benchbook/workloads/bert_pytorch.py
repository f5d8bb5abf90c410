"""BERT pre-training (masked-language modelling) with PyTorch on the CPU: a small BERT on real text.

Run with the Python of the PyTorch environment (requirements/pytorch.txt); benchbook itself need not be
installed there:

    python bert_pytorch.py --train_batch_size 8 --seq-len 128 --max_steps 150 --precision bf16 --threads 2

The network is BERT written out plainly in torch (token, position and segment embeddings, encoder layers with
GELU, the masked-LM head tied to the token embeddings; `transformers` would add seconds of imports to a run of a
few seconds), small by default (2 layers, hidden 64, 2 heads, a 1000-piece vocabulary). It trains on the
docstrings of the standard library (`_bert_corpus`) with BERT's 15% masking, AdamW (NVIDIA's LAMB is in apex, not
in torch) and NVIDIA's schedule (linear warm-up over `warmup_proportion` of the steps, then polynomial decay of
degree 0.5). No next-sentence task: the MLM loss alone. Two departures, for a run of 150 steps: LayerNorm before
each sublayer (BERT's after, `--post_ln`, stays at the frequency of the commonest tokens for a few hundred steps
here) and no dropout (`--dropout 0.1` is BERT's; it was a quarter of a step's time).

It logs what NVIDIA DeepLearningExamples' PyTorch/LanguageModeling/BERT `run_pretraining.py` logs, in its DLLogger
form (NGC 21.11 and later: `PARAMETER Config : ["Namespace(...)"]`, one `Training Epoch: E Training Iteration: I`
line per step with `average_loss`, `learning_rate`, `skipped_steps`, `final_loss` on the last step, and the
end-of-run line with `e2e_train_time`, `training_sequences_per_second`, `final_loss`, `raw_train_time`), so that
one parser reads NGC's logs and these. As NVIDIA's script, the first `--warmup_steps` steps (its
`skip_fwd_bwd_for_perf`, 4) are left out of `raw_train_time` and of the rate. Added: `mlm_accuracy` (the fraction
of masked held-out tokens predicted right) on a line of its own at step 0, every `--eval_every` steps and at the
end; evaluation time is left out of `raw_train_time`.
"""

from __future__ import annotations

import argparse
import sys
import time
from datetime import datetime

if __package__:
    from . import _bert_corpus as corpus
else:  # run as a script: the sibling module is on sys.path
    import _bert_corpus as corpus

# The units NVIDIA's script declares (dllogger.metadata); a key without one prints an empty unit.
UNITS = {"e2e_train_time": "s", "training_sequences_per_second": "sequences/s", "final_loss": None,
         "raw_train_time": "s"}
EVAL_SEQUENCES = 64  # held-out sequences scored at each evaluation
EVAL_SEED = 12345  # the held-out masks are the same in every run


def format_step(step) -> str:
    """DeepLearningExamples' BERT utils.format_step: a name as it is, a tuple as training epoch, iteration."""
    if isinstance(step, str):
        return step
    words = ("Training Epoch", "Training Iteration", "Validation Iteration")
    return "".join(f"{word}: {value} " for word, value in zip(words, step, strict=False))


def dll_line(step, data: dict) -> str:
    """One line as DLLogger's StdOutBackend prints it: `DLL <datetime> - <step> key : value unit ...`."""
    pairs = " ".join(f"{key} : {value} {UNITS.get(key, '')}" for key, value in data.items())
    return f"DLL {datetime.now()} - {format_step(step)} {pairs}"


def log(step, data: dict) -> None:
    print(dll_line(step, data), flush=True)


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--train_batch_size", "--batch_size", type=int, default=8, help="sequences a step")
    p.add_argument("--max_seq_length", "--seq-len", type=int, default=128, help="tokens a sequence (phase 1: 128)")
    p.add_argument("--max_predictions_per_seq", type=int, default=None,
                   help="masked tokens a sequence at most (default: 20 per 128 tokens, NVIDIA's 20 and 80)")
    p.add_argument("--max_steps", "--num_iter", type=int, default=150, help="optimizer steps")
    p.add_argument("--warmup_steps", type=int, default=4, help="first steps left out of the rate (NVIDIA: 4)")
    p.add_argument("--learning_rate", type=float, default=2e-3, help="peak (AdamW)")
    p.add_argument("--warmup_proportion", type=float, default=0.1, help="of max_steps, linear learning-rate warm-up")
    p.add_argument("--precision", choices=("fp32", "bf16"), default="fp32", help="bf16: autocast to bfloat16")
    p.add_argument("--phase2", action="store_true", help="name the run phase 2 (NVIDIA's flag; sequence length 512)")
    p.add_argument("--eval_every", type=int, default=30, help="steps between MLM accuracy evaluations")
    p.add_argument("--hidden_size", type=int, default=64)
    p.add_argument("--num_hidden_layers", type=int, default=2)
    p.add_argument("--num_attention_heads", type=int, default=2)
    p.add_argument("--post_ln", action="store_true", help="LayerNorm after each sublayer, as BERT (slower to start)")
    p.add_argument("--dropout", type=float, default=0.0, help="BERT's is 0.1; a short run needs none")
    p.add_argument("--vocab_size", type=int, default=1000, help="WordPiece vocabulary built from the corpus")
    p.add_argument("--threads", type=int, default=0, help="torch intra- and inter-op threads; 0: torch's default")
    p.add_argument("--seed", type=int, default=42)
    args = p.parse_args(argv)
    problems = [f"--{name} must be at least {least}, not {getattr(args, name)}" for name, least in (
        ("train_batch_size", 1), ("max_seq_length", 8), ("max_steps", 1), ("eval_every", 1), ("hidden_size", 8),
        ("num_hidden_layers", 1), ("num_attention_heads", 1), ("vocab_size", 64), ("warmup_steps", 0),
        ("threads", 0)) if getattr(args, name) < least]
    if args.warmup_steps >= args.max_steps:
        problems.append(f"--warmup_steps ({args.warmup_steps}) must be below --max_steps ({args.max_steps})")
    if args.hidden_size % args.num_attention_heads:
        problems.append(f"--hidden_size {args.hidden_size} is not a multiple of --num_attention_heads "
                        f"{args.num_attention_heads}")
    if not 0 <= args.dropout < 1:
        problems.append(f"--dropout must be in [0, 1), not {args.dropout}")
    if not 0 <= args.warmup_proportion < 1:
        problems.append(f"--warmup_proportion must be in [0, 1), not {args.warmup_proportion}")
    if problems:
        p.error("; ".join(problems))
    if args.max_predictions_per_seq is None:
        args.max_predictions_per_seq = max(1, round(args.max_seq_length * 20 / 128))
    # What NVIDIA's Namespace says of every run, for the parser: one process, no accumulation, no fp16.
    args.device, args.n_gpu, args.gradient_accumulation_steps, args.log_freq = "cpu", 0, 1, 1
    args.fp16 = args.amp = False
    args.bf16 = args.precision == "bf16"
    args.do_train, args.skip_checkpoint = True, True
    return args


def build_model(torch, args: argparse.Namespace, vocab_size: int):
    """BERT for masked-LM: embeddings, `num_hidden_layers` post-LN encoder layers, the tied MLM head."""
    nn = torch.nn
    hidden = args.hidden_size

    class Bert(nn.Module):
        def __init__(self):
            super().__init__()
            self.tokens = nn.Embedding(vocab_size, hidden)
            self.positions = nn.Embedding(args.max_seq_length, hidden)
            self.segments = nn.Embedding(2, hidden)
            self.norm = nn.LayerNorm(hidden, eps=1e-12)
            layer = nn.TransformerEncoderLayer(hidden, args.num_attention_heads, 4 * hidden, dropout=args.dropout,
                                               activation="gelu", batch_first=True, layer_norm_eps=1e-12,
                                               norm_first=not args.post_ln)
            self.encoder = nn.TransformerEncoder(layer, args.num_hidden_layers, enable_nested_tensor=False)
            self.transform = nn.Sequential(nn.Linear(hidden, hidden), nn.GELU(), nn.LayerNorm(hidden, eps=1e-12))
            self.bias = nn.Parameter(torch.zeros(vocab_size))

        def forward(self, inputs, positions):
            where = torch.arange(inputs.shape[1], device=inputs.device)
            x = self.tokens(inputs) + self.positions(where) + self.segments(torch.zeros_like(inputs))
            x = self.encoder(nn.functional.dropout(self.norm(x), args.dropout, self.training))
            # Only the masked positions reach the vocabulary (NVIDIA's dense sequence output).
            picked = torch.gather(x, 1, positions.unsqueeze(-1).expand(-1, -1, hidden))
            return self.transform(picked) @ self.tokens.weight.T + self.bias

    model = Bert()
    for module in model.modules():  # BERT's initializer: N(0, 0.02), biases zero
        if isinstance(module, nn.Linear | nn.Embedding):
            nn.init.normal_(module.weight, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)
    return model


def lr_at(args: argparse.Namespace, step: int) -> float:
    """NVIDIA's PolyWarmUpScheduler: linear warm-up, then (1 - progress) ** 0.5."""
    progress = step / args.max_steps
    if progress < args.warmup_proportion:
        return args.learning_rate * progress / args.warmup_proportion
    return args.learning_rate * (1.0 - progress) ** 0.5


def train(torch, args: argparse.Namespace, data: corpus.Corpus) -> tuple[float, float]:
    """The training loop with its DLLogger lines; returns (final loss, raw train time in seconds)."""
    import numpy as np

    model = build_model(torch, args, len(data.vocab))
    decay = [p for n, p in model.named_parameters() if p.ndim > 1]
    no_decay = [p for n, p in model.named_parameters() if p.ndim <= 1]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01},
                                   {"params": no_decay, "weight_decay": 0.0}], lr=args.learning_rate)
    autocast = {"device_type": "cpu", "dtype": torch.bfloat16, "enabled": args.bf16}
    held = corpus.mask(data.held_out[:EVAL_SEQUENCES], args.max_predictions_per_seq, len(data.vocab),
                       np.random.default_rng(EVAL_SEED))
    held = tuple(torch.from_numpy(a) for a in held)

    def evaluate(epoch: int, step: int) -> float:
        started = time.perf_counter()
        model.eval()
        with torch.no_grad(), torch.autocast(**autocast):
            predicted = model(held[0], held[1]).float().argmax(-1)
        model.train()
        log((epoch, step), {"mlm_accuracy": (predicted == held[2]).float().mean().item()})
        return time.perf_counter() - started

    rng = np.random.default_rng(args.seed)
    order, cursor, epoch = rng.permutation(len(data.train)), 0, 0
    evaluate(epoch, 0)
    paused, raw_start, loss_value = 0.0, None, float("nan")
    for step in range(1, args.max_steps + 1):
        if step - 1 == args.warmup_steps:
            raw_start = time.time()
        if cursor + args.train_batch_size > len(order):  # a new pass over the text, in a new order
            order, cursor, epoch = rng.permutation(len(data.train)), 0, epoch + 1
        rows = data.train[order[cursor:cursor + args.train_batch_size]]
        cursor += args.train_batch_size
        inputs, positions, labels = (torch.from_numpy(a) for a in corpus.mask(
            rows, args.max_predictions_per_seq, len(data.vocab), rng))
        for group in optimizer.param_groups:
            group["lr"] = lr_at(args, step - 1)
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(**autocast):
            logits = model(inputs, positions)
        loss = torch.nn.functional.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), labels.reshape(-1))
        loss.backward()
        optimizer.step()
        loss_value = loss.item()
        if step == args.max_steps:
            raw_time = time.time() - raw_start - paused
            log((epoch, step), {"final_loss": loss_value})
        else:
            log((epoch, step), {"average_loss": loss_value, "learning_rate": optimizer.param_groups[0]["lr"],
                                "skipped_steps": 0})
        if step % args.eval_every == 0 or step == args.max_steps:
            spent = evaluate(epoch, step)
            paused += spent if raw_start is not None and step < args.max_steps else 0.0
    return loss_value, raw_time


def main(argv=None) -> int:
    args = parse_args(argv)
    now = time.time()
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
        torch.set_num_interop_threads(args.threads)
    torch.manual_seed(args.seed)
    data = corpus.load(args.max_seq_length, args.vocab_size)
    args.corpus, args.corpus_documents, args.corpus_sha256 = "stdlib docstrings", data.documents, data.sha256
    args.corpus_sequences, args.framework, args.version = len(data.train), "pytorch", torch.__version__
    log("PARAMETER", {"Config": [str(args)]})
    for key, value in (("SEED", args.seed), ("train_start", True), ("batch_size_per_gpu", args.train_batch_size),
                       ("learning_rate", args.learning_rate)):
        log("PARAMETER", {key: value})
    final_loss, raw_time = train(torch, args, data)
    rate = args.train_batch_size * (args.max_steps - args.warmup_steps) / raw_time
    log((), {"e2e_train_time": time.time() - now, "training_sequences_per_second": rate, "final_loss": final_loss,
             "raw_train_time": raw_time})
    return 0


if __name__ == "__main__":
    sys.exit(main())
