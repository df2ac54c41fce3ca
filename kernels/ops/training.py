"""Optimizer update kernels (TF's training_ops.cc): in-place updates of resource variables,
on the CPU and the GPU (wherever the variables live), written against `ctx.xp`. On the CPU,
gradient descent, momentum and Adam on large variables run as one fused compiled pass
(`compiled.training`)."""

import numpy as np

from graphops.kernels.compiled import loops
from graphops.kernels.support.kernel_util import (PARALLEL_MIN_SIZE, PARALLEL_MIN_SIZE_COMPUTE,
                                                  compiled_cpu)

from graphops.kernels.ops.state import check_dtype, locked, lookup_var, writable_value
from graphops.registry import dtypes
from graphops.registry.errors import InvalidArgumentError
from graphops.registry.kernel_registry import OpKernel, register_kernel
from graphops.registry.tensor_shape import shape_str

_FLOATS = {"T": list(dtypes.FLOAT_TYPES)}


def _flat(array):
    return array.reshape(-1)


def _updates(var, parallel_from=PARALLEL_MIN_SIZE):
    """The compiled update loops, on one thread for a variable below ``parallel_from``
    values (see ``kernel_util.PARALLEL_MIN_SIZE``)."""
    return loops("training", single=var.size < parallel_from)


def _same_shape(a, b, names):
    if a.shape != b.shape:
        raise InvalidArgumentError(f"{names} do not have the same shape"
                                   f"{shape_str(a.shape)} {shape_str(b.shape)}")


class _ApplyKernel(OpKernel):
    """Shared set-up: the variables behind the resource inputs (`var_names`) are locked,
    checked and updated in place by `update(values, inputs)`; float16/bfloat16 are computed
    in float32 and rounded once."""

    var_names = ("var",)
    scalar_names = ()          # names of the other inputs that must be scalars ("" = the gradient)
    grad_name = "grad"

    def __init__(self, ctx):
        super().__init__(ctx)
        self.dtype = ctx.get_attr("T")
        self.use_nesterov = ctx.get_attr("use_nesterov") if ctx.has_attr("use_nesterov") else False
        self.wide = np.float32 if self.dtype.size == 2 else None

    def compute(self, ctx):
        num_vars = len(self.var_names)
        inputs = [ctx.input(i) for i in range(num_vars, ctx.num_inputs)]
        for name, value in zip(self.scalar_names, inputs):
            if name and value.ndim != 0:
                raise InvalidArgumentError(f"{name} is not a scalar: {shape_str(value.shape)}")
        variables = [lookup_var(ctx, i) for i in range(num_vars)]
        for var in variables:
            check_dtype(var, self.dtype, "update")
        with locked(variables):
            stored = [writable_value(var) for var in variables]
            for name, value in zip(self.var_names[1:], stored[1:]):
                _same_shape(stored[0], value, f"var and {name}")
            _same_shape(stored[0], inputs[self.scalar_names.index("")], f"var and {self.grad_name}")
            if self.wide is None:
                self.update(ctx.xp, stored, inputs)
                return
            work = [v.astype(self.wide) for v in stored]
            self.update(ctx.xp, work, [v.astype(self.wide) for v in inputs])
            for target, value in zip(stored, work):
                target[...] = value

    def update(self, xp, values, inputs):
        raise NotImplementedError


@register_kernel("ResourceApplyGradientDescent", ("CPU", "GPU"), _FLOATS)
class ResourceApplyGradientDescentKernel(_ApplyKernel):
    scalar_names = ("alpha", "")
    grad_name = "delta"

    def update(self, xp, values, inputs):
        (var,), (alpha, delta) = values, inputs
        if compiled_cpu(xp, var):
            _updates(var).gradient_descent(_flat(var), alpha[()], _flat(delta))
        else:
            var -= alpha * delta


