"""CPU and GPU kernels of the activations (Relu, Relu6, Elu, Selu, LeakyRelu, Softplus,
Softsign, Softmax, LogSoftmax) and their gradient ops (TF's relu_op_functor.h,
softplus_op.h, softsign_op.h, softmax_op_functor.h), written once against `ctx.xp`.

Each op is a formula over `xp`; half types are computed in float32 and rounded once. TF's
constants (alpha, Selu's scales) are first rounded to the op's type, as TF's
`static_cast<T>` does, so float64 results match TF's bit for bit.
"""

import ml_dtypes
import numpy as np

from graphops.kernels import compiled
from graphops.kernels.compiled import ELEMENT_CHUNK, loops
from graphops.kernels.ops.math import float32_if_half, HALF_TYPES
from graphops.kernels.support.kernel_util import (COMPILED_FLOATS, COMPILED_MIN_SIZE,
                                                  compiled_cpu, compiled_elementwise,
                                                  computable_types, DEVICES,
                                                  PARALLEL_MIN_SIZE_COMPUTE, softmax, where)
from graphops.registry import dtypes
from graphops.registry.errors import InvalidArgumentError
from graphops.registry.kernel_registry import OpKernel, register_kernel
from graphops.registry.tensor_shape import shape_str


SELU_SCALE = 1.0507009873554804934193349852946
SELU_SCALE_ALPHA = 1.7580993408473768599402175208123


def as_type(value, dtype):
    """`value` rounded to `dtype` (TF's static_cast<T>: inf beyond its range), as a Python
    float."""
    with np.errstate(over="ignore"):
        return float(np.asarray(value, dtype.np_dtype))


def softplus_threshold(dtype):
    """TF's log(epsilon) + 2: below it softplus(x) is exp(x), above -it x. TF computes half
    in float32 (float's threshold) but bfloat16 natively (bfloat16's)."""
    np_type = np.float32 if dtype == dtypes.float16 else dtype.np_dtype
    return as_type(np.log(float(ml_dtypes.finfo(np_type).eps)) + 2, dtype)


# ----------------------------------------------------------------------------- formulas
# fn(xp, inputs, k): `inputs` in the compute type; `k` the kernel (its per-node constants).

def _relu6(xp, x, k):
    if compiled_cpu(xp, x):            # NumPy's two NaN-aware passes: slower from 2**15
        return compiled_elementwise("relu6", x, x)
    zero, six = x.dtype.type(0), x.dtype.type(6)
    return xp.minimum(xp.maximum(zero, x), six)     # zero first: a tie gives x (-0)


def _elu(xp, x, k):
    return where(xp, x < 0, xp.exp(x) - 1, x)


def _selu(xp, x, k):
    return where(xp, x < 0, k.scale_alpha * (xp.exp(x) - 1), k.scale * x)


def _leaky_relu(xp, x, k):
    return where(xp, x > 0, x, x * k.alpha)


def _softplus(xp, x, k):
    e = xp.exp(x)
    small = xp.where(x < k.threshold, e, xp.log1p(e))
    return xp.where(x > -k.threshold, x, small)


def _softsign(xp, x, k):
    return x / (xp.abs(x) + 1)


def _relu_grad(xp, g, x, k):
    return _masked_product(xp, g, x, 0, None)


def _relu6_grad(xp, g, x, k):
    return _masked_product(xp, g, x, 0, 6)


def _masked_product(xp, g, x, low, high):
    """g * (low < x (< high unless None)) with the mask cast to g's type, as TF computes
    ReluGrad and Relu6Grad: a NaN or infinite gradient gives NaN even where the mask is 0.
    Large CPU floats in one compiled pass."""
    if g.size >= COMPILED_MIN_SIZE and compiled_cpu(xp, g, x):
        return compiled_elementwise("masked_product", g, g, x, x.dtype.type(low),
                                    x.dtype.type(high or 0), high is not None,
                                    g.dtype.type(1), g.dtype.type(0))
    mask = (x > low) if high is None else (x > low) & (x < high)
    return g * mask.astype(g.dtype)


