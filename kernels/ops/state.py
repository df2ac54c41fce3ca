"""Resource-variable kernels: a variable is a `Var` kept in the Session's ResourceMgr.

A `VarHandleOp` outputs a 0-d object array holding a `ResourceHandle` (always in host
memory); the other kernels look the `Var` up by the handle's name in `ctx.resources`. A
variable's value lives on the device of its handle op, as a `ctx.xp` array (placement
colocates every op using the handle there); a kernel on another device is refused, as in TF.

Reads copy nothing: a read returns a read-only view of the stored buffer (one view, made on
the first read and shared by the later ones). An update works in place unless a reader
still holds the buffer (the reference counts of the buffer and of that view say so); then
it first replaces the buffer by a copy, so a value once read or fetched never changes under
its holder (copy-on-write, as TF's reference-counted buffers).

Kernels remember the Vars they found (`VarFinder`): a run with the same handles costs one
ResourceMgr lookup per variable, and a variable deleted or made anew is found and checked
again.
"""

import sys
import threading

import numpy as np

from graphops.registry.errors import FailedPreconditionError, InvalidArgumentError, NotFoundError
from graphops.registry.kernel_registry import OpKernel, OpKernelContext, register_kernel
from graphops.registry.resources import ResourceHandle
from graphops.registry.tensor_shape import shape_str


class Var:
    """One variable's storage on `device`; `lock` guards `value` (None until first assigned).
    `shape`: the declared shape a reference variable (VariableV2) checks its first Assign
    against, None when not fully known. `view`: the read-only view of `value` that reads
    hand out (made on the first read of a NumPy buffer, shared by later ones; one of an
    older buffer is never handed out again)."""

    __slots__ = ("name", "dtype", "device", "shape", "value", "lock", "view")

    def __init__(self, name, dtype, device, shape=None):
        self.name = name
        self.dtype = dtype
        self.device = device
        self.shape = shape
        self.value = None
        self.view = None
        self.lock = threading.Lock()

    def checked_value(self):
        """The stored array (caller holds the lock); FailedPreconditionError if unset."""
        if self.value is None:
            raise uninitialized(self.name)
        return self.value

    def store(self, value):
        """Replaces the stored array (caller holds the lock)."""
        self.value, self.view = value, None

    def ref_value(self):
        """The current value as a read sees it (a read-only view; FailedPreconditionError
        if unset): what ReadVariableOp outputs and a plain input of a reference edge gets."""
        self.lock.acquire()
        try:
            view = self.view
            if view is None or view.base is not self.value:
                view = read_only(self.checked_value())
                self.view = view if type(view) is np.ndarray else None
            return view
        finally:
            self.lock.release()


def _references(var):
    """References to the stored buffer and to its current shared view (0 when none): what
    `writable_value` compares with those of a Var nothing else holds."""
    view = var.view
    if view is None or view.base is not var.value:
        return 0, sys.getrefcount(var.value)
    return sys.getrefcount(view), sys.getrefcount(var.value)


def read_only(value):
    """A view of a stored buffer that no kernel can write through (CuPy has no such flag)."""
    view = value.view()
    if isinstance(view, np.ndarray):
        view.setflags(write=False)
    return view


def writable_value(var):
    """The stored array, ready to update in place (caller holds the lock): replaced first by
    a copy while a reader still holds it or a view of it (views of the shared read view
    hold the buffer itself)."""
    if var.value is None:
        raise uninitialized(var.name)
    views, buffers = _references(var)
    if views > _IDLE_VIEW or buffers > (_IDLE_BUFFER if views == 0 else _IDLE_VIEWED):
        var.store(var.value.copy())
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


class VarFinder:
    """Finds the Vars behind a kernel's first `count` inputs (`lookup_var`) and checks that
    they hold `dtype` (`check_dtype`, saying `what`), remembering what it found: a run
    whose inputs carry the same handle objects finds each Var by one ResourceMgr lookup,
    and where those are the same Vars, the checks they passed hold again (a handle's and a
    Var's name, dtype and device never change); a Var deleted or made anew is found the
    checked way."""

    __slots__ = ("count", "dtype", "what", "_last")

    def __init__(self, count, dtype, what):
        self.count, self.dtype, self.what = count, dtype, what
        self._last = (None, (), ())     # (construction, handles, Vars) of the last run

    def __call__(self, ctx):
        return self.known(ctx.construction, ctx.inputs) or self._find(ctx)

    def known(self, construction, inputs):
        """The Vars found last, where the kernel (`construction`) is the same and `inputs`
        carry the same handles, which the ResourceMgr still maps to them; else None."""
        last_construction, handles, variables = self._last
        if last_construction is not construction:
            return None
        lookup = construction.resources.lookup
        try:
            if len(handles) == 1:       # the common case, without a loop
                value, handle = inputs[0], handles[0]
                if (type(value) is np.ndarray and value[()] is handle
                        and lookup(handle.name) is variables[0]):
                    return variables
                return None
            for value, handle, var in zip(inputs, handles, variables):
                if (type(value) is not np.ndarray or value[()] is not handle
                        or lookup(handle.name) is not var):
                    return None
        except NotFoundError:
            return None
        return variables

    def _find(self, ctx):
        variables = tuple(lookup_var(ctx, i) for i in range(self.count))
        for var in variables:
            check_dtype(var, self.dtype, self.what)
        handles = tuple(input_handle(ctx, i) for i in range(self.count))
        self._last = (ctx.construction, handles, variables)
        return variables


