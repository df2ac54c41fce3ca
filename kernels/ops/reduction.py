"""Reduction kernels (Sum, Mean, Prod, Max, Min, Any, All, EuclideanNorm), the scans
(Cumsum, Cumprod) and ArgMax/ArgMin, for the CPU and the GPU, written once against
`ctx.xp`, with TF's axis checks.

Integer sums and products wrap in their own type; float sums accumulate in float64 (TF's
tree reductions are that accurate; NumPy's float32 sums over leading axes are not),
products of bfloat16 in float32; each result is rounded once. Mid-sized float sums over
leading axes (bias gradients) run as compiled column sums in NumPy's own order. float16
sums, means and products on the CPU round every partial result to float16 in TF's CPU
kernels' order (`numerics/half_sums.py`), and a float16 mean divides by the count as a
float16 (TF's kernels: 65520 values or more give a count of inf). An empty reduction gives
the reduction's identity (0, 1, the type's lowest or highest value, false, true), as TF
does.
"""

import functools
import math

import numpy as np

from graphops.kernels import compiled
from graphops.kernels.compiled import loops
from graphops.kernels.numerics import half_sums
from graphops.kernels.ops.math import float32_if_half
from graphops.kernels.support.kernel_util import (COMPILED_FLOATS, COMPILED_MIN_SIZE,
                                                  computable_types, DEVICES, float_sum,
                                                  sum_dtype)
from graphops.registry import dtypes
from graphops.registry.errors import InvalidArgumentError
from graphops.registry.kernel_registry import OpKernel, register_kernel
from graphops.registry.op_defs.array import int_values
from graphops.registry.tensor_shape import shape_str

# From this many values on, a contiguous float sum over leading axes into 2 or more columns
# runs as one compiled pass (`column_sum`): NumPy calls its inner loop once per row there.
COLUMN_SUM_MIN_SIZE = 1 << 10


def reduction_axes(axes_t, rank):
    """TF's ReductionHelper checks: the axes to reduce, wrapped, as a tuple."""
    axes = []
    for axis in int_values(axes_t):
        if not -rank <= axis < rank:
            raise InvalidArgumentError(
                f"Invalid reduction dimension ({axis} for input with {rank} dimension(s)")
        axis %= rank
        if axis in axes:
            raise InvalidArgumentError(
                f"Invalid reduction arguments: Axes contains duplicate dimension: {axis}")
        axes.append(axis)
    return tuple(axes)


def column_sum(x, axes):
    """The float64 sums of a contiguous float `x` over its leading `axes` into 2 or more
    columns, by the compiled loop: each column added up row after row from 0, the order in
    which NumPy's reduction adds it (the same float64 results, sooner); None where NumPy
    would order it otherwise, or runs as fast."""
    lead = len(axes)
    if not (COLUMN_SUM_MIN_SIZE <= x.size < COMPILED_MIN_SIZE and 0 < lead < x.ndim
            and x.dtype in COMPILED_FLOATS and x.flags.c_contiguous and compiled.usable()
            and axes == tuple(range(lead))):
        return None
    width = 1
    for d in x.shape[lead:]:
        width *= d
    if width < 2:                  # NumPy sums a single column pairwise
        return None
    total = np.zeros((1, width))
    loops("elementwise", chunk=1, single=True).column_sums(x.reshape(-1, width), total)
    return total.reshape(x.shape[lead:])


@functools.lru_cache(maxsize=256)
def leading_form(shape, axes):
    """(`shape` without its size-1 dims, how many of its first dims are reduced) where the
    reduced dims among those left come first, kept ones after; None where they do not, or
    where none or all of them are reduced (the sums NumPy orders its own way)."""
    left, lead, kept = [], 0, False
    for i, d in enumerate(shape):
        if d == 1:
            continue
        if i in axes:
            if kept:
                return None
            lead += 1
        else:
            kept = True
        left.append(d)
    return (tuple(left), lead) if 0 < lead < len(left) else None


