"""ResNet-50 v1.5's shape, which every framework's script builds (blocks per stage, bottleneck widths,
BatchNorm settings), and the Keras builder the TensorFlow scripts share."""

from __future__ import annotations

# ResNet-50 v1.5: blocks per stage and bottleneck widths (the block's output is 4x the width).
LAYERS = (3, 4, 6, 3)
WIDTHS = (64, 128, 256, 512)
EXPANSION = 4
BN_MOMENTUM = 0.9
BN_EPSILON = 1e-5


def keras_resnet50_stages(keras, inputs) -> list:
    """ResNet-50 v1.5 in Keras layers (stride 2 on the 3x3 conv of each bottleneck): the outputs of
    the four stages, C2..C5 at strides 4..32, for the classifier and for the Mask R-CNN backbone.
    `keras` is passed in so that this module imports nothing but numpy."""
    layers = keras.layers
    he = keras.initializers.VarianceScaling(scale=2.0, mode="fan_in", distribution="truncated_normal")

    def conv(x, filters, kernel, stride=1):
        # Symmetric padding as in the reference implementations ('same' would pad more on the right).
        if stride > 1 and kernel > 1:
            x = layers.ZeroPadding2D(kernel // 2)(x)
            padding = "valid"
        else:
            padding = "same"
        return layers.Conv2D(filters, kernel, strides=stride, padding=padding, use_bias=False, kernel_initializer=he)(x)

    def bn(x, zero_gamma=False):
        return layers.BatchNormalization(
            momentum=BN_MOMENTUM, epsilon=BN_EPSILON, gamma_initializer="zeros" if zero_gamma else "ones"
        )(x)

    def bottleneck(x, width, stride, project):
        shortcut = x
        y = layers.ReLU()(bn(conv(x, width, 1)))
        y = layers.ReLU()(bn(conv(y, width, 3, stride)))
        y = bn(conv(y, width * EXPANSION, 1), zero_gamma=True)
        if project:
            shortcut = bn(conv(x, width * EXPANSION, 1, stride))
        return layers.ReLU()(layers.Add()([y, shortcut]))

    x = layers.ReLU()(bn(conv(inputs, 64, 7, 2)))
    x = layers.ZeroPadding2D(1)(x)
    x = layers.MaxPooling2D(3, strides=2)(x)
    stages = []
    for stage, (blocks, width) in enumerate(zip(LAYERS, WIDTHS, strict=True)):
        for block in range(blocks):
            x = bottleneck(x, width, 2 if stage > 0 and block == 0 else 1, project=block == 0)
        stages.append(x)
    return stages
