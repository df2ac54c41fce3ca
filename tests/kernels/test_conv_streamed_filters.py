"""The direct forward conv on a filter that streams from memory
(``conv_direct.STREAMED_FILTER_BYTES``, lowered here so that small filters stream): a
constant filter packed in blocks of strips, another summed in runs of its rows, the input
padded whole, the output channels split among the threads, and the epilogue applied to
each thread's channels once every run is summed; against the slow float64 reference (the
padded windows' loops: ``test_conv_inner_taps`` streams the classes of inner taps). Also
which convs stream, and on how many threads."""

import numpy as np
import pytest
from hypothesis import given, strategies as st

from graphops.kernels.compiled import host_isa, loops
from graphops.kernels.conv_algorithms import dense as conv_dense
from graphops.kernels.conv_algorithms import direct as conv_direct
from graphops.kernels.conv_algorithms import packed_filters
from graphops.kernels.conv_algorithms.routes import kernel_route
from tests.kernels.dense_conv_cases import (  # noqa: F401 (on_every_thread: autouse)
    SETTINGS, check_close, conv_cases, forward_operands, on_every_thread,
    padded_windows_only)
from tests.module_settings import module_settings


@SETTINGS
@given(case=conv_cases(min_size=1), channels=st.integers(1, 40), vectors=st.integers(1, 17),
       constant=st.booleans(), block=st.sampled_from([8, 24, 512]),
       streamed_bytes=st.integers(0, 4096), fused=st.booleans())
