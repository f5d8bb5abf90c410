"""ResNet-50 v1.5 training on the CPU with TensorFlow 2 (Keras 3 layers, a hand-written SGD step).

Run with the Python of an environment that has tensorflow(-cpu), numpy and scikit-learn (see
requirements/tensorflow.txt); benchbook itself need not be installed there:

    python resnet50_tf.py --mode training_benchmark --batch_size 16 --image_size 64 --threads 2
    python resnet50_tf.py --mode train_and_evaluate --image_size 32 --batch_size 32

Images are NHWC. `--precision bf16` sets Keras' `mixed_bfloat16` policy (bf16 compute, fp32
weights and loss); `--xla` compiles the whole train step with `jit_compile=True`. Each step's time
is taken around the step call and the fetch of its loss value (`.numpy()`), which waits for it.

Under MPI with more than one rank (`mpirun -np 2 python resnet50_tf.py ...`; mpi4py is imported
only then) training is data-parallel, as with Horovod: rank 0's initial weights are broadcast,
each rank computes the gradients of its own shard of the global batch with tf.GradientTape,
the gradients (and the loss) are summed across ranks with one MPI Allreduce of a flat float32
buffer per step and divided by the number of ranks, and every rank applies the same momentum SGD
update, so all ranks hold the same weights (checked before each evaluation and at the end, when
BatchNorm's moving statistics are averaged). Step time includes the Allreduce; rank 0 logs.
`--save_weights FILE` writes the variables at the end (every rank's when FILE has `{rank}`).
`--mllog FILE` (train_and_evaluate) also writes MLPerf's MLLOG records there, through mlperf-logging
(`_common_mllog`): init before TensorFlow is imported, run_start before the data is read.
"""

from __future__ import annotations

import os
import sys

import numpy as np

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
    size = common.launched_size()  # from the launcher's environment: no MPI import for one process
    world = common.connect() if size is None else None  # a launcher that does not say: ask MPI
    args = common.parse_args(FRAMEWORK, argv, processes=world.size if world else size)
    world = world or common.connect(size)
    with world.guard():
        return train(args, world)


def flatten(arrays) -> np.ndarray:
    """float32 arrays (or variables) as one flat float32 buffer, in order."""
    return np.concatenate([np.asarray(a.numpy() if hasattr(a, "numpy") else a, np.float32).ravel() for a in arrays])


def assign_flat(variables, flat: np.ndarray) -> None:
    """The inverse of `flatten`: each variable gets its slice of `flat`, in order."""
    offset = 0
    for v in variables:
        n = int(np.prod(v.shape))
        v.assign(flat[offset : offset + n].reshape(v.shape).astype(v.dtype))
        offset += n
    if offset != flat.size:
        raise ValueError(f"{flat.size} values for variables of {offset}")


