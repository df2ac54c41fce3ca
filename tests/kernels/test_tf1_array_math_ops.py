"""The ops TF1's array/math wrappers brought (FloorDiv, Rint, the logical ops,
IsNan/IsInf/IsFinite, ClipByValue, ConjugateTranspose, SparseToDense, BroadcastArgs,
ReverseSequence, Unique, EuclideanNorm, Print, StringFormat, PrintV2): kernel checks with
TF's messages, gradients against central differences, and CPU vs GPU kernels."""

import numpy as np
import pytest

import graphops as gp
from graphops.registry import errors
from tests.gpu_compare import compare

R = gp.raw_ops
X = np.arange(-3.0, 3.0, dtype=np.float32).reshape(2, 3)


def test_string_format_and_print_v2_kernels():
    text = R.StringFormat(inputs=[np.arange(24).reshape(6, 4), np.array([b'a"b'], object)],
                          template="{} and {}", placeholder="{}", summarize=2)
    assert text.item() == (b'[[0 1 2 3]\n [4 5 6 7]\n ...\n [16 17 18 19]\n [20 21 22 23]]'
                           b' and ["a\\"b"]')
    floats = R.StringFormat(inputs=[np.float32([0.1, 123456789.0, np.nan]), np.float64(0.1)],
                            template="%s %s")
    assert floats.item() == b"[0.1 123456792 nan] 0.1"
    with pytest.raises(errors.InvalidArgumentError,
                       match="num placeholders in template and num inputs must match: 2 vs. 1"):
        R.StringFormat(inputs=[np.ones(1)], template="%s %s")
    with pytest.raises(errors.InvalidArgumentError, match="Unknown output stream: foo"):
        R.PrintV2(input="a", output_stream="foo")
    with pytest.raises(errors.InvalidArgumentError,
                       match=r"input must be a scalar, but has rank: 1"):
        with gp.Graph().as_default():
            R.PrintV2(input=gp.constant(["a"]))


@pytest.mark.parametrize("indices, message", [
    ([[2], [0]], "indices[1] = [0] is out of order. Many sparse ops require sorted indices."),
    ([[0], [0]], "indices[1] = [0] is repeated"),
    ([[1], [5], [0]], "indices[1] = [5] is out of bounds: need 0 <= index < [3]"),
])
def test_sparse_to_dense_validates_indices(indices, message):
    with pytest.raises(errors.InvalidArgumentError) as info:
        gp.sparse_to_dense(indices, [3], 1.0)
    assert message in info.value.message
    unchecked = gp.sparse_to_dense([[2], [0]], [3], [1.0, 2.0], validate_indices=False)
    np.testing.assert_array_equal(unchecked, [2.0, 0.0, 1.0])


@pytest.mark.parametrize("kwargs, message", [
    (dict(sparse_indices=[[1, 1]], output_shape=[3]),
     "output_shape has incorrect number of elements: 1 should be: 2"),
    (dict(sparse_indices=[[1]], output_shape=[3], sparse_values=[1.0, 2.0]),
     "sparse_values has incorrect shape [2], should be [] or [1]"),
    (dict(sparse_indices=[[1]], output_shape=[3], default_value=[0.0]),
     "default_value should be a scalar."),
    (dict(sparse_indices=[[[1]]], output_shape=[3]),
     "sparse_indices should be a scalar, vector, or matrix, got shape [1,1,1]"),
])
def test_sparse_to_dense_argument_checks(kwargs, message):
    kwargs = {"sparse_values": 1.0, "default_value": 0.0, **kwargs}
    with pytest.raises(errors.InvalidArgumentError) as info:
        R.SparseToDense(**kwargs)
    assert message in info.value.message


# ----------------------------------------------------------------------------- gradients

def _gradient_error(build, inputs):
    g = gp.Graph()
    with g.as_default():
        xs = [gp.placeholder(gp.float64, v.shape) for v in inputs]
        y = build(*xs)
        with gp.Session() as sess:
            y_shape = np.shape(sess.run(y, dict(zip(xs, inputs))))
            return gp.test.compute_gradient_error(xs, [v.shape for v in inputs], y, y_shape,
                                                  x_init_value=inputs)