def _elu_grad(xp, g, y, k):
    return where(xp, y < 0, (y + 1) * g, g)


def _selu_grad(xp, g, y, k):
    return where(xp, y < 0, g * (y + k.scale_alpha), g * k.scale)


def _leaky_relu_grad(xp, g, x, k):
    return where(xp, x > 0, g, g * k.alpha)


def _softplus_grad(xp, g, x, k):
    return g / (xp.exp(-x) + 1)


def _softsign_grad(xp, g, x, k):
    return g / xp.square(xp.abs(x) + 1)


# ----------------------------------------------------------------------------- kernels


class _ActivationKernel(OpKernel):
    """An elementwise activation (one input) or its gradient op (two same-shaped inputs)."""

    fn = None

    def __init__(self, ctx):
        super().__init__(ctx)
        dtype = ctx.output_dtypes[0]
        self.dtype = dtype
        if ctx.has_attr("alpha"):     # a float attr: float32 first, then T (as TF)
            self.alpha = as_type(np.float32(ctx.get_attr("alpha")), dtype)
        if dtype.is_floating:
            self.scale, self.scale_alpha = (as_type(v, dtype)
                                            for v in (SELU_SCALE, SELU_SCALE_ALPHA))
            self.threshold = softplus_threshold(dtype)

    def compute(self, ctx):
        inputs = ctx.inputs
        if len(inputs) == 2 and inputs[0].shape != inputs[1].shape:
            raise InvalidArgumentError(
                f"Inputs to operation {ctx.node_name} of type {ctx.op_type} must have the "
                f"same size and shape.  Input 0: {shape_str(inputs[0].shape)} != input 1: "
                f"{shape_str(inputs[1].shape)}")
        if self.dtype in HALF_TYPES:
            inputs = [float32_if_half(x, self.dtype) for x in inputs]
        y = type(self).fn(ctx.xp, *inputs, self)
        ctx.set_output(0, y.astype(self.dtype.np_dtype, copy=False))

    def prepare(self, ctx):
        inputs = ctx.inputs
        if (ctx.xp is not np or self.dtype in HALF_TYPES or inputs[0].ndim == 0
                or len(inputs) == 2 and inputs[0].shape != inputs[1].shape):
            return None
        fn, np_dtype = type(self).fn, self.dtype.np_dtype
        return lambda inputs: [fn(np, *inputs, self).astype(np_dtype, copy=False)]


_FORMULAS = {
    "Relu6": _relu6, "Elu": _elu, "Selu": _selu, "LeakyRelu": _leaky_relu,
    "Softplus": _softplus, "Softsign": _softsign,
    "ReluGrad": _relu_grad, "Relu6Grad": _relu6_grad, "EluGrad": _elu_grad,
    "SeluGrad": _selu_grad, "LeakyReluGrad": _leaky_relu_grad,
    "SoftplusGrad": _softplus_grad, "SoftsignGrad": _softsign_grad,
}
_CHAIN = {"Relu6": {"chain_activation": "Relu6", "elementwise": "relu6"}}   # OpKernel's

for _name, _fn in _FORMULAS.items():
    register_kernel(_name, DEVICES, type_constraints={"T": computable_types(_name)})(
        type(_name + "Op", (_ActivationKernel,),
             {"fn": staticmethod(_fn), **_CHAIN.get(_name, {})}))