@register_kernel("ResourceApplyMomentum", ("CPU", "GPU"), _FLOATS)
class ResourceApplyMomentumKernel(_ApplyKernel):
    var_names = ("var", "accum")
    scalar_names = ("lr", "", "momentum")

    def update(self, xp, values, inputs):
        (var, accum), (lr, grad, momentum) = values, inputs
        if compiled_cpu(xp, var, accum):
            _updates(var).momentum(_flat(var), _flat(accum), lr[()], _flat(grad), momentum[()],
                                   self.use_nesterov)
            return
        accum *= momentum
        accum += grad
        if self.use_nesterov:
            var -= grad * lr + accum * momentum * lr
        else:
            var -= lr * accum


@register_kernel("ResourceApplyAdam", ("CPU", "GPU"), _FLOATS)
class ResourceApplyAdamKernel(_ApplyKernel):
    var_names = ("var", "m", "v")
    scalar_names = ("beta1_power", "beta2_power", "lr", "beta1", "beta2", "epsilon", "")

    def update(self, xp, values, inputs):
        (var, m, v), (beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad) = values, inputs
        beta1, beta2, epsilon = beta1[()], beta2[()], epsilon[()]    # scalars: fast arithmetic
        one = var.dtype.type(1)
        lr_t = lr[()] * xp.sqrt(one - beta2_power[()]) / (one - beta1_power[()])
        if compiled_cpu(xp, var, m, v):
            _updates(var, PARALLEL_MIN_SIZE_COMPUTE).adam(
                _flat(var), _flat(m), _flat(v), _flat(grad), lr_t, beta1, one - beta1,
                one - beta2, epsilon, self.use_nesterov)
            return
        m += (grad - m) * (one - beta1)
        v += (grad * grad - v) * (one - beta2)
        if self.use_nesterov:
            var -= (grad * (one - beta1) + beta1 * m) * lr_t / (xp.sqrt(v) + epsilon)
        else:
            var -= m * lr_t / (xp.sqrt(v) + epsilon)


@register_kernel("ResourceApplyRMSProp", ("CPU", "GPU"), _FLOATS)
class ResourceApplyRMSPropKernel(_ApplyKernel):
    var_names = ("var", "ms", "mom")
    scalar_names = ("lr", "rho", "momentum", "epsilon", "")

    def update(self, xp, values, inputs):
        (var, ms, mom), (lr, rho, momentum, epsilon, grad) = values, inputs
        ms += (grad * grad - ms) * (xp.ones((), var.dtype) - rho)
        mom *= momentum
        mom += grad * lr / xp.sqrt(ms + epsilon)
        var -= mom


@register_kernel("ResourceApplyCenteredRMSProp", ("CPU", "GPU"), _FLOATS)
class ResourceApplyCenteredRMSPropKernel(_ApplyKernel):
    var_names = ("var", "mg", "ms", "mom")
    scalar_names = ("lr", "rho", "momentum", "epsilon", "")

    def update(self, xp, values, inputs):
        (var, mg, ms, mom), (lr, rho, momentum, epsilon, grad) = values, inputs
        one_minus_rho = xp.ones((), var.dtype) - rho
        ms += (grad * grad - ms) * one_minus_rho
        mg += (grad - mg) * one_minus_rho
        mom *= momentum
        mom += grad * lr / xp.sqrt(ms - mg * mg + epsilon)
        var -= mom


class _AdagradKernel(_ApplyKernel):
    var_names = ("var", "accum")

    def __init__(self, ctx):
        super().__init__(ctx)
        self.update_slots = ctx.get_attr("update_slots")


@register_kernel("ResourceApplyAdagrad", ("CPU", "GPU"), _FLOATS)
class ResourceApplyAdagradKernel(_AdagradKernel):
    scalar_names = ("lr", "")

    def update(self, xp, values, inputs):
        (var, accum), (lr, grad) = values, inputs
        if self.update_slots:
            accum += grad * grad
        var -= grad * lr / xp.sqrt(accum)


@register_kernel("ResourceApplyAdagradV2", ("CPU", "GPU"), _FLOATS)
class ResourceApplyAdagradV2Kernel(_AdagradKernel):
    scalar_names = ("lr", "epsilon", "")

    def update(self, xp, values, inputs):
        (var, accum), (lr, epsilon, grad) = values, inputs
        if self.update_slots:
            accum += grad * grad
        var -= grad * lr / (xp.sqrt(accum) + epsilon)
