"""Keras models of the common CNN families with random weights (no downloads), and TF's
freezing of them: shared by tests/test_tf_models.py and benchmarks/bench_models.py.
Needs TensorFlow."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import tensorflow as tf  # noqa: E402
from tensorflow.python.framework.convert_to_constants import (  # noqa: E402
    convert_variables_to_constants_v2)

keras = tf.keras
L = keras.layers


def small_cnn():
    """A 2-D CNN with a dilated conv (TF rewrites it with SpaceToBatchND/BatchToSpaceND)."""
    i = keras.Input((32, 32, 3))
    x = L.Conv2D(8, 3, padding="same", activation="relu")(i)
    x = L.Conv2D(8, 3, dilation_rate=2, padding="same", activation="relu")(x)
    x = L.MaxPooling2D()(x)
    x = L.Flatten()(x)
    return keras.Model(i, L.Dense(10, activation="softmax")(x))


def cnn3d():
    i = keras.Input((16, 16, 16, 1))
    x = L.Conv3D(4, 3, padding="same", activation="relu")(i)
    x = L.MaxPooling3D()(x)
    x = L.Conv3D(8, 3, padding="valid", activation="relu")(x)
    x = L.AveragePooling3D(2)(x)
    x = L.GlobalAveragePooling3D()(x)
    return keras.Model(i, L.Dense(5, activation="softmax")(x))


def unet():
    """Transposed convs, skip connections, bilinear and nearest-neighbour resizing."""
    i = keras.Input((32, 32, 3))
    c1 = L.Conv2D(8, 3, padding="same", activation="relu")(i)
    c2 = L.Conv2D(16, 3, padding="same", activation="relu")(L.MaxPooling2D()(c1))
    u1 = L.Conv2DTranspose(8, 2, strides=2, padding="same")(c2)
    u2 = L.UpSampling2D(interpolation="bilinear")(L.Concatenate()([u1, c1]))
    u3 = L.Resizing(40, 40, interpolation="nearest")(u2)
    u4 = L.Conv3DTranspose(2, 3, strides=2, padding="same")(L.Reshape((40, 40, 16, 1))(u3))
    return keras.Model(i, L.Conv3D(1, 1, activation="sigmoid")(u4))


def mlp():
    """Dense layers with batch norm and dropout (inference graph: dropout is identity)."""
    i = keras.Input((20,))
    x = L.Activation("relu")(L.BatchNormalization()(L.Dense(32)(i)))
    x = L.Dropout(0.5)(x)
    return keras.Model(i, L.Dense(3, activation="softmax")(x))


def transformer():
    """Multi-head attention (Einsum), layer norm, gelu (Erfc), EinsumDense, global max
    pooling (Max)."""
    inputs = keras.Input((6, 8))
    x = L.MultiHeadAttention(num_heads=2, key_dim=4)(inputs, inputs)
    x = L.LayerNormalization()(x + inputs)
    x = L.Dense(8, activation="gelu")(x)
    x = L.EinsumDense("abc,cd->abd", output_shape=(None, 5), activation="tanh")(x)
    return keras.Model(inputs, L.Dense(3, activation="sigmoid")(L.GlobalMaxPooling1D()(x)))


def _application(name, size):
    return lambda: getattr(keras.applications, name)(input_shape=(size, size, 3), weights=None,
                                                     classifier_activation=None)


MODELS = {
    "small_cnn": (small_cnn, (32, 32, 3)),
    "cnn3d": (cnn3d, (16, 16, 16, 1)),
    "unet": (unet, (32, 32, 3)),
    "mlp": (mlp, (20,)),
    "transformer": (transformer, (6, 8)),
    "mobilenet_v2": (_application("MobileNetV2", 96), (96, 96, 3)),
    "resnet50": (_application("ResNet50", 64), (64, 64, 3)),
    "densenet121": (_application("DenseNet121", 64), (64, 64, 3)),
    "efficientnet_b0": (_application("EfficientNetB0", 64), (64, 64, 3)),
}
def batch_norms(model):
    """The model's batch-normalisation layers, nested ones included."""
    return [layer for layer in model._flatten_layers() if hasattr(layer, "moving_mean")]


def has_batch_norm(model):
    return bool(batch_norms(model))


def build(name, seed=7):
    """Model `name` with seeded random weights and its batch-norm layers calibrated: their
    moving statistics set to those of a batch of standard-normal inputs, so activations keep
    their scale through deep nets (with Keras' initial statistics MobileNetV2's logits shrink
    to 1e-11 and its softmax is uniform, which would make comparing outputs meaningless).
    Returns (model, input shape without the batch)."""
    make, shape = MODELS[name]
    keras.utils.set_random_seed(seed)
    model = make()
    norms = {layer: layer.momentum for layer in batch_norms(model)}
    for layer in norms:
        layer.momentum = 0.0
    model(tf.random.stateless_normal((8,) + shape, seed=(seed, 0)), training=True)
    for layer, momentum in norms.items():
        layer.momentum = momentum
    return model, shape


LARGE = {"resnet50", "densenet121", "efficientnet_b0"}


def freeze(model, shape):
    """The model's inference graph frozen by TF: (GraphDef proto, input tensor name, output
    tensor name, the frozen concrete function)."""
    fn = tf.function(lambda x: model(x, training=False))
    concrete = fn.get_concrete_function(tf.TensorSpec((None,) + shape, tf.float32))
    frozen = convert_variables_to_constants_v2(concrete)
    return frozen.graph.as_graph_def(), frozen.inputs[0].name, frozen.outputs[0].name, frozen


def training_step_graph(model, shape, classes, dtype=tf.float32):
    """A training step of the model as TF writes it: softmax cross-entropy of its output
    against one-hot labels, and the gradients (TF's gradient functions) with respect to every
    trainable weight. The weights are constants of the graph and the step is stateless
    (Keras' `stateless_call`: batch norm's moving statistics and dropout's seed state are
    inputs, not variables to update), so nothing needs freezing. Returns (GraphDef proto,
    input name, label name, output names, the concrete function)."""
    trainable = [v.numpy() for v in model.trainable_variables]
    non_trainable = [v.numpy() for v in model.non_trainable_variables]

    def step(x, labels):
        weights = [tf.constant(w) for w in trainable]
        state = [tf.constant(s) for s in non_trainable]
        with tf.GradientTape() as tape:
            tape.watch(weights)
            y, _ = model.stateless_call(weights, state, x, training=True)
            logits = tf.reshape(y, [tf.shape(y)[0], -1])
            loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(labels, logits))
        return [loss] + tape.gradient(loss, weights)

    concrete = tf.function(step).get_concrete_function(
        tf.TensorSpec((None,) + shape, dtype), tf.TensorSpec((None, classes), dtype))
    return (concrete.graph.as_graph_def(), concrete.inputs[0].name, concrete.inputs[1].name,
            [t.name for t in concrete.outputs], concrete)


def exact_training_step(name, model, classes, x, labels):
    """The training step's outputs computed in float64 by a twin of `model` (model `name`
    with the same weights): the exact reference that settles how accurate a float32 result
    is."""
    policy = keras.config.dtype_policy()
    keras.config.set_dtype_policy("float64")    # the twin's weights and computations
    try:
        twin = MODELS[name][0]()
        twin.set_weights([w.astype("float64") for w in model.get_weights()])
        *_, step = training_step_graph(twin, x.shape[1:], classes, tf.float64)
        return [t.numpy() for t in step(tf.constant(x, tf.float64),
                                         tf.constant(labels, tf.float64))]
    finally:
        keras.config.set_dtype_policy(policy)
