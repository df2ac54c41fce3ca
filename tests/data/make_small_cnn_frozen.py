"""Makes the TF-written graphs that CI runs without TensorFlow (needs TensorFlow and Keras 3).

A small Keras CNN touching the ops TF emits for the common layers: a dilated Conv2D (TF
rewrites it with SpaceToBatchND/BatchToSpaceND), batch normalisation, ReLU6, max and average
pooling, a depthwise conv, a transposed conv, bilinear upsampling, Flatten (Shape,
StridedSlice, Pack, Reshape), Dense and softmax.

- small_cnn_frozen.pb: its inference graph, variables frozen into constants by TF's
  convert_variables_to_constants_v2;
- small_cnn_train_step.pb: a training step as TF's gradient functions write it: the softmax
  cross-entropy loss and its gradients with respect to every weight (weights as constants);
- small_cnn_frozen.npz: an input, labels, TF's outputs for both graphs and the tensor names.

    .venv/bin/python tests/data/make_small_cnn_frozen.py
"""

import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))

from tests.keras_models import L, freeze, keras, tf, training_step_graph  # noqa: E402


def small_cnn():
    inputs = keras.Input((12, 12, 3))
    x = L.Conv2D(6, 3, dilation_rate=2, padding="same")(inputs)
    x = L.ReLU(max_value=6.0)(L.BatchNormalization()(x))
    x = L.MaxPooling2D()(x)
    x = L.DepthwiseConv2D(3, padding="same", activation="relu")(x)
    x = L.Conv2DTranspose(4, 2, strides=2, padding="same")(x)
    x = L.AveragePooling2D(3)(L.UpSampling2D(interpolation="bilinear")(x))
    return keras.Model(inputs, L.Dense(5, activation="softmax")(L.Flatten()(x)))


def main():
    keras.utils.set_random_seed(11)
    model = small_cnn()
    rng = np.random.default_rng(5)
    images = rng.standard_normal((2, 12, 12, 3)).astype(np.float32)
    labels = np.eye(5, dtype=np.float32)[[1, 3]]

    graph_def, input_name, output_name, frozen = freeze(model, (12, 12, 3))
    probs = frozen(tf.constant(images))[0].numpy()
    step_def, step_input, step_labels, step_outputs, step = training_step_graph(
        model, (12, 12, 3), 5)
    step_values = [t.numpy() for t in step(tf.constant(images), tf.constant(labels))]

    for name, proto in (("small_cnn_frozen.pb", graph_def),
                        ("small_cnn_train_step.pb", step_def)):
        with open(os.path.join(HERE, name), "wb") as f:
            f.write(proto.SerializeToString(deterministic=True))
    np.savez(os.path.join(HERE, "small_cnn_frozen.npz"), images=images, labels=labels,
             probs=probs, input_name=input_name, output_name=output_name,
             step_input=step_input, step_labels=step_labels,
             step_outputs=np.array(step_outputs),
             **{f"step_value_{i}": v for i, v in enumerate(step_values)})


if __name__ == "__main__":
    main()
