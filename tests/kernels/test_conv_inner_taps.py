"""The direct forward conv over each output position's inner taps
(``conv_algorithms.inner_taps``, ``compiled.inner_taps``): classes of positions whose
windows meet the padding alike, each summing only the (tap, channel) pairs that read the
input. Against the float64 reference and, bit for bit, the padded windows' loops (the
padding's taps add zeros, and runs of pairs go on from the last one's sums); the layout
against a brute-force count of every window's pairs; and which convs take it."""

import itertools

import numpy as np
import pytest
from hypothesis import event, given, strategies as st

from graphops.kernels.compiled import loops
from graphops.kernels.conv_algorithms import direct as conv_direct
from graphops.kernels.conv_algorithms import inner_taps
from graphops.kernels.conv_algorithms import packed_filters
from graphops.kernels.conv_algorithms.dense import conv_forward
from tests.kernels.dense_conv_cases import (  # noqa: F401 (on_every_thread: autouse)
    SETTINGS, arrays, check_close, conv_cases, forward_operands, geometry, on_every_thread)
from tests.module_settings import module_settings
from tests.reference_conv import conv_forward_ref

pytestmark = pytest.mark.compiled_loops


def _layouts(x, w, geo, out_sp):
    """The padded windows' layout for ``forward`` and the same with every class of inner
    taps (one class of all taps where no window reads padding), or None where some
    position reads no input."""
    padded = conv_direct.forward_layout(x, w, *geo, out_sp)[:-1] + (None,)
    classes = inner_taps.layout(x.shape, w.shape, *geo, out_sp, loops("direct").BLOCK,
                                whole=True)
    return padded, None if classes is None else padded[:-1] + (classes,)


@SETTINGS
@given(case=conv_cases(min_size=1), channels=st.integers(1, 24), vectors=st.integers(1, 9),
       streamed=st.booleans(), constant=st.booleans(), block=st.sampled_from([8, 40, 512]),
       fused=st.booleans())
def test_inner_taps_match_reference_and_padded_windows(case, channels, vectors, streamed,
                                                       constant, block, fused):
    """Every rank, stride, dilation and padding; 8-72 output channels (the threads' runs of
    them start at strips of two vectors or at half vectors); the filter as it lies or
    streamed in runs of 8-512 rows (packed where constant), which cut the classes' runs of
    pairs; a BiasAdd and Relu fused in or not."""
    x, w, geo, epilogue, want = forward_operands(case, channels, 8 * vectors, fused)
    w.flags.writeable = not constant
    out_sp = geometry(case)[4]
    padded, classes = _layouts(x, w, geo, out_sp)
    event("a window wholly in the padding" if classes is None else "classes")
    if classes is None:
        return
    whole = conv_direct.forward(x, w, *geo, out_sp, epilogue, padded)
    with module_settings(packed_filters, BLOCK_ROWS=block), \
            module_settings(conv_direct, RUN_BYTES=block * 4 * w.shape[-1],
                            STREAMED_FILTER_BYTES=-1 if streamed else 1 << 40):
        padded_runs = conv_direct.forward_layout(x, w, *geo, out_sp)[:-1] + (None,)
        got = conv_direct.forward(x, w, *geo, out_sp, epilogue, (streamed, *classes[1:]))
        runs = conv_direct.forward(x, w, *geo, out_sp, epilogue, padded_runs)
    check_close(got, want, np.float32)
    np.testing.assert_array_equal(got.view(np.uint32), whole.view(np.uint32))
    np.testing.assert_array_equal(runs.view(np.uint32), whole.view(np.uint32))


def _window_pairs(x_shape, w_shape, geo, out_sp):
    """Brute force: for each output position (image, then row-major), the (tap, channel)
    pair indices whose tap reads the input, and each pair's element offset in x."""
    strides, dilations, pads = geo
    kernel, c = w_shape[:-2], w_shape[-2]
    steps = [c * int(np.prod(x_shape[i + 2:-1])) for i in range(len(kernel))]
    found = []
    for n in range(x_shape[0]):
        for q in itertools.product(*(range(size) for size in out_sp)):
            pairs = set()
            for t, tap in enumerate(itertools.product(*(range(k) for k in kernel))):
                at = [p * s - b + k * d for p, s, (b, _), k, d
                      in zip(q, strides, pads, tap, dilations)]
                if all(0 <= a < size for a, size in zip(at, x_shape[1:-1])):
                    start = n * int(np.prod(x_shape[1:])) + sum(
                        a * step for a, step in zip(at, steps))
                    pairs |= {(t * c + ch, start + ch) for ch in range(c)}
            found.append(pairs)
    return found