def test_streamed_filters_match_reference(case, channels, vectors, constant, block,
                                          streamed_bytes, fused):
    """Every rank, stride, dilation and padding; 8-136 output channels (so the threads'
    channel runs start at strips of two vectors or at half vectors); packs of 8-512 rows
    and runs of 1 to all rows, and a filter kept whole read as one block of strips where its
    rows are a whole number of a call's channels, and more (a constant one's pack kept); a
    BiasAdd and Relu fused in or not."""
    x, w, geo, epilogue, want = forward_operands(case, channels, 8 * vectors, fused)
    w.flags.writeable = not constant
    packs = {}                          # block rows asked for (None: BLOCK_ROWS) -> packs
    strips = packed_filters.strips

    def recorded(w2, width, block_rows=None):
        packs.setdefault(block_rows, []).append(strips(w2, width, block_rows))
        return packs[block_rows][-1]
    with module_settings(conv_direct, STREAMED_FILTER_BYTES=streamed_bytes), \
            module_settings(packed_filters, BLOCK_ROWS=block, strips=recorded), \
            padded_windows_only():
        got = conv_direct.forward(x, w, *geo, want.shape[1:-1], epilogue=epilogue)
        streamed = conv_direct.streams(got.size // got.shape[-1], x.nbytes, w.nbytes)
    module = loops("direct")
    width, call = 2 * module.LANES, module.CALL_CHANNELS
    outs, rows = w.shape[-1], w.size // w.shape[-1]
    assert [p is not None for p in packs.get(None, [])] == (
        [constant and outs % width == 0] * streamed)
    one_block = not streamed and outs > call and outs % call == 0   # kept whole, in strips
    assert [p is not None for p in packs.get(rows, [])] == [constant] * one_block
    assert got.shape == want.shape and got.dtype == np.float32
    check_close(got, want, np.float32)


@given(outs=st.integers(1, 40), splits=st.integers(1, 8))
def test_channel_runs_cover_the_channels_once_in_order(outs, splits):
    """The threads' runs of output channels: contiguous, in order, covering all of them,
    each starting at a whole strip of two vectors where the channels come in strips."""
    module = loops("direct")
    outs *= module.HALF_LANES
    starts = [module.split_at(outs, s, splits) for s in range(splits + 1)]
    assert starts[0] == 0 and starts[-1] == outs and starts == sorted(starts)
    unit = 2 * module.LANES if outs % (2 * module.LANES) == 0 else module.HALF_LANES
    assert all(start % unit == 0 for start in starts)


@pytest.mark.parametrize("x_shape, w_shape, stride, streams", [
    ((1, 4, 4, 256), (3, 3, 256, 256), 1, True),     # a deep block at batch 1: 2.4 MB
    ((8, 4, 4, 256), (3, 3, 256, 256), 1, True),
    ((1, 2, 2, 512), (3, 3, 512, 512), 1, True),     # 9.4 MB over 4 positions
    ((8, 8, 8, 512), (3, 3, 512, 512), 2, True),     # an input of 1 MB
    ((8, 16, 16, 256), (3, 3, 256, 512), 2, False),  # of 2 MB: the other paths
])
def test_forward_convs_take_a_large_filter_where_the_input_is_small(x_shape, w_shape,
                                                                    stride, streams):
    """A filter past ``MAX_FILTER_BYTES`` fits the direct forward (not the input gradient)
    where the input it reads again per run of rows is at most ``STREAMED_MAX_INPUT_BYTES``;
    such a conv runs on every thread whatever its arithmetic, as a filter streams from
    memory faster on more cores."""
    kernel, (c, o), n = w_shape[:-2], w_shape[-2:], x_shape[0]
    strides = (stride,) * len(kernel)
    out_shape = (n, *(-(-size // stride) for size in x_shape[1:-1]))
    assert conv_direct.applies(np, np.float32, kernel, strides, o, out_shape, c,
                               streamed=True) == streams
    assert not conv_direct.applies(np, np.float32, kernel, strides, o, out_shape, c)
    if n == 1:
        route = kernel_route(x_shape, w_shape, strides, strides, ((1, 1),) * len(kernel),
                             out_shape[1:], np.float32)
        assert route == "direct"
    x = np.zeros(x_shape, np.float32)
    with module_settings(conv_dense, SERIAL_MAX_FLOPS=1 << 40):
        assert not conv_dense.serial_forward(np, x, np.zeros(w_shape, np.float32), strides)
        assert conv_dense.serial_forward(np, x, np.zeros((*kernel, c, 8), np.float32),
                                         strides)


@SETTINGS
@given(case=conv_cases(min_size=1), channels=st.integers(1, 40), vectors=st.integers(1, 9),
       fused=st.booleans())
def test_pointwise_convs_on_the_direct_kernels_match_reference(case, channels, vectors,
                                                               fused):
    """Pointwise convs (1x1 filters, no padding, any stride, rank 1-3) whose filter streams
    (forced for any size), through ``conv_forward`` with a BiasAdd and Relu fused in or
    not."""
    for dim in case["dims"]:
        dim.update(k=1, pad=(0, 0))
    x, w, geo, epilogue, want = forward_operands(case, channels, 8 * vectors, fused)
    calls = []
    forward = conv_direct.forward
    with module_settings(conv_direct, STREAMED_FILTER_BYTES=0, STREAMED_MAX_POSITIONS=10**9,
                         POINTWISE_MAX_POSITIONS=10**9, MIN_PLANE_POSITIONS=1,
                         forward=lambda *a, **k: calls.append(1) or forward(*a, **k)):
        got = conv_dense.conv_forward(x, w, *geo, epilogue=epilogue)
    assert calls == [1]
    assert got.shape == want.shape and got.dtype == np.float32
    check_close(got, want, np.float32)


@pytest.mark.parametrize("x_shape, o, stride, route", [
    ((1, 2, 2, 2048), 512, 1, "direct"),       # ResNet50's last 1x1 convs at batch 1
    ((1, 4, 4, 256), 1024, 1, "direct"),       # a 1 MB filter over 16 positions
    ((8, 4, 4, 1024), 256, 1, "pointwise"),    # over 128: OpenBLAS's GEMM
    ((1, 4, 4, 2048), 512, 2, "direct"),       # strided
    ((8, 8, 8, 512), 128, 1, "pointwise"),     # 256 KB: stays in the cache
    ((8, 8, 8, 1024), 128, 1, "pointwise"),    # 512 positions
    ((1, 4, 4, 256), 1020, 1, "pointwise"),    # output channels not in groups of 8
])
def test_pointwise_convs_take_the_direct_kernels_where_the_filter_streams(x_shape, o, stride,
                                                                         route):
    """Below ``POINTWISE_MIN_MACS`` (set past every case here; from it every pointwise conv
    takes them: test_conv_dense_direct) a pointwise conv runs on the direct kernels where
    its filter ``streams`` over up to ``POINTWISE_MAX_POSITIONS`` positions, else as one
    GEMM."""
    c, rank = x_shape[-1], len(x_shape) - 2
    out_sp = tuple(-(-size // stride) for size in x_shape[1:-1])
    loops("direct")                      # the kernels' tiles are the host's, read first
    isa = host_isa.isa()._replace(registers=16)
    with module_settings(host_isa, isa=lambda: isa), \
            module_settings(conv_direct, POINTWISE_MIN_MACS=1 << 62):
        assert kernel_route(x_shape, (1, 1, c, o), (stride,) * rank, (1,) * rank,
                            ((0, 0),) * rank, out_sp, np.float32) == route