class KeptAxes:
    """What a reduction keeps for one (input shape, axes): the checked ``axes``, the
    ``count`` of values each output reduces, the output's ``shape`` and, where
    ``leading_form`` finds one, the input's ``form`` (the shape and the leading axes a
    contiguous input is summed over instead)."""

    __slots__ = ("axes", "count", "shape", "form")

    def __init__(self, axes, count, shape, form):
        self.axes, self.count, self.shape, self.form = axes, count, shape, form


class ReductionOp(OpKernel):
    """Checks the axes, then `reduce(xp, x, dtype, axes)`; the result is cast to T.

    What the checked axes decide (`KeptAxes`) is kept for the last (input shape, axes)
    seen: repeats of it skip the checks. On the CPU, the types a subclass's `accumulator`
    names run through its `accumulate(x, kept)` instead: NumPy's reduction called
    directly, a few microseconds less per call."""

    sums = False       # whether `accumulate` is `total` (a mean's, OpKernel.averages: divided
                       # by the count)

    def __init__(self, ctx):
        super().__init__(ctx)
        self._keep_dims = ctx.get_attr("keep_dims")
        self._dtype = dtype = ctx.output_dtypes[0]
        self._np_dtype = dtype.np_dtype
        self._acc = self.accumulator(dtype) if ctx.xp is np else None

    def compute(self, ctx):
        x, axes_t = ctx.inputs
        kept = self.checked_once((x.shape, axes_t.tobytes(), axes_t.shape),
                                 lambda: self._kept_axes(x.shape, axes_t))
        if self._acc is not None and type(x) is np.ndarray:
            ctx.set_output(0, self._accumulated(x, kept))
            return
        with np.errstate(all="ignore"):
            y = self.reduce(ctx.xp, x, self._dtype, kept.axes)
        ctx.set_output(0, y.astype(self._np_dtype, copy=False))

    prepared_values = (1,)

    def prepare(self, ctx):
        """compute's CPU paths for these axes, checked at once."""
        x, axes_t = ctx.inputs
        kept = self._kept_axes(x.shape, axes_t)
        if ctx.xp is not np:
            return None
        if self._acc is not None:
            if self.sums and x.size < COLUMN_SUM_MIN_SIZE:
                return self._small_sum_call(kept)
            return lambda inputs: [self._accumulated(inputs[0], kept)]
        dtype, axes, np_dtype = self._dtype, kept.axes, self._np_dtype
        return lambda inputs: [np.asarray(self.reduce(np, inputs[0], dtype, axes), np_dtype)]

    def _small_sum_call(self, kept):
        """The prepared call of a sum (a mean: divided by the count) of fewer values than
        the column sums take: `total`'s one NumPy reduction, called directly."""
        shape, axes, acc, np_dtype = kept.shape, kept.axes, self._acc, self._np_dtype
        form_shape, form_axes = kept.form or (None, axes)
        count = kept.count if self.averages else None
        reduce = np.add.reduce

        def call(inputs):
            x = inputs[0]
            if form_shape is not None and x.flags.c_contiguous:
                y = reduce(x.reshape(form_shape), axis=form_axes, dtype=acc)
            else:
                y = reduce(x, axis=axes, dtype=acc)
            if count is not None:
                y = y / count                 # an empty mean is 0 / 0 = nan
            return [np.asarray(y, np_dtype).reshape(shape)]
        return call

    def _accumulated(self, x, kept):
        """`accumulate`'s result as an array of the output type."""
        y = self.accumulate(x, kept)
        return (y.astype(self._np_dtype, copy=False) if type(y) is np.ndarray
                else np.asarray(y, self._np_dtype))

    def _kept_axes(self, shape, axes_t):
        """The checked axes and what follows from them for this input shape."""
        axes = reduction_axes(axes_t, len(shape))
        form = leading_form(shape, axes)
        return KeptAxes(axes, math.prod(shape[axis] for axis in axes),
                        self.reduced_shape(shape, axes),
                        form and (form[0], tuple(range(form[1]))))

    @staticmethod
    def accumulator(dtype):
        """The type `accumulate(x, kept)` sums inputs of `dtype` in; None: `reduce`
        serves them."""
        return None

    def total(self, x, kept):
        """The sum over `kept.axes` of a CPU float or integer `x`, in `_acc` (Sum's, as
        `float_sum`: the large ones through it). Size-1 dims are left out first, so that
        a sum over the spatial dims of one image (a global average pool) is one over
        leading dims, which the compiled column sums take."""
        axes, form = kept.axes, kept.form
        if form is not None and x.flags.c_contiguous:
            x, axes = x.reshape(form[0]), form[1]
        if x.size >= COMPILED_MIN_SIZE:
            return float_sum(np, x, axes).reshape(kept.shape)
        y = column_sum(x, axes) if self._acc.kind == "f" else None
        return (np.add.reduce(x, axis=axes, dtype=self._acc) if y is None
                else y).reshape(kept.shape)

    def reduced_shape(self, shape, axes):
        if self._keep_dims:
            return tuple(1 if i in axes else d for i, d in enumerate(shape))
        return tuple(d for i, d in enumerate(shape) if i not in axes)


