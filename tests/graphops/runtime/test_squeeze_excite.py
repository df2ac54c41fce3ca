"""Squeeze-and-excite blocks fused into one step (graphops/runtime/squeeze_excite.py): which
blocks fuse; that the one compiled pass gives the unfused graph's values within float32
rounding (NaN, infinities and the sign of a zero product as they are) on one thread and
on several; that the parts one by one give its bits; its errors; and that a fetch inside
keeps the nodes' own steps."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import graphops as gp
from graphops.kernels import compiled
from graphops.kernels.support.parallelism import numba_threads
from graphops.registry import errors
from graphops.runtime import fusion, squeeze_excite, steps
from graphops.runtime.config import memory_budget
from tests.graphops.runtime.test_fusion import _hostile

SETTINGS = settings(max_examples=25, deadline=None)


def _block(x, channels, reduced, rng, keras, gate_first, beta=1.0, activation="Relu",
           middle=None, filters=None):
    """x * sigmoid(conv2(act(conv1(mean(x))))), the convs 1x1 with a bias: Keras's
    EfficientNet block (a mean without kept dims, a reshape to the batch read off its
    shape, a swish with ``beta`` and its custom gradient's IdentityN), or a mean keeping
    its dims (through ``middle``, a function of it, where given) and ``activation``.
    ``filters``: the two filters' tensors, else constants."""
    filters = list(filters or [None, None])

    def conv(h, cin, cout, padding):
        w = filters.pop(0)
        if w is None:
            w = gp.constant(rng.standard_normal((1, 1, cin, cout)).astype(np.float32))
        b = gp.constant(rng.standard_normal(cout).astype(np.float32))
        return gp.nn.bias_add(gp.nn.conv2d(h, w, [1, 1, 1, 1], padding), b)

    if keras:
        s = gp.reduce_mean(x, [1, 2])
        s = gp.reshape(s, gp.stack([gp.shape(s)[0], 1, 1, channels]))
        h = conv(s, channels, reduced, "SAME")
        scale = gp.constant(np.float32(beta))
        swish = h * gp.sigmoid(scale * h)
        h = gp.raw_ops.IdentityN(input=[swish, h, scale])[0]
    else:
        mean = gp.reduce_mean(x, [1, 2], keepdims=True)
        h = getattr(gp.nn, activation.lower())(conv(mean if middle is None else middle(mean),
                                                    channels, reduced, "VALID"))
    gate = gp.sigmoid(conv(h, reduced, channels, "VALID"))
    return gate * x if gate_first else x * gate


def _run(fetches, feed, one_pass=True):
    """The fetches' values and how many block steps ran (with ``one_pass`` False, each
    block's parts one by one)."""
    ran = []
    call = steps.BlockStep.__call__

    def counted(step, buf):
        ran.append(step)
        return call(step, buf)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(steps.BlockStep, "__call__", counted)
        if not one_pass:
            patch.setattr(squeeze_excite.OnePass, "of", classmethod(lambda cls, block: None))
        with gp.Session() as sess, np.errstate(all="ignore"):
            return sess.run(fetches, feed), len(ran)


def _passes(fetches, feed):
    """The fetches' values, and how many compiled passes ran on one thread and on
    several."""
    module = compiled.loops("squeeze_excite", chunk=1)
    gated, threads = module.gated, []

    def counted(*args):
        threads.append(compiled._given.settings[0])
        return gated(*args)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(module, "gated", counted)
        got, blocks = _run(fetches, feed)
    assert blocks == 1
    return got, [threads.count(1), len(threads) - threads.count(1)]


def _unfused(fetches, feed):
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(fusion, "fuse_chains", lambda *args: {})
        return _run(fetches, feed)[0]


def _assert_same(got, want):
    np.testing.assert_array_equal(got, want)
    assert np.array_equal(np.signbit(got), np.signbit(want))


def _assert_close(got, want, x):
    """The one pass's values against the parts': NaN and infinities where they are, a zero
    product's sign, and the rest within the rounding of the convs' sums taken in another
    order (the gate moves by less than 1e-4, the product by that times |x|)."""
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    assert np.array_equal(got[np.isinf(want)], want[np.isinf(want)])
    zero = want == 0
    assert np.array_equal(np.signbit(got[zero & (got == 0)]), np.signbit(want[zero & (got == 0)]))
    finite = ~nan & np.isfinite(x)
    assert np.all(np.abs(got - want)[finite] <= 1e-4 * (np.abs(want) + np.abs(x))[finite] + 1e-30)


def _values(rng, shape, kind):
    """Standard normal values; with "hostile" NaN, infinities and -0 among them; with
    "zeros" every third value -0 and every seventh 1e4 (gates that stay finite)."""
    if kind == "hostile":
        return _hostile(rng, shape, np.float32)
    values = rng.standard_normal(shape).astype(np.float32)
    if kind == "zeros":
        values.reshape(-1)[::3], values.reshape(-1)[1::7] = -0.0, 1e4
    return values


@SETTINGS
@given(batch=st.integers(1, 3), size=st.tuples(st.integers(1, 5), st.integers(2, 5)),
       channels=st.integers(1, 40), reduced=st.integers(1, 8), keras=st.booleans(),
       gate_first=st.booleans(), beta=st.sampled_from([1.0, 1.5]),
       activation=st.sampled_from(["Relu", "Relu6"]),
       kind=st.sampled_from(["normal", "hostile", "zeros"]), seed=st.integers(0, 2**32 - 1))
def test_a_squeeze_and_excite_block_is_one_compiled_pass(
        batch, size, channels, reduced, keras, gate_first, beta, activation, kind, seed):
    """One step, one compiled pass, the unfused graph's values within float32 rounding;
    its parts one by one give the unfused bits."""
    rng = np.random.default_rng(seed)
    with gp.Graph().as_default():
        x = gp.placeholder(gp.float32, [None, *size, channels])
        out = _block(x, channels, reduced, rng, keras, gate_first, beta, activation)
        shape = (batch, *size, channels)
        values = _values(rng, shape, kind)
        want = _unfused(out, {x: values})
        got, threads = _passes(out, {x: values})
        assert threads == [1, 0]
        assert got.shape == shape and got.dtype == np.float32
        _assert_close(got, want, values)
        parts, blocks = _run(out, {x: values}, one_pass=False)
        assert blocks == 1
        _assert_same(parts, want)


def test_a_reshape_to_minus_one_takes_the_pass():
    """The reshape's batch given as -1 (TF's idiom) takes the pass too."""
    rng = np.random.default_rng(12)
    with gp.Graph().as_default():
        x = gp.placeholder(gp.float32, [None, 3, 3, 8])
        mean = gp.reshape(gp.reduce_mean(x, [1, 2]), [-1, 1, 1, 8])
        w1 = gp.constant(rng.standard_normal((1, 1, 8, 2)).astype(np.float32))
        w2 = gp.constant(rng.standard_normal((1, 1, 2, 8)).astype(np.float32))
        b1 = gp.constant(rng.standard_normal(2).astype(np.float32))
        b2 = gp.constant(rng.standard_normal(8).astype(np.float32))
        h = gp.nn.relu(gp.nn.bias_add(gp.nn.conv2d(mean, w1, [1, 1, 1, 1], "VALID"), b1))
        out = x * gp.sigmoid(gp.nn.bias_add(gp.nn.conv2d(h, w2, [1, 1, 1, 1], "VALID"), b2))
        values = rng.standard_normal((2, 3, 3, 8)).astype(np.float32)
        got, threads = _passes(out, {x: values})
        assert threads == [1, 0]
        _assert_close(got, _unfused(out, {x: values}), values)


def test_a_mean_read_through_another_node_runs_the_parts():
    """An Identity (a node that moves data, not a Reshape) between the mean and the first
    conv: the block runs its parts, with the unfused bits."""
    rng = np.random.default_rng(13)
    with gp.Graph().as_default():
        x = gp.placeholder(gp.float32, [None, 3, 3, 8])
        out = _block(x, 8, 2, rng, keras=False, gate_first=False, middle=gp.identity)
        values = rng.standard_normal((2, 3, 3, 8)).astype(np.float32)
        got, blocks = _run(out, {x: values})
        assert blocks == 1
        _assert_same(got, _unfused(out, {x: values}))


def test_filters_changed_in_place_are_read_afresh():
    """Fed filters, one not C-contiguous, changed in place between runs: each run uses
    their values of that run."""
    rng = np.random.default_rng(14)
    with gp.Graph().as_default():
        x = gp.placeholder(gp.float32, [None, 3, 3, 8])
        w1 = gp.placeholder(gp.float32, [1, 1, 8, 2])
        w2 = gp.placeholder(gp.float32, [1, 1, 2, 8])
        out = _block(x, 8, 2, rng, keras=False, gate_first=False, filters=[w1, w2])
        values = rng.standard_normal((2, 3, 3, 8)).astype(np.float32)
        first = np.asfortranarray(rng.standard_normal((1, 1, 8, 2)).astype(np.float32))
        second = rng.standard_normal((1, 1, 2, 8)).astype(np.float32)
        module, calls = compiled.loops("squeeze_excite", chunk=1), []
        gated = module.gated
        with gp.Session() as sess, pytest.MonkeyPatch.context() as patch:
            patch.setattr(module, "gated", lambda *args: calls.append(1) or gated(*args))
            for run in range(2):
                feed = {x: values, w1: first, w2: second}
                got = sess.run(out, feed)
                assert len(calls) == run + 1
                _assert_close(got, _unfused(out, feed), values)
                first *= -2
                second += 1


@pytest.mark.parametrize("keras", [True, False])
def test_a_large_batch_takes_its_pass_on_every_thread(keras):
    """Enough work (4 images of 32x32x128) runs the pass on the pool's threads, an image
    each: the unfused values within float32 rounding."""
    rng = np.random.default_rng(11)
    with gp.Graph().as_default():
        x = gp.placeholder(gp.float32, [None, 32, 32, 128])
        out = _block(x, 128, 32, rng, keras, gate_first=False)
        values = rng.standard_normal((4, 32, 32, 128)).astype(np.float32)
        got, threads = _passes(out, {x: values})
        _assert_close(got, _unfused(out, {x: values}), values)
    assert threads == ([0, 1] if numba_threads() > 1 else [1, 0])


def test_parts_that_do_not_take_their_values_run_their_nodes_kernels(monkeypatch):
    """A fused part that refuses its values (as one fed another dtype or shape would) runs
    its nodes' kernels: the same bits."""
    rng = np.random.default_rng(3)
    with gp.Graph().as_default():
        x = gp.placeholder(gp.float32, [None, 3, 3, 12])
        out = _block(x, 12, 4, rng, keras=True, gate_first=False)
        values = _hostile(rng, (2, 3, 3, 12), np.float32)
        want = _unfused(out, {x: values})
        monkeypatch.setattr(fusion.ConvChain, "accepts", lambda self, values: False)
        monkeypatch.setattr(fusion.Swish, "accepts", lambda self, values: False)
        got, blocks = _run(out, {x: values})
    assert blocks == 1
    _assert_same(got, want)


def _budget_errors(out, feed, budget):
    """The first lines of the errors the fused and the unfused graph raise under
    ``budget`` bytes (each must be a ResourceExhaustedError)."""
    messages = []
    for run in (lambda: _run(out, feed), lambda: _unfused(out, feed)):
        with memory_budget(budget), pytest.raises(errors.ResourceExhaustedError) as caught:
            run()
        messages.append(str(caught.value).split("\n\t")[0])
    return messages


def test_a_product_past_the_budget_fails_as_its_node_fails():
    """A budget that holds the convs' outputs but not x's product: the Mul's own error,
    as without fusion."""
    rng = np.random.default_rng(15)
    with gp.Graph().as_default():
        x = gp.placeholder(gp.float32, [None, 4, 4, 16])
        out = _block(x, 16, 4, rng, keras=False, gate_first=False)
        values = rng.standard_normal((1, 4, 4, 16)).astype(np.float32)
        messages = _budget_errors(out, {x: values}, 512)
    assert messages[0] == messages[1]
    assert "mul" in messages[0]


def test_a_block_fails_as_its_nodes_fail():
    """Over the memory budget the first node that allocates too much raises, named, as
    without fusion."""
    rng = np.random.default_rng(5)
    with gp.Graph().as_default():
        x = gp.placeholder(gp.float32, [None, 2, 2, 64])
        out = _block(x, 64, 200, rng, keras=False, gate_first=True)
        values = rng.standard_normal((1, 2, 2, 64)).astype(np.float32)
        messages = _budget_errors(out, {x: values}, 700)
    assert messages[0] == messages[1]
    assert "Conv2D" in messages[0]


def test_blocks_that_must_not_fuse():
    """A tensor inside fetched, a gate of x's own size, a 3x3 conv, a 1x1 transposed conv:
    the nodes' own steps."""
    rng = np.random.default_rng(6)
    with gp.Graph().as_default():
        x = gp.placeholder(gp.float32, [None, 4, 4, 8])
        values = rng.standard_normal((2, 4, 4, 8)).astype(np.float32)
        out = _block(x, 8, 2, rng, keras=False, gate_first=False)
        gate = out.op.inputs[1]
        (got, seen), blocks = _run([out, gate], {x: values})
        assert blocks == 0
        _assert_same(got, values * seen)

        mean = gp.reduce_mean(x, [1, 2], keepdims=True)
        w = gp.constant(rng.standard_normal((3, 3, 8, 8)).astype(np.float32))
        wide = x * gp.sigmoid(gp.nn.conv2d(mean + x, w, [1, 1, 1, 1], "SAME"))
        three = x * gp.sigmoid(gp.nn.conv2d(mean, w, [1, 1, 1, 1], "SAME"))
        w1 = gp.constant(rng.standard_normal((1, 1, 8, 8)).astype(np.float32))
        bias = gp.constant(rng.standard_normal(8).astype(np.float32))
        excited = gp.nn.relu(gp.nn.bias_add(gp.nn.conv2d(mean, w1, [1, 1, 1, 1], "VALID"),
                                            bias))
        transposed = x * gp.sigmoid(gp.nn.bias_add(gp.nn.conv2d_transpose(   # 1x1, dx of
            excited, w1, [2, 1, 1, 8], [1, 1, 1, 1], "VALID"), bias))         # a conv
        got, blocks = _run([wide, three, transposed], {x: values})
        assert blocks == 0
        for value, want in zip(got, _unfused([wide, three, transposed], {x: values})):
            _assert_same(value, want)
