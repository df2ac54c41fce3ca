"""TF1's tf.nn wrappers (gp.nn) against plain NumPy references, in graph mode and eagerly:
the convolution wrappers (conv1d, folded batch dims, transposes, depthwise with a rate,
separable, atrous), the cross-entropy losses, l2_normalize, weighted_moments,
embedding_lookup, zero_fraction, the dense helpers, top_k / in_top_k; and the errors
TF raises. tests/test_tf1_nn_tf_oracle.py compares op types and values with TF."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import graphops as gp
from reference_conv import conv_backprop_input_ref, conv_forward_ref
from reference_depthwise import depthwise_forward_ref


def _same_pads(sizes, kernel, strides, dilations):
    pads = []
    for n, k, s, d in zip(sizes, kernel, strides, dilations):
        out = -(-n // s)
        total = max((out - 1) * s + (k - 1) * d + 1 - n, 0)
        pads.append((total // 2, total - total // 2))
    return pads


def _pads(padding, sizes, kernel, strides, dilations):
    if padding == "VALID":
        return [(0, 0)] * len(sizes)
    return _same_pads(sizes, kernel, strides, dilations)


def _graph_and_eager(build, *values):
    """build(*values) eagerly and with the values fed to placeholders of their shapes."""
    eager = np.asarray(build(*values))
    with gp.Graph().as_default() as g:
        holders = [gp.placeholder(gp.as_dtype(v.dtype), v.shape) for v in values]
        out = build(*holders)
        with gp.Session(graph=g) as sess:
            graph = sess.run(out, dict(zip(holders, values)))
    return eager, graph


def _check(build, want, *values, tol=1e-10):
    for got in _graph_and_eager(build, *values):
        assert got.shape == np.shape(want)
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


RNG = np.random.default_rng(0)


def _normal(*shape):
    return RNG.standard_normal(shape)


# ----------------------------------------------------------------------------- convolutions

@settings(max_examples=15, deadline=None, derandomize=True)
@given(width=st.integers(1, 9), k=st.integers(1, 3), stride=st.integers(1, 3),
       dilation=st.integers(1, 2), padding=st.sampled_from(["SAME", "VALID"]),
       channels_first=st.booleans())
def test_conv1d_matches_reference(width, k, stride, dilation, padding, channels_first):
    if padding == "VALID" and (k - 1) * dilation + 1 > width or stride > 1 and dilation > 1:
        return
    x, w = _normal(2, width, 3), _normal(k, 3, 2)
    want = conv_forward_ref(x, w, [stride], [dilation],
                            _pads(padding, [width], [k], [stride], [dilation]))
    if channels_first:
        x, want = x.transpose(0, 2, 1), want.transpose(0, 2, 1)
    _check(lambda a, b: gp.nn.conv1d(a, b, stride, padding,
                                     data_format="NCW" if channels_first else "NWC",
                                     dilations=dilation), want, x, w)


def test_conv2d_folds_extra_batch_dims():
    x, w = _normal(2, 5, 4, 3, 3), _normal(2, 2, 3, 4)
    flat = conv_forward_ref(x.reshape(10, 4, 3, 3), w, [1, 1], [1, 1],
                            _same_pads([4, 3], [2, 2], [1, 1], [1, 1]))
    _check(lambda a, b: gp.nn.conv2d(a, b, [1, 1, 1, 1], "SAME"), flat.reshape(2, 5, 4, 3, 4),
           x, w)
    with gp.Graph().as_default():
        y = gp.nn.conv2d(gp.placeholder(gp.float64, [None, 5, 4, 3, 3]), w, 1, "SAME")
        assert y.shape.as_list() == [None, 5, 4, 3, 4]


@settings(max_examples=15, deadline=None, derandomize=True)
@given(size=st.integers(1, 6), k=st.integers(1, 3), stride=st.integers(1, 3),
       padding=st.sampled_from(["SAME", "VALID"]))
def test_conv2d_and_conv1d_transpose_match_reference(size, k, stride, padding):
    out_size = size * stride if padding == "SAME" else (size - 1) * stride + k
    dy, w = _normal(2, size, size + 1, 4), _normal(k, k, 3, 4)
    out_w = (size + 1) * stride if padding == "SAME" else size * stride + k
    pads = _pads(padding, [out_size, out_w], [k, k], [stride, stride], [1, 1])
    want = conv_backprop_input_ref(dy, w, (2, out_size, out_w, 3), [stride] * 2, [1, 1], pads)
    _check(lambda a, b: gp.nn.conv2d_transpose(a, b, [2, out_size, out_w, 3], stride, padding),
           want, dy, w)
    dy1, w1 = dy[:, 0], w[0]
    want1 = conv_backprop_input_ref(dy1, w1, (2, out_w, 3), [stride], [1], pads[1:])
    _check(lambda a, b: gp.nn.conv1d_transpose(a, b, [2, out_w, 3], stride, padding),
           want1, dy1, w1)


def test_conv3d_transpose_matches_reference():
    dy, w = _normal(1, 2, 3, 2, 4), _normal(2, 2, 2, 3, 4)
    shape = (1, 4, 6, 4, 3)
    want = conv_backprop_input_ref(dy, w, shape, [2, 2, 2], [1, 1, 1], [(0, 0)] * 3)
    _check(lambda a, b: gp.nn.conv3d_transpose(a, b, list(shape), [1, 2, 2, 2, 1], "VALID"),
           want, dy, w)


@pytest.mark.parametrize("padding", ["SAME", "VALID"])
@pytest.mark.parametrize("rate", [[1, 1], [2, 2], [2, 3]])
def test_depthwise_and_separable_with_rate(padding, rate):
    x, w, p = _normal(2, 9, 8, 3), _normal(3, 2, 3, 2), _normal(1, 1, 6, 4)
    pads = _pads(padding, [9, 8], [3, 2], [1, 1], rate)
    depthwise = depthwise_forward_ref(x, w, [1, 1], rate, pads)
    _check(lambda a, b: gp.nn.depthwise_conv2d(a, b, [1, 1, 1, 1], padding, rate=rate),
           depthwise, x, w)
    _check(lambda a, b, c: gp.nn.separable_conv2d(a, b, c, [1, 1, 1, 1], padding,
                                                  dilations=rate),
           depthwise @ p[0, 0], x, w, p)


def test_depthwise_rate_in_nchw_and_with_strides():
    x, w = _normal(1, 2, 7, 7), _normal(3, 3, 2, 1)
    want = depthwise_forward_ref(x, w, [1, 1], [2, 2], _same_pads([7, 7], [3, 3], [1, 1], [2, 2]),
                                 channels_last=False)
    _check(lambda a, b: gp.nn.depthwise_conv2d(a, b, [1, 1, 1, 1], "SAME", rate=2,
                                               data_format="NCHW"), want, x, w)
    x = x.transpose(0, 2, 3, 1)
    want = depthwise_forward_ref(x, w, [2, 2], [2, 2], _same_pads([7, 7], [3, 3], [2, 2], [2, 2]))
    with pytest.warns(UserWarning, match="all values of strides must be 1"):
        got = gp.nn.depthwise_conv2d(x, w, [1, 2, 2, 1], "SAME", rate=2)
    np.testing.assert_allclose(got, want, atol=1e-10)


def test_atrous_conv2d_and_its_transpose():
    x, w = _normal(2, 7, 8, 3), _normal(3, 3, 3, 2)
    pads = _same_pads([7, 8], [3, 3], [1, 1], [2, 2])
    _check(lambda a, b: gp.nn.atrous_conv2d(a, b, 2, "SAME"),
           conv_forward_ref(x, w, [1, 1], [2, 2], pads), x, w)
    dy, wt = _normal(2, 7, 8, 2), _normal(3, 3, 3, 2)
    want = conv_backprop_input_ref(dy, wt, (2, 7, 8, 3), [1, 1], [2, 2], pads)
    _check(lambda a, b: gp.nn.atrous_conv2d_transpose(a, b, [2, 7, 8, 3], 2, "SAME"),
           want, dy, wt)
    with pytest.raises(ValueError, match="`rate` cannot be less than one. Received: rate=0"):
        gp.nn.atrous_conv2d_transpose(dy, wt, [2, 7, 8, 3], 0, "SAME")


def test_convolution_with_dilation_rate_and_unknown_spatial_dims():
    x, w = _normal(1, 6, 7, 2), _normal(2, 3, 2, 3)
    want = conv_forward_ref(x, w, [1, 1], [2, 1], [(0, 0), (0, 0)])
    _check(lambda a, b: gp.nn.convolution(a, b, "VALID", dilation_rate=[2, 1]), want, x, w)
    with gp.Graph().as_default() as g:
        holder = gp.placeholder(gp.float64, [None, None, None, 2])
        y = gp.nn.convolution(holder, w, "VALID", dilation_rate=[2, 1])
        assert [op.type for op in g.get_operations()][-1] == "Conv2D"  # dilations to the op
        with gp.Session() as sess:
            np.testing.assert_allclose(sess.run(y, {holder: x}), want, atol=1e-10)


def test_conv1d_errors():
    with pytest.raises(ValueError, match="`data_format` must be 'NWC' or 'NCW'. Received: "
                                         "data_format=NHW"):
        gp.nn.conv1d(_normal(1, 4, 2), _normal(2, 2, 2), 1, "SAME", data_format="NHW")
    with pytest.raises(ValueError, match="Cannot specify both 'value' and 'input'"):
        gp.nn.conv1d(_normal(1, 4, 2), _normal(2, 2, 2), 1, "SAME", input=_normal(1, 4, 2))


# ----------------------------------------------------------------------------- losses

def _log_softmax(x, axis=-1):
    shifted = x - x.max(axis=axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))


def test_softmax_cross_entropy_with_logits_values_axis_and_labels_broadcast():
    logits, labels = _normal(2, 4, 3), RNG.dirichlet(np.ones(3), (2, 4))
    want = -(labels * _log_softmax(logits)).sum(-1)
    for fn in (gp.nn.softmax_cross_entropy_with_logits, gp.nn.softmax_cross_entropy_with_logits_v2):
        _check(lambda z, x, f=fn: f(labels=z, logits=x), want, labels, logits)
    moved = -(labels * _log_softmax(logits, 0)).sum(0)
    _check(lambda z, x: gp.nn.softmax_cross_entropy_with_logits_v2(labels=z, logits=x, dim=0),
           moved, labels, logits)
    # labels [2] against logits [1, 2] (issue 14's program), labels [1, C] against [N, C]
    _check(lambda z, x: gp.nn.softmax_cross_entropy_with_logits(labels=z, logits=x),
           -(np.float64([0.3, 0.7]) * _log_softmax(np.float64([[1.0, 2.0]]))).sum(-1),
           np.float64([0.3, 0.7]), np.float64([[1.0, 2.0]]))
    row = labels[:1, 0]
    _check(lambda z, x: gp.nn.softmax_cross_entropy_with_logits(labels=z, logits=x),
           -(row * _log_softmax(logits[0])).sum(-1), row, logits[0])


def test_softmax_cross_entropy_v1_stops_the_gradient_into_labels():
    with gp.Graph().as_default():
        logits, labels = gp.placeholder(gp.float64, [4, 3]), gp.placeholder(gp.float64, [4, 3])
        v1 = gp.nn.softmax_cross_entropy_with_logits(labels=labels, logits=logits)
        v2 = gp.nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits)
        assert gp.gradients(v1, [labels, logits])[0] is None
        assert gp.gradients(v2, labels)[0] is not None
    with pytest.raises(ValueError, match="Both `labels` and `logits` must be provided"):
        gp.nn.softmax_cross_entropy_with_logits(logits=logits)


def test_sparse_softmax_cross_entropy_values_and_errors():
    logits, labels = _normal(2, 3, 4), RNG.integers(0, 4, (2, 3)).astype(np.int32)
    want = -np.take_along_axis(_log_softmax(logits), labels[..., None], -1)[..., 0]
    _check(lambda z, x: gp.nn.sparse_softmax_cross_entropy_with_logits(labels=z, logits=x),
           want, labels, logits)
    _check(lambda z, x: gp.nn.sparse_softmax_cross_entropy_with_logits(labels=z, logits=x),
           want[0], labels[0], logits[0])
    with pytest.raises(ValueError, match=r"`labels.shape.rank` must equal `logits.shape.rank - "
                                         r"1`. Received: labels.shape=\(3,\) of rank 1 and "
                                         r"logits.shape=\(2, 3, 4\) of rank 3"):
        gp.nn.sparse_softmax_cross_entropy_with_logits(labels=labels[0], logits=logits)
    with pytest.raises(ValueError, match=r"`labels.shape` must equal `logits.shape` except for "
                                         r"the last dimension. Received: labels.shape=\(3, 2\)"):
        gp.nn.sparse_softmax_cross_entropy_with_logits(labels=labels.T, logits=logits)


def test_sigmoid_and_weighted_cross_entropy():
    x, z = _normal(4, 3) * 30, RNG.uniform(0, 1, (4, 3))
    want = np.maximum(x, 0) - x * z + np.log1p(np.exp(-np.abs(x)))
    _check(lambda a, b: gp.nn.sigmoid_cross_entropy_with_logits(labels=a, logits=b), want, z, x)
    q = 2.5
    weighted = (1 - z) * x + (1 + (q - 1) * z) * (np.log1p(np.exp(-np.abs(x))) +
                                                   np.maximum(-x, 0))
    _check(lambda a, b: gp.nn.weighted_cross_entropy_with_logits(a, b, q), weighted, z, x)
    _check(lambda a, b: gp.nn.weighted_cross_entropy_with_logits(targets=a, logits=b,
                                                                 pos_weight=q), weighted, z, x)
    with pytest.raises(ValueError, match=r"`logits` and `labels` must have the same shape, "
                                         r"received \(\(4, 3\) vs \(3, 4\)\)\."):
        gp.nn.sigmoid_cross_entropy_with_logits(labels=z.T, logits=x)


def test_l2_loss_and_l2_normalize():
    x = _normal(4, 3)
    _check(gp.nn.l2_loss, np.sum(x * x) / 2, x)
    _check(lambda a: gp.nn.l2_normalize(a, 1),
           x / np.sqrt(np.maximum((x * x).sum(1, keepdims=True), 1e-12)), x)
    _check(lambda a: gp.nn.l2_normalize(a, dim=None, epsilon=100.0), x / 10, x)


# ----------------------------------------------------------------------------- the rest

def test_weighted_moments():
    x, w = _normal(4, 3), RNG.uniform(0, 1, (4, 1))
    mean = (w * x).sum(0) / (w * np.ones_like(x)).sum(0)
    var = (w * (x - mean) ** 2).sum(0) / (w * np.ones_like(x)).sum(0)
    for got, want in zip(gp.nn.weighted_moments(x, [0], w), (mean, var)):
        np.testing.assert_allclose(got, want, rtol=1e-12)
    _check(lambda a, b: gp.nn.weighted_moments(a, [0, 1], b, keep_dims=True)[0],
           np.reshape((w * x).sum() / (w.sum() * 3), (1, 1)), x, w)
    zero = gp.nn.weighted_moments(x, [0], np.zeros((4, 1)))
    assert np.all(np.asarray(zero[0]) == 0) and np.all(np.asarray(zero[1]) == 0)


def test_embedding_lookup():
    params, ids = _normal(10, 3), RNG.integers(0, 10, (2, 5)).astype(np.int32)
    _check(gp.nn.embedding_lookup, params[ids], params, ids)
    _check(lambda p, i: gp.nn.embedding_lookup([p], i), params[ids], params, ids)
    norms = np.linalg.norm(params[ids], axis=-1, keepdims=True)
    _check(lambda p, i: gp.nn.embedding_lookup(p, i, max_norm=1.0),
           params[ids] / np.maximum(norms, 1.0), params, ids)
    mod_shards = [params[i::3] for i in range(3)]           # id i in shard i % 3
    div_shards = [params[0:4], params[4:7], params[7:10]]    # contiguous, the first one longer
    _check(lambda i, *p: gp.nn.embedding_lookup(list(p), i), params[ids], ids, *mod_shards)
    _check(lambda i, *p: gp.nn.embedding_lookup(list(p), i, partition_strategy="div"),
           params[ids], ids, *div_shards)
    with pytest.raises(ValueError, match="Length of params is currently 0"):
        gp.nn.embedding_lookup([], ids)
    with pytest.raises(ValueError, match="Unrecognized partition strategy: sum"):
        gp.nn.embedding_lookup(mod_shards, ids, partition_strategy="sum")


def test_zero_fraction_crelu_and_dense_helpers():
    x = np.float64([[0, 1, 0], [2, 0, 0]])
    _check(gp.nn.zero_fraction, np.float32(4 / 6), x)
    _check(gp.nn.crelu, np.concatenate([np.maximum(x, 0), np.maximum(-x, 0)], -1), x)
    w, b = _normal(3, 2), _normal(2)
    _check(gp.nn.xw_plus_b, x @ w + b, x, w, b)
    _check(gp.nn.relu_layer, np.maximum(x @ w + b, 0), x, w, b)
    _check(gp.nn.sigmoid, 1 / (1 + np.exp(-x)), x)
    _check(gp.nn.tanh, np.tanh(x), x)


def test_top_k_and_in_top_k():
    x = np.float32([[1, 3, 3, 2], [0, -1, 5, 5]])
    values, indices = gp.nn.top_k(x, 3)
    np.testing.assert_array_equal(indices, [[1, 2, 3], [2, 3, 0]])
    np.testing.assert_array_equal(values, [[3, 3, 2], [5, 5, 0]])
    _check(lambda a: gp.nn.top_k(a, 2).indices, np.int32([[1, 2], [2, 3]]), x)
    _check(lambda a, t: gp.nn.in_top_k(a, t, 1), np.array([True, True]), x,
           np.int32([2, 3]))
    np.testing.assert_array_equal(gp.nn.in_top_k(x, np.int64([3, 0]), 2), [False, False])


def test_softmax_over_an_axis_and_its_errors():
    x = _normal(2, 4, 3)
    shifted = np.exp(x - x.max(1, keepdims=True))
    _check(lambda a: gp.nn.softmax(a, axis=1), shifted / shifted.sum(1, keepdims=True), x)
    _check(lambda a: gp.nn.log_softmax(a, dim=-2),
           np.log(shifted / shifted.sum(1, keepdims=True)), x)
    with pytest.raises(gp.errors.InvalidArgumentError,
                       match=r"`dim` must be in the range \[-3, 3\) where 3 is the number of "
                             r"dimensions in the input. Received: dim=5"):
        gp.nn.softmax(x, axis=5)


def test_dropout_v1_arguments():
    x = np.ones((200, 50), np.float32)
    kept = np.asarray(gp.nn.dropout(x, keep_prob=0.25, seed=3))
    assert set(np.unique(kept)) <= {0.0, 4.0} and 0.15 < (kept > 0).mean() < 0.35
    columns = np.asarray(gp.nn.dropout(x, rate=0.5, noise_shape=[1, 50], seed=1))
    assert (columns == columns[:1]).all()
    with pytest.raises(ValueError, match=r"Cannot specify both 'keep_prob' and 'rate'\."):
        gp.nn.dropout(x, keep_prob=0.5, rate=0.5)


def test_dropout_with_a_fed_keep_prob_keeps_the_static_shape_of_x():
    """As TF's: the result has x's static shape whatever the rate's, so a matmul after it
    is a MatMul (Deep MNIST's keep_prob placeholder)."""
    with gp.Graph().as_default():
        x = gp.compat.v1.placeholder(gp.float32, [None, 64])
        keep_prob = gp.compat.v1.placeholder(gp.float32)
        dropped = gp.nn.dropout(x, keep_prob)
        assert dropped.shape.as_list() == [None, 64]
        assert gp.matmul(dropped, np.ones((64, 2), np.float32)).op.type == "MatMul"
        with gp.compat.v1.Session() as sess:
            got = sess.run(dropped, {x: np.ones((3, 64), np.float32), keep_prob: 0.5})
        assert got.shape == (3, 64) and set(np.unique(got)) <= {0.0, 2.0}


@pytest.mark.parametrize("build, shapes", [
    (lambda x, w: gp.nn.depthwise_conv2d(x, w, [1, 1, 1, 1], "SAME", rate=2),
     [(1, 5, 5, 2), (3, 3, 2, 1)]),
    (lambda x, w: gp.nn.conv1d(x, w, 2, "VALID"), [(2, 7, 2), (3, 2, 3)]),
    (lambda x, w: gp.nn.conv2d(x, w, 1, "SAME"), [(2, 2, 3, 3, 2), (2, 2, 2, 2)]),
    (lambda x, w: gp.nn.conv1d_transpose(x, w, [1, 6, 2], 2, "SAME"), [(1, 3, 3), (3, 2, 3)]),
    (lambda z, x: gp.nn.sigmoid_cross_entropy_with_logits(labels=z, logits=x),
     [(3, 2), (3, 2)]),
], ids=["depthwise_rate", "conv1d", "conv2d_folded", "conv1d_transpose", "sigmoid_xent"])
def test_wrapper_gradients(build, shapes):
    values = [RNG.standard_normal(s) for s in shapes]
    with gp.Graph().as_default():
        holders = [gp.placeholder(gp.float64, s) for s in shapes]
        y = build(*holders)
        with gp.Session():
            error = gp.test.compute_gradient_error(holders, shapes, y, y.shape.as_list(),
                                                   x_init_value=values)
    assert error < 1e-6