def train(args, world: common.World) -> int:
    mlperf = common.MLPerfLog(args.mllog, enabled=world.rank == 0)  # exits 2 first if it cannot write MLLOG
    mlperf.init(args, world.size)  # initialisation: importing TensorFlow, building the model
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
    import tensorflow as tf
    from tensorflow import keras

    if args.threads:
        tf.config.threading.set_intra_op_parallelism_threads(args.threads)
        tf.config.threading.set_inter_op_parallelism_threads(args.threads)
    keras.utils.set_random_seed(args.seed)
    logger = common.DLLogger(enabled=world.rank == 0)  # rank 0 speaks for the job, as NGC's scripts do
    start = logger.log(
        "PARAMETER",
        common.parameters(
            args, workload=WORKLOAD, framework=FRAMEWORK, version=tf.__version__, processes=world.size
        ),
    )

    if args.precision == "bf16":
        keras.mixed_precision.set_global_policy("mixed_bfloat16")
    with tf.device("/CPU:0"):
        model = build_model(keras, args.num_classes, args.image_size)
        weights = model.trainable_variables
        state = model.non_trainable_variables  # BatchNorm moving means and variances
        if world.size > 1:  # every rank starts from rank 0's initial model
            assign_flat(model.weights, world.bcast_array(flatten(model.weights)))
        velocity = [tf.Variable(tf.zeros_like(w), trainable=False) for w in weights]
        decayed = [w for w in weights if len(w.shape) > 1]  # conv and dense kernels
    momentum, wd, smoothing, classes = args.momentum, args.weight_decay, args.label_smoothing, args.num_classes

    def loss_and_gradients(x, y):
        with tf.GradientTape() as tape:
            logits = model(x, training=True)
            target = tf.one_hot(y, classes) * (1.0 - smoothing) + smoothing / classes
            loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(target, logits))
            total = loss + wd * tf.add_n([tf.nn.l2_loss(w) for w in decayed]) if wd else loss
        return loss, tape.gradient(total, weights)

    def apply(grads, lr):
        # Momentum SGD as in TF1's MomentumOptimizer (NVIDIA's recipe): v = m*v + g; w -= lr*v.
        for w, v, g in zip(weights, velocity, grads, strict=True):
            v.assign(momentum * v + g)
            w.assign_sub(lr * v)

    @tf.function(jit_compile=args.xla, reduce_retracing=True)
    def train_step(x, y, lr):
        loss, grads = loss_and_gradients(x, y)
        apply(grads, lr)
        return loss

    # Data parallel: this rank's gradients and loss in one flat float32 buffer, summed across ranks
    # with one Allreduce per step, divided by the ranks, and applied the same way on every rank
    # with TF1 MomentumOptimizer's own fused kernel (ApplyMomentum: the same v = m*v + g; w -= lr*v,
    # in one pass over memory instead of four; it matters when every step reads 100 MB of gradients).
    sizes = [int(np.prod(w.shape)) for w in weights]

    @tf.function(jit_compile=args.xla, reduce_retracing=True)
    def local_gradients(x, y):
        loss, grads = loss_and_gradients(x, y)
        flat = [tf.reshape(tf.cast(g, tf.float32), [-1]) for g in grads]
        return tf.concat([*flat, tf.reshape(tf.cast(loss, tf.float32), [1])], 0)

    @tf.function(jit_compile=args.xla, reduce_retracing=True)
    def apply_flat(flat, lr):
        m = tf.constant(momentum, tf.float32)
        for g, w, v in zip(tf.split(flat[:-1], sizes), weights, velocity, strict=True):
            g = tf.reshape(g, w.shape)
            tf.raw_ops.ResourceApplyMomentum(var=w.handle, accum=v.handle, lr=lr, grad=g, momentum=m)

    @tf.function(jit_compile=args.xla, reduce_retracing=True)
    def infer(x):
        return model(x, training=False)

    def put(x, y):
        with tf.device("/CPU:0"):
            return tf.constant(x), tf.constant(y)

    def as_tensor(array):
        if array.flags.c_contiguous and array.ctypes.data % common.ALIGN == 0:
            return tf.experimental.dlpack.from_dlpack(array.__dlpack__())  # shared, not copied
        return tf.constant(array)  # a copy: 0.1 s per 100 MB

    def step(x, y, lr):
        lr = tf.constant(lr, tf.float32)
        if world.size == 1:
            return train_step(x, y, lr).numpy()
        mean = world.allreduce_sum(local_gradients(x, y).numpy())
        mean /= np.float32(world.size)
        apply_flat(as_tensor(mean), lr)
        return float(mean[-1])  # the loss averaged over the ranks' shards

    def sync():
        # BatchNorm's moving statistics are updated from each rank's own shard; their average is
        # what the same updates averaged at every step would give (they are linear in the batch
        # statistics), so averaging them here keeps the ranks one model for evaluation and saving.
        if state:
            assign_flat(state, world.allreduce_sum(flatten(state)) / np.float32(world.size))
        world.check_same([v.numpy() for v in (*model.weights, *velocity)])

    def predict(x):
        return infer(x).numpy()

    hooks = common.Hooks(
        put=put, train_step=step, predict=predict, layout="NHWC", sync=sync if world.size > 1 else None
    )
    common.run(args, logger, hooks, start, world, mlperf)
    if args.save_weights and (world.rank == 0 or "{rank}" in args.save_weights):
        save(args.save_weights.replace("{rank}", str(world.rank)), model.weights, velocity)
    return 0


def save(path: str, variables, velocity) -> None:
    """The model's variables (`NNN.<path>`, in model.weights order) and the momentum of the trainable
    ones (`momentum.NNN`), uncompressed .npz."""
    arrays = {f"{i:03d}.{v.path.replace('/', '.')}": v.numpy() for i, v in enumerate(variables)}
    arrays.update({f"momentum.{i:03d}": v.numpy() for i, v in enumerate(velocity)})
    np.savez(path, **arrays)


if __name__ == "__main__":
    sys.exit(main())
