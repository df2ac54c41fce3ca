"""TF 2.21's tf.compat.v1 as the oracle for the TF1 array/math wrappers: each call is built
the same way in a TF graph and in a graphops graph (x: a [2, 3] float32 placeholder, i: a
[2] int32 one); the op types, in order, and the fetched values must agree."""

import numpy as np
import pytest

import graphops as gp

tf = pytest.importorskip("tensorflow").compat.v1

X = np.array([[-1.5, 0.0, 2.5], [3.0, -0.5, 1.0]], np.float32)
I = np.array([2, 0], np.int32)

CALLS = {
    "identity": lambda m, x, i: m.identity(x),
    "identity_n": lambda m, x, i: m.identity_n([x, i]),
    "reshape": lambda m, x, i: m.reshape(x, [3, 2]),
    "transpose": lambda m, x, i: m.transpose(x),
    "transpose_perm": lambda m, x, i: m.transpose(x, [1, 0], name="t"),
    "matrix_transpose": lambda m, x, i: m.matrix_transpose(x),
    "concat": lambda m, x, i: m.concat([x, x], 0),
    "concat_one": lambda m, x, i: m.concat([x], 1),
    "stack": lambda m, x, i: m.stack([x, x], axis=2),
    "stack_constants": lambda m, x, i: m.stack([1, 2]),
    "unstack": lambda m, x, i: m.unstack(x),
    "split": lambda m, x, i: m.split(x, 3, 1),
    "split_sizes": lambda m, x, i: m.split(x, [1, 2], 1),
    "squeeze": lambda m, x, i: m.squeeze(m.expand_dims(x, 0)),
    "squeeze_dims": lambda m, x, i: m.squeeze(m.expand_dims(x, dim=1), squeeze_dims=[1]),
    "tile": lambda m, x, i: m.tile(x, [1, 2]),
    "slice": lambda m, x, i: m.slice(x, [0, 1], [1, 2]),
    "strided_slice": lambda m, x, i: m.strided_slice(x, [0, 0], [1, 2]),
    "gather": lambda m, x, i: m.gather(x, i, axis=1),
    "gather_nd": lambda m, x, i: m.gather_nd(x, [[0, 1], [1, 2]]),
    "scatter_nd": lambda m, x, i: m.scatter_nd([[0], [2]], [1.0, 2.0], [3]),
    "one_hot": lambda m, x, i: m.one_hot(i, 3),
    "one_hot_values": lambda m, x, i: m.one_hot(i, 3, on_value=2, off_value=-1, axis=0),
    "where": lambda m, x, i: m.where(m.greater(x, 0.0)),
    "where_select": lambda m, x, i: m.where(m.greater(x, 0.0), x, -x),
    "where_v2": lambda m, x, i: m.where_v2(m.greater(x, 0.0), x, 0.0),
    "shape": lambda m, x, i: m.shape(x),
    "shape_int64": lambda m, x, i: m.shape(x, out_type=m.int64),
    "shape_n": lambda m, x, i: m.shape_n([x, x]),
    "size_rank": lambda m, x, i: [m.size(x), m.rank(x)],
    "zeros": lambda m, x, i: m.zeros([2, 3]),
    "zeros_large": lambda m, x, i: m.zeros([200, 300]),
    "zeros_of_shape": lambda m, x, i: m.zeros(m.shape(x), m.int32),
    "ones": lambda m, x, i: m.ones([2, 3], m.int64),
    "fill": lambda m, x, i: m.fill([2, 3], 1.5),
    "zeros_like": lambda m, x, i: m.zeros_like(x),
    "zeros_like_dtype": lambda m, x, i: m.zeros_like(x, m.int32),
    "ones_like": lambda m, x, i: m.ones_like(x),
    "range": lambda m, x, i: m.range(5),
    "range_float": lambda m, x, i: m.range(1, 5.0, 2),
    "range_dtype": lambda m, x, i: m.range(4, dtype=m.float64),
    "add": lambda m, x, i: m.add(x, 1.0),
    "subtract": lambda m, x, i: m.subtract(x, 1.0),
    "multiply": lambda m, x, i: m.multiply(x, 2.0),
    "divide": lambda m, x, i: m.divide(x, 2.0),
    "divide_named": lambda m, x, i: m.divide(x, 2.0, name="dv"),
    "divide_int": lambda m, x, i: m.divide(i, 2),
    "truediv": lambda m, x, i: m.truediv(i, 2),
    "floordiv": lambda m, x, i: m.floordiv(x, 2.0),
    "mod": lambda m, x, i: m.mod(x, 2.0),
    "floormod": lambda m, x, i: m.floormod(i, 3),
    "realdiv": lambda m, x, i: m.realdiv(x, 2.0),
    "div": lambda m, x, i: m.div(x, 2.0),
    "div_int": lambda m, x, i: m.div(i, 2),
    "negative": lambda m, x, i: m.negative(x),
    "maximum_minimum": lambda m, x, i: [m.maximum(x, 0.0), m.minimum(x, 0.0)],
    "unary": lambda m, x, i: [m.square(x), m.sqrt(m.abs(x)), m.exp(x), m.log1p(m.abs(x)),
                              m.expm1(x), m.sin(x), m.cos(x), m.floor(x), m.ceil(x),
                              m.reciprocal(x + 4.0), m.rsqrt(x + 4.0), m.log(x + 4.0)],
    "sigmoid_tanh": lambda m, x, i: [m.sigmoid(x), m.tanh(x)],
    "round_rint": lambda m, x, i: [m.round(x), m.rint(x)],
    "squared_difference": lambda m, x, i: m.squared_difference(x, 1.0),
    "pow": lambda m, x, i: m.pow(x, 2.0),
    "abs_sign": lambda m, x, i: [m.abs(x), m.sign(x)],
    "clip_by_value": lambda m, x, i: m.clip_by_value(x, 0.0, 1.0),
    "clip_by_norm": lambda m, x, i: m.clip_by_norm(x, 1.0),
    "clip_by_global_norm": lambda m, x, i: m.clip_by_global_norm([x, x], 1.0),
    "global_norm": lambda m, x, i: m.global_norm([x, x]),
    "comparisons": lambda m, x, i: [m.equal(x, 0.0), m.not_equal(x, 0.0), m.less(x, 1.0),
                                    m.less_equal(x, 1.0), m.greater(x, 1.0),
                                    m.greater_equal(x, 1.0)],
    "logical": lambda m, x, i: [m.logical_and(m.less(x, 1.0), m.greater(x, -1.0)),
                                m.logical_or(m.less(x, 1.0), m.greater(x, -1.0)),
                                m.logical_not(m.less(x, 1.0))],
    "logical_xor": lambda m, x, i: m.logical_xor(m.less(x, 1.0), m.greater(x, -1.0)),
    "predicates": lambda m, x, i: [m.is_nan(x), m.is_inf(x), m.is_finite(x)],
    "reduce_logsumexp": lambda m, x, i: m.reduce_logsumexp(x),
    "reduce_logsumexp_axis": lambda m, x, i: m.reduce_logsumexp(x, 1, keepdims=True),
    "reduce_sum_keep_dims": lambda m, x, i: m.reduce_sum(x, reduction_indices=[1],
                                                         keep_dims=True),
    "count_nonzero": lambda m, x, i: m.count_nonzero(x),
    "count_nonzero_axis": lambda m, x, i: m.count_nonzero(x, 1),
    "cumsum": lambda m, x, i: m.cumsum(x, 1),
    "cumprod": lambda m, x, i: m.cumprod(x, exclusive=True, reverse=True),
    "reverse": lambda m, x, i: m.reverse(x, [0]),
    "reverse_v2": lambda m, x, i: m.reverse_v2(x, [1]),
    "boolean_mask": lambda m, x, i: m.boolean_mask(x, [True, False]),
    "sequence_mask": lambda m, x, i: m.sequence_mask([1, 2], 3),
    "sequence_mask_no_maxlen": lambda m, x, i: m.sequence_mask(i),
    "reverse_sequence": lambda m, x, i: m.reverse_sequence(x, [2, 3], seq_axis=1),
    "reverse_sequence_dims": lambda m, x, i: m.reverse_sequence(x, [1, 2, 0], seq_dim=0,
                                                                batch_dim=1),
    "unique": lambda m, x, i: list(m.unique(m.concat([i, i], 0))),
    "broadcast_dynamic_shape": lambda m, x, i: m.broadcast_dynamic_shape(m.shape(x), [4, 1, 1]),
    "broadcast_static_shape": lambda m, x, i: m.constant(
        m.broadcast_static_shape(x.shape, m.TensorShape([4, 1, 1])).as_list()),
    "stop_gradient": lambda m, x, i: m.stop_gradient(x),
    "no_op": lambda m, x, i: m.no_op(),
    "group": lambda m, x, i: m.group(x, i),
    "tuple": lambda m, x, i: m.tuple([m.identity(x), m.identity(i)]),
    "to_casts": lambda m, x, i: [m.to_float(i), m.to_double(i), m.to_int32(x),
                                 m.to_int64(x)],
    "cast": lambda m, x, i: m.cast(x, m.int32),
    "saturate_cast": lambda m, x, i: m.saturate_cast(x * 100.0, m.uint8),
    "placeholder_with_default": lambda m, x, i: m.placeholder_with_default(x, [2, 3]),
    "sparse_to_dense": lambda m, x, i: m.sparse_to_dense([0, 2], [4], 1.0),
    "sparse_to_dense_2d": lambda m, x, i: m.sparse_to_dense([[0, 1], [1, 0]], [2, 2],
                                                            [3, 4], 9),
    "Print": lambda m, x, i: m.Print(x, [x, i], "msg"),
    "print": lambda m, x, i: m.print("x:", x),
    "tensordot": lambda m, x, i: m.tensordot(x, m.transpose(x), 1),
    "tensordot_pairs": lambda m, x, i: m.tensordot(x, x, [[1], [1]]),
    "linspace": lambda m, x, i: m.linspace(0.0, 1.0, 5),
    "linspace_nd": lambda m, x, i: m.linspace(x[0], x[1], 4, axis=-1),
    "sort": lambda m, x, i: m.sort(x),
    "sort_axis0": lambda m, x, i: m.sort(x, axis=0, direction="DESCENDING"),
    "argsort": lambda m, x, i: m.argsort(x),
    "argsort_int": lambda m, x, i: m.argsort(i),
    "broadcast_to": lambda m, x, i: m.broadcast_to(x, [4, 2, 3]),
    "meshgrid": lambda m, x, i: m.meshgrid(i, i),
    "einsum": lambda m, x, i: m.einsum("ij,kj->ik", x, x),
    "matmul": lambda m, x, i: m.matmul(x, x, transpose_b=True),
    "pad": lambda m, x, i: m.pad(x, [[1, 0], [0, 2]]),
    "argmax_argmin": lambda m, x, i: [m.argmax(x), m.argmin(x, dimension=1),
                                      m.argmax(x, 1, output_type=m.int32)],
    "add_n": lambda m, x, i: [m.add_n([x, x, x]), m.add_n([x])],
    "reductions": lambda m, x, i: [m.reduce_mean(x), m.reduce_max(x, 0, keepdims=True),
                                   m.reduce_min(x, axis=[0, 1]), m.reduce_prod(x, 1),
                                   m.reduce_any(m.greater(x, 0.0)),
                                   m.reduce_all(m.greater(x, 0.0), 1, keep_dims=True)],
    "reduce_norm_std_variance": lambda m, x, i: [
        m.math.reduce_euclidean_norm(x), m.math.reduce_euclidean_norm(x, 1, keepdims=True),
        m.math.reduce_std(x), m.math.reduce_variance(x, 0, name="v")],
    "math_namespace": lambda m, x, i: [m.math.log(x + 4.0), m.math.reduce_max(x, 0),
                                       m.math.is_finite(x), m.math.floordiv(i, 2)],
}
# Fetched only for their op types (their result is an op, or random-free but compared
# separately as a Python list with None).
OPS_ONLY = {"no_op", "group", "print"}


