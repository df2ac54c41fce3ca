"""Every optimizer update op against TensorFlow: the same variables, slots, scalars and
gradients (repeated indices in the sparse forms), three steps, on resource and reference
variables; equal within 1e-6 (float32; TF's vectorised reciprocal square roots differ in
the last bit) and 1e-12 (float64). Skipped when TensorFlow is not installed."""

import numpy as np
import pytest

from tests.kernels.optimizer_references import (ATTRS, SCALARS, SLOTS, SPARSE, op_type,
                                                run_update, start_values)

tf = pytest.importorskip("tensorflow")
tf1 = tf.compat.v1

CASES = [(base, attrs, sparse) for base in SLOTS for attrs in ATTRS.get(base, [{}])
         for sparse in ((False, True) if base in SPARSE else (False,))]


def _tf_update(base, arrays, scalars, grad, attrs, indices, ref, steps):
    graph = tf.Graph()
    with graph.as_default():
        variables = [tf1.Variable(a, use_resource=not ref) for a in arrays]
        handles = [v._ref() if ref else v.handle for v in variables]
        inputs = dict(zip(("var",) + SLOTS[base], handles))
        inputs.update({k: np.asarray(v, arrays[0].dtype) for k, v in scalars.items()})
        grad_name = "delta" if base.endswith("GradientDescent") and indices is None else "grad"
        inputs[grad_name] = grad
        if indices is not None:
            inputs["indices"] = indices
        node = getattr(tf.raw_ops, op_type(base, ref, indices is not None))(**inputs, **attrs)
        with tf1.Session(graph=graph) as sess:
            sess.run(tf1.global_variables_initializer())
            for _ in range(steps):
                sess.run(node)
            return sess.run([v.read_value() for v in variables])


@pytest.mark.parametrize("dtype, tolerance", [(np.float32, 1e-6), (np.float64, 1e-12)])
@pytest.mark.parametrize("ref", [False, True])
@pytest.mark.parametrize("base, attrs, sparse", CASES)
def test_update_ops_match_tensorflow(base, attrs, sparse, ref, dtype, tolerance):
    rng = np.random.default_rng(len(base) + 7 * sparse)
    shape = (6, 3)
    arrays = start_values(base, shape, rng, dtype)
    indices = np.int32([1, 3, 1, 5, 1]) if sparse else None
    grad = rng.uniform(-1, 1, (5, 3) if sparse else shape).astype(dtype)
    got = run_update(base, arrays, SCALARS[base], grad, attrs, indices, ref=ref, steps=3)
    want = _tf_update(base, arrays, SCALARS[base], grad, attrs, indices, ref, 3)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=tolerance, atol=tolerance)


@pytest.mark.parametrize("base", SPARSE)
def test_one_value_rows_match_tensorflow(base):
    """Rows of one value, where TF's sparse loops take their scalar path."""
    rng = np.random.default_rng(3)
    arrays = start_values(base, (5,), rng)
    grad, indices = rng.uniform(-1, 1, 4).astype(np.float32), np.int64([4, 0, 4, 2])
    got = run_update(base, arrays, SCALARS[base], grad, {}, indices, steps=2)
    want = _tf_update(base, arrays, SCALARS[base], grad, {}, indices, False, 2)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6)
