"""bfloat16 convs on AMX tiles, or AVX512-BF16 dot products (``conv_algorithms.matrix_tiles``):
the float32 sums against the slow float64 reference for every rank, stride, dilation and
padding and channel counts that fill tiles partly; the forward conv and the stride-1 input
gradient through the dense ops (both layouts) and through TF's raw ops against TensorFlow;
which convs take the tiles; and the host checks. The sums run only on a host with AMX-BF16
or AVX512-BF16 (the filter gradient's only with AMX-BF16; skipped elsewhere); the packed
filter's layout and the taps each line of outputs sums are checked on any host."""

import itertools
import math

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, strategies as st

import graphops as gp
from graphops.kernels.compiled import host_isa
from graphops.kernels.conv_algorithms import dense as conv_dense
from graphops.kernels.conv_algorithms import inner_taps, matrix_tiles
from graphops.kernels.conv_algorithms.layout import flipped_filter
from graphops.kernels.conv_algorithms.routes import kernel_route
from tests.kernels.dense_conv_cases import (  # noqa: F401 (on_every_thread: autouse)
    SETTINGS, arrays, check_close, conv_cases, geometry, on_every_thread)
from tests.kernels.test_conv_ops import same_pads
from tests.module_settings import module_settings
from tests.reference_conv import (conv_backprop_filter_ref, conv_backprop_input_ref,
                                  conv_forward_ref)

BF16 = ml_dtypes.bfloat16
on_tiles = pytest.mark.skipif(not host_isa.matrix_tiles(),
                              reason="this host has no AMX-BF16 tiles for numba's code")
on_products = pytest.mark.skipif(
    not (host_isa.matrix_tiles() or host_isa.bfloat16_dots()),
    reason="this host has neither AMX-BF16 tiles nor AVX512-BF16 for numba's code")


class _Counted:
    """``matrix_tiles.forward`` (or ``backprop_filter``) that counts its calls."""

    def __init__(self, real=None):
        self.calls, self.real = 0, real or matrix_tiles.forward

    def __call__(self, *args):
        self.calls += 1
        return self.real(*args)


def _wide_case(case, channels, outs, channels_last=True):
    """``case`` with ``channels`` -> ``outs`` channels: its bfloat16 arrays and geometry."""
    case.update(c=channels, o=outs, channels_last=channels_last)
    x, w, dy, geo, x_shape = arrays(case, BF16)
    return x, w, dy, geo, x_shape


@on_products
@SETTINGS
@given(case=conv_cases(min_size=1), channels=st.integers(16, 72), outs=st.integers(16, 72),
       width=st.integers(1, 48), reverse=st.booleans())
def test_tile_sums_match_reference(case, channels, outs, width, reverse):
    """The convs' values, the last spatial dim up to 48 wide: float32 sums (within float32's
    rounding of the sum of the terms' magnitudes) rounded once to bfloat16 (channels past a
    multiple of 32 padded with zeros, blocks past a run's end dropped, a stride-1 plane's
    padded columns computed and dropped where it runs over its padded rows whole, taps
    that read only padding along a line's leading dims left out). The blocks taken last
    to first as well (threads take them in any order: no block writes where another does).
    On a host with both, the tiles and the dot products each."""
    case["dims"][-1]["size"] = width
    x, w, _, (strides, dilations, pads), _ = _wide_case(case, channels, outs)
    in_order = matrix_tiles._items
    x64, w64 = x.astype(np.float64), w.astype(np.float64)
    want = conv_forward_ref(x64, w64, strides, dilations, pads)
    magnitude = conv_forward_ref(np.abs(x64), np.abs(w64), strides, dilations, pads)
    error = 1e-6 * magnitude               # float32 sums, then one rounding to bfloat16
    for tiles in _kinds_of_products():
        with module_settings(matrix_tiles,
                             _items=lambda lengths: in_order(lengths)[::-1 if reverse else 1]), \
                module_settings(host_isa, matrix_tiles=lambda: tiles):
            got = matrix_tiles.forward(x, w, strides, dilations, pads, geometry(case)[4])
        assert got.dtype == BF16 and got.shape == want.shape
        assert np.all(np.abs(got.astype(np.float64) - want)
                      <= 2 ** -8 * (np.abs(want) + error) + error + 1e-30)


