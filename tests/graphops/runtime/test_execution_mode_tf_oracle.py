"""TF as the oracle for type-attr inference. Graph mode: TF's `_apply_op_helper` (argument
order; arrays are converted like Python values). Eager mode: TF's fast path takes T from the
first input that is a tensor; graphops' eager tensors are arrays, so an array here plays the
part of a TF EagerTensor there."""

import numpy as np
import pytest

import graphops as gp

tf = pytest.importorskip("tensorflow")



class Arr:
    """A tensor-valued argument: ones of `dtype` and `shape`."""

    def __init__(self, dtype, shape=(1,)):
        self.value = np.ones(shape, dtype)

    def __repr__(self):
        return f"{self.value.dtype}{list(self.value.shape)}"


# (op, keyword arguments)
CASES = [
    ("Conv2DBackpropInput", dict(input_sizes=[1, 3, 3, 1], filter=[[[[1]]]],
                                 out_backprop=Arr("float64", (1, 3, 3, 1)), strides=[1, 1, 1, 1],
                                 padding="SAME")),
    ("AddV2", dict(x=[1], y=Arr("float64"))),
    ("AddV2", dict(x=[1.5], y=Arr("float64"))),
    ("AddV2", dict(x=Arr("float16"), y=[2])),
    ("AddV2", dict(x=1, y=2)),
    ("Mul", dict(x=2, y=Arr("uint8"))),
    ("AddN", dict(inputs=[[1], Arr("float64")])),
    ("ConcatV2", dict(values=[[1], Arr("float64")], axis=0)),
]


def _arguments(kwargs, make_tensor):
    def convert(value):
        if isinstance(value, Arr):
            return make_tensor(value.value)
        if isinstance(value, list):
            return [convert(v) for v in value]
        return value
    return {k: convert(v) for k, v in kwargs.items()}


def _outcome(call):
    """The result's dtype name (NumPy's, TF's and graphops' agree), or the error class."""
    try:
        return call().dtype.name
    except TypeError:
        return "TypeError"
    except ValueError:
        return "ValueError"


@pytest.mark.parametrize("op, kwargs", CASES)
def test_eager_inference_matches_tf_with_eager_tensors(op, kwargs):
    theirs = _outcome(lambda: getattr(tf.raw_ops, op)(**_arguments(kwargs, tf.constant)))
    mine = _outcome(lambda: getattr(gp.raw_ops, op)(**_arguments(kwargs, np.asarray)))
    assert mine == theirs


@pytest.mark.parametrize("op, kwargs", CASES)
def test_graph_inference_matches_tf(op, kwargs):
    with tf.Graph().as_default():
        theirs = _outcome(lambda: getattr(tf.raw_ops, op)(**_arguments(kwargs, tf.constant)))
    with gp.Graph().as_default():
        mine = _outcome(lambda: getattr(gp.raw_ops, op)(**_arguments(kwargs, gp.constant)))
    assert mine == theirs
