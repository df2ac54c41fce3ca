"""Validation of the array plumbing ops with TF 2.21's messages: the kernels' run-time
errors, the memory bounds on outputs sized by inputs, and the shape functions (static shapes
with partially known inputs, build-time errors). test_indexing_tf_oracle.py checks these
tables against TensorFlow itself.
"""

import numpy as np
import pytest

import graphops as gp
from graphops.registry import errors
from graphops.registry.memory import get_memory_budget, set_memory_budget
from tests.op_runners import P, build, invalid, raises
from tests.kernels.test_indexing_ops import f32, i32


# ----------------------------------------------------------------------------- errors

ERROR_CASES = [   # (op, kwargs, error class, TF 2.21's kernel message)
    ("GatherV2", dict(params=np.arange(5.), indices=i32(0, 7), axis=np.int32(0)),
     errors.InvalidArgumentError, "indices[1] = 7 is not in [0, 5)"),
    ("GatherV2", dict(params=f32(2, 3), indices=np.array([[0, 1], [1, 7]]), axis=np.int32(1),
                      batch_dims=1),
     errors.InvalidArgumentError, "indices[1,1] = 7 is not in [0, 3)"),
    ("GatherV2", dict(params=f32(3, 4), indices=i32(0), axis=np.int32(2)),
     errors.InvalidArgumentError, "Shape must be at least rank 3 but is rank 2"),
    ("GatherV2", dict(params=f32(3, 4), indices=i32(0), axis=i32(0, 1)),
     errors.InvalidArgumentError, "axis must be scalar"),
    ("GatherV2", dict(params=f32(3, 4), indices=i32(0), axis=np.int32(1), batch_dims=2),
     errors.InvalidArgumentError, "Expected batch_dims in the range [-1, 1], but got 2"),
    ("GatherV2", dict(params=f32(3, 4), indices=np.zeros([3, 1], np.int32), axis=np.int32(0),
                      batch_dims=1),
     errors.InvalidArgumentError, "batch_dims (1) must be less than or equal to axis (0)."),
    ("GatherV2", dict(params=f32(3, 4), indices=np.zeros([2, 1], np.int32), axis=np.int32(1),
                      batch_dims=1),
     errors.InvalidArgumentError, "params.shape[0]: 3 should be equal to indices.shape[0]: 2"),
    ("GatherV2", dict(params=np.float32(1), indices=i32(0), axis=np.int32(0)),
     errors.InvalidArgumentError, "params must be at least 1 dimensional"),
    ("Gather", dict(params=f32(3, 4), indices=i32(0, 3)),
     errors.InvalidArgumentError, "indices[1] = 3 is not in [0, 3)"),
    ("GatherNd", dict(params=f32(3, 4), indices=np.array([[0, 1], [3, 0]], np.int32)),
     errors.InvalidArgumentError,
     "indices[1] = [3, 0] does not index into param shape [3,4], node name: "),
    ("GatherNd", dict(params=f32(3, 4), indices=np.array([[0, 1, 1]], np.int32)),
     errors.InvalidArgumentError,
     "index innermost dimension length must be <= params rank; saw: 3 vs. 2"),
    ("GatherNd", dict(params=f32(3, 4), indices=np.int32(0)),
     errors.InvalidArgumentError, "indices must be at least a vector"),
    ("ScatterNd", dict(indices=np.array([[5]], np.int32), updates=np.ones([1], np.float32),
                       shape=i32(4)),
     errors.InvalidArgumentError, "indices[0] = [5] does not index into shape [4]"),
    ("ScatterNd", dict(indices=np.array([[1]], np.int32), updates=np.ones([2], np.float32),
                       shape=i32(4)),
     errors.InvalidArgumentError, "Dimensions [0,1) of indices[shape=[1,1]] must match "
                                  "dimensions [0,1) of updates[shape=[2]]"),
    ("ScatterNd", dict(indices=np.array([[1]], np.int32), updates=np.ones([1], np.float32),
                       shape=i32(-4)),
     errors.InvalidArgumentError, "Dimension -4 must be >= 0"),
    ("ScatterNd", dict(indices=np.array([[1, 1, 1]], np.int32), updates=np.ones([1], np.float32),
                       shape=i32(4, 4)),
     errors.InvalidArgumentError, "Dimensions [3,2) of input[shape=[4,4]] must match "
                                  "dimensions [1,1) of updates[shape=[1]]"),
    ("ScatterNd", dict(indices=np.int32(1), updates=np.ones([1], np.float32), shape=i32(4)),
     errors.InvalidArgumentError, "Indices shape must have rank at least one. Found:[]"),
    ("ScatterNd", dict(indices=np.array([[1]], np.int32), updates=np.ones([1, 0], np.float32),
                       shape=i32(4, 0)),
     errors.InvalidArgumentError, "Indices and updates specified for empty output shape"),
    ("UnsortedSegmentSum", dict(data=np.ones(3, np.float32), segment_ids=i32(0, 1, 5),
                                num_segments=np.int32(3)),
     errors.InvalidArgumentError, "segment_ids[2] = 5 is out of range [0, 3)"),
    ("UnsortedSegmentSum", dict(data=np.ones(3, np.float32), segment_ids=i32(0, 1),
                                num_segments=np.int32(3)),
     errors.InvalidArgumentError,
     "data.shape = [3] does not start with segment_ids.shape = [2]"),
    ("UnsortedSegmentSum", dict(data=np.ones(3, np.float32), segment_ids=i32(0, 1, 1),
                                num_segments=np.int32(-3)),
     errors.InvalidArgumentError, "Input num_segments == -3 must not be negative."),
    ("Split", dict(axis=np.int32(1), value=f32(3, 4), num_split=3),
     errors.InvalidArgumentError, "Number of ways to split should evenly divide the split "
                                  "dimension, but got split_dim 1 (size = 4) and num_split 3"),
    ("Split", dict(axis=np.int32(-3), value=f32(3, 4), num_split=2),
     errors.InvalidArgumentError, "-input rank(-2) <= split_dim < input rank (2), but got -3"),
    ("Split", dict(axis=i32(0, 1), value=f32(3, 4), num_split=2),
     errors.InvalidArgumentError, "split_dim must be a scalar but has rank 1"),
    ("SplitV", dict(value=f32(3, 4), size_splits=i32(1, 1), axis=np.int32(1), num_split=2),
     errors.InvalidArgumentError, "Determined shape must either match input shape along "
                                  "split_dim exactly if fully specified, or be less than the "
                                  "size of the input along split_dim if not fully specified.  "
                                  "Got: 2"),
    ("SplitV", dict(value=f32(3, 4), size_splits=i32(-1, -1), axis=np.int32(1), num_split=2),
     errors.InvalidArgumentError, "There can only be one -1 in the input."),
    ("SplitV", dict(value=f32(3, 4), size_splits=i32(1, 1, 2), axis=np.int32(1), num_split=2),
     errors.InvalidArgumentError, "size of the split_tensor must be 1-D and have the same "
                                  "elements as outputs got 1 -D and 3 elements"),
    ("SplitV", dict(value=f32(3, 4), size_splits=i32(-2, 6), axis=np.int32(1), num_split=2),
     errors.InvalidArgumentError, "Split size at index 0 must be >= 0. Got: -2"),
    ("Unpack", dict(value=f32(3, 4), num=2, axis=0),
     errors.InvalidArgumentError, "Input shape axis 0 must equal 2, got shape [3,4]"),
    ("Unpack", dict(value=f32(3, 4), num=3, axis=-3),
     errors.InvalidArgumentError, "axis = -3 not in [-2, 2)"),
    ("Select", dict(condition=np.array([True, False]), x=f32(3, 4), y=f32(3, 4)),
     errors.InvalidArgumentError,
     "Number of batches of 'then' must match size of 'cond', but saw: 3 vs. 2"),
    ("Select", dict(condition=np.array([True, False, True]), x=f32(3, 4), y=f32(2, 4)),
     errors.InvalidArgumentError,
     "'then' and 'else' must have the same size.  but received: [3,4] vs. [2,4]"),
    ("Select", dict(condition=np.array([True]), x=np.float32(1), y=np.float32(2)),
     errors.InvalidArgumentError, "'then' must be at least a vector, but saw shape: []"),
    ("SelectV2", dict(condition=np.ones([2], bool), t=f32(3, 4), e=f32(3, 4)),
     errors.InvalidArgumentError,
     "condition [2], then [3,4], and else [3,4] must be broadcastable"),
    ("Where", dict(condition=np.float32(3)),
     errors.InvalidArgumentError, "WhereOp : Unhandled input dimensions: 0"),
    ("Where", dict(condition=np.zeros([1] * 9, bool)),
     errors.InvalidArgumentError, "WhereOp : Unhandled input dimensions: 9"),
    ("OneHot", dict(indices=i32(1), depth=np.int32(-1), on_value=np.float32(1),
                    off_value=np.float32(0)),
     errors.InvalidArgumentError, "depth must be non-negative, got: -1"),
    ("OneHot", dict(indices=i32(1), depth=np.int32(3), on_value=np.float32(1),
                    off_value=np.float32(0), axis=2),
     errors.InvalidArgumentError,
     "Expected axis to be -1 or between [0, 2).  But received: 2"),
    ("OneHot", dict(indices=i32(1), depth=np.int32(3), on_value=np.float32([1]),
                    off_value=np.float32(0)),
     errors.InvalidArgumentError, "on_value must be a scalar, but got: [1]"),
    ("Reverse", dict(tensor=f32(3, 4), dims=np.array([True])),
     errors.InvalidArgumentError, "'dims' must have the same number of values as 'input' has "
                                  "dimensions. 'input' has 2'dims' has 1 values"),
    ("Reverse", dict(tensor=np.zeros([1] * 9, np.float32), dims=np.zeros([9], bool)),
     errors.UnimplementedError, "reverse is not implemented for tensors of rank > 8."),
    ("ReverseV2", dict(tensor=f32(3, 4), axis=i32(2)),
     errors.InvalidArgumentError, "'axis'[0] = 2 is out of valid range [0, 1"),
    ("ReverseV2", dict(tensor=f32(3, 4), axis=i32(1, -1)),
     errors.InvalidArgumentError, "axis 1 specified more than once."),
    ("BroadcastTo", dict(input=f32(3, 4), shape=i32(3, 3)),
     errors.InvalidArgumentError, "Incompatible shapes: [3,4] vs. [3,3]"),
    ("BroadcastTo", dict(input=f32(3, 4), shape=i32(4)),
     errors.InvalidArgumentError,
     "Rank of input (2) must be no greater than rank of output shape (1)."),
    ("BroadcastTo", dict(input=f32(3, 4), shape=i32(-1, 4)),
     errors.InvalidArgumentError, "Dimension -1 must be >= 0"),
    ("BroadcastTo", dict(input=f32(2), shape=i32(0)),
     errors.InvalidArgumentError, "Incompatible shapes: [2] vs. [0]"),
    ("BroadcastTo", dict(input=f32(3), shape=i32(1)),
     errors.InvalidArgumentError, "Unable to broadcast tensor of shape [3] to tensor of shape [1]"),
    ("Cumsum", dict(x=f32(3, 4), axis=np.int32(2)),
     errors.InvalidArgumentError, "ScanOp: Expected scan axis in the range [-2, 2), but got 2"),
    ("Cumsum", dict(x=f32(3, 4), axis=np.int64(-3)),
     errors.InvalidArgumentError, "ScanOp: Expected scan axis in the range [-2, 2), but got -1"),
    ("Cumsum", dict(x=f32(3, 4), axis=i32(1)),
     errors.InvalidArgumentError, "ScanOp: axis must be a scalar, not [1]"),
]


