"""ResNet-50 v1.5 training on the CPU with MXNet 1.9 Gluon (hybridized).

Run with the Python of an environment that has mxnet 1.9.1, numpy<1.24 and scikit-learn (see
requirements/mxnet.txt); benchbook itself need not be installed there:

    python resnet50_mxnet.py --mode training_benchmark --batch_size 16 --image_size 64 --threads 2
    python resnet50_mxnet.py --mode train_and_evaluate --image_size 32 --batch_size 32

Images are NCHW (oneDNN's layout). `--xla` is rejected (exit status 2): XLA is TensorFlow's.
`--precision bf16` uses MXNet's AMP with bfloat16 when a bf16 convolution can be run and
differentiated on this CPU (oneDNN's bf16 kernels want AVX-512); otherwise the run is rejected
before it starts, with exit status 2. `--threads N` sets OMP_NUM_THREADS before mxnet is imported.
Each step's time is taken around the step and `mx.nd.waitall()` plus the loss's `asnumpy()`.
"""

from __future__ import annotations

import os
import sys

if __package__:
    from . import _common as common
else:  # run as a script: the sibling module is on sys.path
    import _common as common

WORKLOAD = "resnet50_mxnet"
FRAMEWORK = "mxnet"


def bf16_problem(mx) -> str | None:
    """Why a bf16 convolution cannot be trained here (None when it can): a tiny forward and backward."""
    from mxnet.contrib.amp.amp import bfloat16  # numpy has no bfloat16: AMP's stand-in dtype

    try:
        x = mx.nd.amp_cast(mx.nd.ones((1, 3, 8, 8)), dtype=bfloat16)
        w = mx.nd.amp_cast(mx.nd.ones((4, 3, 3, 3)), dtype=bfloat16)
        w.attach_grad()
        with mx.autograd.record():
            y = mx.nd.Convolution(x, w, kernel=(3, 3), pad=(1, 1), num_filter=4, no_bias=True)
        y.backward()
        mx.nd.waitall()
        return None
    except mx.base.MXNetError as e:
        lines = [line for line in str(e).splitlines() if line.strip()]
        return lines[-1] if lines else type(e).__name__


def build_model(mx, num_classes: int):
    """ResNet-50 v1.5 as a Gluon HybridBlock: stride 2 on the 3x3 conv of each bottleneck."""
    nn = mx.gluon.nn

    def bn(zero_gamma=False):
        return nn.BatchNorm(
            momentum=common.BN_MOMENTUM,
            epsilon=common.BN_EPSILON,
            gamma_initializer="zeros" if zero_gamma else "ones",
        )

    class Bottleneck(mx.gluon.HybridBlock):
        def __init__(self, width, stride, project, **kwargs):
            super().__init__(**kwargs)
            out = width * common.EXPANSION
            with self.name_scope():
                self.body = nn.HybridSequential(prefix="")
                self.body.add(nn.Conv2D(width, 1, use_bias=False), bn(), nn.Activation("relu"))
                self.body.add(nn.Conv2D(width, 3, strides=stride, padding=1, use_bias=False), bn())
                self.body.add(nn.Activation("relu"), nn.Conv2D(out, 1, use_bias=False), bn(zero_gamma=True))
                self.shortcut = None
                if project:
                    self.shortcut = nn.HybridSequential(prefix="")
                    self.shortcut.add(nn.Conv2D(out, 1, strides=stride, use_bias=False), bn())

        def hybrid_forward(self, F, x):
            residual = x if self.shortcut is None else self.shortcut(x)
            return F.Activation(self.body(x) + residual, act_type="relu")

    net = nn.HybridSequential(prefix="resnet50_v1_5_")
    with net.name_scope():
        net.add(nn.Conv2D(64, 7, strides=2, padding=3, use_bias=False), bn(), nn.Activation("relu"))
        net.add(nn.MaxPool2D(3, strides=2, padding=1))
        for stage, (blocks, width) in enumerate(zip(common.LAYERS, common.WIDTHS, strict=True)):
            for block in range(blocks):
                stride = 2 if stage > 0 and block == 0 else 1
                net.add(Bottleneck(width, stride, project=block == 0))
        net.add(nn.GlobalAvgPool2D(), nn.Dense(num_classes))
    return net


def main(argv=None) -> int:
    args = common.parse_args(FRAMEWORK, argv)
    if args.threads:
        os.environ["OMP_NUM_THREADS"] = str(args.threads)
    import mxnet as mx
    import numpy as np

    if args.precision == "bf16":
        problem = bf16_problem(mx)
        if problem:
            common.reject(
                f"--precision bf16: MXNet {mx.__version__} cannot train a bfloat16 convolution on this CPU "
                f"({problem}); its oneDNN bf16 kernels need AVX-512. Run with --precision fp32."
            )
        from mxnet.contrib import amp

        amp.init(target_dtype="bfloat16")  # before the model is built: wraps the operators

    mx.random.seed(args.seed)
    np.random.seed(args.seed)
    ctx = mx.cpu()
    logger = common.DLLogger()
    start = logger.log(
        "PARAMETER", common.parameters(args, workload=WORKLOAD, framework=FRAMEWORK, version=mx.__version__)
    )

    net = build_model(mx, args.num_classes)
    net.initialize(mx.init.Xavier(rnd_type="gaussian", factor_type="in", magnitude=2), ctx=ctx)  # He, fan_in
    # Weight decay on conv and dense weights only, as in the TensorFlow script.
    for name, param in net.collect_params().items():
        if not name.endswith("_weight"):
            param.wd_mult = 0.0
    net.hybridize(static_alloc=True, static_shape=True)
    # MXNet's SGD: v = m*v - lr*(g + wd*w); w += v (the same as v = m*v + g; w -= lr*v at a fixed lr).
    trainer = mx.gluon.Trainer(
        net.collect_params(),
        "sgd",
        {"learning_rate": args.lr, "momentum": args.momentum, "wd": args.weight_decay},
        kvstore=None,
    )
    loss_fn = mx.gluon.loss.SoftmaxCrossEntropyLoss(sparse_label=False)
    loss_fn.hybridize(static_alloc=True, static_shape=True)
    classes, smoothing = args.num_classes, args.label_smoothing

    def put(x, y):
        return mx.nd.array(x, ctx=ctx, dtype="float32"), mx.nd.array(y, ctx=ctx, dtype="float32")

    def step(x, y, lr):
        trainer.set_learning_rate(lr)
        target = mx.nd.one_hot(y, classes) * (1.0 - smoothing) + smoothing / classes
        with mx.autograd.record():
            logits = net(x)
            loss = loss_fn(logits.astype("float32"), target)
        loss.backward()
        trainer.step(x.shape[0])
        mx.nd.waitall()
        return float(loss.asnumpy().mean())

    def predict(x):
        return net(x).astype("float32").asnumpy()

    hooks = common.Hooks(put=put, train_step=step, predict=predict, layout="NCHW")
    common.run(args, logger, hooks, start)
    return 0


if __name__ == "__main__":
    sys.exit(main())
