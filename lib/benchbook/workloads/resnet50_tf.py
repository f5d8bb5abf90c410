"""ResNet-50 v1.5 training on the CPU with TensorFlow 2 (Keras 3 layers, a hand-written SGD step).

Run with the Python of an environment that has tensorflow(-cpu), numpy and scikit-learn (see
requirements/tensorflow.txt); benchbook itself need not be installed there:

    python resnet50_tf.py --mode training_benchmark --batch_size 16 --image_size 64 --threads 2
    python resnet50_tf.py --mode train_and_evaluate --image_size 32 --batch_size 32

Images are NHWC. `--precision bf16` sets Keras' `mixed_bfloat16` policy (bf16 compute, fp32
weights and loss); `--xla` compiles the whole train step with `jit_compile=True`. Each step's time
is taken around the step call and the fetch of its loss value (`.numpy()`), which waits for it.
"""

from __future__ import annotations

import os
import sys

if __package__:
    from . import _common as common
else:  # run as a script: the sibling module is on sys.path
    import _common as common

WORKLOAD = "resnet50_tf"
FRAMEWORK = "tensorflow"


def build_model(keras, num_classes: int, image_size: int):
    """ResNet-50 v1.5 as a Keras functional model: stride 2 on the 3x3 conv of each bottleneck."""
    layers = keras.layers
    he = keras.initializers.VarianceScaling(scale=2.0, mode="fan_in", distribution="truncated_normal")
    inputs = keras.Input((image_size, image_size, 3))
    x = common.keras_resnet50_stages(keras, inputs)[-1]
    x = layers.GlobalAveragePooling2D()(x)
    x = layers.Dense(num_classes, kernel_initializer=he)(x)
    outputs = layers.Activation("linear", dtype="float32")(x)  # logits in fp32 under mixed precision
    return keras.Model(inputs, outputs, name="resnet50_v1_5")


def main(argv=None) -> int:
    args = common.parse_args(FRAMEWORK, argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
    import tensorflow as tf
    from tensorflow import keras

    if args.threads:
        tf.config.threading.set_intra_op_parallelism_threads(args.threads)
        tf.config.threading.set_inter_op_parallelism_threads(args.threads)
    keras.utils.set_random_seed(args.seed)
    logger = common.DLLogger()
    start = logger.log(
        "PARAMETER", common.parameters(args, workload=WORKLOAD, framework=FRAMEWORK, version=tf.__version__)
    )

    if args.precision == "bf16":
        keras.mixed_precision.set_global_policy("mixed_bfloat16")
    with tf.device("/CPU:0"):
        model = build_model(keras, args.num_classes, args.image_size)
        weights = model.trainable_variables
        velocity = [tf.Variable(tf.zeros_like(w), trainable=False) for w in weights]
        decayed = [w for w in weights if len(w.shape) > 1]  # conv and dense kernels
    momentum, wd, smoothing, classes = args.momentum, args.weight_decay, args.label_smoothing, args.num_classes

    @tf.function(jit_compile=args.xla, reduce_retracing=True)
    def train_step(x, y, lr):
        with tf.GradientTape() as tape:
            logits = model(x, training=True)
            target = tf.one_hot(y, classes) * (1.0 - smoothing) + smoothing / classes
            loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(target, logits))
            total = loss + wd * tf.add_n([tf.nn.l2_loss(w) for w in decayed]) if wd else loss
        grads = tape.gradient(total, weights)
        # Momentum SGD as in TF1's MomentumOptimizer (NVIDIA's recipe): v = m*v + g; w -= lr*v.
        for w, v, g in zip(weights, velocity, grads, strict=True):
            v.assign(momentum * v + g)
            w.assign_sub(lr * v)
        return loss

    @tf.function(jit_compile=args.xla, reduce_retracing=True)
    def infer(x):
        return model(x, training=False)

    def put(x, y):
        with tf.device("/CPU:0"):
            return tf.constant(x), tf.constant(y)

    def step(x, y, lr):
        return train_step(x, y, tf.constant(lr, tf.float32)).numpy()

    def predict(x):
        return infer(x).numpy()

    hooks = common.Hooks(put=put, train_step=step, predict=predict, layout="NHWC")
    common.run(args, logger, hooks, start)
    return 0


if __name__ == "__main__":
    sys.exit(main())