@pytest.mark.parametrize("op, kwargs, error, message", ERROR_CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(ERROR_CASES)])
def test_kernel_errors(run, op, kwargs, error, message):
    with raises(error, message):
        run(op, **kwargs)


def test_huge_outputs_are_refused_before_allocation():
    old = get_memory_budget()
    set_memory_budget(2**20)
    try:
        with pytest.raises(errors.ResourceExhaustedError):
            gp.raw_ops.OneHot(indices=i32(1, 2), depth=np.int32(2**31 - 1),
                              on_value=np.float32(1), off_value=np.float32(0))
        with pytest.raises(errors.ResourceExhaustedError):
            gp.raw_ops.BroadcastTo(input=np.float32(1), shape=np.array([2**20, 2**20]))
        with pytest.raises(errors.ResourceExhaustedError):
            gp.raw_ops.ScatterNd(indices=np.array([[0]]), updates=np.ones(1),
                                 shape=np.array([2**40]))
        with pytest.raises(errors.ResourceExhaustedError):
            gp.raw_ops.UnsortedSegmentSum(data=np.ones(1), segment_ids=i32(0),
                                          num_segments=np.int64(2**40))
        # An empty output allocates nothing, however deep: no [depth] index vector either.
        empty = gp.raw_ops.OneHot(indices=np.zeros(0, np.int32), depth=np.int32(2**31 - 1),
                                  on_value=np.float32(1), off_value=np.float32(0))
        assert empty.shape == (0, 2**31 - 1)
    finally:
        set_memory_budget(old)


