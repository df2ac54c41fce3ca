"""The resource gathers and scatters against TensorFlow: values (repeated indices, scalar
updates, batch_dims) and the messages of bad indices and shapes, with the variable left as
TF leaves it. Skipped when TensorFlow is not installed."""

import numpy as np
import pytest

import graphops as gp

tf = pytest.importorskip("tensorflow")
tf1 = tf.compat.v1

VALUE = np.arange(1, 25, dtype=np.float32).reshape(4, 3, 2)
UPDATES = np.linspace(0.5, 3, 12, dtype=np.float32).reshape(2, 3, 2)
CASES = [("ResourceScatter" + mode, {"indices": np.int32([3, 3]), "updates": UPDATES})
         for mode in ("Add", "Sub", "Mul", "Div", "Min", "Max", "Update")] + [
    ("ResourceScatterAdd", {"indices": np.int64([[0, 2]]), "updates": np.float32(2.5)}),
    ("ResourceScatterUpdate", {"indices": np.int32([1, 9]), "updates": UPDATES}),
    ("ResourceScatterMul", {"indices": np.int32([0]), "updates": np.ones((2, 3), np.float32)}),
    ("ResourceScatterNdUpdate", {"indices": np.int32([[1, 2], [1, 2]]),
                                 "updates": np.float32([[7, 8], [9, 10]])}),
    ("ResourceScatterNdAdd", {"indices": np.int32([[0], [3], [0]]),
                              "updates": np.ones((3, 3, 2), np.float32)}),
    ("ResourceScatterNdSub", {"indices": np.int32([[2, 1, 0], [7, 0, 0]]),
                              "updates": np.float32([1, 2])}),
    ("ResourceGather", {"indices": np.int32([[3, 0], [0, 0]]), "dtype": "float32"}),
    ("ResourceGather", {"indices": np.int32([[1, 2], [0, 0], [2, 2], [1, 1]]),
                        "dtype": "float32", "batch_dims": 1}),
    ("ResourceGather", {"indices": np.int32([2, 4]), "dtype": "float32"}),
    ("ResourceGatherNd", {"indices": np.int32([[1, 2], [3, 0]]), "dtype": "float32"}),
]


def _run(lib, session, op_type, inputs):
    with lib.Graph().as_default():
        var = lib.Variable(VALUE, use_resource=True) if lib is gp else \
            tf1.Variable(VALUE, use_resource=True)
        kwargs = {k: (lib.placeholder_with_default(v, shape=None)
                      if isinstance(v, np.ndarray) and k != "indices" else v)
                  for k, v in inputs.items()}
        name = "ref" if "Nd" in op_type and "Gather" not in op_type else "resource"
        node = getattr(lib.raw_ops, op_type)(**{name: var.handle}, **kwargs)
        with session() as sess:
            sess.run(var.initializer)
            try:
                result = sess.run(node)
            except Exception as error:  # noqa: BLE001  (both libraries' OpErrors)
                lines = [line for line in error.message.splitlines()
                         if line.strip() and "[[" not in line]
                result = (type(error).__name__, lines[-1].split(", node name")[0])
            return result, sess.run(var.read_value() if lib is not gp else var.value())


@pytest.mark.parametrize("op_type, inputs", CASES)
def test_resource_gathers_and_scatters_match_tensorflow(op_type, inputs):
    got, got_var = _run(gp, gp.Session, op_type, inputs)
    want, want_var = _run(tf1, tf1.Session, op_type, inputs)
    if isinstance(want, tuple):
        assert got == want
    elif want is not None:
        np.testing.assert_allclose(got, want, rtol=1e-6)
    np.testing.assert_allclose(got_var, want_var, rtol=1e-6)
