"""The optimizer update ops (Apply*, ResourceApply*, SparseApply*, ResourceSparseApply*)
against the slow float64 references of optimizer_references: every update, dense and
sparse, on resource and reference variables, float32 and float64, repeated indices; and
TF's messages for bad scalars, shapes and indices (where a bad index stops an update, the
rows before it stay updated in the ops whose TF loops do that)."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import graphops as gp
from graphops.registry import errors
from graphops.registry.op_registry import get_op_def
from tests.kernels.optimizer_references import (ATTRS, SCALARS, SLOTS, SPARSE, op_type,
                                                reference, run_update, start_values)

TOLERANCE = {np.float32: 2e-5, np.float64: 1e-12}


def _close(got, want, dtype):
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=TOLERANCE[dtype], atol=TOLERANCE[dtype])


CASES = st.fixed_dictionaries({
    "base": st.sampled_from(sorted(SLOTS)), "attrs": st.integers(0, 1),
    "dtype": st.sampled_from([np.float32, np.float64]), "ref": st.booleans(),
    "shape": st.sampled_from([(5,), (4, 3), (3, 2, 2), (1, 1)]), "seed": st.integers(0, 999)})


@settings(max_examples=60, deadline=None)
@given(CASES)
def test_dense_updates_match_the_reference(case):
    base, dtype = case["base"], case["dtype"]
    rng = np.random.default_rng(case["seed"])
    attrs = ATTRS.get(base, [{}])[case["attrs"] % len(ATTRS.get(base, [{}]))]
    arrays = start_values(base, case["shape"], rng, dtype)
    grad = rng.uniform(-1, 1, case["shape"]).astype(dtype)
    got = run_update(base, arrays, SCALARS[base], grad, attrs, ref=case["ref"])
    _close(got, reference(base, arrays, SCALARS[base], grad, attrs), dtype)


@settings(max_examples=60, deadline=None)
@given(CASES, st.lists(st.integers(0, 10**6), min_size=0, max_size=7))
def test_sparse_updates_match_the_reference_row_by_row(case, picks):
    base = SPARSE[case["seed"] % len(SPARSE)]
    dtype, shape = case["dtype"], case["shape"]
    rng = np.random.default_rng(case["seed"])
    attrs = ATTRS.get(base, [{}])[case["attrs"] % len(ATTRS.get(base, [{}]))]
    arrays = start_values(base, shape, rng, dtype)
    indices = np.array([p % shape[0] for p in picks], np.int32)     # repeats included
    grad = rng.uniform(-1, 1, (len(indices),) + shape[1:]).astype(dtype)
    got = run_update(base, arrays, SCALARS[base], grad, attrs, indices, ref=case["ref"])
    _close(got, reference(base, arrays, SCALARS[base], grad, attrs, indices), dtype)


def test_a_repeated_index_updates_its_row_twice():
    arrays = [np.zeros((3, 1), np.float32), np.zeros((3, 1), np.float32)]
    grad = np.ones((2, 1), np.float32)
    var, accum = run_update("Momentum", arrays, {"lr": 1.0, "momentum": 0.5}, grad, {},
                            np.array([1, 1], np.int64))
    np.testing.assert_array_equal(accum[:, 0], [0, 1.5, 0])      # 1, then 1 * 0.5 + 1
    np.testing.assert_array_equal(var[:, 0], [0, -2.5, 0])


def test_ref_ops_output_the_variable_reference():
    with gp.Graph().as_default():
        var = gp.Variable(np.ones((3, 2), np.float32), use_resource=False)
        accum = gp.Variable(np.zeros((3, 2), np.float32), use_resource=False)
        out = gp.raw_ops.SparseApplyMomentum(
            var=var._ref(), accum=accum._ref(), lr=np.float32(0.5),
            grad=np.ones((1, 2), np.float32), indices=np.int32([2]),
            momentum=np.float32(0.9))
        assert out.dtype.name == "float32_ref" and out.shape.as_list() == [3, 2]
        with gp.Session() as sess:
            sess.run(gp.global_variables_initializer())
            np.testing.assert_array_equal(sess.run(out), [[1, 1], [1, 1], [0.5, 0.5]])


def test_op_defs_follow_tf():
    op = get_op_def("ResourceSparseApplyFtrlV2")
    assert [a.name for a in op.input_arg] == [
        "var", "accum", "linear", "grad", "indices", "lr", "l1", "l2", "l2_shrinkage",
        "lr_power"]
    assert [a.name for a in op.attr] == ["T", "Tindices", "use_locking",
                                         "multiply_linear_by_lr"]
    ref = get_op_def("SparseApplyProximalGradientDescent")
    assert [a.name for a in ref.input_arg] == ["var", "alpha", "l1", "l2", "grad", "indices"]
    assert ref.input_arg[0].is_ref and ref.output_arg[0].is_ref and not ref.is_stateful
    assert get_op_def("ResourceApplyAdadelta").is_stateful


def _error(base, arrays, grad, indices=None, scalars=None, ref=False):
    with pytest.raises(errors.InvalidArgumentError) as info:
        run_update(base, arrays, {**SCALARS[base], **(scalars or {})}, grad, {}, indices,
                   ref=ref, hide_shapes=True)
    return info.value.message


def _grab(base, shape=(5, 2), slot_shape=None):
    rng = np.random.default_rng(1)
    arrays = start_values(base, shape, rng)
    if slot_shape is not None:
        arrays[1] = np.ones(slot_shape, np.float32)
    return arrays


@pytest.mark.parametrize("ref", [False, True])
def test_sparse_messages_as_tf(ref):
    ones = np.ones((2, 2), np.float32)
    message = _error("RMSProp", _grab("RMSProp"), ones, np.int32([0, 7]), ref=ref)
    assert "Index 7 at offset 1 in indices is out of range" in message
    assert "var and grad must match in dimension 1" in _error(
        "Adagrad", _grab("Adagrad"), np.ones((2, 3), np.float32), np.int32([0, 1]), ref=ref)
    assert "grad must be the same size as indices in the first dimension." in _error(
        "Adagrad", _grab("Adagrad"), np.ones((3, 2), np.float32), np.int32([0, 1]), ref=ref)
    assert "lr is not a scalar : [2]" in _error(
        "Momentum", _grab("Momentum"), ones, np.int32([0, 1]),
        {"lr": np.ones(2)}, ref=ref)
    assert "lr is not a positive scalar (or zero if multiply_linear_by_lr is set): []" in \
        _error("Ftrl", _grab("Ftrl"), ones, np.int32([0, 1]), {"lr": -1.0}, ref=ref)
    assert "l1 regularization strength is not a non-negative scalar: []" in _error(
        "ProximalAdagrad", _grab("ProximalAdagrad"), ones, np.int32([0, 1]),
        {"l1": -1.0}, ref=ref)


def test_sparse_messages_about_the_variable_as_tf():
    ones = np.ones((2, 2), np.float32)
    assert "var and accum_grad do not have the same shape[5,2] [4,2]" in _error(
        "Adadelta", _grab("Adadelta", slot_shape=(4, 2)), ones, np.int32([0, 1]))
    assert "var must be at least 1 dimensional" in _error(
        "Momentum", _grab("Momentum", shape=()), np.float32(1), np.int32([0]))


def test_dense_messages_as_tf():
    assert "var and grad do not have the same shape[5,2] [4,2]" in _error(
        "Adadelta", _grab("Adadelta"), np.ones((4, 2), np.float32))
    assert "lr_power is not a scalar[2]" in _error(
        "Ftrl", _grab("Ftrl"), np.ones((5, 2), np.float32), scalars={"lr_power": np.ones(2)})
    assert "alpha is not a scalar: [2]" in _error(
        "ProximalGradientDescent", _grab("ProximalGradientDescent"),
        np.ones((5, 2), np.float32), scalars={"alpha": np.ones(2)})
    assert "lr is not a scalar : [2]" in _error(
        "CenteredRMSProp", _grab("CenteredRMSProp"), np.ones((5, 2), np.float32),
        scalars={"lr": np.ones(2)})


@pytest.mark.parametrize("base, partial", [("Momentum", True), ("Ftrl", True),
                                           ("ProximalGradientDescent", True),
                                           ("RMSProp", False), ("Adagrad", False)])
def test_a_bad_index_leaves_earlier_rows_as_tf_does(base, partial):
    arrays = _grab(base)
    with gp.Graph().as_default():
        variables = [gp.Variable(a) for a in arrays]
        inputs = dict(zip(("var",) + SLOTS[base], [v.handle for v in variables]))
        inputs.update({k: np.float32(v) for k, v in SCALARS[base].items()})
        node = getattr(gp.raw_ops, op_type(base, False, True))(
            **inputs, grad=np.ones((2, 2), np.float32), indices=np.int64([0, -1]))
        with gp.Session() as sess:
            sess.run(gp.global_variables_initializer())
            with pytest.raises(errors.InvalidArgumentError, match="Index -1 at offset 1"):
                sess.run(node)
            changed = not np.array_equal(sess.run(variables[0].value())[0], arrays[0][0])
    assert changed == partial
