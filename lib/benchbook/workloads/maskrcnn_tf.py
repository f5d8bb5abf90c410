"""Mask R-CNN training on the CPU with TensorFlow 2 (Keras 3 layers, a hand-written SGD step).

A real, compact Mask R-CNN, trained from scratch on synthetic shapes:

- backbone: ResNet-50 v1.5 (the same blocks, widths and padding as resnet50_tf.py), returning C2..C5;
  from scratch, so its batch norms train (Detectron freezes them in an ImageNet-pretrained backbone);
- FPN: 1x1 laterals, nearest top-down, 3x3 outputs P2..P5, P6 = P5 subsampled by 2;
- RPN: a 3x3 conv and 1x1 objectness and box-delta convs shared over P2..P6, 3 anchors per location
  (aspect ratios 0.5, 1, 2; side 4 x stride, 16..256 px), trained on 256 sampled anchors per image
  (IoU >= 0.7 positive, < 0.3 negative, each ground truth's best anchors positive, at most half positive);
- proposals: the top anchors per level, decoded, clipped, NMS at IoU 0.7 over the levels together
  (tf.image.combined_non_max_suppression, batched, padded to a fixed count), the ground-truth boxes appended;
- box and mask targets: proposals matched to ground truth (IoU >= 0.5 foreground), 64 sampled per image,
  at most a quarter foreground;
- ROI Align: tf.image.crop_and_resize on the FPN level chosen per box (k = 4 + log2(sqrt(area) / 112),
  clamped to 2..5), two samples per bin at bin centres, averaged (aligned ROI Align, sampling ratio 2);
- box head: two fully connected layers, class logits and class-specific box deltas;
- mask head: a small 3x3 conv stack, a 2x2 stride-2 deconvolution, per-class 28x28 mask logits, binary
  cross-entropy on the matched class of the foreground ROIs;
- loss = rpn_cls + rpn_box + cls + box + mask (float32), and one momentum-SGD step on every trainable
  weight (weight decay added to the kernels' gradients, not to the logged loss), all in one tf.function.

The training images are drawn once, before the timed loop, from `--seed`: a few filled rectangles,
ellipses, triangles and diamonds (the four classes, background is class 0) on a noisy background, with
their boxes and binary masks, padded to a fixed number of instances; a small pool of batches is cycled.

Run with the Python of an environment that has tensorflow(-cpu) and numpy; benchbook itself need not
be installed there:

    python maskrcnn_tf.py --mode training_benchmark --batch_size 1 --image_size 128 --threads 2

Only `--mode training_benchmark` and `--data synthetic` exist. `--precision bf16` sets Keras'
`mixed_bfloat16` policy (bf16 convolutions and dense layers, fp32 weights, ROI Align, box coding and
losses); it runs, but where the CPU has no bf16 instructions (AVX2 machines) it is many times slower.
`--xla` would compile the whole train step with `jit_compile=True`; it is refused (exit status 2, before
anything is logged) where XLA has no kernel for an op of the step: TensorFlow 2.21 has none for
CropAndResize (ROI Align) nor CombinedNonMaxSuppression (proposals). `--image_size` is a multiple of 32
(the FPN adds each level to the next one upsampled), at least 64. The log is the DLLogger stdout
of the ResNet-50 workloads (`_common.py`): a PARAMETER line, one `Epoch: 0 Iteration: I` line per step
(`train.loss`, `train.ips`, `train.lr`, `train.step_time`, then the five loss terms) and a `Summary:`
line. Each step's time is taken around the step call and the fetch of its losses (`.numpy()`).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

import numpy as np

if __package__:
    from . import _common as common
else:  # run as a script: the sibling module is on sys.path
    import _common as common

WORKLOAD = "maskrcnn_tf"
FRAMEWORK = "tensorflow"
MODEL = "maskrcnn"
BACKBONE = "resnet50_v1.5_fpn"
MODES = common.MODES  # train_and_evaluate is parsed only to be refused with a clear message
PRECISIONS = common.PRECISIONS
DATASETS = ("synthetic",)

# Data: background (class 0) and four shapes; at most MAX_INSTANCES objects an image.
CLASS_NAMES = ("background", "rectangle", "ellipse", "triangle", "diamond")
NUM_CLASSES = len(CLASS_NAMES)
MAX_INSTANCES = 4
POOL_BATCHES = 4  # distinct batches drawn before the loop and cycled
MIN_PIXELS = 12  # an object occluded down to fewer pixels is dropped

# Model sizes (Detectron's, reduced where they scale with 800-1333 px images and 2 GPUs' worth of ROIs).
LEVELS = (2, 3, 4, 5, 6)  # P2..P6 for the RPN; ROI Align uses P2..P5
ROI_LEVELS = (2, 3, 4, 5)
FPN_CHANNELS = 128  # Detectron: 256
ANCHOR_SCALE = 4  # anchor side = ANCHOR_SCALE x stride (Detectron: 8, for 800 px images)
ASPECT_RATIOS = (0.5, 1.0, 2.0)  # height / width
RPN_BATCH = 256  # sampled anchors per image
RPN_POSITIVE_FRACTION = 0.5
RPN_POSITIVE_IOU = 0.7
RPN_NEGATIVE_IOU = 0.3
RPN_BOX_BETA = 1.0 / 9.0  # smooth-L1 beta of the RPN box loss
PRE_NMS_TOPK = 256  # per level (Detectron: 2000)
POST_NMS_TOPK = 128  # proposals per image (Detectron: 2000 in training)
RPN_NMS_IOU = 0.7
ROI_BATCH = 64  # sampled ROIs per image (Detectron: 512)
ROI_POSITIVE_FRACTION = 0.25
ROI_FOREGROUND_IOU = 0.5
MASK_ROIS = int(ROI_BATCH * ROI_POSITIVE_FRACTION)  # the foreground ROIs come first: at most this many
ROI_SIZE = 7
MASK_ROI_SIZE = 14
MASK_SIZE = 28  # mask head output (2 x MASK_ROI_SIZE)
SAMPLING_RATIO = 2
CANONICAL_SIZE = 112.0  # a box this side goes to CANONICAL_LEVEL (Detectron: 224 px at P4)
CANONICAL_LEVEL = 4
BOX_HEAD_DIM = 512  # Detectron: 1024
MASK_HEAD_CONVS = 2  # Detectron: 4
MASK_HEAD_DIM = 128  # Detectron: 256
ROI_BOX_WEIGHTS = (10.0, 10.0, 5.0, 5.0)
RPN_BOX_WEIGHTS = (1.0, 1.0, 1.0, 1.0)
DELTA_CLIP = math.log(1000.0 / 16.0)
ANCHORS_PER_LOCATION = len(ASPECT_RATIOS)


# ---------------------------------------------------------------------------------------------
# command line


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        description="Mask R-CNN (ResNet-50 FPN) training on the CPU with TensorFlow: a throughput benchmark "
        "on synthetic shapes with boxes and masks.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("--mode", choices=MODES, default="training_benchmark", help="only training_benchmark")
    p.add_argument("--batch_size", type=int, default=1, help="images per step")
    p.add_argument("--image_size", type=int, default=128, help="square image side, a multiple of 32, at least 64")
    p.add_argument("--num_iter", type=int, default=12, help="iterations in all, warm-up included")
    p.add_argument("--warmup_steps", type=int, default=4, help="first iterations left out of the Summary throughput")
    p.add_argument("--precision", choices=PRECISIONS, default="fp32", help="bf16: mixed precision, fp32 weights")
    p.add_argument("--xla", action="store_true", help="compile the train step with XLA")
    p.add_argument("--data", choices=DATASETS, default="synthetic", help="only synthetic shapes")
    p.add_argument("--threads", type=int, default=0, help="intra- and inter-op threads; 0: framework default")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--display_every", type=int, default=1, help="log every Nth iteration")
    p.add_argument("--lr", type=float, default=None, help="peak learning rate; default 0.01 * batch_size")
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--weight_decay", type=float, default=1e-4, help="on conv and dense kernels (not BN, biases)")
    return p


def parse_args(argv=None) -> argparse.Namespace:
    """Parsed and checked arguments; bad values end the process with exit status 2."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.mode != "training_benchmark":
        parser.error(
            f"--mode {args.mode} is not available for Mask R-CNN: this workload has no evaluation "
            "(no mask AP on the synthetic shapes); use --mode training_benchmark"
        )
    checks = [
        (args.batch_size >= 1, "--batch_size must be at least 1"),
        (args.image_size >= 64 and args.image_size % 32 == 0, "--image_size must be a multiple of 32, at least 64"),
        (args.num_iter >= 1, "--num_iter must be at least 1"),
        (args.warmup_steps >= 0, "--warmup_steps must be at least 0"),
        (args.warmup_steps < args.num_iter, "--warmup_steps must be less than --num_iter (no iteration measured)"),
        (args.threads >= 0, "--threads must be at least 0"),
        (args.display_every >= 1, "--display_every must be at least 1"),
        (args.lr is None or args.lr > 0, "--lr must be positive"),
        (0.0 <= args.momentum < 1.0, "--momentum must be in [0, 1)"),
        (args.weight_decay >= 0.0, "--weight_decay must be at least 0"),
    ]
    for ok, message in checks:
        if not ok:
            parser.error(message)
    if args.lr is None:
        args.lr = 0.01 * args.batch_size
    return args