def _register(op, attr="T"):
    types = computable_types(op, attr) if attr else None
    return register_kernel(op, DEVICES, type_constraints={attr: types} if types else None,
                           host_memory=("reduction_indices",))


def tf_half_reduce(op, xp, x, axes, keep_dims, product=False):
    """A float16 sum or product on the CPU as TF's CPU kernel rounds it (`half_sums`), or
    None where the float accumulation applies: other types, other devices (TF's GPU kernels
    accumulate half in float32), empty reductions."""
    if x.dtype != np.float16 or xp is not np or x.size == 0:
        return None
    out = half_sums.reduce(xp, x, axes, product)
    return out.reshape(op.reduced_shape(x.shape, axes)) if keep_dims else out


@_register("Sum")
class SumOp(ReductionOp):
    """Integer sums wrap in their own type; float sums accumulate in float64, float16 ones
    on the CPU in float16 as TF's CPU kernel (`half_sums`)."""

    reduction = "sum"
    sums = True

    @staticmethod
    def accumulator(dtype):
        if dtype.is_integer:
            return dtype.np_dtype
        return np.dtype(np.float64) if dtype.np_dtype in COMPILED_FLOATS else None

    def accumulate(self, x, kept):
        return self.total(x, kept)

    def reduce(self, xp, x, dtype, axes):
        half = tf_half_reduce(self, xp, x, axes, self._keep_dims)
        return float_sum(xp, x, axes, self._keep_dims) if half is None else half


@_register("Mean")
class MeanOp(ReductionOp):
    """Integer means sum in 64 bits (wrapping) and divide truncating toward zero. A float16
    mean divides the float16 sum by the count as a float16, as TF's CPU kernel: from 65520
    values on the count is inf and the mean 0."""

    sums = averages = True

    @staticmethod
    def accumulator(dtype):
        return np.dtype(np.float64) if dtype.np_dtype in COMPILED_FLOATS else None

    def accumulate(self, x, kept):
        return self.total(x, kept) / kept.count     # an empty mean is 0 / 0 = nan

    def reduce(self, xp, x, dtype, axes):
        count = 1
        for axis in axes:
            count *= x.shape[axis]
        if dtype == dtypes.float16:
            total = tf_half_reduce(self, xp, x, axes, self._keep_dims)
            if total is None:
                total = float_sum(xp, x, axes, self._keep_dims)
            return total.astype(np.float16) / np.float16(count)
        if not dtype.is_integer:             # an empty mean is 0 / 0 = nan
            return float_sum(xp, x, axes, self._keep_dims) / count
        acc = np.uint64 if dtype.is_unsigned else np.int64
        total = xp.sum(x, axis=axes, dtype=acc, keepdims=self._keep_dims)
        quotient = total // acc(max(count, 1))
        if not dtype.is_unsigned:           # floor division -> truncation toward zero
            quotient += ((total < 0) & (total % max(count, 1) != 0)).astype(acc)
        return quotient


