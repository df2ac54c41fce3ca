"""`scatter_into` (the CPU scatter shared with the reference-variable Scatter* kernels) and
the resource gathers and scatters (ResourceGather, ResourceGatherNd, ResourceScatter*,
ResourceScatterNd*) against slow references written as loops over the indices; TF's
messages, and TF's loop order on a bad index (the rows before it stay updated)."""

import re

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import graphops as gp
from graphops.kernels.ops.gather_scatter import SCATTER_MODES, scatter_into
from graphops.registry import errors

COMBINE = {"update": lambda a, b: b, "add": lambda a, b: a + b, "sub": lambda a, b: a - b,
           "mul": lambda a, b: a * b, "div": lambda a, b: a / b, "min": min, "max": max}


def slow_scatter(target, indices, updates, mode):
    """Row `indices[i]` combined with row i of `updates`, element by element, in order."""
    out = np.array(target, copy=True)
    flat = np.reshape(indices, -1)
    rows = np.broadcast_to(updates, flat.shape + target.shape[1:]) if np.ndim(updates) == 0 \
        else np.reshape(updates, flat.shape + target.shape[1:])
    for i, row in enumerate(flat):
        for position in np.ndindex(target.shape[1:]):
            out[(row,) + position] = COMBINE[mode](out[(row,) + position],
                                                   rows[(i,) + position])
    return out


@settings(max_examples=80, deadline=None)
@given(st.sampled_from(SCATTER_MODES), st.lists(st.integers(0, 4), max_size=6),
       st.sampled_from([(5,), (5, 3)]), st.booleans(), st.integers(0, 99))
def test_scatter_into_matches_the_loop(mode, indices, shape, scalar, seed):
    rng = np.random.default_rng(seed)
    target = rng.uniform(0.5, 2, shape).astype(np.float32)
    indices = np.array(indices, np.int64).reshape(-1)
    updates = np.float32(1.5) if scalar else \
        rng.uniform(0.5, 2, indices.shape + shape[1:]).astype(np.float32)
    want = slow_scatter(target, indices, updates, mode)
    scatter_into(target, indices, updates, mode)
    np.testing.assert_allclose(target, want, rtol=1e-6)


def test_scatter_into_stops_at_a_bad_index_as_tf():
    target = np.zeros((5, 2), np.float32)
    with pytest.raises(errors.InvalidArgumentError, match=r"^indices\[0,1\] = 7 is not in "
                                                          r"\[0, 5\)$"):
        scatter_into(target, np.array([[1, 7, 2]]), np.float32(3), "add")
    np.testing.assert_array_equal(target[:, 0], [0, 3, 0, 0, 0])     # row 1 only


def test_scatter_into_divides_integers_as_cpp_does():
    target = np.array([[-7], [7]], np.int32)
    scatter_into(target, np.array([0, 1]), np.array([[2], [-2]], np.int32), "div")
    np.testing.assert_array_equal(target[:, 0], [-3, -3])


def _run_on_variable(value, build):
    with gp.Graph().as_default():
        var = gp.Variable(value)
        node = build(var)
        with gp.Session() as sess:
            sess.run(gp.global_variables_initializer())
            try:
                result = sess.run(node)
            except errors.OpError as error:
                return error, sess.run(var.value())
            return result, sess.run(var.value())


@pytest.mark.parametrize("mode", SCATTER_MODES)
def test_resource_scatter_ops(mode):
    value = np.arange(1, 11, dtype=np.float32).reshape(5, 2)
    indices, updates = np.int32([[3, 1], [3, 0]]), np.full((2, 2, 2), 2.0, np.float32)
    op = getattr(gp.raw_ops, "ResourceScatter" + mode.capitalize())
    _, got = _run_on_variable(value, lambda v: op(resource=v.handle, indices=indices,
                                                  updates=updates))
    np.testing.assert_array_equal(got, slow_scatter(value, indices, updates, mode))


@pytest.mark.parametrize("updates, message", [
    (np.ones((3, 2), np.float32), r"The shape of indices \(\[2\]\) must be a prefix of the "
                                  r"shape of updates \(\[3,2\]\)"),
    (np.ones((2, 2, 2), np.float32), r"Must have updates.shape = indices.shape \+ "
                                     r"params.shape\[1:\] or updates.shape = \[\], got "
                                     r"updates.shape \[2,2,2\], indices.shape \[2\], "
                                     r"params.shape \[5,2\]"),
    (np.zeros((2, 2), np.float32), "updates must not contain 0")])