def check_dtype(var, dtype, what):
    """`var` (a Var or a ResourceHandle) must hold `dtype`."""
    if var.dtype is not dtype:
        raise InvalidArgumentError(f"Trying to {what} variable with wrong dtype. Expected "
                                   f"{var.dtype.short_name} got {dtype.short_name}")


def lock_order(variables):
    """The locks of several Vars (each once) in the one global order every kernel takes
    them in (no deadlock)."""
    return tuple(v.lock for v in sorted({id(v): v for v in variables}.values(), key=id))


class locked:
    """Holds the locks of several Vars (`lock_order`)."""

    __slots__ = ("_locks",)

    def __init__(self, variables):
        self._locks = lock_order(variables)

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


def _idle_references():
    """What `_references` counts for a buffer that only its Var holds: without a shared
    view, and with one that no reader holds."""
    probe = Var("probe", None, None)
    probe.value = np.zeros(1)
    plain = _references(probe)
    probe.ref_value()
    viewed = _references(probe)
    return viewed[0], plain[1], viewed[1]


_IDLE_VIEW, _IDLE_BUFFER, _IDLE_VIEWED = _idle_references()


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
    reads_variable = True

    def __init__(self, ctx):
        super().__init__(ctx)
        self.find = VarFinder(1, ctx.get_attr("dtype"), "read")

    def compute(self, ctx):
        ctx.set_output(0, self.find(ctx)[0].ref_value())

    def prepare(self, ctx):
        """compute's lookup and checks at once, then a read of the Var found while the
        handle and the ResourceMgr's entry stay the same (else compute's lookup again)."""
        if ctx.xp is not np:
            return None
        find, construction = self.find, ctx.construction
        find(ctx)

        def read(inputs):
            variables = find.known(construction, inputs) or find(
                OpKernelContext(construction, inputs))
            return [variables[0].ref_value()]
        return read


@register_kernel("AssignVariableOp", _DEVICES)
class AssignVariableOpKernel(OpKernel):
    """Stores a copy of the value, making the variable on first use; the Var found is
    remembered with its handle as `VarFinder` does."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.dtype = ctx.get_attr("dtype")
        self.validate_shape = ctx.get_attr("validate_shape")
        self._last = (None, None, None)     # (construction, handle, Var) of the last run

    def compute(self, ctx):
        construction, handle, var = self._last
        found = ctx.input(0)
        if (construction is not ctx.construction or type(found) is not np.ndarray
                or found[()] is not handle):
            handle = input_handle(ctx, 0)
            check_dtype(handle, self.dtype, "assign")
            var = None
        value = ctx.input(1).copy()
        if var is None or _resource_named(ctx, handle.name) is not var:
            var = ctx.resources.lookup_or_create(
                handle.name, lambda: Var(handle.name, handle.dtype, handle.device))
            check_dtype(var, self.dtype, "assign")
            _check_device(var, ctx)
            self._last = (ctx.construction, handle, var)
        var.lock.acquire()
        try:
            if self.validate_shape and var.value is not None and var.value.shape != value.shape:
                raise InvalidArgumentError(
                    "Trying to assign to variable with tensor with wrong shape. Expected "
                    f"{shape_str(var.value.shape)} got {shape_str(value.shape)}")
            var.store(value)
        finally:
            var.lock.release()


def _resource_named(ctx, name):
    """The resource named `name`, None when there is none."""
    try:
        return ctx.resources.lookup(name)
    except NotFoundError:
        return None


class _UpdateVariableKernel(OpKernel):
    """AssignAdd/AssignSub: in-place update of an initialised variable of the same shape."""

    sign = 1

    def __init__(self, ctx):
        super().__init__(ctx)
        self.find = VarFinder(1, ctx.get_attr("dtype"), "update")

    def compute(self, ctx):
        add_in_place(self.find(ctx)[0], ctx.input(1), self.sign, self._mismatch)

    @staticmethod
    def _mismatch(shape, delta_shape):
        return (f"Cannot update variable with shape {shape_str(shape)} using a "
                f"Tensor with shape {shape_str(delta_shape)}, shapes must be equal.")


def add_in_place(var, delta, sign, mismatch):
    """Adds (`sign` > 0) or subtracts `delta` in place in `var`'s writable buffer, under its
    lock; `mismatch(shape, delta_shape)` is the message when the shapes differ."""
    var.lock.acquire()
    try:
        value = writable_value(var)
        if value.shape != delta.shape:
            raise InvalidArgumentError(mismatch(value.shape, delta.shape))
        if sign > 0:
            value += delta
        else:
            value -= delta
    finally:
        var.lock.release()


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