@pytest.mark.parametrize("build, inputs", [
    (lambda t, lo, hi: R.ClipByValue(t=t, clip_value_min=lo, clip_value_max=hi),
     [np.array([[-2.0, 0.3, 2.0], [0.5, -0.7, 1.9]]), np.array(-1.0), np.array(1.0)]),
    (lambda t, lo, hi: R.ClipByValue(t=t, clip_value_min=lo, clip_value_max=hi),
     [np.array([-2.0, 0.3, 2.0]), np.array([-1.0, 0.0, 0.5]), np.array([1.0, 1.0, 1.5])]),
    (lambda v, d: gp.sparse_to_dense([[0, 1], [1, 0]], [2, 2], v, d),
     [np.array([0.5, 2.0]), np.array(3.0)]),
    (lambda x: gp.Print(x, [x], "grad"), [np.array([1.0, 2.0])]),
    (lambda x: gp.reverse_sequence(x, [2, 3], 1), [np.arange(6.0).reshape(2, 3)]),
    (lambda x: gp.math.reduce_euclidean_norm(x, 1), [np.array([[0.1, 0.5, -1.0],
                                                               [2.0, 0.3, 1.0]])]),
    (lambda x: gp.math.reduce_std(x, 0), [np.array([[0.1, 0.5, -1.0], [2.0, 0.3, 1.0]])]),
    (lambda x: gp.reduce_logsumexp(x, 1), [np.array([[0.1, 0.5, -1.0], [2.0, 0.0, 1.0]])]),
    (lambda x: gp.clip_by_norm(x, 1.0), [np.array([[0.1, 0.5, -1.0], [2.0, 0.0, 1.0]])]),
])
def test_gradients_of_new_ops_and_wrappers(build, inputs):
    assert _gradient_error(build, inputs) < 1e-6


def test_conjugate_transpose_gradient_builds_the_inverse_permutation():
    with gp.Graph().as_default():
        z = gp.placeholder(gp.complex64, [2, 3, 4])
        y = gp.transpose(z, [1, 2, 0], conjugate=True)
        (dz,) = gp.gradients(y, [z])
        assert dz.op.type == "ConjugateTranspose"
        assert dz.op.inputs[1].op.type == "InvertPermutation"
        assert dz.shape.as_list() == [2, 3, 4]


# ----------------------------------------------------------------------------- GPU kernels

GPU_CASES = {
    "FloorDiv_float": ("FloorDiv", {"x": np.float32([[-7.5, 3], [1, 0]]),
                                    "y": np.float32([2, -0.5])}),
    "FloorDiv_int": ("FloorDiv", {"x": np.int64([-7, 7, 5]), "y": np.int64([2, -2, 5])}),
    "LogicalAnd": ("LogicalAnd", {"x": np.array([[True, False]]),
                                  "y": np.array([[True], [False]])}),
    "LogicalOr": ("LogicalOr", {"x": np.array([True, False]), "y": np.array(False)}),
    "LogicalNot": ("LogicalNot", {"x": np.array([True, False])}),
    "Rint": ("Rint", {"x": np.float64([0.5, 1.5, -2.5, 2.4])}),
    "IsNan": ("IsNan", {"x": np.float32([np.nan, np.inf, 1])}),
    "IsInf": ("IsInf", {"x": np.float16([np.nan, -np.inf, 1])}),
    "IsFinite": ("IsFinite", {"x": np.float64([np.nan, np.inf, 1])}),
    "ClipByValue": ("ClipByValue", {"t": np.int32([-5, 0, 5]), "clip_value_min": np.int32(-1),
                                    "clip_value_max": np.int32([1, 1, 2])}),
    "ConjugateTranspose": ("ConjugateTranspose", {
        "x": np.complex64([[1 + 2j, 3j], [4, -1j]]), "perm": np.int32([1, 0])}),
    "SparseToDense": ("SparseToDense", {
        "sparse_indices": np.int64([[0, 1], [2, 0]]), "output_shape": np.int64([3, 2]),
        "sparse_values": np.float32([1.5, -2]), "default_value": np.float32(7)}),
    "BroadcastArgs": ("BroadcastArgs", {"s0": np.int32([2, 1, 3]), "s1": np.int32([4, 1])}),
    "ReverseSequence": ("ReverseSequence", {"input": X, "seq_lengths": np.int64([3, 1])},
                        {"seq_dim": 1}),
    "Unique": ("Unique", {"x": np.int32([5, 1, 5, 0, 1])}),
    "Print": ("Print", {"input": X, "data": [X]}, {"message": "gpu: "}),
    "StringFormat": ("StringFormat", {"inputs": [X, np.int32([1, 2])]},
                     {"template": "%s and %s"}),
    "EuclideanNorm": ("EuclideanNorm", {"input": np.float32([[3, 4], [1, -1]]),
                                        "axis": np.int32([1])}),
    "EuclideanNorm_int": ("EuclideanNorm", {"input": np.int64([[3, 4], [1, -1]]),
                                            "axis": np.int32(0)}, {"keep_dims": True}),
}


@pytest.mark.parametrize("case", sorted(GPU_CASES))
def test_new_kernels_agree_on_cpu_and_gpu(case, gpu):
    op, inputs, *attrs = GPU_CASES[case]
    compare(op, inputs, **(attrs[0] if attrs else {}))
