"""The workloads' data: synthetic batches (the same for every framework) and scikit-learn's digits,
split, upsampled and normalised; the batch orders of an epoch and of an evaluation; top-k and loss."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

VAL_FRACTION = 0.2


def to_layout(images: np.ndarray, layout: str) -> np.ndarray:
    """NHWC images as `layout` (NHWC or NCHW), contiguous float32."""
    if layout == "NHWC":
        return np.ascontiguousarray(images, dtype=np.float32)
    if layout == "NCHW":
        return np.ascontiguousarray(images.transpose(0, 3, 1, 2), dtype=np.float32)
    raise ValueError(f"unknown layout {layout!r}")


def synthetic(batch_size: int, image_size: int, num_classes: int, seed: int, layout: str = "NHWC"):
    """One batch of standard-normal images and uniform labels (the same for every framework)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch_size, image_size, image_size, 3), dtype=np.float32)
    y = rng.integers(0, num_classes, size=batch_size).astype(np.int32)
    return to_layout(x, layout), y


def _bilinear(n_in: int, n_out: int) -> np.ndarray:
    """(n_out, n_in) bilinear interpolation matrix, half-pixel centres, edges clamped."""
    centres = (np.arange(n_out) + 0.5) * n_in / n_out - 0.5
    centres = np.clip(centres, 0, n_in - 1)
    lo = np.floor(centres).astype(int)
    hi = np.minimum(lo + 1, n_in - 1)
    frac = centres - lo
    m = np.zeros((n_out, n_in))
    np.add.at(m, (np.arange(n_out), lo), 1 - frac)
    np.add.at(m, (np.arange(n_out), hi), frac)
    return m


def upsample(images: np.ndarray, size: int) -> np.ndarray:
    """(N, h, w) images resized bilinearly to (N, size, size) float32."""
    n, h, w = images.shape
    rows, cols = _bilinear(h, size), _bilinear(w, size)
    return np.einsum("ih,nhw,jw->nij", rows, images.astype(np.float64), cols).astype(np.float32)


@dataclass
class Digits:
    """scikit-learn's digits, split 80/20 per class by seed, images NHWC/NCHW normalised, labels int32."""

    x_train: np.ndarray
    y_train: np.ndarray
    x_val: np.ndarray
    y_val: np.ndarray


def split_indices(labels: np.ndarray, seed: int, val_fraction: float = VAL_FRACTION):
    """(train, val) index arrays: per class, a seeded permutation's first round(fraction * n) go to val."""
    rng = np.random.RandomState(seed)  # legacy generator: the same stream in every numpy version
    train, val = [], []
    for c in np.unique(labels):
        idx = np.flatnonzero(labels == c)
        idx = idx[rng.permutation(len(idx))]
        k = int(round(val_fraction * len(idx)))
        val.append(idx[:k])
        train.append(idx[k:])
    return np.sort(np.concatenate(train)), np.sort(np.concatenate(val))


def load_digits(image_size: int, seed: int, layout: str = "NHWC") -> Digits:
    """The 1797 8x8 digits (shipped with scikit-learn), upsampled to image_size, 3 channels.

    Pixels 0..16 are scaled to [0, 1], upsampled, then standardised with the mean and standard
    deviation of the upsampled training split (one scalar each, the same for the three channels).
    """
    from sklearn.datasets import load_digits as sk_load_digits  # lazily: benchbook itself lacks sklearn

    bunch = sk_load_digits()
    images = upsample(np.asarray(bunch.images, dtype=np.float32) / 16.0, image_size)
    labels = np.asarray(bunch.target, dtype=np.int32)
    train, val = split_indices(labels, seed)
    mean, std = float(images[train].mean(dtype=np.float64)), float(images[train].std(dtype=np.float64))

    def prep(idx):
        x = ((images[idx] - mean) / std).astype(np.float32)
        return to_layout(np.repeat(x[..., None], 3, axis=-1), layout)

    return Digits(prep(train), labels[train], prep(val), labels[val])


def epoch_order(n: int, batch_size: int, rng: np.random.RandomState) -> list[np.ndarray]:
    """Index batches of one shuffled epoch; the last incomplete batch is dropped (fixed shapes)."""
    order = rng.permutation(n)
    return [order[i : i + batch_size] for i in range(0, n - batch_size + 1, batch_size)]


def eval_batches(n: int, batch_size: int) -> list[tuple[np.ndarray, int]]:
    """(indices, valid) covering 0..n-1 in order; the last batch is padded with index 0 to full size."""
    out = []
    for start in range(0, n, batch_size):
        idx = np.arange(start, min(start + batch_size, n))
        valid = len(idx)
        if valid < batch_size:
            idx = np.concatenate([idx, np.zeros(batch_size - valid, dtype=idx.dtype)])
        out.append((idx, valid))
    return out


def topk_loss(logits: np.ndarray, labels: np.ndarray, k: int = 5) -> tuple[int, int, float]:
    """(top-1 hits, top-k hits, summed cross-entropy) of float logits against int labels."""
    logits = np.asarray(logits, dtype=np.float64)
    labels = np.asarray(labels).astype(int)
    k = min(k, logits.shape[1])
    shifted = logits - logits.max(axis=1, keepdims=True)
    logp = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    rows = np.arange(len(labels))
    loss = float(-logp[rows, labels].sum())
    target = logits[rows, labels][:, None]
    # Classes scored at or above the label's score, the label left out: a tie counts against the
    # label, so that a network that outputs the same logit for every class scores 0, not 100%.
    rank = (logits >= target).sum(axis=1) - 1
    return int((rank < 1).sum()), int((rank < k).sum()), loss
