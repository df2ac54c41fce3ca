"""Resource-variable kernels: a variable is a `Var` kept in the Session's ResourceMgr.

A `VarHandleOp` outputs a 0-d object array holding a `ResourceHandle` (always in host
memory); the other kernels look the `Var` up by the handle's name in `ctx.resources`. A
variable's value lives on the device of its handle op, as a `ctx.xp` array (placement
colocates every op using the handle there); a kernel on another device is refused, as in TF.

Reads copy nothing: a read returns a read-only view of the stored buffer. An update works in
place unless a reader still holds such a view (the buffer's reference count says so); then
it first replaces the buffer by a copy, so a value once read or fetched never changes under
its holder (copy-on-write, as TF's reference-counted buffers).
"""

import sys
import threading

import numpy as np

from graphops.registry.errors import FailedPreconditionError, InvalidArgumentError, NotFoundError
from graphops.registry.kernel_registry import OpKernel, register_kernel
from graphops.registry.resources import ResourceHandle
from graphops.registry.tensor_shape import shape_str


class Var:
    """One variable's storage on `device`; `lock` guards `value` (None until first assigned).
    `shape`: the declared shape a reference variable (VariableV2) checks its first Assign
    against, None when not fully known."""

    def __init__(self, name, dtype, device, shape=None):
        self.name = name
        self.dtype = dtype
        self.device = device
        self.shape = shape
        self.value = None
        self.lock = threading.Lock()

    def checked_value(self):
        """The stored array (caller holds the lock); FailedPreconditionError if unset."""
        if self.value is None:
            raise uninitialized(self.name)
        return self.value

    def ref_value(self):
        """The current value as a read sees it (a read-only view; FailedPreconditionError
        if unset): what ReadVariableOp outputs and a plain input of a reference edge gets."""
        with self.lock:
            return read_only(self.checked_value())


def _references(var):
    return sys.getrefcount(var.value)


def read_only(value):
    """A view of a stored buffer that no kernel can write through (CuPy has no such flag)."""
    view = value.view()
    if isinstance(view, np.ndarray):
        view.flags.writeable = False
    return view


def writable_value(var):
    """The stored array, ready to update in place (caller holds the lock): replaced first by
    a copy while a reader still holds a view of it."""
    var.checked_value()
    if _references(var) > _UNSHARED:
        var.value = var.value.copy()
    return var.value


def uninitialized(name):
    return FailedPreconditionError(f"Attempting to use uninitialized value {name}")


def input_handle(ctx, i):
    """The ResourceHandle carried by input `i`, which must live on this kernel's device."""
    value = ctx.input(i)
    handle = value.item() if isinstance(value, np.ndarray) and value.shape == () else value
    if not isinstance(handle, ResourceHandle):
        raise InvalidArgumentError(
            f"Input {i} of {ctx.op_type} must be a resource handle, got {type(handle).__name__}")
    _check_device(handle, ctx)
    return handle


def _check_device(resource, ctx):
    if resource.device != ctx.device_name:
        raise InvalidArgumentError(
            f"Trying to access resource {resource.name} located in device {resource.device} "
            f"from device {ctx.device_name}")


def input_ref(ctx, i):
    """The Var a reference input `i` (a `Ref(T)` arg: VariableV2's output) carries."""
    var = ctx.input(i)
    if not isinstance(var, Var):
        raise InvalidArgumentError(
            f"Input {i} of {ctx.op_type} must be a reference to a variable, got "
            f"{type(var).__name__}")
    return var


def set_output_ref(ctx, i, var):
    """Sets output `i`, a `Ref(T)` arg, to the Var itself (a reference, not an array)."""
    ctx.outputs[i] = var


def lookup_var(ctx, i):
    """The existing Var behind input `i`; FailedPreconditionError naming it if there is none."""
    handle = input_handle(ctx, i)
    try:
        var = ctx.resources.lookup(handle.name)
    except NotFoundError:
        raise uninitialized(handle.name) from None
    if not isinstance(var, Var):
        raise InvalidArgumentError(f"Resource {handle.name} is not a variable")
    _check_device(var, ctx)
    return var


def read_variable(ctx, i, dtype):
    """A read-only view of the value of the variable behind input `i`, checked to hold
    `dtype` (what ReadVariableOp outputs and the resource gathers read)."""
    var = lookup_var(ctx, i)
    check_dtype(var, dtype, "read")
    return var.ref_value()


def check_dtype(var, dtype, what):
    """`var` (a Var or a ResourceHandle) must hold `dtype`."""
    if var.dtype is not dtype:
        raise InvalidArgumentError(f"Trying to {what} variable with wrong dtype. Expected "
                                   f"{var.dtype.short_name} got {dtype.short_name}")


class locked:
    """Holds the locks of several Vars (each once), always taken in one global order (no
    deadlock)."""

    __slots__ = ("_locks",)

    def __init__(self, variables):
        self._locks = [v.lock for v in sorted({id(v): v for v in variables}.values(), key=id)]

    def __enter__(self):
        taken = []
        try:
            for lock in self._locks:
                lock.acquire()
                taken.append(lock)
        except BaseException:
            for lock in reversed(taken):
                lock.release()
            raise

    def __exit__(self, *exc):
        for lock in reversed(self._locks):
            lock.release()


