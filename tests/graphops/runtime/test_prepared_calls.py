"""Prepared calls (``OpKernel.prepare``, run by ``steps.HostKernelStep``): a host step
whose kernel prepares runs the call prepared for its inputs' signature, which gives
compute's values bit for bit, raises compute's errors naming the node, and is prepared
again when the inputs' shapes, a value input's bytes or the memory budget change; the
members of a fused step (a cluster, a chain) run theirs where the fused pass does not."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import graphops as gp
from graphops.kernels.ops.array import ReshapeOp
from graphops.kernels.ops.math import MatMulOp
from graphops.kernels.ops.state import ReadVariableOpKernel
from graphops.registry import OpKernel, errors
from graphops.registry.kernel_registry import prepares
from graphops.runtime import elementwise_clusters, fusion, steps
from graphops.runtime.config import memory_budget
from tests.op_runners import plan_kernel_steps

PREPARED_TYPES = {"AddV2", "Mul", "Less", "SquaredDifference", "Reshape", "Transpose",
                  "MatMul", "BatchMatMulV2", "BiasAdd", "Softmax", "Mean", "Sum", "Max", "Tanh",
                  "Erfc", "RsqrtGrad", "Relu", "Relu6", "ReluGrad", "Cast", "Squeeze",
                  "ExpandDims", "Pack", "ConcatV2", "Fill", "LogSoftmax", "ZerosLike",
                  "OnesLike", "SparseSoftmaxCrossEntropyWithLogits", "Einsum", "Sqrt",
                  "DivNoNan", "TanhGrad", "Min"}


def _graph(dtype):
    """Nodes of each prepared kernel over x [a, b, c], y [c] and z [b], fetched one by one
    so no fusion takes them."""
    x = gp.placeholder(dtype, [None, None, None], name="x")
    y = gp.placeholder(dtype, [None], name="y")
    z = gp.placeholder(dtype, [None], name="z")
    shape = gp.shape(x)
    flat = gp.reshape(x, gp.stack([shape[0] * shape[1], shape[2]]))
    mm, bmm = gp.raw_ops.MatMul, gp.raw_ops.BatchMatMulV2
    xent = gp.raw_ops.SparseSoftmaxCrossEntropyWithLogits(
        features=flat, labels=gp.raw_ops.ArgMin(input=flat, dimension=1))
    distinct = gp.raw_ops.Unique(x=y).y
    total = gp.reduce_sum(x)
    fetches = {
        "add": gp.raw_ops.AddV2(x=x, y=y), "mul": gp.raw_ops.Mul(x=x, y=x),
        "less": gp.raw_ops.Less(x=x, y=y),
        "transpose": gp.transpose(x, [2, 0, 1]),
        "matmul": mm(a=flat, b=flat, transpose_b=True),
        "matmul_ta": mm(a=flat, b=flat, transpose_a=True),
        "batch_matmul": bmm(x=x, y=gp.transpose(x, [0, 2, 1])),
        "batch_matmul_adj": bmm(x=x, y=x, adj_x=True),
        "bias_add": gp.nn.bias_add(x, y), "bias_add_nchw": gp.nn.bias_add(x, z, "NCHW"),
        "softmax": gp.nn.softmax(x), "log_softmax": gp.nn.log_softmax(x),
        "mean": gp.reduce_mean(x, axis=[0, 2]), "sum": gp.reduce_sum(x, axis=1),
        "sum_all": gp.reduce_sum(x), "mean_kept": gp.reduce_mean(x, [1], keepdims=True),
        "max": gp.reduce_max(x, axis=-1, keepdims=True),
        "tanh": gp.raw_ops.Tanh(x=x), "erfc": gp.raw_ops.Erfc(x=x),
        "squared_difference": gp.raw_ops.SquaredDifference(x=x, y=y),
        "rsqrt_grad": gp.raw_ops.RsqrtGrad(y=x, dy=gp.raw_ops.Tanh(x=x)),
        "relu": gp.raw_ops.Relu(features=x), "relu6": gp.raw_ops.Relu6(features=x),
        "relu_grad": gp.raw_ops.ReluGrad(gradients=y * 2.0, features=y),
        "cast": gp.cast(x, gp.int32 if dtype == gp.float64 else gp.float16),
        "squeeze": gp.squeeze(gp.raw_ops.Max(input=x, axis=[1], keep_dims=True), [1]),
        "expand_dims": gp.expand_dims(x, -2), "pack": gp.stack([x, x, x], axis=1),
        "concat": gp.concat([x, x], axis=-1), "fill": gp.fill(shape, y[0]),
        # (of a value whose shape no shape function knows: not folded)
        "zeros_like": gp.raw_ops.ZerosLike(x=distinct),
        "ones_like": gp.raw_ops.OnesLike(x=distinct),
        "xent_loss": xent[0], "xent_backprop": xent[1],
        "einsum": gp.einsum("abc,adc->acbd", x, x),
        "einsum_ellipsis": gp.einsum("...ij,...jk->...ik", x, gp.transpose(x, [0, 2, 1])),
        # 0-d values: NumPy's scalars made arrays
        "sqrt_0d": gp.raw_ops.Sqrt(x=total * total), "add_0d": total + gp.reduce_max(x),
        "div_no_nan_0d": gp.raw_ops.DivNoNan(x=total, y=gp.reduce_min(x) * 0.0),
        "tanh_grad_0d": gp.raw_ops.TanhGrad(y=total, dy=gp.reduce_mean(x))}
    return x, y, fetches


def _run(fetches, feeds, prepared, monkeypatch):
    """The fetches' values, one Session.run each, with prepared calls on or off; with them
    on, the op types whose steps ran a prepared call."""
    ran = set()
    real = steps.HostKernelStep._prepared_outputs

    def recording(step, inputs):
        outputs = real(step, inputs)
        if outputs is not None:
            ran.add(step.op.type)
        return outputs
    with monkeypatch.context() as patch:
        patch.setattr(steps.HostKernelStep, "_prepared_outputs", recording)
        if not prepared:
            patch.setattr(steps, "prepares", lambda kernel_class: False)
        with gp.Session() as sess:
            values = {name: [sess.run(t, feed) for feed in feeds]
                      for name, t in fetches.items()}
    return values, ran


@settings(max_examples=25, deadline=None)
@given(a=st.integers(1, 3), b=st.integers(1, 4), c=st.integers(1, 5),
       dtype=st.sampled_from([np.float32, np.float64]), seed=st.integers(0, 2**16))
def test_prepared_calls_give_computes_bits(a, b, c, dtype, seed):
    rng = np.random.default_rng(seed)
    values = rng.standard_normal((2, a, b, c)).astype(dtype) * 4
    values[0].flat[rng.integers(values[0].size)] = np.nan
    bias = rng.standard_normal(c).astype(dtype)
    with pytest.MonkeyPatch.context() as monkeypatch, gp.Graph().as_default():
        x, y, fetches = _graph(gp.as_dtype(dtype))
        z = gp.get_default_graph().get_tensor_by_name("z:0")
        # two runs of one shape, then another shape: prepared, reused, prepared again
        feeds = [{x: values[0], y: bias, z: values[1][0, :, 0]},
                 {x: values[1], y: bias, z: values[0][0, :, 0]},
                 {x: values[0][:, :1], y: bias, z: values[1][0, :1, 0]}]
        got, ran = _run(fetches, feeds, True, monkeypatch)
        want, none = _run(fetches, feeds, False, monkeypatch)
    assert ran == PREPARED_TYPES and not none
    for name in fetches:
        for g, w in zip(got[name], want[name]):
            assert type(g) is type(w) and g.dtype == w.dtype and g.shape == w.shape, name
            np.testing.assert_array_equal(g, w, err_msg=name)


def test_empty_operands_give_computes_values(monkeypatch):
    with gp.Graph().as_default():
        x = gp.placeholder(gp.float32, [None, None], name="x")
        fetches = {"add": x + 1.0, "matmul": gp.matmul(x, x, transpose_a=True),
                   "sum": gp.reduce_sum(x, axis=0), "softmax": gp.nn.softmax(x),
                   "reshape": gp.reshape(x, [-1, 2]), "concat": gp.concat([x, x], 0),
                   "pack": gp.stack([x, x])}
        feeds = [{x: np.zeros((0, 2), np.float32)}] * 2
        got, _ = _run(fetches, feeds, True, monkeypatch)
        want, _ = _run(fetches, feeds, False, monkeypatch)
    for name in fetches:
        for g, w in zip(got[name], want[name]):
            assert g.dtype == w.dtype and g.shape == w.shape, name


def test_a_signature_prepares_once_until_it_changes(monkeypatch):
    calls = []
    real = ReshapeOp.prepare
    monkeypatch.setattr(ReshapeOp, "prepare",
                        lambda kernel, ctx: calls.append(ctx.inputs[0].shape) or real(kernel, ctx))
    with gp.Graph().as_default():
        x = gp.placeholder(gp.float32, [None], name="x")
        out = gp.reshape(x, [-1, 2])
        with gp.Session() as sess:
            for n in (4, 4, 4, 6, 6, 4):
                assert sess.run(out, {x: np.zeros(n, np.float32)}).shape == (n // 2, 2)
    assert calls == [(4,), (6,), (4,)]


def test_a_call_giving_no_array_of_the_output_type_is_an_internal_error(monkeypatch):
    monkeypatch.setattr(ReshapeOp, "prepare",
                        lambda kernel, ctx: lambda inputs: [inputs[0].astype(np.float64)])
    with gp.Graph().as_default():
        x = gp.placeholder(gp.float32, [None], name="x")
        out = gp.reshape(x, [-1, 2], name="reshape")
        with gp.Session() as sess, pytest.raises(errors.InternalError) as caught:
            sess.run(out, {x: np.zeros(4, np.float32)})
    assert "The prepared call of the Reshape kernel gave [('ndarray', 'float64')]" in str(
        caught.value)
    assert "Node: 'reshape'" in str(caught.value)


def test_integer_and_bool_operands_keep_their_types():
    with gp.Graph().as_default():
        x = gp.placeholder(gp.int32, [None], name="x")
        total = gp.raw_ops.AddV2(x=x, y=x)
        equal = gp.raw_ops.Equal(x=x, y=total)
        with gp.Session() as sess:
            for _ in range(2):
                s, e = sess.run([total, equal], {x: np.array([0, 2**30, -3], np.int32)})
    assert s.dtype == np.int32 and e.dtype == np.bool_
    np.testing.assert_array_equal(s, np.array([0, -2**31, -6], np.int32))
    np.testing.assert_array_equal(e, [True, False, False])


def test_a_prepared_call_raises_computes_error_naming_the_node():
    """An integer division by zero: the prepared call (its shapes seen before) raises."""
    with gp.Graph().as_default():
        x = gp.placeholder(gp.int32, [None], name="x")
        y = gp.placeholder(gp.int32, [None], name="y")
        quotient = gp.raw_ops.FloorDiv(x=x, y=y, name="quotient")
        with gp.Session() as sess:
            first = sess.run(quotient, {x: [7, -7], y: [2, 2]})
            with pytest.raises(errors.InvalidArgumentError) as caught:
                sess.run(quotient, {x: [7, -7], y: [2, 0]})
    np.testing.assert_array_equal(first, [3, -4])
    assert "Integer division by zero" in str(caught.value)
    assert "Node: 'quotient' (op: FloorDiv" in str(caught.value)


def test_a_new_value_input_prepares_again():
    with gp.Graph().as_default():
        x = gp.placeholder(gp.float32, [6], name="x")
        sizes = gp.placeholder(gp.int32, [2], name="sizes")
        out = gp.reshape(x, sizes, name="reshape")
        values = np.arange(6, dtype=np.float32)
        with gp.Session() as sess:
            shapes = [sess.run(out, {x: values, sizes: s}).shape
                      for s in ([2, 3], [2, 3], [3, 2], [-1, 1])]
            with pytest.raises(errors.InvalidArgumentError) as caught:
                sess.run(out, {x: values, sizes: [4, 2]})
            with pytest.raises(errors.InvalidArgumentError):   # it kept nothing
                sess.run(out, {x: values, sizes: [4, 2]})
            again = sess.run(out, {x: values, sizes: [3, 2]})
    assert shapes == [(2, 3), (2, 3), (3, 2), (6, 1)]
    np.testing.assert_array_equal(again, values.reshape(3, 2))
    message = str(caught.value)
    assert ("Input to reshape is a tensor with 6 values, but the requested shape has 8"
            in message)
    assert "Node: 'reshape' (op: Reshape" in message


def test_a_prepare_raises_computes_error_naming_the_node():
    with gp.Graph().as_default():
        a = gp.placeholder(gp.float32, [None, None], name="a")
        product = gp.matmul(a, a, name="product")
        with gp.Session() as sess:
            sess.run(product, {a: np.ones((2, 2), np.float32)})
            with pytest.raises(errors.InvalidArgumentError) as caught:
                sess.run(product, {a: np.ones((2, 3), np.float32)})
    assert "Matrix size-incompatible: In[0]: [2,3], In[1]: [2,3]" in str(caught.value)
    assert "Node: 'product' (op: MatMul" in str(caught.value)


def test_a_new_memory_budget_prepares_again():
    with gp.Graph().as_default():
        x = gp.placeholder(gp.float32, [None, 1], name="x")
        y = gp.placeholder(gp.float32, [1, None], name="y")
        outer = gp.raw_ops.AddV2(x=x, y=y, name="outer")
        feed = {x: np.ones((64, 1), np.float32), y: np.ones((1, 64), np.float32)}
        with gp.Session() as sess:
            assert sess.run(outer, feed).shape == (64, 64)
            with memory_budget(1024), pytest.raises(errors.ResourceExhaustedError) as caught:
                sess.run(outer, feed)
            assert sess.run(outer, feed).shape == (64, 64)
    assert "'outer'" in str(caught.value)


class _Doubling(ReshapeOp):
    """A kernel overriding compute alone: never prepared, so its compute runs."""

    def compute(self, ctx):
        ctx.set_output(0, ctx.input(0).reshape(ctx.input(1)) * 2)


def test_only_a_class_defining_prepare_with_its_compute_prepares():
    assert prepares(ReshapeOp) and prepares(MatMulOp)
    assert not prepares(OpKernel) and not prepares(_Doubling)
    assert not prepares(type("Renamed", (_Doubling,), {}))
    assert not prepares(type("NoValues", (ReshapeOp,), {"prepared_values": ()}))


def _fused_members_run(fetch, feeds, monkeypatch):
    """The fetch's values over ``feeds`` and, per op type, how often a step's
    `_prepared_outputs` prepared and how often it reused a call (a fused step's members
    run through it on every run, where the fused pass does not)."""
    counts = {}
    real = steps.HostKernelStep._prepared_outputs

    def recording(step, inputs):
        before = step.prepared
        outputs = real(step, inputs)
        if outputs is not None:
            made, reused = counts.setdefault(step.op.type, [0, 0])
            counts[step.op.type] = [made + 1, reused] if step.prepared is not before \
                else [made, reused + 1]
        return outputs
    monkeypatch.setattr(steps.HostKernelStep, "_prepared_outputs", recording)
    with gp.Session() as sess:
        values = [sess.run(fetch, feed) for feed in feeds]
    return values, counts


def test_a_clusters_members_run_their_prepared_calls(monkeypatch):
    """A cluster whose signature runs its members' kernels runs them by their steps the
    first time, each preparing its call, then by those calls, kept in the recipe."""
    monkeypatch.setattr(elementwise_clusters, "_prior", lambda *args: ("kernels", "kernels"))
    called, real_called = [], steps.ClusterStep._called
    monkeypatch.setattr(steps.ClusterStep, "_called",
                        lambda step, calls, values: called.append(len(calls))
                        or real_called(step, calls, values))
    with gp.Graph().as_default():
        x = gp.placeholder(gp.float32, [None, 4], name="x")
        b = gp.placeholder(gp.float32, [4], name="b")
        out = gp.abs(gp.maximum(x, b) - x)
        assert [type(s) for s in plan_kernel_steps([out], [x, b])] == [steps.ClusterStep]
        rng = np.random.default_rng(3)
        feeds = [{x: rng.standard_normal((rows, 4)).astype(np.float32),
                  b: rng.standard_normal(4).astype(np.float32)} for rows in (2, 2, 2, 5, 5, 2)]
        values, counts = _fused_members_run(out, feeds, monkeypatch)
    assert counts == {"Maximum": [2, 0], "Sub": [2, 0], "Abs": [2, 0]}
    assert called == [3, 3, 3, 3]        # each signature's recipe keeps its own calls
    for got, feed in zip(values, feeds):
        np.testing.assert_array_equal(got, np.abs(np.maximum(feed[x], feed[b]) - feed[x]))


def test_a_chains_members_run_their_prepared_calls(monkeypatch):
    """A chain whose fused pass does not take its values runs its nodes' prepared calls,
    and a failing one names its node."""
    monkeypatch.setattr(fusion.Chain, "accepts", lambda chain, values: False)
    with gp.Graph().as_default():
        x = gp.placeholder(gp.float32, [None, 3], name="x")
        scale = np.float32([0.5, 2.0, -1.0])
        out = gp.nn.relu(x * scale + np.float32([1.0, -1.0, 0.25]))
        assert [type(s) for s in plan_kernel_steps([out], [x])] == [steps.ChainStep]
        feeds = [{x: np.full((rows, 3), value, np.float32)}
                 for rows, value in ((1, 1.5), (1, -2.0), (4, 0.5))]
        values, counts = _fused_members_run(out, feeds, monkeypatch)
        with gp.Session() as sess, memory_budget(16), \
                pytest.raises(errors.ResourceExhaustedError) as caught:
            sess.run(out, {x: np.ones((4, 3), np.float32)})
    assert counts == {"Mul": [2, 1], "AddV2": [2, 1], "Relu": [2, 1]}
    for got, feed in zip(values, feeds):
        np.testing.assert_array_equal(
            got, np.maximum(feed[x] * scale + np.float32([1.0, -1.0, 0.25]), 0))
    assert "(op: Mul" in str(caught.value)


def test_a_cluster_keeps_no_call_another_signature_replaced(monkeypatch):
    """Another run of a member (another thread's, here run right after this one's) may
    replace its call with one for its own signature before the cluster keeps it: the
    recipe keeps only calls whose keys are its own (a BiasAdd's call over rank 2 adds
    along the wrong axis of a rank-3 value)."""
    monkeypatch.setattr(elementwise_clusters, "_prior", lambda *args: ("kernels", "kernels"))
    real = steps.HostKernelStep.run
    interleave = [True]

    def run(step, inputs):
        outputs = real(step, inputs)
        if interleave[0] and step.op.type == "BiasAdd" and inputs[0].ndim == 3:
            interleave[0] = False
            real(step, [np.ones((4, 4), np.float32), inputs[1]])
        return outputs
    monkeypatch.setattr(steps.HostKernelStep, "run", run)
    with gp.Graph().as_default():
        x = gp.placeholder(gp.float32, None, name="x")
        b = gp.placeholder(gp.float32, [4], name="b")
        out = gp.abs(gp.nn.bias_add(x, b) - x * 2.0) * x
        assert [type(s) for s in plan_kernel_steps([out], [x, b])] == [steps.ClusterStep]
        x_value = np.random.default_rng(0).standard_normal((2, 4, 4)).astype(np.float32)
        b_value = np.arange(4, dtype=np.float32) * 10
        with gp.Session() as sess:
            got = [sess.run(out, {x: x_value, b: b_value}) for _ in range(3)]
    assert not interleave[0]
    want = np.abs((x_value + b_value) - x_value * 2.0) * x_value
    for value in got:
        np.testing.assert_array_equal(value, want)


def test_a_variable_read_prepares_once_and_follows_its_variable(monkeypatch):
    """A ReadVariableOp prepares once and its call reads the value each assign left,
    fails as compute does once the variable is gone and finds it made anew."""
    calls = []
    real = ReadVariableOpKernel.prepare
    monkeypatch.setattr(ReadVariableOpKernel, "prepare",
                        lambda kernel, ctx: calls.append(kernel.node_name) or real(kernel, ctx))
    with gp.Graph().as_default():
        v = gp.Variable(np.zeros(3, np.float32), name="v")
        read = gp.raw_ops.ReadVariableOp(resource=v.handle, dtype=gp.float32, name="read")
        bump = v.assign_add(np.ones(3, np.float32))
        with gp.Session() as sess:
            sess.run(v.initializer)
            seen = []
            for _ in range(3):
                seen.append(sess.run(read))
                sess.run(bump)
            sess._resources.clear()                     # the variable is gone
            with pytest.raises(errors.FailedPreconditionError) as caught:
                sess.run(read)
            sess.run(v.initializer)                     # and made anew
            seen.append(sess.run(read))
    assert [value.tolist() for value in seen] == [[0] * 3, [1] * 3, [2] * 3, [0] * 3]
    assert "Attempting to use uninitialized value v" in str(caught.value)
    assert "Node: 'read' (op: ReadVariableOp" in str(caught.value)
    assert calls.count("read") == 1


def test_a_sum_of_0d_strings_keeps_its_nul_bytes():
    """np.add of two 0-d strings gives Python bytes: the output holds them as they are."""
    want = b"ab\x00c\x00"
    assert np.asarray(gp.raw_ops.Add(x=b"ab\x00", y=b"c\x00")).item() == want
    with gp.Graph().as_default():
        x = gp.placeholder(gp.string, [], name="x")
        total = gp.raw_ops.Add(x=x, y=gp.constant(b"c\x00"))
        with gp.Session() as sess:
            assert [sess.run(total, {x: b"ab\x00"}) for _ in range(3)] == [want] * 3
