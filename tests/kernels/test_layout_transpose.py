"""The compiled layout moves (kernels/compiled/transpose.py) and the conv layout helpers that use
them, against NumPy's transposes."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from graphops.kernels.conv_algorithms import layout as conv_layout
from graphops.kernels.compiled import loops
from graphops.kernels.conv_algorithms.layout import channels_last_copy, from_channels_last
from tests.cache_lines import at_line_offset

FOUR_BYTE = [np.float32, np.int32, np.uint32]


def _bits(rng, shape, dtype):
    """Random 4-byte patterns, NaNs with payloads among them when viewed as float32."""
    return rng.integers(0, 2**32, shape, dtype=np.uint32).view(dtype)


@settings(max_examples=60, deadline=None)
@given(count=st.integers(1, 3), rows=st.integers(1, 150), columns=st.integers(1, 150),
       src_offset=st.integers(0, 15), dst_offset=st.sampled_from([0, 0, 3, 8]),
       seed=st.integers(0, 2**32 - 1))
def test_transpose_matches_numpy(count, rows, columns, src_offset, dst_offset, seed):
    """Blocks, tiles, the rows and columns short of a block, streamed (aligned output, at
    most a tile of rows in blocks) and plain stores: every bit lands where NumPy puts it."""
    rng = np.random.default_rng(seed)
    src = at_line_offset(_bits(rng, (count, rows, columns), np.float32), src_offset)
    dst = at_line_offset(np.zeros((count, columns, rows), np.float32), dst_offset)
    loops("transpose", chunk=1).transpose(src.reshape(-1), dst.reshape(-1), count, rows,
                                                columns)
    np.testing.assert_array_equal(dst.view(np.uint32),
                                  src.transpose(0, 2, 1).view(np.uint32))


@pytest.mark.parametrize("dtype", FOUR_BYTE + [np.float64, np.float16])
@pytest.mark.parametrize("spatial", [(7,), (5, 9), (3, 4, 6)])
def test_layout_helpers_move_every_value(dtype, spatial, monkeypatch):
    """channels_last_copy and from_channels_last give NumPy's layouts, on the compiled
    moves for 4-byte types (the size threshold lowered) and on NumPy's for the rest."""
    monkeypatch.setattr(conv_layout, "COMPILED_TRANSPOSE_MIN_SIZE", 1)
    rng = np.random.default_rng(3)
    shape = (2, 19, *spatial)
    first = _bits(rng, shape, dtype) if np.dtype(dtype).itemsize == 4 else \
        rng.standard_normal(shape).astype(dtype)
    last = channels_last_copy(first, channels_last=False)
    assert last.flags.c_contiguous
    np.testing.assert_array_equal(last.view(np.uint8), np.moveaxis(first, 1, -1).copy()
                                  .view(np.uint8))
    back = from_channels_last(last, channels_last=False)
    np.testing.assert_array_equal(back.view(np.uint8), first.view(np.uint8))


def test_channels_last_views_are_copied_not_moved(monkeypatch):
    """A channels-last input that is a strided view is copied as it is (never taken for
    channels-first and transposed)."""
    monkeypatch.setattr(conv_layout, "COMPILED_TRANSPOSE_MIN_SIZE", 1)
    x = np.arange(2 * 6 * 8 * 32, dtype=np.float32).reshape(2, 6, 8, 32)[:, ::2]
    np.testing.assert_array_equal(channels_last_copy(x, channels_last=True), x)
