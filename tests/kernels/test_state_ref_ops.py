"""TF1 reference-variable ops (VariableV2, Assign*, Scatter*, ScatterNd*, IsVariableInitialized,
TemporaryVariable, RefIdentity) and VariableShape: against a NumPy reference, against TF's
tf.compat.v1 graph mode with reference variables where TensorFlow is installed, and on
hostile inputs with TF's error classes and messages."""

import numpy as np
import pytest

import graphops as gp
from graphops.registry import dtypes, errors

_SCATTERS = {"ScatterUpdate": lambda a, b: b, "ScatterAdd": np.add, "ScatterSub": np.subtract,
             "ScatterMul": np.multiply, "ScatterDiv": None, "ScatterMin": np.minimum,
             "ScatterMax": np.maximum}


def _divide(a, b):
    if np.issubdtype(a.dtype, np.integer):      # C++'s truncating division
        return (np.sign(a) * np.sign(b) * (np.abs(a) // np.abs(b))).astype(a.dtype)
    return a / b


def numpy_scatter(op, ref, indices, updates):
    """The slow reference: rows updated one index at a time, in order."""
    out = ref.copy()
    combine = _SCATTERS[op] or _divide
    updates = np.broadcast_to(updates, indices.shape + ref.shape[1:])
    for i, row in enumerate(indices.reshape(-1)):
        out[row] = combine(out[row], updates.reshape((-1,) + ref.shape[1:])[i])
    return out


def numpy_scatter_nd(op, ref, indices, updates):
    out = ref.copy()
    depth = indices.shape[-1]
    flat_updates = updates.reshape((-1,) + ref.shape[depth:])
    for i, index in enumerate(indices.reshape(-1, depth)):
        where = tuple(index)
        if op == "ScatterNdUpdate":
            out[where] = flat_updates[i]
        elif op == "ScatterNdAdd":
            out[where] = out[where] + flat_updates[i]
        else:
            out[where] = out[where] - flat_updates[i]
    return out


def run_ref_op(op, init, validate_shape=True, **inputs):
    """(the op's output, the variable's value after it) in graphops graph mode."""
    g = gp.Graph()
    with g.as_default():
        var = gp.Variable(init, use_resource=False, validate_shape=validate_shape)
        inputs = {k.rstrip("_"): v for k, v in inputs.items()}    # "validate_shape_": the op's
        out = getattr(gp.raw_ops, op)(ref=var, **inputs)
        with gp.Session() as sess:
            sess.run(var.initializer)
            result = sess.run(out)
            return result, sess.run(var)


def tf_run_ref_op(tf, op, init, **inputs):
    """The same in TF's tf.compat.v1 graph mode; returns the value or the raised error."""
    tf1 = tf.compat.v1
    g = tf.Graph()
    with g.as_default():
        var = tf1.Variable(init, use_resource=False)
        fed = {k: tf1.placeholder_with_default(v, [None] * np.ndim(v)) for k, v in inputs.items()}
        out = getattr(tf.raw_ops, op)(ref=var, **fed)
        with tf1.Session(graph=g) as sess:
            sess.run(var.initializer)
            try:
                return sess.run(out)
            except tf.errors.OpError as err:
                return err


def _cases(seed, dtype):
    rng = np.random.default_rng(seed)
    ref = (rng.standard_normal((5, 3)) * 4).astype(dtype)
    indices = rng.integers(0, 5, size=rng.integers(1, 7)).astype(np.int32)
    updates = (rng.standard_normal(indices.shape + (3,)) * 4).astype(dtype)
    if np.issubdtype(dtype, np.integer):
        updates[updates == 0] = 3
    return ref, indices, updates


@pytest.mark.parametrize("op", sorted(_SCATTERS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_scatter_matches_numpy(op, dtype, seed):
    ref, indices, updates = _cases(seed, dtype)
    if op == "ScatterDiv" and dtype is not np.int32:
        updates[np.abs(updates) < 0.5] = 2
    out, stored = run_ref_op(op, ref, indices=indices, updates=updates)
    expected = numpy_scatter(op, ref, indices, updates)
    np.testing.assert_allclose(out, expected, rtol=1e-6)
    np.testing.assert_allclose(stored, expected, rtol=1e-6)


@pytest.mark.parametrize("op", sorted(_SCATTERS))
def test_scatter_scalar_update_and_int64_indices(op):
    ref = np.arange(12, dtype=np.float32).reshape(4, 3) + 1
    indices = np.array([[3, 0], [3, 1]], dtype=np.int64)
    out, _ = run_ref_op(op, ref, indices=indices, updates=np.float32(2.0))
    np.testing.assert_allclose(out, numpy_scatter(op, ref, indices, np.float32(2.0)))


@pytest.mark.parametrize("op", ["ScatterNdUpdate", "ScatterNdAdd", "ScatterNdSub"])
@pytest.mark.parametrize("depth", [1, 2])
def test_scatter_nd_matches_numpy(op, depth):
    rng = np.random.default_rng(depth)
    ref = rng.standard_normal((4, 3, 2)).astype(np.float32)
    indices = np.stack([rng.integers(0, n, size=5) for n in ref.shape[:depth]], -1)
    updates = rng.standard_normal((5,) + ref.shape[depth:]).astype(np.float32)
    if op == "ScatterNdUpdate":       # distinct cells: the winner of duplicates is unordered
        indices = np.unique(indices, axis=0)
        updates = updates[:len(indices)]
    out, _ = run_ref_op(op, ref, indices=indices.astype(np.int32), updates=updates)
    np.testing.assert_allclose(out, numpy_scatter_nd(op, ref, indices, updates), rtol=1e-6)


@pytest.mark.parametrize("op, value", [("Assign", [[5.0, 6.0]]), ("AssignAdd", [[1.0, -1.0]]),
                                       ("AssignSub", [[0.5, 0.5]])])
def test_dense_updates(op, value):
    init = np.array([[1.0, 2.0]], np.float32)
    out, stored = run_ref_op(op, init, value=np.array(value, np.float32))
    expected = {"Assign": np.array(value), "AssignAdd": init + value,
                "AssignSub": init - value}[op]
    np.testing.assert_allclose(out, expected)
    np.testing.assert_allclose(stored, expected)


def test_assign_without_validate_shape_changes_the_shape():
    out, stored = run_ref_op("Assign", np.zeros(2, np.float32), validate_shape=False,
                             value=np.ones((2, 3), np.float32), validate_shape_=False)
    assert out.shape == stored.shape == (2, 3)


# ----------------------------------------------------------------------- TF oracle

@pytest.mark.parametrize("op", sorted(_SCATTERS) + ["ScatterNdUpdate", "ScatterNdAdd",
                                                    "ScatterNdSub"])
def test_scatter_ops_match_tensorflow(op):
    tf = pytest.importorskip("tensorflow")
    ref, indices, updates = _cases(7, np.float32)
    if op.startswith("ScatterNd"):
        indices = np.unique(indices)[:, None]
        updates = updates[:len(indices)]
    if op == "ScatterDiv":
        updates[np.abs(updates) < 0.5] = 2
    ours, _ = run_ref_op(op, ref, indices=indices, updates=updates)
    np.testing.assert_allclose(ours, tf_run_ref_op(tf, op, ref, indices=indices,
                                                   updates=updates), rtol=1e-6)


@pytest.mark.parametrize("op", ["Assign", "AssignAdd", "AssignSub"])
@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_dense_updates_match_tensorflow(op, dtype):
    tf = pytest.importorskip("tensorflow")
    init = np.arange(6).reshape(2, 3).astype(dtype)
    value = (np.arange(6).reshape(2, 3) * 3 - 7).astype(dtype)
    ours, stored = run_ref_op(op, init, value=value)
    theirs = tf_run_ref_op(tf, op, init, value=value)
    np.testing.assert_array_equal(ours, theirs)
    np.testing.assert_array_equal(stored, theirs)


@pytest.mark.parametrize("op, inputs", [
    ("ScatterUpdate", dict(indices=np.array([5], np.int32), updates=np.ones((1, 2), "f"))),
    ("ScatterAdd", dict(indices=np.array([[0], [-1]], np.int32),
                        updates=np.ones((2, 1, 2), "f"))),
    ("ScatterNdUpdate", dict(indices=np.array([[0], [3]], np.int32),
                             updates=np.ones((2, 2), "f"))),
    ("AssignAdd", dict(value=np.ones((2, 3), "f"))),
    ("Assign", dict(value=np.ones((3, 3), "f"))),
])
def test_hostile_inputs_raise_tensorflows_errors(op, inputs):
    tf = pytest.importorskip("tensorflow")
    init = np.zeros((3, 2), np.float32)
    expected = tf_run_ref_op(tf, op, init, **inputs)
    assert isinstance(expected, tf.errors.InvalidArgumentError)
    with pytest.raises(errors.InvalidArgumentError) as caught:
        g = gp.Graph()
        with g.as_default():
            var = gp.Variable(init, use_resource=False)
            out = getattr(gp.raw_ops, op)(
                ref=var, **{k: gp.placeholder_with_default(v, [None] * v.ndim)
                            for k, v in inputs.items()})
            with gp.Session() as sess:
                sess.run(var.initializer)
                sess.run(out)
    assert expected.message.split("\n")[-2 if "\n\t" in expected.message else -1] \
        in caught.value.message


def test_hostile_messages():
    cases = [("ScatterUpdate", dict(indices=np.array([5], np.int32),
                                    updates=np.ones((1, 2), "f")),
              "indices[0] = 5 is not in [0, 3)"),
             ("ScatterNdUpdate", dict(indices=np.array([[0], [3]], np.int32),
                                      updates=np.ones((2, 2), "f")),
              "indices[1] = [3] does not index into shape [3,2]"),
             ("AssignAdd", dict(value=np.ones((2, 3), "f")),
              "Parameters and update must be the same size"),
             ("Assign", dict(value=np.ones((3, 3), "f")),
              "Assign requires shapes of both tensors to match. lhs shape= [3,2] rhs shape= "
              "[3,3]")]
    for op, inputs, message in cases:
        g = gp.Graph()
        with g.as_default():
            var = gp.Variable(np.zeros((3, 2), np.float32), use_resource=False)
            fed = {k: gp.placeholder_with_default(v, [None] * v.ndim) for k, v in inputs.items()}
            out = getattr(gp.raw_ops, op)(ref=var, **fed)
            with gp.Session() as sess:
                sess.run(var.initializer)
                with pytest.raises(errors.InvalidArgumentError, match=None) as caught:
                    sess.run(out)
        assert message in caught.value.message
        assert f"[[{{{{node {out.op.name}}}}}]]" in caught.value.message


def test_uninitialized_read_names_the_variable_and_the_reader():
    g = gp.Graph()
    with g.as_default():
        var = gp.raw_ops.VariableV2(shape=[2], dtype=gp.float32, name="w")
        read = gp.identity(var, name="reader")
        scatter = gp.raw_ops.ScatterAdd(ref=var, indices=[0], updates=[1.0])
        with gp.Session() as sess:
            for fetch, node in ((read, "reader"), (scatter, scatter.op.name), (var, "w")):
                with pytest.raises(errors.FailedPreconditionError) as caught:
                    sess.run(fetch)
                assert "Attempting to use uninitialized value w" in caught.value.message
                assert f"[[{{{{node {node}}}}}]]" in caught.value.message


def test_uninitialized_read_matches_tensorflow():
    tf = pytest.importorskip("tensorflow")
    g = tf.Graph()
    with g.as_default():
        var = tf.raw_ops.VariableV2(shape=[2], dtype=tf.float32, name="w")
        read = tf.identity(var, name="reader")
        with tf.compat.v1.Session(graph=g) as sess:
            with pytest.raises(tf.errors.FailedPreconditionError,
                               match="Attempting to use uninitialized value w"):
                sess.run(read)


def test_scatter_on_a_scalar_variable():
    g = gp.Graph()
    with g.as_default():
        var = gp.Variable(5.0, use_resource=False)
        out = gp.raw_ops.ScatterUpdate(ref=var, indices=[0], updates=[1.0])
        with gp.Session() as sess:
            sess.run(var.initializer)
            with pytest.raises(errors.InvalidArgumentError,
                               match=r"params must be at least 1-D, got shape \[\]"):
                sess.run(out)


# ------------------------------------------------------------------ state and misc ops

def test_variable_persists_across_runs_and_sessions_are_independent():
    g = gp.Graph()
    with g.as_default():
        var = gp.raw_ops.VariableV2(shape=[2], dtype=gp.float32, name="v")
        init = gp.raw_ops.Assign(ref=var, value=[1.0, 2.0])
        bump = gp.raw_ops.AssignAdd(ref=var, value=[1.0, 1.0])
        initialized = gp.raw_ops.IsVariableInitialized(ref=var)
        with gp.Session() as first, gp.Session() as second:
            first.run(init)
            first.run(bump)
            np.testing.assert_array_equal(first.run(bump), [3.0, 4.0])
            assert first.run(initialized) and not second.run(initialized)
            second.run(init)
            np.testing.assert_array_equal(second.run(var), [1.0, 2.0])


def test_shared_name_shares_one_variable():
    g = gp.Graph()
    with g.as_default():
        a = gp.raw_ops.VariableV2(shape=[], dtype=gp.float32, shared_name="s", name="a")
        b = gp.raw_ops.VariableV2(shape=[], dtype=gp.float32, shared_name="s", name="b")
        with gp.Session() as sess:
            sess.run(gp.raw_ops.Assign(ref=a, value=3.0))
            assert sess.run(b) == 3.0


def test_a_fetched_value_never_changes_under_its_holder():
    g = gp.Graph()
    with g.as_default():
        var = gp.Variable([1.0, 2.0], use_resource=False)
        bump = var.assign_add([1.0, 1.0])
        with gp.Session() as sess:
            sess.run(var.initializer)
            before = sess.run(var.value())
            sess.run(bump)
            np.testing.assert_array_equal(before, [1.0, 2.0])
            np.testing.assert_array_equal(sess.run(var), [2.0, 3.0])


def test_temporary_variable_ref_identity_and_destroy():
    g = gp.Graph()
    with g.as_default():
        tmp = gp.raw_ops.TemporaryVariable(shape=[2], dtype=gp.float32, var_name="t")
        same = gp.raw_ops.RefIdentity(input=tmp)
        assigned = gp.raw_ops.Assign(ref=same, value=[4.0, 5.0])
        with gp.control_dependencies([assigned]):
            final = gp.raw_ops.DestroyTemporaryVariable(ref=tmp, var_name="t")
        assert same.dtype is dtypes.float32_ref and final.dtype is gp.float32
        with gp.Session() as sess:
            np.testing.assert_array_equal(sess.run(final), [4.0, 5.0])


def test_variable_shape_of_a_resource_variable():
    g = gp.Graph()
    with g.as_default():
        var = gp.Variable(np.zeros((2, 5), np.float32))
        shape = gp.raw_ops.VariableShape(input=var.handle, out_type=gp.int64)
        with gp.Session() as sess:
            sess.run(var.initializer)
            out = sess.run(shape)
    assert out.dtype == np.int64 and out.tolist() == [2, 5]


def test_ref_ops_refuse_eager_execution_as_tensorflow():
    with pytest.raises(RuntimeError, match="variable_v2 op does not support eager execution. "
                                           "Arg 'ref' is a ref."):
        gp.raw_ops.VariableV2(shape=[2], dtype=gp.float32)
    with pytest.raises(RuntimeError, match="assign op does not support eager execution. Arg "
                                           "'output_ref' is a ref."):
        gp.raw_ops.Assign(ref=np.zeros(2), value=np.zeros(2))


def test_a_plain_tensor_is_no_reference():
    g = gp.Graph()
    with g.as_default():
        with pytest.raises(TypeError, match=r"'Assign' Op requires that input 'ref' be a "
                                            r"mutable tensor \(e.g.: a tf.Variable\)"):
            gp.raw_ops.Assign(ref=gp.constant([1.0]), value=[2.0])


def test_reference_dtypes():
    ref = dtypes.float32_ref
    assert ref.base_dtype is gp.float32 and gp.float32._as_ref is ref and ref._as_ref is ref
    assert gp.as_dtype("float32_ref") is gp.as_dtype(101) is gp.as_dtype("DT_FLOAT_REF") is ref
    assert ref.is_ref and ref._is_ref_dtype and not gp.float32.is_ref
    assert gp.float32.is_compatible_with(ref) and not ref.is_compatible_with(gp.float32)
    assert ref != gp.float32 and ref.as_numpy_dtype is np.float32 and ref.name == "float32_ref"
    assert ref.is_floating and ref.size == 4 and dtypes.int64_ref.enum == 109


class _DeviceBuffer:
    """Stands for a CuPy array: host copies by `get()`, written back by item assignment."""

    def __init__(self, array):
        self.array = array

    def get(self):
        return self.array.copy()

    def __setitem__(self, key, host):
        self.array[key] = host


def test_a_device_buffer_is_scattered_through_a_host_copy_even_when_an_index_fails():
    from graphops.kernels.ops.gather_scatter import on_host, scatter_into

    buffer = _DeviceBuffer(np.zeros((3, 2), np.float32))
    with pytest.raises(errors.InvalidArgumentError, match=r"indices\[1\] = 7 is not in"):
        on_host(np, buffer, lambda p: scatter_into(p, np.array([2, 7]),
                                                   np.ones((2, 2), np.float32), "add"))
    np.testing.assert_array_equal(buffer.array, [[0, 0], [0, 0], [1, 1]])