def test_resource_scatter_messages(updates, message):
    def build(var):
        fed = gp.placeholder_with_default(updates, shape=None)
        return gp.raw_ops.ResourceScatterDiv(resource=var.handle, indices=np.int32([0, 1]),
                                             updates=fed)
    error, _ = _run_on_variable(np.ones((5, 2), np.float32), build)
    assert isinstance(error, errors.InvalidArgumentError)
    assert any(re.search(message, line) for line in error.message.splitlines())


def test_resource_scatter_nd_ops_and_their_bad_index():
    value = np.zeros((3, 2), np.float32)
    _, got = _run_on_variable(value, lambda v: gp.raw_ops.ResourceScatterNdAdd(
        ref=v.handle, indices=np.int32([[1, 1], [1, 1], [2, 0]]),
        updates=np.float32([1, 2, 5])))
    np.testing.assert_array_equal(got, [[0, 0], [0, 3], [5, 0]])
    error, got = _run_on_variable(value, lambda v: gp.raw_ops.ResourceScatterNdUpdate(
        ref=v.handle, indices=np.int32([[1], [9]]), updates=np.ones((2, 2), np.float32)))
    assert "indices[1] = [9] does not index into shape [3,2]" in error.message
    np.testing.assert_array_equal(got, [[0, 0], [1, 1], [0, 0]])


def test_resource_gathers():
    value = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    got, _ = _run_on_variable(value, lambda v: gp.raw_ops.ResourceGather(
        resource=v.handle, indices=np.int32([[2, 0], [1, 1]]), dtype=gp.float32,
        batch_dims=1))
    np.testing.assert_array_equal(got, [value[0, [2, 0]], value[1, [1, 1]]])
    got, _ = _run_on_variable(value, lambda v: gp.raw_ops.ResourceGatherNd(
        resource=v.handle, indices=np.int32([[1, 2], [0, 0]]), dtype=gp.float32))
    np.testing.assert_array_equal(got, [value[1, 2], value[0, 0]])
    error, _ = _run_on_variable(value, lambda v: gp.raw_ops.ResourceGather(
        resource=v.handle, indices=np.int32([[1, 2]]), dtype=gp.float32))
    assert "indices[0,1] = 2 is not in [0, 2)" in error.message


def test_variable_sparse_read_and_scatter_methods():
    with gp.Graph().as_default():
        var = gp.Variable(np.zeros((4, 2), np.float32))
        rows = var.sparse_read([3, 1])
        assert rows.op.type == "ResourceGather" and rows.op.name == "Gather"
        assert rows.shape.as_list() == [2, 2]
        delta = gp.IndexedSlices(gp.constant(np.ones((2, 2), np.float32)),
                                 gp.constant([1, 1]))
        added = var.scatter_add(delta)
        with gp.Session() as sess:
            sess.run(gp.global_variables_initializer())
            np.testing.assert_array_equal(sess.run(added)[:, 0], [0, 2, 0, 0])
        with pytest.raises(TypeError, match="must be a `tf.IndexedSlices`"):
            var.scatter_sub(np.ones(2))


@pytest.mark.parametrize("op_type, inputs", [
    ("ResourceScatterAdd", {"indices": np.int32([1, 1, 9]), "updates": np.float32(2)}),
    ("ResourceScatterNdSub", {"indices": np.int32([[1, 0], [9, 0]]),
                              "updates": np.float32([2, 3])})])
def test_scatters_of_a_gpu_variable_match_the_cpu(gpu, op_type, inputs):
    """A device variable is updated through a host copy, also up to a bad index."""
    def run(device):
        with gp.Graph().as_default(), gp.device(device):
            name = "ref" if "Nd" in op_type else "resource"
            error, value = _run_on_variable(np.ones((3, 2), np.float32), lambda v: getattr(
                gp.raw_ops, op_type)(**{name: v.handle}, **inputs))
            return error.message.splitlines()[-2], value
    on_gpu, on_cpu = run("/GPU:0"), run("/CPU:0")
    assert on_gpu[0] == on_cpu[0]
    np.testing.assert_array_equal(on_gpu[1], on_cpu[1])
