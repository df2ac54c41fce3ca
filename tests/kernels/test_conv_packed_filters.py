"""Products of a few rows by a constant filter on its packed strips (``packed_filters``):
against the float64 product, which filters get packed and for how long, the convs on few
positions that use them, in a graph whose filter is a constant, and the direct forward conv
reading a constant filter from one block of strips."""

import gc

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import graphops as gp
from graphops.kernels.compiled import loops
from graphops.kernels.conv_algorithms import direct as conv_direct
from graphops.kernels.conv_algorithms import packed_filters
from graphops.kernels.support.parallelism import (get_intra_op_threads,
                                                  set_intra_op_threads)
from tests.kernels.dense_conv_cases import (check_close, conv_cases, forward_operands,
                                            geometry)
from tests.module_settings import module_settings
from tests.reference_conv import conv_forward_ref


def _frozen(array):
    array.flags.writeable = False
    return array


def _operands(seed, rows, depth, columns):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((rows, depth)).astype(np.float32)
    return a, _frozen(rng.standard_normal((depth, columns)).astype(np.float32))


def _tiles():
    module = loops("direct")
    return module.ROWS, 2 * module.LANES


def _check_product(got, a, w2):
    """Within a few roundings of a sum of |terms| of the float64 product."""
    want = a.astype(np.float64) @ w2.astype(np.float64)
    bound = 4 * np.finfo(np.float32).eps * (np.abs(a).astype(np.float64) @ np.abs(w2))
    assert got.shape == want.shape and got.dtype == np.float32
    assert np.all(np.abs(got - want) <= bound + 1e-30)


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), rows=st.integers(1, 10), depth=st.integers(1, 300),
       vectors=st.integers(1, 20), block=st.integers(1, 80), parts=st.integers(1, 4))
def test_products_match_the_float64_product(seed, rows, depth, vectors, block, parts):
    """Any row count, depth, width, block of rows and thread count: rows from MIN_ROWS to
    the host's micro-kernel rows and whole strips of columns go on the packed strips, the
    rest to NumPy; every product within a few roundings of each element's sum of
    |terms|."""
    max_rows, width = _tiles()
    a, w2 = _operands(seed, rows, depth, 8 * vectors)
    packed = (packed_filters.MIN_ROWS <= rows <= max_rows and w2.shape[1] % width == 0)
    saved = get_intra_op_threads()
    try:
        set_intra_op_threads(parts)
        with module_settings(packed_filters, MIN_FILTER_BYTES=0, BLOCK_ROWS=block,
                             BYTES_PER_THREAD=1):
            got = packed_filters.product(a, w2)
            assert (_pack_of(w2, width) is not None) == packed
    finally:
        set_intra_op_threads(saved)
    _check_product(got, a, w2)
    if not packed:
        np.testing.assert_array_equal(got, a @ w2)


def _pack_of(w2, width, block_rows=None):
    return packed_filters._packs.get((w2.__array_interface__["data"][0], w2.shape,
                                      w2.strides, width,
                                      block_rows or packed_filters.BLOCK_ROWS))


def test_bits_do_not_depend_on_the_thread_count():
    """Each element is one sum over k in order whichever thread takes its strip (threads
    let in at any filter size here)."""
    a, w2 = _operands(1, 4, 1100, 512)
    saved = get_intra_op_threads()
    try:
        results = []
        for threads in (1, 2, 3):
            set_intra_op_threads(threads)
            with module_settings(packed_filters, BYTES_PER_THREAD=1):
                results.append(packed_filters.product(a, w2))
    finally:
        set_intra_op_threads(saved)
    assert _pack_of(w2, _tiles()[1]) is not None
    for got in results[1:]:
        np.testing.assert_array_equal(got, results[0])
    _check_product(results[0], a, w2)


def _writable_view_of_read_only():
    base = np.random.default_rng(2).standard_normal((1024, 512)).astype(np.float32)
    return _frozen(base.reshape(512, 1024).T)     # read-only view of a writable owner


@pytest.mark.parametrize("case", ["writable", "view of a writable owner", "float64",
                                  "one row", "small filter"])
def test_filters_that_may_change_or_gain_nothing_are_not_packed(case):
    """Only a float32 filter of MIN_FILTER_BYTES or more, read-only down to its owner, is
    packed, for MIN_ROWS rows or more; the others go to NumPy as they are."""
    a, w2 = _operands(3, 4, 1024, 512)
    if case == "writable":
        w2 = w2.copy()
    elif case == "view of a writable owner":
        w2 = _writable_view_of_read_only()
    elif case == "float64":
        a, w2 = a.astype(np.float64), _frozen(w2.astype(np.float64))
    elif case == "one row":
        a = a[:1]
    else:
        a, w2 = a[:, :256], _frozen(w2[:256, :256].copy())
    before = dict(packed_filters._packs)
    got = packed_filters.product(a, w2)
    assert packed_filters._packs == before
    np.testing.assert_array_equal(got, a @ w2)


