"""Positional snake_case op wrappers: gp.gen_ops for every registered op and
gp.load_op_library for the ops of one Python file or module (TF's load_op_library)."""

import inspect
import sys
import textwrap

import numpy as np
import pytest

import graphops as gp
from graphops.api.snake_case_ops import snake_case_name
from graphops.registry.op_registry import deregister_op

ZERO_OUT = '''
import numpy as np
import graphops as gp

gp.register_op("{name}").input("to_zero: T").output("zeroed: T") \\
    .attr("T: {{int32, float}}").attr("preserve_index: int >= 0 = 0") \\
    .set_shape_fn(lambda c: c.set_output(0, c.input(0)))


@gp.register_kernel("{name}", device="CPU")
class ZeroOutOp(gp.OpKernel):
    def __init__(self, ctx):
        super().__init__(ctx)
        self.index = ctx.get_attr("preserve_index")

    def compute(self, ctx):
        x = ctx.input(0)
        out = np.zeros_like(x)
        out.flat[self.index] = x.flat[self.index]
        ctx.set_output(0, out)


@gp.RegisterGradient("{name}")
def _zero_out_grad(op, grad):
    return [grad]
'''


@pytest.mark.parametrize("op, expected", [
    ("Conv3DBackpropFilterV2", "conv3d_backprop_filter_v2"), ("ZeroOut", "zero_out"),
    ("MatMul", "mat_mul"), ("BatchMatMulV2", "batch_mat_mul_v2"), ("LRNGrad", "lrn_grad"),
    ("DepthwiseConv2dNative", "depthwise_conv2d_native"), ("FusedBatchNormV3",
                                                           "fused_batch_norm_v3"),
    ("ResourceApplyAdam", "resource_apply_adam"), ("Abs", "_abs"), ("Sum", "_sum"),
    ("If", "_if"), ("Print", "_print"), ("FusedBatchNorm", "_fused_batch_norm"),
    ("Ns>OpName", "ns_op_name"), ("TPUReplicate", "tpu_replicate")])
def test_snake_case_names_follow_tfs_generator(op, expected):
    assert snake_case_name(op) == expected


def test_gen_ops_wrappers_are_positional_with_tf_defaults():
    conv = gp.gen_ops.conv3d_backprop_filter_v2
    assert str(inspect.signature(conv)) == (
        "(input, filter_sizes, out_backprop, strides, padding, data_format='NDHWC', "
        "dilations=[1, 1, 1, 1, 1], name=None)")
    assert conv.__name__ == "conv3d_backprop_filter_v2" and "Conv3DBackpropFilterV2" in conv.__doc__
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(gp.gen_ops.mat_mul(x, x, False, True), x @ x.T)
    np.testing.assert_array_equal(gp.gen_ops._sum(x, 1, keep_dims=True), x.sum(1, keepdims=True))
    assert "mat_mul" in dir(gp.gen_ops)
    with pytest.raises(TypeError, match="missing a required argument: 'b'"):
        gp.gen_ops.mat_mul(x)
    with pytest.raises(TypeError, match="got an unexpected keyword argument 'c'"):
        gp.gen_ops.mat_mul(x, x, c=1)
    with pytest.raises(AttributeError, match="no registered op has that snake_case name"):
        gp.gen_ops.no_such_op


def test_gen_ops_build_nodes_in_graph_mode_with_names():
    with gp.Graph().as_default() as g:
        x = gp.placeholder(gp.float32, [2, 2])
        y = gp.gen_ops.mat_mul(x, x, transpose_b=True, name="mm")
        assert y.op.name == "mm" and y.op.type == "MatMul" and y.op.get_attr("transpose_b")
        with gp.Session(graph=g) as sess:
            np.testing.assert_array_equal(sess.run(y, {x: [[1, 2], [3, 4]]}),
                                          [[5, 11], [11, 25]])


def _write_library(tmp_path, name):
    path = tmp_path / f"{name.lower()}_ops.py"
    path.write_text(textwrap.dedent(ZERO_OUT.format(name=name)))
    return path


def test_load_op_library_from_a_file(tmp_path):
    path = _write_library(tmp_path, "SnakeTestZeroOut")
    try:
        lib = gp.load_op_library(str(path))
        assert lib.OP_LIST == ["SnakeTestZeroOut"]
        assert [n for n in dir(lib) if not n.startswith("_")] == \
            ["OP_LIST", "SnakeTestZeroOut", "snake_test_zero_out"]
        assert str(inspect.signature(lib.snake_test_zero_out)) == \
            "(to_zero, preserve_index=0, name=None)"
        np.testing.assert_array_equal(lib.snake_test_zero_out([5, 6, 7], 1), [0, 6, 0])
        np.testing.assert_array_equal(lib.SnakeTestZeroOut(to_zero=[5, 6]), [5, 0])
        with gp.Graph().as_default() as g:
            x = gp.constant([1.0, 2.0])
            y = lib.snake_test_zero_out(x)
            (dx,) = gp.gradients(y, [x])
            with gp.Session(graph=g) as sess:
                np.testing.assert_array_equal(sess.run([y, dx]), [[1, 0], [1, 1]])
        assert gp.load_op_library(path) is lib            # loaded once
        assert gp.gen_ops.snake_test_zero_out is lib.snake_test_zero_out
    finally:
        deregister_op("SnakeTestZeroOut")


def test_load_op_library_by_module_name(tmp_path, monkeypatch):
    path = _write_library(tmp_path, "SnakeTestZeroOutMod")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        lib = gp.load_op_library(path.stem)
        assert lib.OP_LIST == ["SnakeTestZeroOutMod"]
        again = gp.load_op_library(sys.modules[path.stem])     # already imported: same ops
        assert again.OP_LIST == ["SnakeTestZeroOutMod"]
    finally:
        deregister_op("SnakeTestZeroOutMod")
        sys.modules.pop(path.stem, None)


def test_load_op_library_errors(tmp_path):
    with pytest.raises(gp.errors.NotFoundError, match="No such file or directory"):
        gp.load_op_library(str(tmp_path / "missing.py"))
    with pytest.raises(TypeError, match="expects a file path or a module name, got int"):
        gp.load_op_library(3)
    with pytest.raises(ModuleNotFoundError):
        gp.load_op_library("no_such_module_anywhere")