# ----------------------------------------------------------------------------- shapes

def build_outputs(op, **kwargs):
    """The output tensors of `op` built on P specs (placeholders) and arrays (constants)."""
    out = build(op, **kwargs)
    return out if isinstance(out, list) else [out]


SHAPE_CASES = [   # (op, kwargs, the outputs' dims; None for an unknown rank): TF 2.21's
    ("GatherV2", dict(params=P([5, None, 3]), indices=P([2, 4], np.int32), axis=np.int32(1)),
     [[5, 2, 4, 3]]),
    ("GatherV2", dict(params=P([5, 6, 3]), indices=P([5, 4], np.int32), axis=np.int32(-2),
                      batch_dims=1), [[5, 4, 3]]),
    ("GatherV2", dict(params=P([5, 6, 3]), indices=P([5, 4], np.int32),
                      axis=P([], np.int32), batch_dims=1), [[None, None, None]]),
    ("GatherV2", dict(params=P(None), indices=P([5, 4], np.int32), axis=np.int32(0)), [None]),
    ("Gather", dict(params=P([5, 3]), indices=P([None, 2], np.int64)), [[None, 2, 3]]),
    ("GatherNd", dict(params=P([5, 6, 3]), indices=P([4, 2], np.int32)), [[4, 3]]),
    ("GatherNd", dict(params=P([5, 6, 3]), indices=P([4, None], np.int32)), [None]),
    ("ScatterNd", dict(indices=P([4, 1], np.int32), updates=P([4, 3]), shape=i32(5, 3)),
     [[5, 3]]),
    ("ScatterNd", dict(indices=P([4, 1], np.int32), updates=P([4, 3]),
                       shape=P([2], np.int32)), [[None, None]]),
    ("UnsortedSegmentSum", dict(data=P([4, 3]), segment_ids=P([4], np.int32),
                                num_segments=np.int32(7)), [[7, 3]]),
    ("Split", dict(axis=np.int32(-1), value=P([2, 6]), num_split=3), [[2, 2]] * 3),
    ("Split", dict(axis=P([], np.int32), value=P([2, 6]), num_split=2), [[None, None]] * 2),
    ("SplitV", dict(value=P([2, 6]), size_splits=i32(1, -1), axis=np.int32(1), num_split=2),
     [[2, 1], [2, 5]]),
    ("SplitV", dict(value=P([2, None]), size_splits=i32(1, -1), axis=np.int32(1),
                    num_split=2), [[2, 1], [2, None]]),
    ("SplitV", dict(value=P([2, 6]), size_splits=P([2], np.int32), axis=np.int32(0),
                    num_split=2), [[None, 6]] * 2),
    ("Unpack", dict(value=P([2, None, 3]), num=3, axis=-1), [[2, None]] * 3),
    ("Select", dict(condition=P([None], bool), x=P([3, None]), y=P([None, 4])), [[3, 4]]),
    ("Select", dict(condition=P([], bool), x=P([3, 4]), y=P([3, 4])), [[3, 4]]),
    ("SelectV2", dict(condition=P([2, 1], bool), t=P([3]), e=P([])), [[2, 3]]),
    ("Where", dict(condition=P([2, None], bool)), [[None, 2]]),
    ("Where", dict(condition=P(None, bool)), [[None, None]]),
    ("OneHot", dict(indices=P([2, 3], np.int32), depth=np.int32(5), on_value=np.float32(1),
                    off_value=np.float32(0), axis=1), [[2, 5, 3]]),
    ("OneHot", dict(indices=P([2], np.int32), depth=P([], np.int32), on_value=np.float32(1),
                    off_value=np.float32(0)), [[2, None]]),
    ("Reverse", dict(tensor=P(None), dims=np.array([True, False])), [[None, None]]),
    ("ReverseV2", dict(tensor=P([2, 3]), axis=i32(-1)), [[2, 3]]),
    ("BroadcastTo", dict(input=P([3, 1]), shape=i32(2, 3, 4)), [[2, 3, 4]]),
    ("BroadcastTo", dict(input=P([3, 1]), shape=P([3], np.int32)), [[None, 3, None]]),
    ("Cumsum", dict(x=P([None, 2]), axis=np.int32(0)), [[None, 2]]),
    ("ShapeN", dict(input=[P([2, 3]), P(None)]), [[2], [None]]),
    ("IdentityN", dict(input=[P([2, None]), P([], np.int32)]), [[2, None], []]),
]