def _kinds_of_products():
    """Whether each kind of product this host has runs on tiles: True for AMX tiles, False
    for AVX512-BF16 dot products."""
    return [tiles for tiles, present in ((True, host_isa.matrix_tiles()),
                                         (False, host_isa.bfloat16_dots())) if present]


@on_products
@SETTINGS
@given(case=conv_cases(min_size=1), channels=st.integers(16, 40), outs=st.integers(16, 40),
       channels_last=st.booleans())
def test_dense_ops_take_the_tiles(case, channels, outs, channels_last):
    """``conv_forward`` and the stride-1 ``conv_backprop_input`` of bfloat16 operands in
    either layout: on the tiles, rounded once to bfloat16 (within an ulp of the float64
    reference's value)."""
    for dim in case["dims"]:
        dim["s"] = 1
    x, w, dy, geo, x_shape = _wide_case(case, channels, outs, channels_last)
    counted = _Counted()
    with module_settings(matrix_tiles, forward=counted):
        y = conv_dense.conv_forward(x, w, *geo, channels_last=channels_last)
        dx = conv_dense.conv_backprop_input(dy, w, x_shape, *geo, channels_last=channels_last)
    reaches = all(b <= (d["k"] - 1) * d["d"] and a <= (d["k"] - 1) * d["d"]
                  for d in case["dims"] for b, a in [d["pad"]])
    assert counted.calls == 1 + reaches          # a padding past the taps: not as a forward
    check_close(y, conv_forward_ref(x.astype(np.float64), w.astype(np.float64), *geo,
                                    channels_last=channels_last), BF16)
    check_close(dx, conv_backprop_input_ref(dy.astype(np.float64), w.astype(np.float64),
                                            x_shape, *geo, channels_last=channels_last), BF16)


@on_tiles
@SETTINGS
@given(case=conv_cases(min_size=1), channels=st.integers(16, 72), outs=st.integers(16, 72),
       width=st.integers(1, 48), channels_last=st.booleans())
def test_filter_gradients_match_reference(case, channels, outs, width, channels_last):
    """The stride-1 filter gradient through ``conv_backprop_filter`` (either layout): on
    the tiles (x transposed to rows of positions, dy in pairs of positions, zero at a
    plane's padding columns), float32 sums rounded once to bfloat16; with a non-finite x
    on the float32 path, as NaN and infinity must land only where the sums reach them."""
    for dim in case["dims"]:
        dim["s"] = 1
    case["dims"][-1]["size"] = width
    x, w, dy, geo, _ = _wide_case(case, channels, outs, channels_last)
    counted = _Counted(matrix_tiles.backprop_filter)
    with module_settings(matrix_tiles, backprop_filter=counted):
        got = conv_dense.conv_backprop_filter(x, dy, w.shape, *geo,
                                              channels_last=channels_last)
    assert counted.calls == 1 and got.dtype == BF16 and got.shape == w.shape
    x64, dy64 = x.astype(np.float64), dy.astype(np.float64)
    want = conv_backprop_filter_ref(x64, dy64, w.shape, *geo, channels_last=channels_last)
    magnitude = conv_backprop_filter_ref(np.abs(x64), np.abs(dy64), w.shape, *geo,
                                         channels_last=channels_last)
    error = 3e-5 * magnitude               # float32 sums, then one rounding to bfloat16
    assert np.all(np.abs(got.astype(np.float64) - want) <= 2 ** -8 * (np.abs(want) + error)
                  + error + 1e-30)
    x.reshape(-1)[0] = np.inf
    counted = _Counted(matrix_tiles.backprop_filter)
    with module_settings(matrix_tiles, backprop_filter=counted), np.errstate(invalid="ignore"):
        conv_dense.conv_backprop_filter(x, dy, w.shape, *geo, channels_last=channels_last)
    assert counted.calls == 0


