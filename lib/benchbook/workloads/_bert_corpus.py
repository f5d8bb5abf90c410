"""The text the CPU BERT pre-trains on, and its WordPiece tokens: the docstrings of a fixed list of standard
library modules (real English prose about code, on every machine with Python, nothing downloaded).

Deterministic for a Python version: modules in a fixed order, their public members in name order, each docstring
once. Every tenth docstring is held out for the MLM accuracy. The vocabulary is WordPiece's form (BERT's
`vocab.txt`): the special tokens, every character seen (alone and as a `##` continuation) and the most frequent
whole words of the training text; the text is split into those pieces by the `tokenizers` library's BERT
normalizer, pre-tokenizer and WordPiece model. Imports the standard library, numpy and tokenizers (the workload's
environment has no benchbook).
"""

from __future__ import annotations

import collections
import hashlib
import importlib
import types
import warnings
from dataclasses import dataclass

import numpy as np
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

MODULES = ("builtins", "argparse", "ast", "asyncio", "base64", "bisect", "calendar", "collections", "contextlib",
           "copy", "csv", "dataclasses", "datetime", "decimal", "difflib", "email", "enum", "fractions", "functools",
           "gzip", "hashlib", "heapq", "html", "http.client", "inspect", "io", "ipaddress", "itertools", "json",
           "logging", "math", "operator", "os", "pathlib", "pickle", "random", "re", "shutil", "socket", "sqlite3",
           "statistics", "string", "struct", "subprocess", "tarfile", "tempfile", "textwrap", "threading", "time",
           "unittest", "urllib.parse", "uuid", "zipfile", "zlib")
SPECIAL = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
PAD, UNK, CLS, SEP, MASK = range(len(SPECIAL))
HELD_OUT_EVERY = 10  # every tenth docstring is evaluation text
MIN_WORDS = 8  # shorter docstrings ("Return self.") say little


def docstrings() -> list[str]:
    """Each distinct docstring of MODULES (the module's, its public members', their public attributes'), with
    its whitespace collapsed, in a fixed order, whatever was imported before."""
    out: list[str] = []
    seen: set[str] = set()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # deprecated aliases warn when read
        for name in MODULES:
            module = importlib.import_module(name)
            objects = [module]
            for attr, value in sorted(vars(module).items()):
                # Submodules are left out: a package holds those imported so far, which other modules change.
                if attr.startswith("_") or isinstance(value, types.ModuleType):
                    continue
                objects.append(value)
                if isinstance(value, type):
                    objects += [v for a, v in sorted(vars(value).items()) if not a.startswith("_")]
            for obj in objects:
                doc = getattr(obj, "__doc__", None)
                text = " ".join(doc.split()) if isinstance(doc, str) else ""
                if len(text.split()) >= MIN_WORDS and text not in seen:
                    seen.add(text)
                    out.append(text)
    return out


def tokenizer(vocab: list[str] | None = None) -> Tokenizer:
    """BERT's uncased tokenizer from the `tokenizers` library: BERT's normalizer (lower case, accents stripped),
    its pre-tokenizer (words and single punctuation marks) and a WordPiece model on `vocab` (greedy
    longest-match-first, [UNK] where no piece matches); without a vocabulary, for the words alone."""
    model = models.WordPiece({piece: i for i, piece in enumerate(vocab or SPECIAL)}, unk_token=SPECIAL[UNK])
    out = Tokenizer(model)
    out.normalizer = normalizers.BertNormalizer(lowercase=True, strip_accents=True)
    out.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    return out


def words(text: str, tokenize: Tokenizer | None = None) -> list[str]:
    """The words of `text` as BERT's basic tokenizer sees them."""
    tokenize = tokenize or tokenizer()
    normalized = tokenize.normalizer.normalize_str(text)
    return [word for word, _ in tokenize.pre_tokenizer.pre_tokenize_str(normalized)]


def build_vocab(texts: list[str], size: int) -> list[str]:
    """A WordPiece vocabulary of at most `size` entries (at least the specials and the characters): every
    character seen, alone and as a `##` continuation, then the most frequent whole words, ties broken by the
    word. Counted here rather than by `tokenizers`' WordPieceTrainer, whose ties fall differently from run to run
    (two trainings of this text gave two vocabularies): a seed must repeat its run."""
    tokenize = tokenizer()
    counts = collections.Counter(w for t in texts for w in words(t, tokenize))
    chars = sorted({c for w in counts for c in w})
    vocab = [*SPECIAL, *chars, *(f"##{c}" for c in chars)]
    known = set(vocab)
    for word, _ in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        if len(vocab) >= size:
            break
        if word not in known:
            vocab.append(word)
            known.add(word)
    return vocab


def encode(texts: list[str], vocab: list[str]) -> np.ndarray:
    """The token ids of the texts, one stream, each text followed by [SEP]."""
    ids: list[int] = []
    for encoding in tokenizer(vocab).encode_batch(texts, add_special_tokens=False):
        ids += encoding.ids
        ids.append(SEP)
    return np.asarray(ids, dtype=np.int64)


def sequences(stream: np.ndarray, seq_len: int) -> np.ndarray:
    """The stream cut into [CLS] + (seq_len - 2 tokens) + [SEP] rows; the tail shorter than a row is dropped."""
    body = seq_len - 2
    rows = len(stream) // body
    if rows == 0:
        raise ValueError(f"the corpus has {len(stream)} tokens, fewer than one sequence of {seq_len}")
    out = np.empty((rows, seq_len), dtype=np.int64)
    out[:, 0], out[:, -1] = CLS, SEP
    out[:, 1:-1] = stream[: rows * body].reshape(rows, body)
    return out


def mask(rows: np.ndarray, max_predictions: int, vocab_size: int, rng: np.random.Generator):
    """BERT's masking of a batch: 15% of the tokens (at most `max_predictions`, at least one) of each row are
    predicted; of those 80% become [MASK], 10% a random token, 10% stay. Returns (inputs, positions, labels)."""
    inputs = rows.copy()
    length = rows.shape[1]
    count = max(1, min(max_predictions, round(0.15 * (length - 2))))
    positions = np.stack([np.sort(rng.choice(np.arange(1, length - 1), count, replace=False)) for _ in rows])
    labels = np.take_along_axis(rows, positions, axis=1)
    draw = rng.random(positions.shape)
    random_tokens = rng.integers(len(SPECIAL), vocab_size, positions.shape)
    replaced = np.where(draw < 0.8, MASK, np.where(draw < 0.9, random_tokens, labels))
    np.put_along_axis(inputs, positions, replaced, axis=1)
    return inputs, positions, labels


@dataclass(frozen=True)
class Corpus:
    """Training and held-out sequences, the vocabulary, and what identifies the text (for the PARAMETER line)."""

    train: np.ndarray
    held_out: np.ndarray
    vocab: list[str]
    documents: int
    sha256: str


def load(seq_len: int, vocab_size: int) -> Corpus:
    """The docstrings as training and held-out sequences of `seq_len` tokens."""
    texts = docstrings()
    train_texts = [t for i, t in enumerate(texts) if i % HELD_OUT_EVERY]
    held_texts = [t for i, t in enumerate(texts) if i % HELD_OUT_EVERY == 0]
    vocab = build_vocab(train_texts, vocab_size)
    digest = hashlib.sha256("\n".join(texts).encode()).hexdigest()[:16]
    return Corpus(sequences(encode(train_texts, vocab), seq_len), sequences(encode(held_texts, vocab), seq_len),
                  vocab, len(texts), digest)
