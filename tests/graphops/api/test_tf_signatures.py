"""raw_ops wrappers take exactly tf.raw_ops' keywords (TF's api_def renames included)."""

import inspect

import numpy as np
import pytest

import graphops as gp
from graphops.registry.op_registry import get_op_def, list_ops


def test_renamed_args_use_tensorflow_python_names():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert gp.raw_ops.Sum(input=x, axis=np.int32(1)).tolist() == [3.0, 12.0]
    assert gp.raw_ops.Mean(input=x, axis=[0], keep_dims=True).shape == (1, 3)
    assert gp.raw_ops.ExpandDims(input=x, axis=np.int32(0)).shape == (1, 2, 3)
    assert gp.raw_ops.Squeeze(input=x[None], axis=[0]).shape == (2, 3)
    assert get_op_def("Sum").input_arg[1].name == "reduction_indices"   # the OpDef keeps TF's
    with pytest.raises(TypeError, match="No argument for input axis"):
        gp.raw_ops.Sum(input=x, reduction_indices=np.int32(1))
    s = gp.Scope.new_root_scope()
    node = gp.ops.Squeeze(s, gp.ops.Const(s, x[None]), attrs=gp.ops.Squeeze.Attrs().squeeze_dims([0]))
    assert gp.ClientSession(s).run([node.output])[0].shape == (2, 3)


def test_signatures_match_tensorflow():
    tf = pytest.importorskip("tensorflow")
    compared = 0
    for name in list_ops():
        theirs = getattr(tf.raw_ops, name, None)
        if theirs is None:
            continue
        mine = getattr(gp.raw_ops, name)
        assert list(inspect.signature(mine).parameters) == \
            list(inspect.signature(theirs).parameters), name
        compared += 1
    assert compared >= 60