def parameters(args: argparse.Namespace, version: str) -> list[tuple]:
    """The PARAMETER line's pairs: the ResNet-50 workloads' leading keys, then the model's sizes."""
    return [
        ("workload", WORKLOAD),
        ("framework", FRAMEWORK),
        ("framework_version", version),
        ("model", MODEL),
        ("mode", args.mode),
        ("device", "cpu"),
        ("gpus", 0),
        ("batch_size", args.batch_size),
        ("image_size", args.image_size),
        ("num_iter", args.num_iter),
        ("warmup_steps", args.warmup_steps),
        ("precision", args.precision),
        ("xla", bool(args.xla)),
        ("data", args.data),
        ("num_classes", NUM_CLASSES),
        ("threads", args.threads),
        ("seed", args.seed),
        ("display_every", args.display_every),
        ("lr", args.lr),
        ("momentum", args.momentum),
        ("weight_decay", args.weight_decay),
        ("backbone", BACKBONE),
        ("fpn_channels", FPN_CHANNELS),
        ("anchors", len(make_anchors(args.image_size))),
        ("anchors_per_location", ANCHORS_PER_LOCATION),
        ("rpn_batch", RPN_BATCH),
        ("pre_nms_topk", PRE_NMS_TOPK),
        ("post_nms_topk", POST_NMS_TOPK),
        ("roi_batch", ROI_BATCH),
        ("mask_rois", MASK_ROIS),
        ("max_instances", MAX_INSTANCES),
        ("pool_images", POOL_BATCHES * args.batch_size),
    ]


