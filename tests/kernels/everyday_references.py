"""Shared by the everyday-op tests (test_everyday_op_defs, test_everyday_math_ops,
test_everyday_array_ops): small inputs, the hypothesis settings, eager and graph runs, and
slow, obvious references written with Python scalars and explicit loops."""

import itertools
import math

import numpy as np
from hypothesis import settings
from hypothesis.extra import numpy as hnp

from tests.op_runners import run_eager, run_graph

SETTINGS = settings(max_examples=40, deadline=None)
MODES = ["eager", "graph"]


def f32(*shape):
    return np.arange(math.prod(shape), dtype=np.float32).reshape(shape)


def i32(*values):
    return np.array(values, np.int32)


def call(mode, op, **kwargs):
    return (run_eager if mode == "eager" else run_graph)(op, **kwargs)


def wrap_int(value, dtype):
    """Python int -> the value a `dtype` integer holds after two's-complement wrapping."""
    bits = np.dtype(dtype).itemsize * 8
    value %= 1 << bits
    if np.issubdtype(dtype, np.signedinteger) and value >= 1 << (bits - 1):
        value -= 1 << bits
    return value


def ref_broadcast(fn, x, y, out_dtype):
    """Element by element with explicit index arithmetic: TF's broadcasting rules."""
    rank = max(x.ndim, y.ndim)
    xs, ys = (1,) * (rank - x.ndim) + x.shape, (1,) * (rank - y.ndim) + y.shape
    out_shape = tuple(b if a == 1 else a for a, b in zip(xs, ys))
    xr, yr = x.reshape(xs), y.reshape(ys)
    out = np.empty(out_shape, out_dtype)
    with np.errstate(all="ignore"):
        for idx in itertools.product(*map(range, out_shape)):
            xi = tuple(0 if d == 1 else i for i, d in zip(idx, xs))
            yi = tuple(0 if d == 1 else i for i, d in zip(idx, ys))
            out[idx] = fn(xr[xi], yr[yi])
    return out


def ref_reduce(x, axes, keep_dims, combine):
    """`combine(list of elements)` over the reduced axes, one output element at a time."""
    axes = sorted({a % x.ndim for a in axes}) if x.ndim else []
    kept = [i for i in range(x.ndim) if i not in axes]
    out = {}
    for idx in itertools.product(*map(range, [x.shape[i] for i in kept])):
        where = dict(zip(kept, idx))
        cells = itertools.product(*[range(x.shape[i]) if i in axes else [where[i]]
                                    for i in range(x.ndim)])
        out[idx] = combine([x[c] for c in cells])
    shape = [1 if i in axes else d for i, d in enumerate(x.shape)] if keep_dims else \
        [x.shape[i] for i in kept]
    return [out[k] for k in sorted(out)], shape


def floats(dtype, low=-100.0, high=100.0):
    return hnp.from_dtype(np.dtype(dtype), min_value=low, max_value=high, allow_nan=False,
                          allow_subnormal=False)