def _build(module, graph, call):
    with graph.as_default():
        x = module.placeholder(module.float32, [2, 3], name="x")
        i = module.placeholder(module.int32, [2], name="i")
        out = call(module, x, i)
    return x, i, out


def _fetchable(out):
    if isinstance(out, (list, tuple)):
        return [_fetchable(o) for o in out]
    return out


@pytest.mark.parametrize("case", sorted(CALLS))
def test_same_op_types_and_values_as_tf(case):
    call = CALLS[case]
    tf_graph, gp_graph = tf.Graph(), gp.Graph()
    tf_x, tf_i, tf_out = _build(tf, tf_graph, call)
    gp_x, gp_i, gp_out = _build(gp, gp_graph, call)
    assert [op.type for op in gp_graph.get_operations()] == \
        [op.type for op in tf_graph.get_operations()]
    if case in OPS_ONLY:
        return
    with tf.Session(graph=tf_graph) as sess:
        expected = sess.run(_fetchable(tf_out), {tf_x: X, tf_i: I})
    with gp.Session(graph=gp_graph) as sess:
        actual = sess.run(_fetchable(gp_out), {gp_x: X, gp_i: I})
    flat_expected = expected if isinstance(expected, (list, tuple)) else [expected]
    flat_actual = actual if isinstance(actual, (list, tuple)) else [actual]
    for e, a in zip(_flatten(flat_expected), _flatten(flat_actual)):
        np.testing.assert_allclose(a, e, rtol=1e-6)
        assert np.asarray(a).dtype == np.asarray(e).dtype