# ---------------------------------------------------------------------------------------------
# data (numpy, drawn once)


def _shape_mask(cls: int, yy, xx, cy, cx, h, w) -> np.ndarray:
    """Boolean mask of a class's shape centred at (cy, cx) with height h and width w."""
    dy, dx = (yy - cy) / (h / 2), (xx - cx) / (w / 2)
    if cls == 1:  # rectangle
        return (np.abs(dy) <= 1) & (np.abs(dx) <= 1)
    if cls == 2:  # ellipse
        return dy**2 + dx**2 <= 1
    if cls == 3:  # triangle, apex up: |dx| <= (dy + 1) / 2 for dy in [-1, 1]
        return (np.abs(dy) <= 1) & (np.abs(dx) <= (dy + 1) / 2)
    if cls == 4:  # diamond
        return np.abs(dy) + np.abs(dx) <= 1
    raise ValueError(f"no shape for class {cls}")


CLASS_COLORS = np.array([[0, 0, 0], [0.9, 0.3, 0.2], [0.2, 0.8, 0.3], [0.25, 0.35, 0.9], [0.9, 0.85, 0.2]])


def synthetic_image(rng: np.random.Generator, size: int):
    """(image HxWx3 float32 standardised, boxes Mx4 y1,x1,y2,x2 px, classes M int32, masks MxHxW float32)."""
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float32) + 0.5
    base = rng.uniform(0.3, 0.6, 3)
    slope = rng.uniform(-0.15, 0.15, 2)
    image = base + (slope[0] * (yy / size - 0.5) + slope[1] * (xx / size - 0.5))[..., None]
    image = image + rng.normal(0.0, 0.06, (size, size, 3))
    masks, classes = [], []
    for _ in range(int(rng.integers(1, MAX_INSTANCES + 1))):
        cls = int(rng.integers(1, NUM_CLASSES))
        h, w = rng.uniform(0.15, 0.55, 2) * size
        cy, cx = rng.uniform(h / 2, size - h / 2), rng.uniform(w / 2, size - w / 2)
        mask = _shape_mask(cls, yy, xx, cy, cx, h, w)
        color = np.clip(CLASS_COLORS[cls] + rng.normal(0.0, 0.06, 3), 0, 1)
        image[mask] = color + rng.normal(0.0, 0.03, (int(mask.sum()), 3))
        masks = [m & ~mask for m in masks]  # the new shape occludes the earlier ones
        masks.append(mask)
        classes.append(cls)
    boxes = np.zeros((MAX_INSTANCES, 4), np.float32)
    boxes[:, 2:] = 1.0  # padding: a valid 1x1 box, class 0, never matched
    out_classes = np.zeros(MAX_INSTANCES, np.int32)
    out_masks = np.zeros((MAX_INSTANCES, size, size), np.float32)
    k = 0
    for mask, cls in zip(masks, classes, strict=True):
        if mask.sum() < MIN_PIXELS:
            continue
        rows, cols = np.flatnonzero(mask.any(axis=1)), np.flatnonzero(mask.any(axis=0))
        boxes[k] = (rows[0], cols[0], rows[-1] + 1, cols[-1] + 1)
        out_classes[k] = cls
        out_masks[k] = mask
        k += 1
    image = (np.clip(image, 0, 1) - 0.5) / 0.25
    return image.astype(np.float32), boxes, out_classes, out_masks


def synthetic_pool(batch_size: int, image_size: int, seed: int):
    """POOL_BATCHES batches of (images, boxes, classes, masks) numpy arrays, the same for a given seed."""
    rng = np.random.default_rng(seed)
    pool = []
    for _ in range(POOL_BATCHES):
        items = [synthetic_image(rng, image_size) for _ in range(batch_size)]
        pool.append(tuple(np.stack(parts) for parts in zip(*items, strict=True)))
    return pool