_DEVICES = ("CPU", "GPU")


def _unshared_references():
    """What `_references` counts for a buffer that only its Var holds."""
    probe = Var("probe", None, None)
    probe.value = np.zeros(1)
    return _references(probe)


_UNSHARED = _unshared_references()


@register_kernel("VarHandleOp", _DEVICES)
class VarHandleOpKernel(OpKernel):
    invariant = True    # the handle only names the variable: plans compute it once

    def __init__(self, ctx):
        super().__init__(ctx)
        name = ctx.get_attr("shared_name") or ctx.node_name
        container = ctx.get_attr("container")
        self.handle = ResourceHandle(f"{container}/{name}" if container else name,
                                     ctx.get_attr("dtype"), ctx.get_attr("shape"),
                                     ctx.device_name)

    def compute(self, ctx):
        out = np.empty((), dtype=object)
        out[()] = self.handle
        ctx.set_output(0, out)


@register_kernel("ReadVariableOp", _DEVICES)
class ReadVariableOpKernel(OpKernel):
    def __init__(self, ctx):
        super().__init__(ctx)
        self.dtype = ctx.get_attr("dtype")

    def compute(self, ctx):
        ctx.set_output(0, read_variable(ctx, 0, self.dtype))


@register_kernel("AssignVariableOp", _DEVICES)
class AssignVariableOpKernel(OpKernel):
    def __init__(self, ctx):
        super().__init__(ctx)
        self.dtype = ctx.get_attr("dtype")
        self.validate_shape = ctx.get_attr("validate_shape")

    def compute(self, ctx):
        handle = input_handle(ctx, 0)
        check_dtype(handle, self.dtype, "assign")
        value = ctx.input(1).copy()
        var = ctx.resources.lookup_or_create(
            handle.name, lambda: Var(handle.name, handle.dtype, handle.device))
        check_dtype(var, self.dtype, "assign")
        _check_device(var, ctx)
        with var.lock:
            if self.validate_shape and var.value is not None and var.value.shape != value.shape:
                raise InvalidArgumentError(
                    "Trying to assign to variable with tensor with wrong shape. Expected "
                    f"{shape_str(var.value.shape)} got {shape_str(value.shape)}")
            var.value = value


class _UpdateVariableKernel(OpKernel):
    """AssignAdd/AssignSub: in-place update of an initialised variable of the same shape."""

    sign = 1

    def __init__(self, ctx):
        super().__init__(ctx)
        self.dtype = ctx.get_attr("dtype")

    def compute(self, ctx):
        var = lookup_var(ctx, 0)
        check_dtype(var, self.dtype, "update")
        add_in_place(var, ctx.input(1), self.sign, lambda shape, delta_shape: (
            f"Cannot update variable with shape {shape_str(shape)} using a "
            f"Tensor with shape {shape_str(delta_shape)}, shapes must be equal."))


def add_in_place(var, delta, sign, mismatch):
    """Adds (`sign` > 0) or subtracts `delta` in place in `var`'s writable buffer, under its
    lock; `mismatch(shape, delta_shape)` is the message when the shapes differ."""
    with var.lock:
        value = writable_value(var)
        if value.shape != delta.shape:
            raise InvalidArgumentError(mismatch(value.shape, delta.shape))
        if sign > 0:
            value += delta
        else:
            value -= delta


@register_kernel("AssignAddVariableOp", _DEVICES)
class AssignAddVariableOpKernel(_UpdateVariableKernel):
    sign = 1


@register_kernel("AssignSubVariableOp", _DEVICES)
class AssignSubVariableOpKernel(_UpdateVariableKernel):
    sign = -1


@register_kernel("VarIsInitializedOp", _DEVICES, host_memory=("is_initialized",))
class VarIsInitializedOpKernel(OpKernel):
    def compute(self, ctx):
        handle = input_handle(ctx, 0)
        try:
            var = ctx.resources.lookup(handle.name)
        except NotFoundError:
            var = None
        ctx.set_output(0, np.array(isinstance(var, Var) and var.value is not None))


@register_kernel("DisableCopyOnRead", _DEVICES)
class DisableCopyOnReadKernel(OpKernel):
    """Reads here return views of the buffer and copy on write, so there is nothing to turn
    off; the variable must exist, as in TF."""

    def compute(self, ctx):
        ctx.resources.lookup(input_handle(ctx, 0).name)


@register_kernel("VariableShape", _DEVICES, host_memory=("output",))
class VariableShapeKernel(OpKernel):
    def __init__(self, ctx):
        super().__init__(ctx)
        self.out_type = ctx.get_attr("out_type")

    def compute(self, ctx):
        var = lookup_var(ctx, 0)
        with var.lock:
            shape = var.checked_value().shape
        ctx.set_output(0, np.array(shape, dtype=self.out_type.np_dtype))