@register_kernel("Relu", DEVICES, type_constraints={"T": computable_types("Relu")})
class ReluOp(OpKernel):
    """x where x >= 0 or NaN, else 0 (TF's max(x, 0): -0 stays -0, which NumPy's maximum
    turns to +0); large CPU floats in one compiled pass."""

    chain_activation = "Relu"
    elementwise = "relu"

    def compute(self, ctx):
        ctx.set_output(0, self._relu(ctx.xp, ctx.input(0)))

    def prepare(self, ctx):
        if ctx.xp is not np or ctx.input(0).ndim == 0:
            return None
        relu = self._relu
        return lambda inputs: [relu(np, inputs[0])]

    @staticmethod
    def _relu(xp, x):
        if compiled_cpu(xp, x):
            return compiled_elementwise("relu", x, x)
        return xp.maximum(x.dtype.type(0), x)    # zero first: a tie gives x (-0)


def numpy_softmax(x, log=False):
    """`kernel_util.softmax` of a NumPy `x` of at least one dim, the same ufuncs in the same
    order, into fresh buffers it reuses: two fewer allocations and calls."""
    shifted = x - np.maximum.reduce(x, axis=-1, keepdims=True)
    if log:
        total = np.add.reduce(np.exp(shifted), axis=-1, keepdims=True)
        shifted -= np.log(total, out=total)
        return shifted
    np.exp(shifted, out=shifted)
    shifted /= np.add.reduce(shifted, axis=-1, keepdims=True)
    return shifted


COMPILED_MAX_CLASSES = 32     # longer rows: NumPy's vectorised passes are faster


def host_softmax(x, log=False):
    """The softmax (log-softmax with `log`) over the last axis of a non-empty NumPy `x` of
    at least one dim: float32 and float64 rows of up to `COMPILED_MAX_CLASSES` values in
    one compiled pass (`compiled/cross_entropy.py`; each of NumPy's reductions calls its
    inner loop once per row), the rest, and a child forked after numba loaded, by
    `numpy_softmax`."""
    if (x.dtype not in COMPILED_FLOATS or x.shape[-1] > COMPILED_MAX_CLASSES
            or not compiled.usable()):
        return numpy_softmax(x, log)
    rows = np.ascontiguousarray(x).reshape(-1, x.shape[-1])
    out = np.empty(x.shape, x.dtype)
    chunk = max(1, ELEMENT_CHUNK // rows.shape[1])        # a thread's rows at a time
    loops("cross_entropy", chunk=chunk, single=x.size < PARALLEL_MIN_SIZE_COMPUTE
          ).softmax_rows(rows, out.reshape(rows.shape), log)
    return out


@register_kernel("Softmax", DEVICES, type_constraints={"T": computable_types("Softmax")})
class SoftmaxOp(OpKernel):
    """exp(x - max) / sum over the last dim (`log`: its log, LogSoftmax's kernel); half
    types in float32, rounded once."""

    log = False

    def compute(self, ctx):
        logits, dtype = ctx.input(0), ctx.output_dtype(0)
        if logits.ndim < 1:
            raise InvalidArgumentError(
                f"logits must have >= 1 dimension, got {shape_str(logits.shape)}")
        if logits.size == 0:
            ctx.set_output(0, logits)
            return
        if type(logits) is np.ndarray and dtype not in HALF_TYPES:
            ctx.set_output(0, host_softmax(logits, self.log))
            return
        y = softmax(ctx.xp, float32_if_half(logits, dtype), self.log)
        ctx.set_output(0, y.astype(dtype.np_dtype, copy=False))

    def prepare(self, ctx):
        """`host_softmax` itself, for host logits of at least one dim and value and of no
        half type (compute's check and its other cases stay with compute)."""
        logits = ctx.input(0)
        if (ctx.xp is not np or logits.ndim < 1 or logits.size == 0
                or ctx.output_dtype(0) in HALF_TYPES):
            return None
        log = self.log
        return lambda inputs: [host_softmax(inputs[0], log)]


@register_kernel("LogSoftmax", DEVICES, type_constraints={"T": computable_types("LogSoftmax")})
class LogSoftmaxOp(SoftmaxOp):
    """(x - max) - log(sum(exp(x - max))) over the last dim, as TF's SoftmaxEigenImpl:
    Softmax's kernel with its log."""

    log = True