@_register("Prod")
class ProdOp(ReductionOp):
    """Integer products wrap; half ones in float32, float16 ones on the CPU in float16 as
    TF's CPU kernel."""

    def reduce(self, xp, x, dtype, axes):
        half = tf_half_reduce(self, xp, x, axes, self._keep_dims, product=True)
        if half is not None:
            return half
        acc = x.dtype if dtype.is_integer else None
        return xp.prod(float32_if_half(x, dtype), axis=axes, dtype=acc,
                       keepdims=self._keep_dims)


class ExtremumOp(ReductionOp):
    """Max or Min: NaN wins; an empty reduction gives -inf/+inf (the type's lowest/highest
    value for integers). Types other than the half ones reduce in their own on the CPU."""

    largest = True

    @staticmethod
    def accumulator(dtype):
        return None if dtype in (dtypes.float16, dtypes.bfloat16) else dtype.np_dtype

    def accumulate(self, x, kept):
        if kept.count == 0:
            return self.reduce(np, x, self._dtype, kept.axes)
        return (np.maximum if self.largest else np.minimum).reduce(
            x, axis=kept.axes, keepdims=self._keep_dims)

    def reduce(self, xp, x, dtype, axes):
        x = float32_if_half(x, dtype)
        if any(x.shape[axis] == 0 for axis in axes):
            if x.dtype.kind == "f":
                identity = -np.inf if self.largest else np.inf
            else:
                info = np.iinfo(x.dtype)
                identity = info.min if self.largest else info.max
            return xp.full(self.reduced_shape(x.shape, axes), identity, x.dtype)
        reduce = xp.max if self.largest else xp.min
        return reduce(x, axis=axes, keepdims=self._keep_dims)


_register("Max")(type("MaxOp", (ExtremumOp,), {}))
_register("Min")(type("MinOp", (ExtremumOp,), {"largest": False}))


@_register("Any", attr=None)
class AnyOp(ReductionOp):
    def reduce(self, xp, x, dtype, axes):
        return xp.any(x, axis=axes, keepdims=self._keep_dims)


@_register("All", attr=None)
class AllOp(ReductionOp):
    def reduce(self, xp, x, dtype, axes):
        return xp.all(x, axis=axes, keepdims=self._keep_dims)


# -----------------------------------------------------------------------------
# scans


class ScanOp(OpKernel):
    """A cumulative reduction (`scan`, with its `identity`) along `axis`: exclusive shifts
    the result by one, starting at the identity; reverse runs from the end. Integers wrap;
    half types are computed in float32, rounded once. TF's ScanOp checks and messages."""

    scan = identity = None

    def __init__(self, ctx):
        super().__init__(ctx)
        self._exclusive, self._reverse = ctx.get_attr("exclusive"), ctx.get_attr("reverse")

    def compute(self, ctx):
        x, axis_t, xp = ctx.input(0), ctx.input(1), ctx.xp
        dtype = ctx.output_dtype(0)
        if axis_t.ndim != 0:
            raise InvalidArgumentError(
                f"ScanOp: axis must be a scalar, not {shape_str(axis_t.shape)}")
        axis = int(axis_t)
        axis = axis + x.ndim if axis < 0 else axis      # reported wrapped, as TF does
        if not 0 <= axis < x.ndim:
            raise InvalidArgumentError(f"ScanOp: Expected scan axis in the range [{-x.ndim}, "
                                       f"{x.ndim}), but got {axis}")
        wide = float32_if_half(x, dtype)
        if self._reverse:
            wide = xp.flip(wide, axis)
        if self._exclusive and x.shape[axis]:
            head = [slice(None)] * x.ndim
            head[axis] = slice(0, 1)
            body = list(head)
            body[axis] = slice(0, -1)
            first = xp.full_like(wide[tuple(head)], self.identity)
            wide = xp.concatenate([first, wide[tuple(body)]], axis)
        out = getattr(xp, self.scan)(wide, axis=axis, dtype=wide.dtype)
        if self._reverse:
            out = xp.flip(out, axis)
        ctx.set_output(0, out.astype(dtype.np_dtype, copy=False))


