"""Elementwise chains fused when a plan is built (graphops/runtime/fusion.py): which chains
fuse, that a fused chain gives the unfused graph's bits (NaN, infinities and -0 included),
and that nothing TF's semantics promise (fetches, feeds, control edges, errors) changes."""

import numpy as np
import pytest

import graphops as gp
from graphops.runtime import elementwise_clusters, fusion
from graphops.runtime.fusion import CHAIN_MIN_SIZE
from graphops.kernels.conv_algorithms import dense as conv_dense
from graphops.kernels.ops import conv as conv_kernels
from graphops.kernels.support.kernel_util import (PARALLEL_MIN_SIZE, PARALLEL_MIN_SIZE_COMPUTE,
                                                  STREAMING_MIN_SIZE)
from tests.kernels.test_kernel_repeats_more import compiled_sigmoid
from tests.op_runners import plan_kernel_steps


@pytest.fixture(autouse=True)
def graph():
    """A default graph; the nodes no chain takes stay steps of their own (the clusters
    they would form are test_elementwise_clusters.py's), and a chain takes its fused pass
    at any size (``CHAIN_MIN_SIZE`` is the small-and-large test's)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(elementwise_clusters, "find_clusters", lambda fusion: {})
        patch.setattr(fusion, "CHAIN_MIN_SIZE", 0)
        g = gp.Graph()
        with g.as_default():
            yield g


def _step_types(fetches, feeds=()):
    return [step.op.type for step in plan_kernel_steps(fetches, feeds)]


def _kernel_types(fetches, feeds=()):
    return [type(step.kernel).__name__ for step in plan_kernel_steps(fetches, feeds)]


def _run(fetches, feed, fused=True, monkeypatch=None):
    """The fetches' values from a new Session, with fusion on or off."""
    if not fused:
        monkeypatch.setattr(fusion, "fuse_chains", lambda *args: {})
    try:
        with gp.Session() as sess:
            return sess.run(fetches, feed)
    finally:
        monkeypatch.undo() if not fused else None


def _assert_same_bits_as_unfused(fetches, feed, monkeypatch):
    """The fetches' values with fusion are those without, bit for bit (NaN signs too)."""
    with np.errstate(invalid="ignore"):
        fused = _run(fetches, feed)
        plain = _run(fetches, feed, fused=False, monkeypatch=monkeypatch)
    for got, want in zip(fused, plain):
        _assert_same_bits(got, want)


def _assert_same_bits(got, want):
    """Equal values, NaN signs too."""
    np.testing.assert_array_equal(got, want)
    assert np.array_equal(np.signbit(got), np.signbit(want))


def _hostile(rng, shape, dtype):
    """Values with NaN, infinities, -0 and values past Relu6's 6."""
    x = (rng.standard_normal(shape) * 8).astype(dtype)
    flat = x.reshape(-1)
    flat[::13], flat[5::17], flat[7::19], flat[3::23] = np.nan, np.inf, -np.inf, -0.0
    return x


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("size", [64, STREAMING_MIN_SIZE])   # NumPy, then the compiled pass
def test_conv_bias_relu_fuses_into_one_step_with_the_same_bits(dtype, size, monkeypatch):
    rng = np.random.default_rng(0)
    images = size // (8 * 8 * 16) or 1
    x = gp.placeholder(dtype, [None, 8, 8, 3])
    w = gp.constant(rng.standard_normal((3, 3, 3, 16)).astype(dtype))
    y = gp.nn.conv2d(x, w, [1, 1, 1, 1], "SAME")
    out = gp.nn.relu(gp.nn.bias_add(y, gp.constant(rng.standard_normal(16).astype(dtype))))
    # float32: the conv takes the BiasAdd and Relu as its epilogue, one step in all
    assert _step_types([out], [x]) == (["Relu"] if dtype == np.float32 else ["Conv2D", "Relu"])
    feed = {x: _hostile(rng, (images, 8, 8, 3), dtype)}
    with np.errstate(invalid="ignore"):
        fused = _run(out, feed)
        plain = _run(out, feed, fused=False, monkeypatch=monkeypatch)
    np.testing.assert_array_equal(fused, plain)
    assert np.array_equal(np.signbit(fused), np.signbit(plain))