def _flatten(values):
    for value in values:
        if isinstance(value, (list, tuple)):
            yield from _flatten(value)
        else:
            yield value


@pytest.mark.parametrize("case", ["add", "divide_named", "concat_one", "clip_by_value",
                                  "clip_by_global_norm", "boolean_mask", "sort", "meshgrid",
                                  "reduce_logsumexp_axis", "sequence_mask", "tuple", "reductions",
                                  "reduce_norm_std_variance",
                                  "saturate_cast", "range_float", "ones_like", "one_hot"])
def test_same_node_names_as_tf(case):
    tf_graph, gp_graph = tf.Graph(), gp.Graph()
    _build(tf, tf_graph, CALLS[case])
    _build(gp, gp_graph, CALLS[case])
    assert [op.name for op in gp_graph.get_operations()] == \
        [op.name for op in tf_graph.get_operations()]


@pytest.mark.parametrize("value, summarize", [
    (np.arange(10), 3), (np.arange(24).reshape(2, 3, 4) * 1.5, 2),
    (np.array([0.1, 1e-5, 123456789.0, np.inf], np.float32), 3), (np.float64(0.1), 3),
    (np.array([True, False]), -1), (np.array([b"a'b", b"c\n"], object), 3),
    (np.zeros((0, 3)), 3), (np.arange(24).reshape(6, 4), 2),
])
def test_string_format_matches_tf(value, summarize):
    import tensorflow  # noqa: PLC0415
    expected = tensorflow.strings.format("{}", [value], summarize=summarize).numpy()
    actual = gp.raw_ops.StringFormat(inputs=[value], template="{}", placeholder="{}",
                                     summarize=summarize)
    assert actual.item() == expected