for _name, _scan, _identity in (("Cumsum", "cumsum", 0), ("Cumprod", "cumprod", 1)):
    register_kernel(_name, DEVICES, type_constraints={"T": computable_types(_name)},
                    host_memory=("axis",))(
        type(_name + "Op", (ScanOp,), {"scan": _scan, "identity": _identity}))


# -----------------------------------------------------------------------------
# EuclideanNorm
#
# EuclideanNorm's kernel (CPU and GPU): squares summed as Sum sums them (integers wrap in
# their own type, floats in float64, half types rounded once), then the square root
# (truncated for integers, as C++'s cast of std::sqrt).
@register_kernel("EuclideanNorm", DEVICES,
                 type_constraints={"T": computable_types("EuclideanNorm")},
                 host_memory=("reduction_indices",))
class EuclideanNormOp(ReductionOp):
    def reduce(self, xp, x, dtype, axes):
        squares = x * xp.conj(x) if x.dtype.kind == "c" else x * x
        half = tf_half_reduce(self, xp, squares, axes, self._keep_dims)
        if half is not None:
            return xp.sqrt(half)
        total = xp.sum(squares, axis=axes, dtype=sum_dtype(x), keepdims=self._keep_dims)
        if dtype.is_integer:
            return xp.sqrt(total.astype(np.float64))
        return xp.sqrt(total)


# -----------------------------------------------------------------------------
# ArgMax, ArgMin
class ArgOpKernel(OpKernel):
    """Index of the largest (`largest`) or smallest value along `dimension`: the first one on
    ties; NaNs are skipped (an all-NaN row gives 0), as TF's CPU kernel does."""

    largest = True

    def __init__(self, ctx):
        super().__init__(ctx)
        self.output_type = ctx.get_attr("output_type")

    def compute(self, ctx):
        x, dimension, xp = ctx.input(0), ctx.input(1), ctx.xp
        if dimension.ndim != 0:
            raise InvalidArgumentError(
                f"dim must be a scalar, but received tensor of shape: "
                f"{shape_str(dimension.shape)}")
        axis = int(dimension)
        if not -x.ndim <= axis < x.ndim:
            raise InvalidArgumentError(
                f"Expected dimension in the range [{-x.ndim}, {x.ndim}), but got {axis}")
        if x.shape[axis] == 0:
            raise InvalidArgumentError(
                f"Reduction axis {axis} is empty in shape {shape_str(x.shape)}")
        if x.dtype.kind == "f" or x.dtype == dtypes.bfloat16.np_dtype:
            x = x.astype(np.promote_types(x.dtype, np.float32), copy=False)
            x = xp.where(xp.isnan(x), -np.inf if self.largest else np.inf, x)
        index = xp.argmax(x, axis=axis) if self.largest else xp.argmin(x, axis=axis)
        ctx.set_output(0, index.astype(self.output_type.np_dtype))


_ARG_TYPES = {"T": list(dtypes.type_set("realnumbertype")) + [dtypes.bool_]}
register_kernel("ArgMax", DEVICES, host_memory=("dimension",), type_constraints=_ARG_TYPES)(
    ArgOpKernel)
register_kernel("ArgMin", DEVICES, host_memory=("dimension",), type_constraints=_ARG_TYPES)(
    type("ArgMinKernel", (ArgOpKernel,), {"largest": False}))