@pytest.mark.parametrize("op, kwargs, expected", SHAPE_CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(SHAPE_CASES)])
def test_shape_inference(op, kwargs, expected):
    assert [t.shape.dims for t in build_outputs(op, **kwargs)] == expected


SHAPE_ERRORS = [   # build-time errors (the start of TF 2.21's messages)
    ("GatherV2", dict(params=P([5, 3]), indices=P([2], np.int32), axis=np.int32(2)),
     "Shape must be at least rank 3 but is rank 2"),
    ("GatherNd", dict(params=P([5, 3]), indices=P([4, 3], np.int32)),
     "indices.shape[-1] must be <= params.rank, but saw indices shape: [4,3] and params "
     "shape: [5,3]"),
    ("ScatterNd", dict(indices=P([4, 1], np.int32), updates=P([3, 3]), shape=i32(5, 3)),
     "Dimensions [0,1) of indices[shape=[4,1]] = [4] must match dimensions [0,1) of "
     "updates[shape=[3,3]] = [3]: Dimension 0 in both shapes must be equal"),
    ("Split", dict(axis=np.int32(1), value=P([2, 6]), num_split=4),
     "Dimension size must be evenly divisible by 4 but is 6"),
    ("Split", dict(axis=np.int32(2), value=P([2, 6]), num_split=2),
     "Dimension size, given by scalar input 2 must be in range [-2, 2)"),
    ("SplitV", dict(value=P([2, 6]), size_splits=i32(1, 2), axis=np.int32(1), num_split=2),
     "can't split axis of size 6 into pieces of size [1,2]"),
    ("Unpack", dict(value=P([2, 3]), num=3), "Dimension must be 3 but is 2"),
    ("Select", dict(condition=P([2], bool), x=P([3, 4]), y=P([3, 4])),
     "Dimension 0 in both shapes must be equal, but are 2 and 3."),
    ("SelectV2", dict(condition=P([2], bool), t=P([3, 4]), e=P([3, 4])),
     "Dimensions must be equal, but are 2 and 4"),
    ("ReverseV2", dict(tensor=P([2, 3]), axis=i32(1, -1)), "axis 1 specified more than once."),
    ("Reverse", dict(tensor=P([2, 3]), dims=np.array([True])),
     "Shape must be rank 1 but is rank 2"),
    ("BroadcastTo", dict(input=P([3, 2]), shape=i32(3, 3)),
     "Dimensions must be equal, but are 2 and 3"),
    ("OneHot", dict(indices=P([2], np.int32), depth=np.int32(3), on_value=np.float32(1),
                    off_value=np.float32(0), axis=-2), "axis must be >= -1"),
    ("OneHot", dict(indices=P([2], np.int32), depth=np.int32(-3), on_value=np.float32(1),
                    off_value=np.float32(0)),
     "Dimension size, given by scalar input 1, must be non-negative but is -3"),
    ("UnsortedSegmentSum", dict(data=P([4, 3]), segment_ids=P([4], np.int32),
                                num_segments=np.int32(-2)),
     "Dimension size, given by scalar input 2, must be non-negative but is -2"),
    ("UnsortedSegmentSum", dict(data=P([4, 3]), segment_ids=P([3], np.int32),
                                num_segments=np.int32(2)),
     "Dimensions must be equal, but are 4 and 3"),
    ("SplitV", dict(value=P([2, 6]), size_splits=i32(1, -1, -1), axis=np.int32(1),
                    num_split=3), "size_splits can only have one -1"),
    ("SplitV", dict(value=P([2, 6]), size_splits=i32(1, 5, 0), axis=np.int32(1),
                    num_split=2), "Length of size_splits should be equal to num_outputs"),
    ("SplitV", dict(value=P([]), size_splits=i32(1), axis=np.int32(0), num_split=1),
     "Can't split scalars"),
    ("Split", dict(axis=np.int32(0), value=P([]), num_split=1),
     "Dimension size, given by scalar input 0 must be in range [-0, 0)"),
    ("GatherV2", dict(params=P([5, 3]), indices=P([2], np.int32), axis=np.int32(1),
                      batch_dims=2), "Shape must be at least rank 2 but is rank 1"),
    ("GatherV2", dict(params=P([5]), indices=P([5, 2], np.int32), axis=np.int32(0),
                      batch_dims=1), "Shape must be at least rank 2 but is rank 1"),
    ("ScatterNd", dict(indices=P([4, 1], np.int32), updates=P([4, 3]), shape=i32(0, 3)),
     "Indices and updates specified for empty input"),
    ("ScatterNd", dict(indices=P([4, 1], np.int32), updates=P([4, 2]), shape=i32(5, 3)),
     "Dimensions [1,2) of input[shape=[5,3]] = [3] must match dimensions [1,2) of "
     "updates[shape=[4,2]] = [2]: Dimension 0 in both shapes must be equal"),
    ("BroadcastTo", dict(input=P([3, 2]), shape=i32(2)),
     "Shape must be at most rank 1 but is rank 2"),
    ("Reverse", dict(tensor=P([1] * 9), dims=np.zeros(9, bool)),
     "reverse does not work on tensors with more than 8 dimensions"),
]


@pytest.mark.parametrize("op, kwargs, message", SHAPE_ERRORS,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(SHAPE_ERRORS)])
def test_shape_inference_errors(op, kwargs, message):
    with invalid(message):
        build_outputs(op, **kwargs)