def test_clip_and_sparse_errors_match_tf():
    import tensorflow  # noqa: PLC0415
    cases = [
        lambda m: m.raw_ops.ClipByValue(t=X, clip_value_min=np.float32([0, 1]),
                                        clip_value_max=np.float32(1)),
        lambda m: m.raw_ops.SparseToDense(sparse_indices=np.int32([[2], [0]]),
                                          output_shape=np.int32([3]),
                                          sparse_values=np.float32(1),
                                          default_value=np.float32(0)),
        lambda m: m.raw_ops.FloorDiv(x=I, y=np.int32([0, 1])),
    ]
    for call in cases:
        with pytest.raises(tensorflow.errors.InvalidArgumentError) as tf_error:
            call(tensorflow)
        with pytest.raises(gp.errors.InvalidArgumentError) as gp_error:
            call(gp)
        assert gp_error.value.message.split(" [Op:")[0].endswith(
            tf_error.value.message.split("}} ")[-1].split(" [Op:")[0])


@pytest.mark.parametrize("args", [
    ("a", "x"), (["x", "s", 1], {"b": "x", "a": 2.5}), ("{}", "x"), (np.arange(3), "x")],
    ids=["plain", "nested", "placeholder_clash", "array"])
def test_print_template_matches_tf(args):
    templates = []
    for module in (tf, gp):
        with module.Graph().as_default():
            x = module.placeholder(module.float32, [2], name="x")

            def place(value):
                if isinstance(value, list):
                    return [place(v) for v in value]
                if isinstance(value, dict):
                    return {k: place(v) for k, v in value.items()}
                return x if isinstance(value, str) and value == "x" else value

            fmt = module.print(*[place(a) for a in args]).inputs[0].op
            template, placeholder = fmt.get_attr("template"), fmt.get_attr("placeholder")
            as_text = [v.decode() if isinstance(v, bytes) else v for v in (template,
                                                                          placeholder)]
            templates.append((*as_text, len(fmt.inputs)))
    assert templates[1] == templates[0]