def make_anchors(image_size: int) -> np.ndarray:
    """(N, 4) anchors y1, x1, y2, x2 in pixels, level by level, then (y, x, aspect ratio) as the RPN outputs."""
    out = []
    for level in LEVELS:
        stride = 2**level
        cells = -(-image_size // stride)
        side = ANCHOR_SCALE * stride
        centres = (np.arange(cells) + 0.5) * stride
        cy, cx = np.meshgrid(centres, centres, indexing="ij")
        hw = np.array([(side * math.sqrt(r), side / math.sqrt(r)) for r in ASPECT_RATIOS])  # (A, 2)
        cy, cx = cy[..., None], cx[..., None]
        h, w = hw[:, 0], hw[:, 1]
        out.append(np.stack([cy - h / 2, cx - w / 2, cy + h / 2, cx + w / 2], axis=-1).reshape(-1, 4))
    return np.concatenate(out).astype(np.float32)


def level_sizes(image_size: int) -> list[int]:
    """Anchors per RPN level."""
    return [(-(-image_size // 2**level)) ** 2 * ANCHORS_PER_LOCATION for level in LEVELS]


# ---------------------------------------------------------------------------------------------
# the model


def build_models(keras, image_size: int):
    """(backbone + FPN + RPN model, box head, mask head) as Keras functional models.

    The first maps images to [P2, P3, P4, P5, rpn objectness logits (B, N), rpn deltas (B, N, 4)], the
    RPN outputs in float32 and in the anchors' order.
    """
    layers = keras.layers
    small = keras.initializers.RandomNormal(stddev=0.01)
    tiny = keras.initializers.RandomNormal(stddev=0.001)
    # Detectron's fills: "c2_xavier" (uniform, variance 1/fan_in) for the FPN and the box head's layers,
    # "c2_msra" (normal, variance 2/fan_out) for the mask head's convs, small normals for the predictors.
    xavier = keras.initializers.VarianceScaling(scale=1.0, mode="fan_in", distribution="uniform")
    msra = keras.initializers.VarianceScaling(scale=2.0, mode="fan_out", distribution="untruncated_normal")

    # ResNet-50 v1.5 (stride on the 3x3 conv), C2..C5 at strides 4..32: the same builder as resnet50_tf.py.
    inputs = keras.Input((image_size, image_size, 3))
    stages = common.keras_resnet50_stages(keras, inputs)

    # FPN.
    def fpn_conv(filters, kernel, name):
        return layers.Conv2D(filters, kernel, padding="same", kernel_initializer=xavier, name=name)

    top = None
    pyramid = {}
    for level, c in zip((5, 4, 3, 2), reversed(stages), strict=True):
        lateral = fpn_conv(FPN_CHANNELS, 1, f"fpn_lateral{level}")(c)
        top = lateral if top is None else layers.Add()([lateral, layers.UpSampling2D(2)(top)])
        pyramid[level] = fpn_conv(FPN_CHANNELS, 3, f"fpn_output{level}")(top)
    pyramid[6] = layers.MaxPooling2D(1, strides=2, padding="same")(pyramid[5])

    # RPN head, shared by the levels.
    rpn_conv = layers.Conv2D(
        FPN_CHANNELS, 3, padding="same", activation="relu", kernel_initializer=small, name="rpn_conv"
    )
    rpn_cls = layers.Conv2D(ANCHORS_PER_LOCATION, 1, kernel_initializer=small, name="rpn_objectness")
    rpn_box = layers.Conv2D(4 * ANCHORS_PER_LOCATION, 1, kernel_initializer=small, name="rpn_deltas")
    logits, deltas = [], []
    for level, n in zip(LEVELS, level_sizes(image_size), strict=True):
        t = rpn_conv(pyramid[level])
        logits.append(layers.Reshape((n,))(rpn_cls(t)))
        deltas.append(layers.Reshape((n, 4))(rpn_box(t)))
    rpn_logits = layers.Activation("linear", dtype="float32")(layers.Concatenate(axis=1)(logits))
    rpn_deltas = layers.Activation("linear", dtype="float32")(layers.Concatenate(axis=1)(deltas))
    backbone = keras.Model(
        inputs, [*(pyramid[level] for level in ROI_LEVELS), rpn_logits, rpn_deltas], name="resnet50_fpn_rpn"
    )

    # Box head: two fully connected layers, then class logits and class-specific deltas.
    rois = keras.Input((ROI_SIZE, ROI_SIZE, FPN_CHANNELS))
    t = layers.Flatten()(rois)
    t = layers.Dense(BOX_HEAD_DIM, activation="relu", kernel_initializer=xavier)(t)
    t = layers.Dense(BOX_HEAD_DIM, activation="relu", kernel_initializer=xavier)(t)
    cls = layers.Dense(NUM_CLASSES, kernel_initializer=small, dtype="float32")(t)
    box = layers.Dense(4 * NUM_CLASSES, kernel_initializer=tiny, dtype="float32")(t)
    box_head = keras.Model(rois, [cls, box], name="box_head")

    # Mask head: 3x3 convs, a 2x2 stride-2 deconvolution, per-class mask logits.
    mrois = keras.Input((MASK_ROI_SIZE, MASK_ROI_SIZE, FPN_CHANNELS))
    t = mrois
    for _ in range(MASK_HEAD_CONVS):
        t = layers.Conv2D(MASK_HEAD_DIM, 3, padding="same", activation="relu", kernel_initializer=msra)(t)
    t = layers.Conv2DTranspose(MASK_HEAD_DIM, 2, strides=2, activation="relu", kernel_initializer=msra)(t)
    masks = layers.Conv2D(NUM_CLASSES, 1, kernel_initializer=tiny, dtype="float32")(t)
    mask_head = keras.Model(mrois, masks, name="mask_head")
    return backbone, box_head, mask_head


# ---------------------------------------------------------------------------------------------
# box coding, matching, sampling, ROI Align (TensorFlow ops, inside the train step)


def make_ops(tf, image_size: int):
    """The train step's building blocks, closed over `tf` and the image size."""
    eps = 1e-6

    def split(b):
        return b[..., 0], b[..., 1], b[..., 2], b[..., 3]

    def encode(boxes, anchors, weights):
        """Deltas (dy, dx, dh, dw) that turn `anchors` into `boxes` (y1, x1, y2, x2)."""
        ay1, ax1, ay2, ax2 = split(anchors)
        by1, bx1, by2, bx2 = split(boxes)
        ah, aw = tf.maximum(ay2 - ay1, eps), tf.maximum(ax2 - ax1, eps)
        bh, bw = tf.maximum(by2 - by1, eps), tf.maximum(bx2 - bx1, eps)
        wy, wx, wh, ww = weights
        return tf.stack(
            [
                wy * ((by1 + 0.5 * bh) - (ay1 + 0.5 * ah)) / ah,
                wx * ((bx1 + 0.5 * bw) - (ax1 + 0.5 * aw)) / aw,
                wh * tf.math.log(bh / ah),
                ww * tf.math.log(bw / aw),
            ],
            axis=-1,
        )

    def decode(deltas, anchors, weights):
        ay1, ax1, ay2, ax2 = split(anchors)
        ah, aw = ay2 - ay1, ax2 - ax1
        wy, wx, wh, ww = weights
        dy, dx = deltas[..., 0] / wy, deltas[..., 1] / wx
        dh = tf.minimum(deltas[..., 2] / wh, DELTA_CLIP)
        dw = tf.minimum(deltas[..., 3] / ww, DELTA_CLIP)
        cy, cx = ay1 + 0.5 * ah + dy * ah, ax1 + 0.5 * aw + dx * aw
        h, w = tf.exp(dh) * ah, tf.exp(dw) * aw
        return tf.stack([cy - 0.5 * h, cx - 0.5 * w, cy + 0.5 * h, cx + 0.5 * w], axis=-1)

    def clip(boxes):
        return tf.clip_by_value(boxes, 0.0, float(image_size))

    def iou(a, b):
        """Pairwise IoU of a (..., N, 4) and b (..., M, 4): (..., N, M)."""
        ay1, ax1, ay2, ax2 = split(a[..., :, None, :])
        by1, bx1, by2, bx2 = split(b[..., None, :, :])
        ih = tf.maximum(tf.minimum(ay2, by2) - tf.maximum(ay1, by1), 0.0)
        iw = tf.maximum(tf.minimum(ax2, bx2) - tf.maximum(ax1, bx1), 0.0)
        inter = ih * iw
        union = (ay2 - ay1) * (ax2 - ax1) + (by2 - by1) * (bx2 - bx1) - inter
        return inter / tf.maximum(union, eps)

    def match(boxes, gt_boxes, gt_valid):
        """(best IoU (B, N), index of the best ground truth (B, N), IoU matrix (B, N, M)); padding never matches."""
        m = iou(boxes, gt_boxes)
        m = tf.where(gt_valid[:, None, :], m, -1.0)
        return tf.reduce_max(m, axis=-1), tf.argmax(m, axis=-1, output_type=tf.int32), m

    def mask_of(indices, keep, n):
        """(B, n) float mask that is 1 at `indices` (B, k) where `keep` (B, k)."""
        return tf.reduce_max(tf.one_hot(indices, n) * tf.cast(keep, tf.float32)[..., None], axis=1)

    def smooth_l1(x, beta):
        ax = tf.abs(x)
        return tf.where(ax < beta, 0.5 * x * x / beta, ax - 0.5 * beta)

    def sample_anchors(pos, neg, u):
        """(B, N) masks of the RPN_BATCH sampled anchors an image, at most half positive."""
        n = pos.shape[-1]
        k_pos = min(int(RPN_BATCH * RPN_POSITIVE_FRACTION), n)
        v, i = tf.math.top_k(tf.where(pos, u, -1.0), k_pos)
        keep_pos = v >= 0.0
        n_pos = tf.reduce_sum(tf.cast(keep_pos, tf.int32), axis=1, keepdims=True)
        k_neg = min(RPN_BATCH, n)
        v2, i2 = tf.math.top_k(tf.where(neg, u, -1.0), k_neg)
        keep_neg = (v2 >= 0.0) & (tf.range(k_neg)[None, :] < RPN_BATCH - n_pos)
        return mask_of(i, keep_pos, n), mask_of(i2, keep_neg, n)

    def roi_align(features, boxes, size):
        """(B, R, size, size, C) float32 features of boxes (B, R, 4) in pixels, each from its FPN level."""
        b, r = boxes.shape[0], boxes.shape[1]
        flat = tf.reshape(boxes, (-1, 4))
        index = tf.repeat(tf.range(b), r)
        y1, x1, y2, x2 = split(flat)
        side = tf.sqrt(tf.maximum((y2 - y1) * (x2 - x1), eps))
        level = tf.floor(CANONICAL_LEVEL + tf.math.log(side / CANONICAL_SIZE) / math.log(2.0))
        level = tf.clip_by_value(level, ROI_LEVELS[0], ROI_LEVELS[-1])
        n = size * SAMPLING_RATIO
        out = 0.0
        for lvl, feature in zip(ROI_LEVELS, features, strict=True):
            stride, cells = float(2**lvl), feature.shape[1]
            # Feature-map coordinates (pixel centres at i + 0.5 -> index i), then the first and last of n
            # samples at bin centres, normalised as crop_and_resize wants (0..1 over 0..cells-1).
            f = (flat / stride) - 0.5
            fy1, fx1, fy2, fx2 = split(f)
            bh, bw = (fy2 - fy1) / n, (fx2 - fx1) / n
            scale = float(max(cells - 1, 1))
            norm = tf.stack([fy1 + bh / 2, fx1 + bw / 2, fy2 - bh / 2, fx2 - bw / 2], axis=-1) / scale
            crop = tf.image.crop_and_resize(tf.cast(feature, tf.float32), norm, index, (n, n))
            out = out + crop * tf.cast(tf.equal(level, float(lvl)), tf.float32)[:, None, None, None]
        if SAMPLING_RATIO > 1:
            out = tf.nn.avg_pool2d(out, SAMPLING_RATIO, SAMPLING_RATIO, "VALID")
        return tf.reshape(out, (b, r, size, size, out.shape[-1]))

    def mask_targets(gt_masks, gt_index, boxes):
        """(B, R, MASK_SIZE, MASK_SIZE) 0/1 targets: the matched ground truth's mask inside each box."""
        b, m, h, w = gt_masks.shape
        r = boxes.shape[1]
        images = tf.reshape(gt_masks, (b * m, h, w, 1))
        index = tf.reshape(gt_index + tf.range(b)[:, None] * m, (-1,))
        y1, x1, y2, x2 = split(tf.reshape(boxes, (-1, 4)))
        bh, bw = (y2 - y1) / MASK_SIZE, (x2 - x1) / MASK_SIZE
        norm = tf.stack([y1 + bh / 2 - 0.5, x1 + bw / 2 - 0.5, y2 - bh / 2 - 0.5, x2 - bw / 2 - 0.5], axis=-1)
        norm = norm / float(image_size - 1)
        crop = tf.image.crop_and_resize(images, norm, index, (MASK_SIZE, MASK_SIZE))
        return tf.reshape(tf.cast(crop >= 0.5, tf.float32), (b, r, MASK_SIZE, MASK_SIZE))

    return dict(
        encode=encode,
        decode=decode,
        clip=clip,
        match=match,
        mask_of=mask_of,
        smooth_l1=smooth_l1,
        sample_anchors=sample_anchors,
        roi_align=roi_align,
        mask_targets=mask_targets,
    )


def make_losses(tf, models, image_size: int, batch_size: int):
    """`losses(images, gt_boxes, gt_classes, gt_masks, seed) -> dict of five float32 scalars` (training mode)."""
    backbone, box_head, mask_head = models
    ops = make_ops(tf, image_size)
    anchors = tf.constant(make_anchors(image_size))
    sizes = level_sizes(image_size)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).tolist()
    b = batch_size

    def proposals(logits, deltas):
        """(B, POST_NMS_TOPK, 4) boxes and (B, POST_NMS_TOPK) validity, no gradient."""
        logits, deltas = tf.stop_gradient(logits), tf.stop_gradient(deltas)
        boxes, scores = [], []
        for start, end in zip(offsets[:-1], offsets[1:], strict=True):
            k = min(PRE_NMS_TOPK, end - start)
            s, i = tf.math.top_k(logits[:, start:end], k)
            d = tf.gather(deltas[:, start:end], i, batch_dims=1)
            a = tf.gather(anchors[start:end], i)
            boxes.append(ops["clip"](ops["decode"](d, a, RPN_BOX_WEIGHTS)))
            scores.append(s)
        boxes, scores = tf.concat(boxes, axis=1), tf.sigmoid(tf.concat(scores, axis=1))
        h, w = boxes[..., 2] - boxes[..., 0], boxes[..., 3] - boxes[..., 1]
        scores = tf.where((h > 1.0) & (w > 1.0), scores, -1.0)  # no empty or sub-pixel proposals
        # One class, boxes in pixels (clip_boxes would clip them to [0, 1]); padded to POST_NMS_TOPK.
        nmsed, _, _, valid = tf.image.combined_non_max_suppression(
            boxes[:, :, None, :],
            scores[:, :, None],
            POST_NMS_TOPK,
            POST_NMS_TOPK,
            iou_threshold=RPN_NMS_IOU,
            score_threshold=0.0,
            clip_boxes=False,
        )
        keep = tf.range(POST_NMS_TOPK)[None, :] < tf.reshape(valid, (-1, 1))
        return nmsed, keep

    def losses(images, gt_boxes, gt_classes, gt_masks, seed):
        gt_valid = gt_classes > 0
        u_anchor = tf.random.stateless_uniform((b, anchors.shape[0]), seed)
        u_roi = tf.random.stateless_uniform((b, POST_NMS_TOPK + MAX_INSTANCES), seed + 1)
        *features, rpn_logits, rpn_deltas = backbone(images, training=True)

        # RPN: anchors matched to ground truth, a sample of them scored.
        best, gt_index, m = ops["match"](anchors[None], gt_boxes, gt_valid)
        pos = best >= RPN_POSITIVE_IOU
        gt_best = tf.reduce_max(m, axis=1, keepdims=True)  # (B, 1, M): each ground truth's best anchors
        low_quality = tf.reduce_any((m >= gt_best) & (gt_best > 0.0) & gt_valid[:, None, :], axis=-1)
        pos = pos | low_quality
        neg = (best < RPN_NEGATIVE_IOU) & ~pos
        pos_mask, neg_mask = ops["sample_anchors"](pos, neg, u_anchor)
        norm = float(RPN_BATCH * b)
        ce = tf.nn.sigmoid_cross_entropy_with_logits(pos_mask, rpn_logits)
        loss_rpn_cls = tf.reduce_sum(ce * (pos_mask + neg_mask)) / norm
        matched = tf.gather(gt_boxes, gt_index, batch_dims=1)
        target = tf.stop_gradient(ops["encode"](matched, anchors[None], RPN_BOX_WEIGHTS))
        loss_rpn_box = tf.reduce_sum(ops["smooth_l1"](rpn_deltas - target, RPN_BOX_BETA) * pos_mask[..., None]) / norm

        # Proposals, with the ground truth added, matched and sampled for the heads.
        props, keep = proposals(rpn_logits, rpn_deltas)
        rois = tf.concat([props, gt_boxes], axis=1)
        roi_valid = tf.concat([keep, gt_valid], axis=1)
        best, gt_index, _ = ops["match"](rois, gt_boxes, gt_valid)
        fg = roi_valid & (best >= ROI_FOREGROUND_IOU)
        bg = roi_valid & (best < ROI_FOREGROUND_IOU)
        n = rois.shape[1]
        v, i = tf.math.top_k(tf.where(fg, u_roi, -1.0), MASK_ROIS)
        fg = ops["mask_of"](i, v >= 0.0, n) > 0.0  # at most MASK_ROIS foreground
        key = tf.where(fg, 2.0 + u_roi, tf.where(bg, 1.0 + u_roi, -1.0))
        key, pick = tf.math.top_k(key, ROI_BATCH)  # foreground first, then background
        sampled = tf.cast(key >= 0.0, tf.float32)
        is_fg = tf.cast(key >= 2.0, tf.float32)
        rois = tf.stop_gradient(tf.gather(rois, pick, batch_dims=1))
        gt_index = tf.gather(gt_index, pick, batch_dims=1)
        classes = tf.gather(gt_classes, gt_index, batch_dims=1) * tf.cast(is_fg, tf.int32)
        box_target = ops["encode"](tf.gather(gt_boxes, gt_index, batch_dims=1), rois, ROI_BOX_WEIGHTS)

        # Box head.
        x = ops["roi_align"](features, rois, ROI_SIZE)
        cls_logits, box_deltas = box_head(tf.reshape(x, (b * ROI_BATCH, *x.shape[2:])), training=True)
        cls_logits = tf.reshape(cls_logits, (b, ROI_BATCH, NUM_CLASSES))
        box_deltas = tf.reshape(box_deltas, (b, ROI_BATCH, NUM_CLASSES, 4))
        count = tf.maximum(tf.reduce_sum(sampled), 1.0)
        ce = tf.nn.sparse_softmax_cross_entropy_with_logits(classes, cls_logits)
        loss_cls = tf.reduce_sum(ce * sampled) / count
        pred = tf.gather(box_deltas, classes, batch_dims=2)
        loss_box = tf.reduce_sum(ops["smooth_l1"](pred - box_target, 1.0) * is_fg[..., None]) / count

        # Mask head on the foreground ROIs (the first MASK_ROIS of the sample).
        mrois = rois[:, :MASK_ROIS]
        x = ops["roi_align"](features, mrois, MASK_ROI_SIZE)
        mask_logits = mask_head(tf.reshape(x, (b * MASK_ROIS, *x.shape[2:])), training=True)
        mask_logits = tf.reshape(mask_logits, (b, MASK_ROIS, MASK_SIZE, MASK_SIZE, NUM_CLASSES))
        mask_logits = tf.gather(mask_logits, classes[:, :MASK_ROIS], axis=4, batch_dims=2)
        mask_target = ops["mask_targets"](gt_masks, gt_index[:, :MASK_ROIS], mrois)
        mask_weight = is_fg[:, :MASK_ROIS]
        bce = tf.nn.sigmoid_cross_entropy_with_logits(mask_target, mask_logits)
        loss_mask = tf.reduce_sum(bce * mask_weight[..., None, None]) / tf.maximum(
            tf.reduce_sum(mask_weight) * MASK_SIZE * MASK_SIZE, 1.0
        )
        return {
            "rpn_cls": loss_rpn_cls,
            "rpn_box": loss_rpn_box,
            "cls": loss_cls,
            "box": loss_box,
            "mask": loss_mask,
        }

    return losses


# ---------------------------------------------------------------------------------------------
# the run


COMPONENTS = ("rpn_cls", "rpn_box", "cls", "box", "mask")


def xla_gaps(tf) -> list[str]:
    """The ops of the train step that XLA cannot compile on this machine (ROI Align's crop_and_resize and
    its gradient, the proposals' NMS), each tried in a tiny jit-compiled function."""
    image = tf.ones((1, 4, 4, 1))
    box = tf.constant([[0.0, 0.0, 1.0, 1.0]])

    def crop(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.image.crop_and_resize(x, box, tf.zeros((1,), tf.int32), (2, 2))
        return tape.gradient(tf.reduce_sum(y), x)

    def nms(x):
        return tf.image.combined_non_max_suppression(
            tf.reshape(box, (1, 1, 1, 4)), tf.reshape(x[0, 0, 0], (1, 1, 1)), 1, 1, clip_boxes=False
        )[0]

    gaps = []
    for name, fn in (("CropAndResize (ROI Align)", crop), ("CombinedNonMaxSuppression (proposals)", nms)):
        try:
            tf.function(fn, jit_compile=True, autograph=False)(image)
        except (tf.errors.InvalidArgumentError, tf.errors.UnimplementedError, tf.errors.NotFoundError):
            gaps.append(name)
    return gaps


def step_pairs(record: common.StepRecord, parts: dict[str, float]) -> list[tuple]:
    """The ResNet-50 workloads' iteration pairs (loss, ips, lr, step_time), then the five loss terms."""
    return common.step_pairs(record) + [(f"train.loss_{k}", parts[k], None, 4) for k in COMPONENTS]


def main(argv=None) -> int:
    args = parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
    import tensorflow as tf
    from tensorflow import keras

    if args.threads:
        tf.config.threading.set_intra_op_parallelism_threads(args.threads)
        tf.config.threading.set_inter_op_parallelism_threads(args.threads)
    if args.xla:
        gaps = xla_gaps(tf)
        if gaps:
            common.reject(
                f"--xla: XLA cannot compile this Mask R-CNN train step on the CPU: TensorFlow {tf.__version__} "
                f"has no XLA kernel for {' or '.join(gaps)}; run without --xla"
            )
    keras.utils.set_random_seed(args.seed)
    pool_np = synthetic_pool(args.batch_size, args.image_size, args.seed)
    logger = common.DLLogger()
    logger.log("PARAMETER", parameters(args, tf.__version__))

    if args.precision == "bf16":
        keras.mixed_precision.set_global_policy("mixed_bfloat16")
    with tf.device("/CPU:0"):
        models = build_models(keras, args.image_size)
        weights = [w for model in models for w in model.trainable_variables]
        velocity = [tf.Variable(tf.zeros_like(w), trainable=False) for w in weights]
        decay = [args.weight_decay if len(w.shape) > 1 else 0.0 for w in weights]  # conv and dense kernels
        pool = [tuple(tf.constant(a) for a in batch) for batch in pool_np]
    losses = make_losses(tf, models, args.image_size, args.batch_size)
    momentum = args.momentum

    # No autograph: the step has no tensor-dependent Python control flow, and converting it costs seconds.
    @tf.function(jit_compile=args.xla, reduce_retracing=True, autograph=False)
    def train_step(images, boxes, classes, masks, lr, seed):
        with tf.GradientTape() as tape:
            parts = losses(images, boxes, classes, masks, seed)
            total = tf.add_n([parts[k] for k in COMPONENTS])
        grads = tape.gradient(total, weights)
        # Momentum SGD as in Detectron: v = m*v + (g + wd*w); w -= lr*v.
        for w, v, g, wd in zip(weights, velocity, grads, decay, strict=True):
            v.assign(momentum * v + (g + wd * w if wd else g))
            w.assign_sub(lr * v)
        return total, parts

    records = []
    for it in range(args.num_iter):
        lr = common.lr_at(it, base_lr=args.lr, warmup=args.warmup_steps, total=args.num_iter)
        batch = pool[it % len(pool)]
        seed = tf.constant([args.seed, it], tf.int32)
        start = time.perf_counter()
        try:
            total, parts = train_step(*batch, tf.constant(lr, tf.float32), seed)
        except tf.errors.InvalidArgumentError as exc:
            if args.xla and it == 0 and "XLA" in str(exc):  # an op the probe did not cover
                common.reject(
                    f"--xla: XLA cannot compile this Mask R-CNN train step on the CPU: "
                    f"{str(exc).splitlines()[0][:300]}; run without --xla"
                )
            raise
        loss = float(total.numpy())
        parts = {k: float(v.numpy()) for k, v in parts.items()}
        seconds = time.perf_counter() - start
        if not math.isfinite(loss):
            raise FloatingPointError(f"training loss is {loss} at iteration {it}: {parts}")
        record = common.StepRecord(iteration=it, epoch=0, seconds=seconds, images=args.batch_size, loss=loss, lr=lr)
        records.append(record)
        if it % args.display_every == 0:
            logger.log((0, it), step_pairs(record, parts))
    summary = common.summarize(records, args.warmup_steps)
    logger.log("Summary:", summary.pairs(args.warmup_steps))
    return 0


if __name__ == "__main__":
    sys.exit(main())