def test_a_pack_is_made_once_and_dropped_with_its_filter():
    a, w2 = _operands(4, 3, 2048, 256)
    first = packed_filters.product(a, w2)
    strips = _pack_of(w2, _tiles()[1])
    assert strips is not None and not strips.flags.writeable
    np.testing.assert_array_equal(packed_filters.product(a, w2), first)
    assert _pack_of(w2, _tiles()[1]) is strips
    count = len(packed_filters._packs)
    del w2
    gc.collect()
    assert len(packed_filters._packs) == count - 1


@pytest.mark.parametrize("kernel, in_channels, spatial", [
    (3, 256, 2),     # a 3x3 conv on 2x2 outputs: a patch matrix of 4 rows
    (1, 1024, 2),    # a pointwise conv on 2x2 positions
    (3, 128, 1),     # 1x1 outputs at batch 3 (the padded 3x3 window of each image)
])
def test_convs_on_few_positions_use_a_constant_filter_packed(kernel, in_channels, spatial):
    """A graph's Conv2D whose filter is a constant, over few output positions (as in a
    deep network's last blocks at batch 1): packed on its first run, the same output on
    every run, and that output the reference conv's."""
    rng = np.random.default_rng(5)
    batch = 3 if spatial == 1 else 1
    x = rng.standard_normal((batch, spatial, spatial, in_channels)).astype(np.float32)
    w = rng.standard_normal((kernel, kernel, in_channels, 256)).astype(np.float32)
    count = len(packed_filters._packs)
    with gp.Graph().as_default():
        xt = gp.placeholder(gp.float32, x.shape)
        y = gp.nn.conv2d(xt, gp.constant(w), strides=1, padding="SAME")
        with gp.Session() as sess:
            got = sess.run(y, {xt: x})
            assert len(packed_filters._packs) == count + 1
            np.testing.assert_array_equal(sess.run(y, {xt: x}), got)
    want = conv_forward_ref(x.astype(np.float64), w.astype(np.float64), (1, 1), (1, 1),
                            ((kernel // 2, kernel // 2),) * 2)
    magnitude = float(np.abs(x).max() * np.abs(w).max() * kernel * kernel * in_channels)
    np.testing.assert_allclose(got, want, rtol=0, atol=4 * np.finfo(np.float32).eps * magnitude)


@settings(max_examples=120, deadline=None)
@given(case=conv_cases(min_size=1), channels=st.integers(1, 12),
       out_channels=st.sampled_from([8, 16, 24, 32, 48, 64, 96, 128, 136, 192]),
       fused=st.booleans())
def test_direct_forward_reads_a_wide_filter_from_one_block_of_strips(
        case, channels, out_channels, fused):
    """Every rank, stride, dilation and padding, output channels within a call's, past it
    by whole calls or not, a BiasAdd and Relu fused in or not: a filter (not streamed)
    whose rows are a whole number of a call's channels, and more, is read from one block
    of strips of them, a constant filter's pack kept, another's made afresh on every call
    and not kept; each output is the same sum in the same order as from the filter as it
    lies, so the same bits, and within a few roundings of the float64 reference."""
    x, w, geo, epilogue, want = forward_operands(case, channels, out_channels, fused)
    out_sp = geometry(case)[4]
    width, w2 = loops("direct").CALL_CHANNELS, w.reshape(-1, w.shape[-1])
    strips = w2.shape[1] > width and w2.shape[1] % width == 0
    fresh, pack = [], packed_filters.pack
    with module_settings(conv_direct, STREAMED_FILTER_BYTES=1 << 40):
        with module_settings(conv_direct, _strip_width=lambda channels, call: channels):
            as_it_lies = conv_direct.forward(x, w, *geo, out_sp, epilogue)
        with module_settings(packed_filters, pack=lambda *a: fresh.append(a) or pack(*a)):
            writable = conv_direct.forward(x, w, *geo, out_sp, epilogue)
        assert len(fresh) == strips
        assert _pack_of(w2, width, block_rows=w2.shape[0]) is None     # none kept
        w.flags.writeable = False
        got = conv_direct.forward(x, w, *geo, out_sp, epilogue)
    assert (_pack_of(w2, width, block_rows=w2.shape[0]) is not None) == strips
    for result in (got, writable):
        np.testing.assert_array_equal(result.view(np.uint32), as_it_lies.view(np.uint32))
    check_close(got, want, np.float32)


def test_a_graphs_constant_filter_gives_a_fed_filters_bits():
    """A model's 3x3 conv whose filter is a graph constant, too small to stream, packed on
    the first run, gives the bits of the same conv with the filter fed (as it lies)."""
    rng = np.random.default_rng(6)
    x = rng.standard_normal((4, 8, 8, 32)).astype(np.float32)
    w = rng.standard_normal((3, 3, 32, 2 * loops("direct").CALL_CHANNELS)).astype(np.float32)
    assert not conv_direct.streams(4 * 8 * 8, x.nbytes, w.nbytes)
    count = len(packed_filters._packs)
    with gp.Graph().as_default():
        xt, wt = gp.placeholder(gp.float32, x.shape), gp.placeholder(gp.float32, w.shape)
        constant = gp.nn.conv2d(xt, gp.constant(w), strides=1, padding="SAME")
        fed = gp.nn.conv2d(xt, wt, strides=1, padding="SAME")
        with gp.Session() as sess:
            got, want = sess.run([constant, fed], {xt: x, wt: w})
            assert len(packed_filters._packs) == count + 1
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