@pytest.mark.parametrize("activation", [gp.nn.relu, gp.nn.relu6, None])
# NumPy, then the compiled pass on one thread and on all
@pytest.mark.parametrize("size", [96, STREAMING_MIN_SIZE, PARALLEL_MIN_SIZE * 3 // 2])
def test_batch_norm_arithmetic_and_activation_fuse_bit_for_bit(activation, size, monkeypatch):
    """x * scale + shift (a frozen batch norm: Mul, AddV2) then Relu/Relu6, on values with
    NaN, infinities and -0; a scalar or a [1, 1, 1, C] constant; Sub of a constant, two
    sums, a sum then a product."""
    rng = np.random.default_rng(1)
    x = gp.placeholder(gp.float32, [None, 4, 4, 6])
    scale = gp.constant(rng.standard_normal((1, 1, 1, 6)).astype(np.float32))
    shifted = x * scale + gp.constant(rng.standard_normal(6).astype(np.float32))
    minus = gp.constant(np.float32(0.25)) * x - gp.constant(np.float32([1, -2, 0, 3, -0.0, 9]))
    vector = gp.constant(rng.standard_normal(6).astype(np.float32))
    twice = gp.nn.bias_add(x, vector) + gp.constant(np.float32(-1.5))   # ResNet's, folded
    reordered = (x + vector) * scale
    chains = [shifted, minus, twice, reordered]
    outs = chains if activation is None else [activation(c) for c in chains]
    types = _step_types(outs, [x])
    assert len(types) == 4                             # one step a chain: its last node
    feed = {x: _hostile(rng, (size // 96, 4, 4, 6), np.float32)}
    _assert_same_bits_as_unfused(outs, feed, monkeypatch)


def test_a_chain_reads_through_a_batch_norm_scale_folded_into_the_conv(monkeypatch):
    """A frozen ResNet block: Conv2D, BiasAdd, Mul (folded into the filter and bias), AddV2,
    Relu: the conv with its scaled filter, the BiasAdd with its scaled bias, the shift and
    the Relu run as one step; with the Mul fetched, the conv and BiasAdd run as one, the
    shift and the Relu as another."""
    rng = np.random.default_rng(4)
    x = gp.placeholder(gp.float32, [None, 6, 6, 3])
    w = gp.constant(rng.standard_normal((3, 3, 3, 8)).astype(np.float32))
    conv = gp.nn.conv2d(x, w, [1, 1, 1, 1], "SAME")
    biased = gp.nn.bias_add(conv, gp.constant(rng.standard_normal(8).astype(np.float32)))
    scaled = biased * gp.constant(rng.standard_normal(8).astype(np.float32))
    out = gp.nn.relu(scaled + gp.constant(rng.standard_normal(8).astype(np.float32)))
    assert _step_types([out], [x]) == ["Relu"]
    assert _kernel_types([out], [x]) == ["ConvChain"]
    assert _step_types([out, scaled], [x]) == ["BiasAdd", "Relu"]     # Mul fetched
    assert _kernel_types([out, scaled], [x]) == ["ConvChain", "Chain"]
    feed = {x: _hostile(rng, (2, 6, 6, 3), np.float32)}
    _assert_same_bits_as_unfused([out, scaled], feed, monkeypatch)
    _assert_same_bits_as_unfused([out], feed, monkeypatch)


def test_chains_that_must_not_fuse(monkeypatch):
    rng = np.random.default_rng(2)
    x = gp.placeholder(gp.float32, [2, 3, 3, 4])
    c = gp.constant(rng.standard_normal(4).astype(np.float32))
    biased = gp.nn.bias_add(x, c)
    relu = gp.nn.relu(biased)
    assert _step_types([relu, biased], [x]) == ["BiasAdd", "Relu"]      # fetched inside
    assert _step_types([relu], [x, biased]) == ["Relu"]                 # fed inside
    also = gp.nn.relu(biased) + gp.nn.relu6(biased)                    # two readers
    assert _step_types([also], [x]).count("BiasAdd") == 1
    spatial = gp.nn.relu(x * gp.constant(rng.standard_normal((3, 1, 1)).astype(np.float32)))
    assert "Mul" in _step_types([spatial], [x])                          # not per channel
    wide = gp.nn.relu(gp.placeholder(gp.float32, [5, 1]) + c)           # broadcasts x larger
    assert "AddV2" in _step_types([wide], [wide.op.inputs[0].op.inputs[0]])
    unknown = gp.placeholder(gp.float32, [2, None])
    assert "AddV2" in _step_types([gp.nn.relu(unknown + c)], [unknown])  # last dim unknown
    half = gp.placeholder(gp.float16, [2, 4])
    assert "AddV2" in _step_types([gp.nn.relu(half + gp.cast(c, gp.float16))], [half])
    long = (((x * c + c) * c) + c) * c                                  # 5 stages: 3 + 2
    assert _step_types([long], [x]) == ["Mul", "Mul"]
    flipped = gp.nn.relu(c - x)                                         # not x minus constant
    assert "Sub" in _step_types([flipped], [x])
    nchw = gp.nn.relu(gp.nn.bias_add(gp.placeholder(gp.float32, [2, 4, 3, 3]), c,
                                     data_format="NCHW"))
    assert "BiasAdd" in _step_types([nchw], [nchw.op.inputs[0].op.inputs[0]])
    with gp.control_dependencies([biased.op]):
        waits = gp.identity(x)
    assert _step_types([relu, waits], [x]).count("BiasAdd") == 1         # a control edge


def test_a_value_the_plan_did_not_expect_runs_the_nodes_own_kernels(monkeypatch):
    """The fused step checks its source's value: a shape that ``set_shape`` promised wrongly,
    a BiasAdd whose bias does not match, a value over the memory budget the binary ops
    check: the nodes' kernels then run one by one, with their results and their errors,
    each naming its node."""
    y = gp.placeholder(gp.float32, None, name="y")
    x = gp.identity(y)
    x.set_shape([None, 4])                                  # a promise the feed breaks
    out = gp.nn.relu(x * gp.constant(np.float32([1, 2, 3, 4]), name="c") + 1.0)
    assert len(_step_types([out], [y])) == 1                # the chain (Identity: no step)
    with gp.Session() as sess:
        np.testing.assert_array_equal(sess.run(out, {y: np.ones((2, 1), np.float32)}),
                                      [[2, 3, 4, 5]] * 2)
        with pytest.raises(gp.errors.InvalidArgumentError, match="Incompatible shapes") as err:
            sess.run(out, {y: np.ones((2, 3), np.float32)})
        assert err.value.op.type == "Mul"
        with gp.config.memory_budget(1 << 16), \
                pytest.raises(gp.errors.ResourceExhaustedError, match="OOM") as err:
            sess.run(out, {y: np.ones((1 << 13, 4), np.float32)})
        assert err.value.op.type == "Mul"
    one = gp.identity(y)
    one.set_shape([None, 1])                                 # as wrong, for a 1-element bias
    bias = gp.nn.bias_add(one, gp.constant(np.float32([1.5])), name="bias")
    assert _step_types([gp.nn.relu(bias) * 2.0], [y]) == ["Relu", "Mul"]
    with gp.Session() as sess:
        with pytest.raises(gp.errors.InvalidArgumentError,
                           match="Must provide as many biases") as err:
            sess.run(gp.nn.relu(bias) * 2.0, {y: np.ones((2, 4), np.float32)})
        assert err.value.op.name == "bias"


def test_run_time_operands_of_known_shape_fuse_too(monkeypatch):
    """A bias read from a variable (TF1 programs: conv or matmul, then BiasAdd or + b, then
    Relu) and a fed per-channel vector take part as run-time operands; x * x does not pass
    its own value as an operand; an operand whose promised shape breaks runs the kernels."""
    rng = np.random.default_rng(5)
    x = gp.placeholder(gp.float32, [None, 6])
    w = gp.Variable(rng.standard_normal((6, 4)).astype(np.float32))
    b = gp.Variable(rng.standard_normal(4).astype(np.float32))
    s = gp.placeholder(gp.float32, [4])
    dense = gp.matmul(x, w)
    out = gp.nn.relu6(gp.nn.relu(dense + b) * s)            # two chains: relu ends one
    square = gp.nn.relu(dense * dense + 1.0)
    init = gp.global_variables_initializer()
    types = _step_types([out, square], [x, s])
    assert "AddV2" not in types and types.count("Mul") == 1  # dense * dense stays a step
    feed = {x: _hostile(rng, (1 << 14, 6), np.float32), s: np.float32([1, -2, 0.5, np.nan])}
    with np.errstate(invalid="ignore"):
        with gp.Session() as sess:
            sess.run(init)
            fused = sess.run([out, square], feed)
        monkeypatch.setattr(fusion, "fuse_chains", lambda *args: {})
        with gp.Session() as sess:
            sess.run(init)
            plain = sess.run([out, square], feed)
        monkeypatch.undo()
    for got, want in zip(fused, plain):
        np.testing.assert_array_equal(got, want)
    bias = gp.identity(gp.placeholder(gp.float32, None, name="raw"))
    bias.set_shape([6])                                      # a promise the feed breaks
    out = gp.nn.relu(gp.nn.bias_add(x, bias, name="bias"))
    assert _step_types([out], [x, bias.op.inputs[0]]) == ["Relu"]       # Identity: no step
    with gp.Session() as sess:
        with pytest.raises(gp.errors.InvalidArgumentError,
                           match="Must provide as many biases") as err:
            sess.run(out, {x: np.ones((2, 6), np.float32), "raw:0": np.ones(3, np.float32)})
        assert err.value.op.name == "bias"


def test_a_small_chain_runs_its_nodes_and_a_large_one_the_fused_pass(monkeypatch):
    """Below ``CHAIN_MIN_SIZE`` values x goes through the nodes' prepared calls, from it
    through the fused pass: relu(x + a variable's bias) both ways, each way kept."""
    monkeypatch.setattr(fusion, "CHAIN_MIN_SIZE", CHAIN_MIN_SIZE)
    rng = np.random.default_rng(8)
    x = gp.placeholder(gp.float32, [None, 16])
    b = gp.Variable(rng.standard_normal(16).astype(np.float32))
    out = gp.nn.relu(x + b)
    assert _step_types([out], [x]) == ["ReadVariableOp", "Relu"]     # the chain: Relu's
    passes = []
    monkeypatch.setattr(fusion, "channel_chain",
                        lambda *args, chain=fusion.channel_chain, **kw:
                        passes.append(args[0].size) or chain(*args, **kw))
    below, at = (rng.standard_normal((rows, 16)).astype(np.float32)
                 for rows in (CHAIN_MIN_SIZE // 16 - 1, CHAIN_MIN_SIZE // 16))
    with gp.Session() as sess:
        sess.run(b.initializer)
        bias = sess.run(b)
        for value in (below, at, below, at):
            np.testing.assert_array_equal(sess.run(out, {x: value}),
                                          np.maximum(value + bias, 0))
    assert passes == [CHAIN_MIN_SIZE] * 2


def test_a_node_joins_one_chain_at_most(monkeypatch):
    """B = c1 + a, both run-time tensors: B ends the first chain (three stages), so the
    chain through a stops before it; every value is the unfused plan's."""
    x, z = gp.placeholder(gp.float32, [3]), gp.placeholder(gp.float32, [3])
    c1 = x * 2.0 + 1.0
    b = c1 + z * 3.0
    d = b * 5.0
    both = gp.nn.relu(x * 2.0 + z * 3.0)                     # two chains ending at one node
    feed = {x: np.float32([1, -2, 3]), z: np.float32([4, 5, -6])}
    fused = _run([d, both], feed)
    plain = _run([d, both], feed, fused=False, monkeypatch=monkeypatch)
    for got, want in zip(fused, plain):
        np.testing.assert_array_equal(got, want)


def test_a_nan_constant_subtracted_keeps_its_sign(monkeypatch):
    x = gp.placeholder(gp.float32, [None, 4])
    out = gp.nn.relu(x - gp.constant(np.float32([np.nan, 1, 2, 3])))
    assert _step_types([out], [x]) == ["Relu"]
    for size in (8, STREAMING_MIN_SIZE):
        feed = {x: np.ones((size, 4), np.float32)}
        fused = _run(out, feed)
        plain = _run(out, feed, fused=False, monkeypatch=monkeypatch)
        np.testing.assert_array_equal(fused.view(np.uint32), plain.view(np.uint32))


def test_a_constant_longer_than_a_chunk_is_not_fused():
    from graphops.kernels.support.kernel_util import CHAIN_CHUNK
    x = gp.placeholder(gp.float32, [CHAIN_CHUNK + 1])
    vector = gp.constant(np.ones(CHAIN_CHUNK + 1, np.float32))
    assert "Mul" in _step_types([gp.nn.relu(x * vector)], [x])


@pytest.mark.parametrize("activation", [gp.nn.relu, gp.nn.relu6])
@pytest.mark.parametrize("size", [96, STREAMING_MIN_SIZE, PARALLEL_MIN_SIZE * 3 // 2])
def test_residual_sum_and_activation_fuse_bit_for_bit(activation, size, monkeypatch):
    """relu(a + b) of two run-time tensors (a residual block's AddV2, or Add) runs as one
    step with the kernels' bits, NaN, infinities and -0 included."""
    rng = np.random.default_rng(5)
    a = gp.placeholder(gp.float32, [None, 4, 4, 6])
    b = gp.placeholder(gp.float32, [None, 4, 4, 6])
    outs = [activation(a + b), activation(gp.add(b, a)), activation(a + a)]
    assert _kernel_types(outs, [a, b]) == ["SumActivation"] * 3
    first = _hostile(rng, (size // 96, 4, 4, 6), np.float32)
    second = np.roll(_hostile(rng, first.shape, np.float32), 1)   # NaNs meet no NaN
    feed = {a: first, b: second}
    _assert_same_bits_as_unfused(outs, feed, monkeypatch)


def test_sums_that_must_not_fuse_or_do_not_match_at_run_time(monkeypatch):
    a = gp.placeholder(gp.float32, [None, 4])
    b = gp.placeholder(gp.float32, [None, 4])
    total = a + b
    out = gp.nn.relu(total)
    assert "SumActivation" in _kernel_types([out], [a, b])
    assert "SumActivation" not in _kernel_types([out, total], [a, b])       # sum fetched
    assert "SumActivation" not in _kernel_types([out], [a, b, total])       # sum fed
    assert "SumActivation" not in _kernel_types([out, total * 2.0], [a, b])  # two readers
    wide = gp.placeholder(gp.float32, [None, 1, 4])
    assert "SumActivation" not in _kernel_types([gp.nn.relu(a + wide)], [a, wide])   # ranks
    rows = np.linspace(-3, 3, (1 << 15) * 4, dtype=np.float32).reshape(-1, 4)
    with gp.Session() as sess:                        # b broadcasts at run time: the kernels
        np.testing.assert_array_equal(sess.run(out, {a: rows, b: rows[:1]}),
                                      np.maximum(rows + rows[:1], 0))
        with pytest.raises(gp.errors.InvalidArgumentError, match="Incompatible shapes"):
            sess.run(out, {a: rows, b: rows[:3]})


# the kernels, then the compiled pass on 1 and on all threads
@pytest.mark.parametrize("size", [64 * 6, 6 << 13, PARALLEL_MIN_SIZE_COMPUTE + 6])
def test_swish_fuses_into_one_step_with_the_same_bits(size, monkeypatch):
    """x * sigmoid(x), sigmoid(x) * x and Keras's x * sigmoid(beta * x) (EfficientNet's
    activation, beta 1) run as one step with the kernels' bits at every size: the float32
    sigmoid of the float32 beta * x (the Sigmoid kernel's compiled pass), then the float32
    product."""
    rng = np.random.default_rng(4)
    x = gp.placeholder(gp.float32, [None, 6], name="x")
    keras = x * gp.sigmoid(x * gp.constant(np.float32(1)))
    scaled = gp.sigmoid(gp.constant(np.float32([[1.5]])) * x) * x
    outs = [x * gp.sigmoid(x), gp.sigmoid(x) * x, keras, scaled]
    assert _step_types(outs, [x]) == ["Mul"] * 4
    values = _hostile(rng, (size // 6, 6), np.float32)
    flat = values.reshape(-1)
    flat[1::29] = rng.uniform(-100, 100, flat[1::29].size)   # saturating, subnormal sigmoids
    swishes = [step.kernel for step in plan_kernel_steps(outs, [x])
               if isinstance(step.kernel, fusion.Swish)]
    assert len(swishes) == 4 and all(swish.accepts([values]) for swish in swishes)
    with np.errstate(invalid="ignore", over="ignore"):
        fused = _run(outs, {x: values})
        plain = _run(outs, {x: values}, fused=False, monkeypatch=monkeypatch)
        wants = [values * compiled_sigmoid(values * np.float32(beta))
                 for beta in (1, 1, 1, 1.5)]
    for got, unfused, want in zip(fused, plain, wants):
        np.testing.assert_array_equal(got, unfused)
        np.testing.assert_array_equal(got, want)
        assert np.array_equal(np.signbit(got), np.signbit(unfused))


def test_swishes_that_must_not_fuse():
    x, y = gp.placeholder(gp.float32, [None, 4]), gp.placeholder(gp.float32, [None, 4])
    s = gp.sigmoid(x)
    assert _step_types([y * s], [x, y]) == ["Sigmoid", "Mul"]          # not x's product
    assert _step_types([x * s, s], [x]) == ["Sigmoid", "Mul"]          # sigmoid fetched
    assert _step_types([x * s], [x, s]) == ["Mul"]                      # sigmoid fed
    twice = gp.sigmoid(x)
    assert _step_types([x * twice + twice], [x]).count("Sigmoid") == 1   # two readers
    vector = gp.constant(np.float32([1, 2, 3, 4]))
    assert _step_types([x * gp.sigmoid(x * vector)], [x]).count("Mul") == 2   # beta a vector
    beta_x = x * 2.0
    assert _step_types([x * gp.sigmoid(beta_x), beta_x], [x]).count("Mul") == 2   # fetched
    wide = gp.placeholder(gp.float64, [None, 4])
    assert _step_types([wide * gp.sigmoid(wide)], [wide]) == ["Sigmoid", "Mul"]
    loss = gp.reduce_sum(x * s)                       # training: SigmoidGrad reads it too
    assert "Sigmoid" in _step_types(gp.gradients(loss, [x]), [x])


def test_a_fused_chain_keeps_its_kernels_errors_and_node_names():
    """A BiasAdd whose bias does not match the channels still fails at run time with TF's
    message, naming the node (the constant's size is checked before fusing)."""
    x = gp.placeholder(gp.float32, [None, None], name="x")
    out = gp.nn.relu(gp.nn.bias_add(x, gp.constant(np.float32([1, 2, 3])), name="bias"))
    with gp.Session() as sess:
        with pytest.raises(gp.errors.InvalidArgumentError, match="Must provide as many biases"):
            sess.run(out, {x: np.ones((2, 4), np.float32)})


def test_training_step_with_fused_chains_trains_as_without(monkeypatch):
    """Conv, BiasAdd, Relu and their gradients (ReluGrad reads the fused Relu's output)
    through a few Adam steps: the same losses and weights, bit for bit."""
    def train(fused):
        if not fused:
            monkeypatch.setattr(fusion, "fuse_chains", lambda *args: {})
        rng = np.random.default_rng(3)
        g = gp.Graph()
        with g.as_default():
            x = gp.placeholder(gp.float32, [None, 6, 6, 2])
            w = gp.Variable(rng.standard_normal((3, 3, 2, 4)).astype(np.float32))
            b = gp.Variable(np.full(4, 0.1, np.float32))
            h = gp.nn.relu(gp.nn.bias_add(gp.nn.conv2d(x, w, [1, 1, 1, 1], "SAME"), b))
            loss = gp.reduce_mean(gp.square(h - 1.0))
            step = gp.train.AdamOptimizer(0.05).minimize(loss)
            init = gp.global_variables_initializer()
        with gp.Session(graph=g) as sess:
            sess.run(init)
            feed = {x: rng.standard_normal((3, 6, 6, 2)).astype(np.float32)}
            losses = [sess.run([loss, step], feed)[0] for _ in range(4)]
            result = losses, sess.run(w)
        monkeypatch.undo()
        return result

    g = gp.Graph()
    with g.as_default():
        x = gp.placeholder(gp.float32, [None, 6, 6, 2])
        w = gp.Variable(np.ones((3, 3, 2, 4), np.float32))
        h = gp.nn.relu(gp.nn.bias_add(gp.nn.conv2d(x, w, [1, 1, 1, 1], "SAME"),
                                      gp.Variable(np.zeros(4, np.float32))))
        assert "BiasAdd" not in _step_types([h], [x])         # a variable's bias fuses
    (fused_losses, fused_w), (plain_losses, plain_w) = train(True), train(False)
    assert fused_losses == plain_losses
    np.testing.assert_array_equal(fused_w, plain_w)


CONV_CASES = {   # name: (x shape, filter shape, stride, whether the loops apply the epilogue)
    "few channels, 3-D": ((2, 6, 6, 6, 1), (3, 3, 3, 1, 8), 1, True),
    "direct micro-kernels": ((2, 8, 8, 3), (3, 3, 3, 16), 1, True),
    "direct, strided 3-D": ((2, 8, 8, 8, 8), (3, 3, 3, 8, 16), 2, True),
    "Winograd": ((4, 16, 16, 16), (3, 3, 16, 20), 1, False),
    "patch matrices": ((2, 9, 9, 3), (3, 3, 3, 20), 2, False),
    "two groups": ((2, 8, 8, 8), (3, 3, 4, 16), 1, False),
}


def _with_variables(fetches, feed, fused, monkeypatch):
    """The fetches' values from a new Session that first initializes the variables, with
    fusion on or off."""
    with monkeypatch.context() as patch:
        if not fused:
            patch.setattr(fusion, "fuse_chains", lambda *args: {})
        with gp.Session() as sess, np.errstate(invalid="ignore"):
            sess.run(gp.global_variables_initializer())
            return sess.run(fetches, feed)


@pytest.mark.parametrize("case", sorted(CONV_CASES))
@pytest.mark.parametrize("activation", [gp.nn.relu, gp.nn.relu6])
def test_a_conv_takes_its_bias_and_activation_as_an_epilogue_bit_for_bit(case, activation,
                                                                        monkeypatch):
    """Conv2D/Conv3D + BiasAdd (a variable's value, read at run time) + Relu/Relu6 run as
    one step on every path of the conv (the few-channel and direct loops apply the
    epilogue as they write, the others after), with the unfused graph's bits on values
    with NaN, infinities and -0."""
    x_shape, w_shape, stride, in_loops = CONV_CASES[case]
    rng = np.random.default_rng(5)
    rank = len(x_shape) - 2
    x = gp.placeholder(gp.float32, [None, *x_shape[1:]])
    w = gp.constant(rng.standard_normal(w_shape).astype(np.float32))
    bias = gp.Variable(rng.standard_normal(w_shape[-1]).astype(np.float32))
    conv = gp.nn.conv2d if rank == 2 else gp.nn.conv3d
    out = activation(gp.nn.bias_add(conv(x, w, [1, *[stride] * rank, 1], "SAME"),
                                    bias.value()))
    steps = plan_kernel_steps([out], [x])
    assert [type(step.kernel) for step in steps if step.op is out.op] == [fusion.ConvChain]
    assert not any(step.op.type.startswith("Conv") for step in steps)
    feed = {x: _hostile(rng, x_shape, np.float32)}
    after = []                        # epilogues applied after the conv rather than in it
    for module in (conv_dense, conv_kernels):
        monkeypatch.setattr(module, "channel_chain",
                            lambda *a, chain=module.channel_chain, **kw:
                            after.append(1) or chain(*a, **kw))
    fused = _with_variables(out, feed, True, monkeypatch)
    assert len(after) == (not in_loops)
    _assert_same_bits(fused, _with_variables(out, feed, False, monkeypatch))


TRANSPOSED_CASES = {   # name: (dy shape, filter shape [*K, C, O], stride, output shape)
    "2-D, stride 2": ((2, 4, 4, 6), (3, 3, 5, 6), 2, (2, 8, 8, 5)),
    "2-D, stride 1, direct": ((2, 6, 6, 8), (3, 3, 16, 8), 1, (2, 6, 6, 16)),
    "3-D, stride 2": ((1, 3, 4, 4, 4), (3, 3, 3, 8, 4), 2, (1, 6, 8, 8, 8)),
    "3-D, stride 2, one dy channel": ((1, 3, 4, 4, 1), (2, 2, 2, 3, 1), 2, (1, 6, 8, 8, 3)),
}


@pytest.mark.parametrize("case", sorted(TRANSPOSED_CASES))
@pytest.mark.parametrize("activation", [gp.nn.relu, gp.nn.relu6])
def test_a_transposed_conv_takes_its_bias_and_activation_as_an_epilogue_bit_for_bit(
        case, activation, monkeypatch):
    """conv2d_transpose / conv3d_transpose (Conv2DBackpropInput, Conv3DBackpropInputV2) +
    BiasAdd + Relu/Relu6 run as one step, with the unfused graph's bits on values with NaN,
    infinities and -0; an empty dy gives the activation of the bias alone."""
    dy_shape, w_shape, stride, out_shape = TRANSPOSED_CASES[case]
    rng = np.random.default_rng(11)
    rank = len(dy_shape) - 2
    dy = gp.placeholder(gp.float32, [None, *dy_shape[1:]])
    w = gp.constant(rng.standard_normal(w_shape).astype(np.float32))
    bias = gp.Variable(rng.standard_normal(w_shape[-2]).astype(np.float32))
    transpose = gp.nn.conv2d_transpose if rank == 2 else gp.nn.conv3d_transpose
    sizes = gp.concat([gp.shape(dy)[:1], gp.constant(out_shape[1:])], 0)
    out = activation(gp.nn.bias_add(transpose(dy, w, sizes, [1, *[stride] * rank, 1], "SAME"),
                                    bias.value()))
    steps = plan_kernel_steps([out], [dy])
    assert [type(step.kernel) for step in steps if step.op is out.op] == [fusion.ConvChain]
    assert not any(step.op.type.startswith("Conv") for step in steps)
    for feed in ({dy: _hostile(rng, dy_shape, np.float32)},
                 {dy: np.zeros((0, *dy_shape[1:]), np.float32)}):
        _assert_same_bits(_with_variables(out, feed, True, monkeypatch),
                          _with_variables(out, feed, False, monkeypatch))


def test_transposed_convs_that_keep_their_bias_add_apart(monkeypatch):
    """NCHW, and Conv2DBackpropInput's [H, W] input_sizes (its output's shape not whole
    before it runs: the nodes' own kernels run), give the unfused graph's values."""
    rng = np.random.default_rng(12)
    dy = gp.placeholder(gp.float32, [2, 6, 4, 4])
    w = gp.constant(rng.standard_normal((3, 3, 5, 6)).astype(np.float32))
    bias = gp.constant(rng.standard_normal(5).astype(np.float32))
    nchw = gp.nn.relu(gp.nn.bias_add(gp.nn.conv2d_transpose(
        dy, w, [2, 5, 8, 8], [1, 1, 2, 2], "SAME", data_format="NCHW"), bias,
        data_format="NCHW"))
    assert "BiasAdd" in _step_types([nchw], [dy])
    dy_last = gp.placeholder(gp.float32, [2, 4, 4, 6])
    height_width = gp.nn.relu(gp.nn.bias_add(gp.raw_ops.Conv2DBackpropInput(
        input_sizes=gp.placeholder_with_default(np.array([8, 8], np.int32), [2]), filter=w,
        out_backprop=dy_last, strides=[1, 2, 2, 1], padding="SAME"), bias))
    feed = {dy: rng.standard_normal((2, 6, 4, 4)).astype(np.float32),
            dy_last: rng.standard_normal((2, 4, 4, 6)).astype(np.float32)}
    _assert_same_bits_as_unfused([nchw, height_width], feed, monkeypatch)


@pytest.mark.parametrize("scaled", [False, True])
@pytest.mark.parametrize("layer", ["conv 3x3", "conv 1x1", "depthwise"])
def test_one_node_after_a_conv_is_its_epilogue(layer, scaled, monkeypatch):
    """A frozen batch norm's shift (an AddV2 of a per-channel constant) read by a swish,
    and a BiasAdd, join the conv before them (Conv2D, a pointwise Conv2D, a depthwise
    conv) as a one-stage epilogue, with the unfused graph's bits, its scale folded into
    the filter or not (EfficientNet's blocks); one node after anything else stays a
    kernel of its own."""
    rng = np.random.default_rng(7)
    x = gp.placeholder(gp.float32, [None, 6, 6, 4])
    if layer == "depthwise":
        w = gp.constant(rng.standard_normal((3, 3, 4, 2)).astype(np.float32))
        y = gp.nn.depthwise_conv2d(x, w, [1, 1, 1, 1], "SAME")
    else:
        side = 3 if layer == "conv 3x3" else 1
        w = gp.constant(rng.standard_normal((side, side, 4, 8)).astype(np.float32))
        y = gp.nn.conv2d(x, w, [1, 1, 1, 1], "SAME")
    shift = gp.constant(rng.standard_normal((1, 1, 1, 8)).astype(np.float32))
    if scaled:
        y = y * gp.constant(rng.standard_normal((1, 1, 1, 8)).astype(np.float32))
    shifted = y + shift
    swish = shifted * gp.sigmoid(shifted)
    assert _kernel_types([swish], [x]) == ["ConvChain", "Swish"]
    assert _kernel_types([gp.nn.bias_add(y, shift[0, 0, 0])], [x]) == ["ConvChain"]
    assert len(_kernel_types([gp.abs(x) + shift[..., :4]], [x])) == 2   # Abs, AddV2
    _assert_same_bits_as_unfused([swish, gp.nn.bias_add(y, shift[0, 0, 0])],
                                 {x: _hostile(rng, (2, 6, 6, 4), np.float32)}, monkeypatch)


def test_a_fused_conv_s_errors_name_the_conv():
    """Input the conv's kernel rejects runs the nodes' kernels one by one: the error is the
    conv's, naming it, as without fusion."""
    x = gp.placeholder(gp.float32, [None, None, None, None])
    w = gp.constant(np.ones((3, 3, 3, 8), np.float32))
    y = gp.nn.conv2d(x, w, [1, 1, 1, 1], "SAME", name="the_conv")
    out = gp.nn.relu(gp.nn.bias_add(y, gp.constant(np.ones(8, np.float32))))
    assert _step_types([out], [x]) == ["Relu"]
    with gp.Session() as sess, pytest.raises(gp.errors.InvalidArgumentError,
                                             match="the_conv"):
        sess.run(out, {x: np.ones((1, 5, 5, 4), np.float32)})


def test_a_fed_conv_output_leaves_the_conv_out_of_the_chain(monkeypatch):
    """Feeding the conv's output stops the plan there: the BiasAdd and Relu still fuse (a
    plain chain on the fed value), the conv runs nowhere, the bits are the kernels'."""
    rng = np.random.default_rng(6)
    x = gp.placeholder(gp.float32, [None, 8, 8, 3])
    w = gp.constant(rng.standard_normal((3, 3, 3, 16)).astype(np.float32))
    y = gp.nn.conv2d(x, w, [1, 1, 1, 1], "SAME")
    out = gp.nn.relu(gp.nn.bias_add(y, gp.constant(rng.standard_normal(16).astype(np.float32))))
    assert _step_types([out], [y]) == ["Relu"]
    assert _kernel_types([out], [y]) == ["Chain"]
    _assert_same_bits_as_unfused([out], {y: _hostile(rng, (2, 8, 8, 16), np.float32)},
                                 monkeypatch)


@pytest.mark.parametrize("rows", [3, PARALLEL_MIN_SIZE // 16 + 5])   # small, large
@pytest.mark.parametrize("activation", [None, "Relu", "Relu6"])
def test_a_chain_in_place_overwrites_its_input_with_the_chains_bits(rows, activation):
    from graphops.kernels.support.kernel_util import channel_chain
    rng = np.random.default_rng(rows)
    x = (rng.standard_normal((rows, 16)) * 8).astype(np.float32)
    x.flat[::7] = np.nan
    x.flat[1::11] = -0.0
    stages = [("mul", rng.standard_normal(16).astype(np.float32)),
              ("add", np.float32(0.5))]
    want = channel_chain(x, stages, activation)
    before = x.copy()
    got = channel_chain(x, stages, activation, in_place=True)
    assert got is x and not np.array_equal(before, x, equal_nan=True)
    assert np.array_equal(got, want, equal_nan=True)
    assert np.array_equal(np.signbit(got), np.signbit(want))