@on_products
def test_tiles_agree_with_the_float32_path():
    """The same convs with the tiles switched off (the float32 micro-kernels, rounded
    once): the two agree within one bfloat16 rounding."""
    rng = np.random.default_rng(7)
    x = rng.uniform(-1, 1, (2, 12, 40, 48)).astype(BF16)
    w = rng.uniform(-1, 1, (3, 3, 48, 64)).astype(BF16)
    geo = ((1, 2), (1, 1), ((1, 1), (1, 1)))
    counted = _Counted()
    with module_settings(matrix_tiles, forward=counted):
        tiled = conv_dense.conv_forward(x, w, *geo).astype(np.float64)
    with module_settings(matrix_tiles, applies=lambda *args: False, forward=counted):
        plain = conv_dense.conv_forward(x, w, *geo).astype(np.float64)
    assert counted.calls == 1
    assert np.all(np.abs(tiled - plain) <= 2 ** -7 * np.abs(plain) + 1e-6)


@SETTINGS
@given(kernel=st.lists(st.integers(1, 3), min_size=1, max_size=3),
       channels=st.integers(1, 70), outs=st.integers(1, 70), flipped=st.booleans(),
       dtype=st.sampled_from([BF16, np.float32]))
def test_packed_filter_is_the_products_layout(kernel, channels, outs, flipped, dtype):
    """``_packed`` (``compiled.matrix_tiles.pack_filter``) of a filter (bfloat16, or float32
    rounded to it), or of the flipped view the input gradient passes: for each block of 32
    output channels, each (tap, group of 32 channels) step's two tiles of 16 output
    channels in rows of channel pairs, zeros past C and O; the layout written out with
    NumPy."""
    w = np.random.default_rng(len(kernel)).standard_normal((*kernel, channels, outs))
    w = w.astype(dtype)
    if flipped:
        w = flipped_filter(w, copy=False)
    taps, c, o = math.prod(kernel), w.shape[-2], w.shape[-1]
    width, blocks = -(-c // 32) * 32, -(-o // 32)
    full = np.zeros((taps, width, blocks * 32), BF16)
    full[:, :c, :o] = np.asarray(w).reshape(taps, c, o).astype(BF16)
    want = full.reshape(taps, width // 32, 16, 2, blocks, 2, 16).transpose(4, 0, 1, 5, 2, 6, 3)
    got = matrix_tiles._packed(w, tuple(kernel), width)
    assert np.array_equal(got, np.ascontiguousarray(want).reshape(-1).view(np.uint16))


_DIMS = st.tuples(st.integers(1, 9), st.integers(1, 4), st.integers(1, 3), st.integers(1, 2),
                  st.integers(0, 3), st.integers(1, 8))   # size, k, stride, dilation, pad, q


@SETTINGS
@given(dims=st.lists(_DIMS, min_size=3, max_size=3), rows=st.booleans())
def test_each_line_sums_the_taps_that_read_the_input(dims, rows):
    """``_tap_classes``: a line of output positions (a row, or a plane over its rows)
    sums, in the filter's order, every tap of the last dim with the taps of the leading
    dim (and of the second where it is a row) whose input position lies inside the input,
    not in its padding, and no others; or every tap, where that leaves out less than
    ``MIN_SAVED`` of the products."""
    sizes, kernel, strides, dilations, before, out3 = (tuple(d[i] for d in dims)
                                                       for i in range(6))
    pads = tuple((b, 0) for b in before)
    classes, line_class = matrix_tiles._tap_classes(sizes, kernel, strides, dilations, pads,
                                                    out3, rows)
    lines = list(itertools.product(range(out3[0]), range(out3[1]) if rows else [None]))
    assert len(line_class) == len(lines)

    def inside(dim, q, k):
        return q is None or 0 <= q * strides[dim] - before[dim] + k * dilations[dim] < sizes[dim]

    want = [[(k1 * kernel[1] + k2) * kernel[2] + k3
             for k1, k2, k3 in itertools.product(*map(range, kernel))
             if inside(0, q1, k1) and inside(1, q2, k2)] for q1, q2 in lines]
    every = list(range(math.prod(kernel)))
    if sum(map(len, want)) > (1 - inner_taps.MIN_SAVED) * len(every) * len(lines):
        want = [every] * len(lines)
    assert [classes[kind].tolist() for kind in line_class] == want
    assert not any(a.flags.writeable for a in (*classes, line_class))   # kept, shared


def test_which_convs_take_the_tiles(monkeypatch):
    """bfloat16 on NumPy with 16+ channels each way and no negative padding; the input
    gradient only at stride 1, where its forward's padding is not negative; a forward conv
    that takes them has no kernel route of its own (a 1x1 one included). With AVX512-BF16
    and no tiles, the forward conv and the input gradient, not the filter gradient."""
    monkeypatch.setattr(host_isa, "matrix_tiles", lambda: True)
    pads = ((1, 1), (1, 1))
    assert matrix_tiles.applies(np, BF16, (3, 3), 16, 16, pads)
    assert not matrix_tiles.applies(np, np.float32, (3, 3), 64, 64, pads)
    assert not matrix_tiles.applies(np, np.float16, (3, 3), 64, 64, pads)
    assert not matrix_tiles.applies(np, BF16, (3, 3), 15, 64, pads)
    assert not matrix_tiles.applies(np, BF16, (3, 3), 64, 8, pads)
    assert not matrix_tiles.applies(np, BF16, (3, 3), 64, 64, ((-1, 1), (1, 1)))
    assert not matrix_tiles.applies(np, BF16, (2, 2, 2, 2), 64, 64, pads * 2)
    assert matrix_tiles.takes_input_gradient(np, BF16, (3, 3, 32, 64), (1, 1), (1, 1), pads)
    assert not matrix_tiles.takes_input_gradient(np, BF16, (3, 3, 32, 64), (2, 1), (1, 1),
                                                 pads)
    assert not matrix_tiles.takes_input_gradient(np, BF16, (3, 3, 32, 64), (1, 1), (1, 1),
                                                 ((3, 0), (1, 1)))
    assert matrix_tiles.takes_filter_gradient(np, BF16, (3, 3, 32, 64), (1, 1), pads)
    assert not matrix_tiles.takes_filter_gradient(np, BF16, (3, 3, 32, 64), (1, 2), pads)
    assert not matrix_tiles.takes_filter_gradient(np, np.float32, (3, 3, 32, 64), (1, 1),
                                                  pads)
    route = kernel_route((1, 8, 8, 32), (1, 1, 32, 32), (1, 1), (1, 1), ((0, 0), (0, 0)),
                         (8, 8), BF16)
    assert route is None
    monkeypatch.setattr(host_isa, "matrix_tiles", lambda: False)
    monkeypatch.setattr(host_isa, "bfloat16_dots", lambda: True)
    assert matrix_tiles.applies(np, BF16, (3, 3), 16, 16, pads)
    assert matrix_tiles.takes_input_gradient(np, BF16, (3, 3, 32, 64), (1, 1), (1, 1), pads)
    assert not matrix_tiles.takes_filter_gradient(np, BF16, (3, 3, 32, 64), (1, 1), pads)
    monkeypatch.setattr(host_isa, "bfloat16_dots", lambda: False)
    assert not matrix_tiles.applies(np, BF16, (3, 3), 64, 64, pads)


def test_host_check_wants_both_features(monkeypatch):
    """No tiles where numba's code lacks AMX-TILE or AMX-BF16 (forced AVX2 code among
    them), and no dot products where it lacks AVX512-BF16 (or the AVX512-DQ and -BW the
    code around them needs), whatever the host; the loops
    refuse to run without either rather than die on an instruction the CPU lacks."""
    checks = (host_isa.matrix_tiles, host_isa.bfloat16_dots)
    x, w = np.ones((1, 4, 32), BF16), np.ones((1, 32, 32), BF16)
    try:
        for features in ("", "+avx2,+fma", "+amx-tile,-amx-bf16", "-amx-tile,+amx-bf16",
                         "+avx512f,-avx512bf16", "+avx512f,+avx512bf16"):
            monkeypatch.setattr(host_isa, "numba_target", lambda f=features: ("haswell", f))
            for check in checks:
                check.cache_clear()
            assert host_isa.matrix_tiles() is False and host_isa.bfloat16_dots() is False
            with pytest.raises(RuntimeError, match="need AMX-BF16 tiles or AVX512-BF16"):
                matrix_tiles.forward(x, w, (1,), (1,), [(0, 0)], (4,))
        monkeypatch.setattr(host_isa, "numba_target",
                            lambda: ("znver4", "+avx512f,+avx512bw,+avx512dq,+avx512bf16"))
        host_isa.bfloat16_dots.cache_clear()
        assert host_isa.bfloat16_dots() is True
    finally:
        monkeypatch.undo()
        for check in checks:
            check.cache_clear()


@on_products
@pytest.mark.parametrize("op, x_shape, w_shape, strides, padding", [
    ("Conv2D", (2, 10, 12, 32), (3, 3, 32, 48), [1, 1, 1, 1], "SAME"),
    ("Conv2D", (1, 9, 9, 40), (3, 2, 40, 32), [1, 2, 3, 1], "VALID"),
    ("Conv3D", (1, 6, 8, 8, 32), (3, 3, 3, 32, 16), [1, 1, 1, 1, 1], "SAME"),
    ("Conv2DBackpropInput", (2, 10, 12, 32), (3, 3, 32, 48), [1, 1, 1, 1], "SAME"),
    ("Conv3DBackpropInputV2", (1, 6, 8, 8, 32), (3, 3, 3, 32, 64), [1, 1, 1, 1, 1],
     "SAME"),
    ("Conv2DBackpropFilter", (2, 10, 12, 32), (3, 3, 32, 48), [1, 1, 1, 1], "SAME"),
    ("Conv3DBackpropFilterV2", (1, 6, 8, 8, 32), (3, 3, 3, 32, 16), [1, 1, 1, 1, 1],
     "VALID"),
])
def test_raw_ops_match_tensorflow(op, x_shape, w_shape, strides, padding):
    """TF's raw ops in bfloat16 against TensorFlow: the same shape and dtype, and values at
    least as close to the float64 reference's as TF's own (within half an ulp of it, and
    of float32's sums for the filter gradients' long sums; TF's Eigen kernels, which the
    suite runs, round more)."""
    tf = pytest.importorskip("tensorflow")
    if "BackpropFilter" in op and not host_isa.matrix_tiles():
        pytest.skip("the filter gradient runs on AMX tiles only")
    rng = np.random.default_rng(3)
    x = rng.uniform(-1, 1, x_shape).astype(BF16)
    w = rng.uniform(-1, 1, w_shape).astype(BF16)
    spatial = strides[1:-1]
    pads = [same_pads(size, k, s, 1) if padding == "SAME" else (0, 0)
            for size, k, s in zip(x_shape[1:-1], w_shape[:-2], spatial)]
    geo = (spatial, (1,) * len(spatial), pads)
    want = conv_forward_ref(x.astype(np.float64), w.astype(np.float64), *geo)
    kwargs = dict(input=x, filter=w, strides=strides, padding=padding)
    dy = rng.uniform(-1, 1, want.shape).astype(BF16)
    if "BackpropInput" in op:
        want = conv_backprop_input_ref(dy.astype(np.float64), w.astype(np.float64), x_shape,
                                       *geo)
        kwargs = dict(input_sizes=np.array(x_shape, np.int32), filter=w, out_backprop=dy,
                      strides=strides, padding=padding)
    elif "BackpropFilter" in op:
        want = conv_backprop_filter_ref(x.astype(np.float64), dy.astype(np.float64),
                                        w_shape, *geo)
        kwargs = dict(input=x, filter_sizes=np.array(w_shape, np.int32), out_backprop=dy,
                      strides=strides, padding=padding)
    theirs = getattr(tf.raw_ops, op)(**kwargs).numpy()
    which = "backprop_filter" if "BackpropFilter" in op else "forward"
    counted = _Counted(getattr(matrix_tiles, which))
    with module_settings(matrix_tiles, **{which: counted}):
        ours = getattr(gp.raw_ops, op)(**kwargs)
    assert counted.calls == 1
    assert ours.shape == theirs.shape and ours.dtype == theirs.dtype == BF16
    half_ulp = 2.0 ** (np.floor(np.log2(np.abs(want) + 1e-30)) - 8)
    sums = 2e-5 * np.abs(want).max() + 1e-6      # float32's sums before the rounding
    ours_off = np.abs(ours.astype(np.float64) - want)
    assert np.all(ours_off <= half_ulp * (1 + 2 ** -8) + sums)
    assert np.all(ours_off <= np.abs(theirs.astype(np.float64) - want) + half_ulp + sums)