@SETTINGS
@given(case=conv_cases(min_size=1), block=st.integers(1, 20), whole=st.booleans())
def test_layout_sums_each_position_over_exactly_its_inner_pairs(case, block, whole):
    """Each output position is one row of one block; its class's runs hold exactly the
    pairs whose taps read the input, and a pair's offset from the row's window origin is
    where that pair's value lies in x (the origin is negative where the window starts in
    the padding). Blocks hold at most ``block`` rows of one class. Where no window reads
    padding there are no classes, or with ``whole`` one of all the pairs."""
    case["channels_last"] = True
    _, _, _, geo, x_shape = arrays(case, np.float32)
    kernel, out_sp = geometry(case)[5], geometry(case)[4]
    w_shape = (*kernel, case["c"], 8)
    found = _window_pairs(x_shape, w_shape, geo, out_sp)
    layout = inner_taps.layout(x_shape, w_shape, *geo, out_sp, block, whole=whole)
    every = {i for i in range(int(np.prod(w_shape[:-1])))}
    padding_free = all({i for i, _ in pairs} == every for pairs in found)
    if layout is None:       # no outputs (a window longer than its input), or no padding
        assert (any(not pairs for pairs in found) or not found
                or padding_free and not whole)
        return
    if padding_free:
        assert len(layout[5]) == 2       # one class
    offsets, rows_x, rows_y, blocks, runs, run_starts = layout
    seen = {}
    assert list(blocks[:, 0]) == [0, *blocks[:-1, 1]] and blocks[-1, 1] == len(rows_y)
    for first, end, group in blocks:
        assert 0 < end - first <= block
        pairs = [i for a, e in runs[run_starts[group]:run_starts[group + 1]] for i in range(a, e)]
        assert len(set(pairs)) == len(pairs)
        for row in range(first, end):
            assert rows_y[row] // 8 not in seen
            seen[rows_y[row] // 8] = {(i, rows_x[row] + offsets[i]) for i in pairs}
    assert sorted(seen) == list(range(len(found)))
    assert [seen[p] for p in range(len(found))] == found


@pytest.mark.parametrize("x_shape, pads, taken", [
    ((8, 4, 4, 16), ((1, 1), (1, 1)), True),     # SAME 3x3 on 4x4: 31% of the taps in padding
    ((8, 2, 2, 16), ((1, 1), (1, 1)), True),     # on 2x2: 56%
    ((1, 4, 4, 16), ((1, 1), (1, 1)), False),    # one image: corner classes of one row
    ((1, 2, 2, 16), ((1, 1), (1, 1)), False),
    ((8, 6, 6, 16), ((0, 0), (0, 0)), False),    # VALID: no padding
    ((8, 3, 3, 16), ((0, 0), (0, 0)), False),    # ... even with calls across images
])
def test_which_convs_take_inner_taps(x_shape, pads, taken):
    """A batch's images fill each class's calls, so small padded convs take classes at
    batch 8; one image's corners would each make a call of one row, whose filter loads cost
    more than the padding's taps, so it keeps the padded windows."""
    module = loops("direct")
    out_sp = tuple(s + b + a - 2 for s, (b, a) in zip(x_shape[1:-1], pads))
    layout = inner_taps.layout(x_shape, (3, 3, 16, 16), (1, 1), (1, 1), pads, out_sp,
                               module.BLOCK, module.ROWS)
    assert (layout is not None) == taken


def test_no_outputs_or_images_have_no_classes():
    """An empty batch, or a dim whose window is longer than its padded input, has no
    rows to sum."""
    assert inner_taps.layout((0, 4, 4, 8), (3, 3, 8, 8), (1, 1), (1, 1), ((1, 1),) * 2,
                             (4, 4), 8) is None
    assert inner_taps.layout((2, 1, 4, 8), (3, 3, 8, 8), (1, 1), (1, 1), ((0, 0), (1, 1)),
                             (0, 4), 8) is None


def test_infinite_filter_values_reach_only_the_windows_that_read_them():
    """Products with the padding are skipped, as TF's oneDNN convs and the reference skip
    them: an infinite tap makes infinities where it reads the input, and the positions
    whose windows meet the padding there stay finite (the padded windows' zeros would
    have made NaN)."""
    rng = np.random.default_rng(9)
    x = rng.uniform(0.5, 1, (8, 4, 4, 8)).astype(np.float32)
    w = rng.uniform(0.5, 1, (3, 3, 8, 16)).astype(np.float32)
    w[0, 0, 0, 0] = np.inf
    geo = ((1, 1), (1, 1), ((1, 1), (1, 1)))
    padded, classes = _layouts(x, w, geo, (4, 4))
    got = conv_direct.forward(x, w, *geo, (4, 4), None, classes)
    want = conv_forward_ref(x.astype(np.float64), w.astype(np.float64), *geo)
    np.testing.assert_array_equal(np.isinf(got), np.isinf(want))
    assert np.isinf(got[:, 1:, 1:, 0]).all() and np.isfinite(got[:, 0, :, 0]).all()
    check_close(got[..., 1:], want[..., 1:], np.float32)


def test_position_reading_no_input_keeps_padded_windows():
    """A window wholly in the padding (padding wider than the filter's reach) has no
    inner taps: such convs keep the padded windows, which write its zeros."""
    x = np.ones((2, 1, 4), np.float32)
    w = np.ones((3, 4, 8), np.float32)
    geo = ((1,), (1,), ((3, 3),))
    assert inner_taps.layout(x.shape, w.shape, *geo, (5,), 8) is None
    got = conv_direct.forward(x, w, *geo, (5,))
    np.testing.assert_array_equal(got, conv_forward_ref(x, w, *geo))
    np.testing.assert_array_equal(got[:, [0, 4]], 0)


def test_model_sized_conv_runs_on_inner_taps():
    """A deep network's 3x3 conv on 4x4 outputs at batch 8 (ResNet's fourth stage, fewer
    channels) runs on the classes through ``conv_forward``, with its epilogue (a BiasAdd
    and Relu)."""
    from graphops.kernels.compiled import inner_taps as loops_inner
    rng = np.random.default_rng(3)
    x = rng.standard_normal((8, 4, 4, 64)).astype(np.float32)
    w = rng.standard_normal((3, 3, 64, 64)).astype(np.float32)
    bias = rng.standard_normal(64).astype(np.float32)
    calls = []
    original = loops_inner.forward
    with module_settings(loops_inner, forward=lambda *a: calls.append(a) or original(*a)):
        got = conv_forward(x, w, (1, 1), (1, 1), ((1, 1), (1, 1)),
                           epilogue=((("add", bias),), "Relu", None))
    assert len(calls) == 1
    want = np.maximum(conv_forward_ref(x.astype(np.float64), w.astype(np.float64), (1, 1),
                                       (1, 1), ((1, 1), (1, 1))) + bias, 0)
    check_close(got, want, np.float32)


@pytest.mark.parametrize("batch, one_class", [(8, True), (64, False)])
def test_streamed_filter_over_few_positions_runs_as_one_class(batch, one_class):
    """A 1x1 conv of ResNet's last stage (2x2 outputs, a 2 MB filter that streams) reads no
    padding, yet at batch 8 runs on the classes' loops as one class, whose blocks span
    images (the plane loops would make calls of four rows); past
    ``STREAMED_MAX_POSITIONS`` positions (batch 64) it keeps the plane loops. With a BiasAdd
    and Relu, against the reference and, bit for bit, the plane loops."""
    from graphops.kernels.compiled import inner_taps as loops_inner
    rng = np.random.default_rng(4)
    x = rng.standard_normal((batch, 2, 2, 512)).astype(np.float32)
    w = rng.standard_normal((1, 1, 512, 1024)).astype(np.float32)
    w.flags.writeable = False
    bias = rng.standard_normal(1024).astype(np.float32)
    geo = ((1, 1), (1, 1), ((0, 0), (0, 0)))
    layout = conv_direct.forward_layout(x, w, *geo, (2, 2))
    assert layout[0] and (layout[-1] is not None) == one_class
    if one_class:
        assert len(layout[-1][5]) == 2 and layout[-1][3][:, 2].max() == 0
    calls = []
    original = loops_inner.forward
    epilogue = ((("add", bias),), "Relu", None)
    with module_settings(loops_inner, forward=lambda *a: calls.append(a) or original(*a)):
        got = conv_direct.forward(x, w, *geo, (2, 2), epilogue)
    assert len(calls) == one_class
    want = np.maximum(conv_forward_ref(x.astype(np.float64), w.astype(np.float64), *geo)
                      + bias, 0)
    check_close(got, want, np.float32)
    planes = conv_direct.forward(x, w, *geo, (2, 2), epilogue, layout[:-1] + (None,))
    np.testing.assert_array_equal(got.view(np.uint32), planes.view(np.uint32))
