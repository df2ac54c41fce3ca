"""Optimizer update kernels (TF's training_ops.cc), one kernel class per op, made from one
table (`registry.op_defs.training.UPDATES`): the variable and its slots come from resource
handles (`ResourceApply*`, `ResourceSparseApply*`) or reference inputs (`Apply*`,
`SparseApply*`, whose output is the variable itself), are locked, checked with TF's
messages in TF's order, and updated in place by the math of
`kernels.numerics.optimizer_updates`; float16/bfloat16 are computed in float32 and rounded
once. The dense kernels run on the CPU and the GPU (written against `ctx.xp`); the sparse
ones update a device variable through host copies (as TF's deterministic GPU scatters).
A dense update first tries the path without TF's ordered checks (`_dense_unchecked`: every
scalar a NumPy scalar of T, every shape the variable's), which is what a training step
runs; where anything fails there, the checked path raises TF's error."""

import numpy as np

from graphops.kernels.numerics import optimizer_updates as math
from graphops.kernels.ops.gather_scatter import on_host
from graphops.kernels.ops.state import (VarFinder, input_ref, lock_order, locked,
                                        writable_value)
from graphops.kernels.ops.state_ref import set_output_ref
from graphops.kernels.support.kernel_util import host_copy
from graphops.registry import dtypes
from graphops.registry.errors import InvalidArgumentError
from graphops.registry.kernel_registry import OpKernel, register_kernel
from graphops.registry.op_defs.training import ADAGRAD_DA, UPDATES, op_name
from graphops.registry.tensor_shape import shape_str

_FLOATS = {"T": list(dtypes.FLOAT_TYPES)}
# The updates TF's CPU also runs on complex numbers (its Eigen expressions unchanged:
# squares are g * g, not |g|^2; roots and divisions complex).
_COMPLEX_BASES = ("GradientDescent", "Momentum", "Adam", "RMSProp", "CenteredRMSProp",
                  "Adagrad", "AdagradV2", "Adadelta")
_FLOATS_AND_COMPLEX = {"T": list(dtypes.FLOAT_TYPES) + [dtypes.complex64, dtypes.complex128]}
_LABELS = {"l1": "l1 regularization strength", "l2": "l2 regularization strength",
           "l2_shrinkage": "l2 shrinkage regularization strength"}
_PROXIMAL = ("Ftrl", "FtrlV2", "ProximalAdagrad", "ProximalGradientDescent")
# TF's sparse loops that update each row as they check its index (a bad index leaves
# the rows before it updated); the others check every index first.
_UPDATES_WHILE_CHECKING = ("Momentum", "Ftrl", "FtrlV2", "ProximalAdagrad",
                           "ProximalGradientDescent")
_SLOT_LABELS = {("Adadelta", True, "accum"): "accum_grad"}


def _scalar_rule(base, sparse, name):
    """(label, requirement, separator, test) of TF's check of scalar input `name`."""
    label = _LABELS.get(name, name) if base in _PROXIMAL else name
    if base == "ProximalGradientDescent" and sparse and name == "alpha":
        label = "lr"
    separator = ": "
    if name == "lr" and ((base == "Momentum" and sparse) or
                         (base in ("RMSProp", "CenteredRMSProp") and not sparse)):
        separator = " : "
    if base in ("Ftrl", "FtrlV2") and not sparse and name == "lr_power":
        separator = ""
    requirement, test = "scalar", None
    if base == "ProximalAdagrad" or (base in ("Ftrl", "FtrlV2") and sparse):
        if name == "lr":
            requirement, test = "positive scalar", "positive"
            if base != "ProximalAdagrad":
                requirement += " (or zero if multiply_linear_by_lr is set)"
        elif name in _LABELS:
            requirement, test = "non-negative scalar", "non-negative"
        elif name == "lr_power":
            requirement, test = "non-positive scalar", "non-positive"
    return label, requirement, separator, test


def _check_scalar(rule, value, attrs):
    label, requirement, separator, test = rule
    ok = value.ndim == 0
    if ok and test == "positive":
        ok = bool(value > 0) or (attrs.get("multiply_linear_by_lr", False) and value == 0)
    elif ok and test == "non-negative":
        ok = bool(value >= 0)
    elif ok and test == "non-positive":
        ok = bool(value <= 0)
    if not ok:
        raise InvalidArgumentError(
            f"{label} is not a {requirement}{separator}{shape_str(value.shape)}")


def _same_shape(a, b, names):
    if a.shape != b.shape:
        raise InvalidArgumentError(f"{names} do not have the same shape"
                                   f"{shape_str(a.shape)} {shape_str(b.shape)}")


class _ApplyKernel(OpKernel):
    """One update op: `base` names its row of UPDATES; `ref` whether its variables are
    reference inputs; `sparse` whether it updates rows `indices`."""

    base, ref, sparse = "GradientDescent", False, False

    def __init__(self, ctx):
        super().__init__(ctx)
        update = UPDATES[self.base]
        self.dtype = ctx.get_attr("T")
        self.attrs = {name: ctx.get_attr(name) for name, _ in update.attrs}
        self.slot_names = update.slots
        self.names = update.input_names(self.sparse)
        self.rules = {n: _scalar_rule(self.base, self.sparse, n) for n in self.names
                      if n not in ("grad", "delta", "indices")}
        self.wide = np.float32 if self.dtype.size == 2 else None
        # the scalar checks in TF's order: those before the gradient, then those after
        self.grad_name = "delta" if "delta" in self.names else "grad"
        split = self.names.index(self.grad_name)
        self.checks_before = [(n, self.rules[n]) for n in self.names[:split] if n in self.rules]
        self.checks_after = [(n, self.rules[n]) for n in self.names[split:] if n in self.rules]
        self._init_variables(len(update.slots) + 1)
        self._init_unchecked()

    def _init_variables(self, count):
        """How `_variables` finds the `count` Vars (the variable and its slots)."""
        self.count = count
        self.find = None if self.ref else VarFinder(count, self.dtype, "update")
        self._last_refs, self._last_locks = (), ((), ())

    def _init_unchecked(self):
        """What `_dense_unchecked` needs, worked out once."""
        count = self.count
        self.scalar_at = tuple((n, count + i) for i, n in enumerate(self.names)
                               if n in self.rules)       # (name, input index)
        self.scalar_type = self.dtype.np_dtype.type
        self.grad_at = count + self.names.index(self.grad_name)
        self.unchecked = (not self.sparse and self.wide is None
                          and all(rule[3] is None for rule in self.rules.values()))
        self.update = None if self.sparse else math.DENSE[self.base]

    def _variables(self, ctx):
        """The Var and its slots: found by their handles (checked to hold T), or carried by
        the reference inputs (the same tuple as last run's when they are the same Vars)."""
        if not self.ref:
            return self.find(ctx)
        last, inputs = self._last_refs, ctx.inputs
        if last:
            for i, var in enumerate(last):
                if inputs[i] is not var:
                    break
            else:
                return last
        variables = tuple(input_ref(ctx, i) for i in range(self.count))
        self._last_refs = variables
        return variables

    def _locks(self, variables):
        """The Vars' locks in the global order (`lock_order`), worked out once per Vars."""
        last, locks = self._last_locks
        if last is not variables:
            locks = lock_order(variables)
            self._last_locks = (variables, locks)
        return locks

    def compute(self, ctx):
        variables = self._variables(ctx)
        if not (self.unchecked and self._dense_unchecked(ctx, variables)):
            self._compute_checked(ctx, variables)
        if self.ref:
            set_output_ref(ctx, 0, variables[0])

    def _dense_unchecked(self, ctx, variables):
        """The dense update where every check passes (NumPy scalars of T, every shape the
        variable's), in the fewest steps; False, having updated nothing, where one fails,
        for `_compute_checked` to raise TF's error in TF's order."""
        inputs, kind, scalars = ctx.inputs, self.scalar_type, {}
        for name, i in self.scalar_at:
            value = inputs[i][()]
            if type(value) is not kind:
                return False
            scalars[name] = value
        grad = inputs[self.grad_at]
        locks = self._locks(variables)
        for lock in locks:
            lock.acquire()
        try:
            stored = [writable_value(var) for var in variables]
            shape = grad.shape
            for value in stored:
                if value.shape != shape:
                    return False
            self.update(ctx.xp, stored, scalars, grad, self.attrs)
        finally:
            for lock in locks:
                lock.release()
        return True

    def _compute_checked(self, ctx, variables):
        offset = len(variables)
        inputs = {n: ctx.input(offset + i) for i, n in enumerate(self.names)}
        with locked(variables):
            stored = [writable_value(var) for var in variables]
            for name, value in zip(self.slot_names, stored[1:]):
                label = _SLOT_LABELS.get((self.base, self.sparse, name), name)
                _same_shape(stored[0], value, f"var and {label}")
            if self.sparse:
                inputs = {k: host_copy(v) for k, v in inputs.items()}
                on_host(ctx.xp, stored[0], lambda *hosts: self._sparse(list(hosts), inputs),
                        *stored[1:])
            else:
                self._dense(ctx.xp, stored, inputs)

    def _check(self, checks, inputs):
        for name, rule in checks:
            _check_scalar(rule, inputs[name], self.attrs)

    def _working(self, inputs):
        """The scalar inputs as NumPy scalars of the working type."""
        if self.wide is None:
            return {n: inputs[n][()] for n in self.rules}
        return {n: inputs[n].astype(self.wide)[()] for n in self.rules}

    def _dense(self, xp, stored, inputs):
        self._check(self.checks_before, inputs)
        grad = inputs[self.grad_name]
        _same_shape(stored[0], grad, f"var and {self.grad_name}")
        self._check(self.checks_after, inputs)
        update = math.DENSE[self.base]
        if self.wide is None:
            update(xp, stored, self._working(inputs), grad, self.attrs)
            return
        work = [v.astype(self.wide) for v in stored]
        update(xp, work, self._working(inputs), grad.astype(self.wide), self.attrs)
        for target, value in zip(stored, work):
            target[...] = value

    def _sparse(self, stored, inputs):
        """The update of rows `indices` of host buffers `stored`."""
        var, grad, indices = stored[0], inputs["grad"], inputs["indices"]
        if var.ndim < 1:
            raise InvalidArgumentError("var must be at least 1 dimensional")
        self._check(self.checks_before, inputs)
        if indices.ndim != 1:
            raise InvalidArgumentError("indices must be one-dimensional")
        _check_rows(var, grad, indices)
        self._check(self.checks_after, inputs)
        flat = np.asarray(indices).astype(np.int64)
        bad = np.flatnonzero((flat < 0) | (flat >= var.shape[0]))
        first_bad = int(bad[0]) if bad.size else None
        if first_bad is not None and self.base not in _UPDATES_WHILE_CHECKING:
            raise _index_error(flat, first_bad)
        count = flat.size if first_bad is None else first_bad
        self._apply_rows(np, stored, self._working(inputs), grad[:count], flat[:count],
                         single=var.size // max(var.shape[0], 1) == 1)
        if first_bad is not None:
            raise _index_error(flat, first_bad)

    def _apply_rows(self, xp, stored, scalars, grad, indices, single):
        update = math.SPARSE[self.base]
        for positions in math.occurrence_rounds(indices):
            rows = indices[positions]
            work = [v[rows] for v in stored]
            g = grad[positions]
            if self.wide is not None:
                work, g = [w.astype(self.wide) for w in work], g.astype(self.wide)
            update(xp, work, scalars, g, self.attrs, single)
            for target, value in zip(stored, work):
                target[rows] = value


def _check_rows(var, grad, indices):
    for d in range(1, var.ndim):
        if grad.ndim <= d or var.shape[d] != grad.shape[d]:
            raise InvalidArgumentError(f"var and grad must match in dimension {d}")
    if grad.ndim < 1 or grad.shape[0] != indices.shape[0]:
        raise InvalidArgumentError(
            "grad must be the same size as indices in the first dimension.")


def _index_error(indices, offset):
    return InvalidArgumentError(
        f"Index {int(indices[offset])} at offset {offset} in indices is out of range")


def _register_all():
    for base, update in UPDATES.items():
        for ref in (True, False):
            for sparse in ((False, True) if update.sparse else (False,)):
                name = op_name(base, ref, sparse)
                cls = type(name + "Kernel", (_ApplyKernel,),
                           {"base": base, "ref": ref, "sparse": sparse,
                            "__module__": __name__})
                types = _FLOATS_AND_COMPLEX if base in _COMPLEX_BASES else _FLOATS
                register_kernel(name, ("CPU", "GPU"), types)(cls)


_register_all()


# ------------------------------------------------------------------------ AdagradDA

_DA_LABELS = {"l1": "l1 regularization strength", "l2": "l2 regularization strength"}


def adagrad_da_dense(xp, slots, s, grad):
    """TF's CPU ApplyAdagradDA in the variable's type: the accumulators grow by the
    gradient and its square, then var = -lr * sign(g) * max(|g| - step * l1, 0) /
    (l2 * step * lr + sqrt(gg)) (without the L1 shrinkage when l1 <= 0), where TF
    passes the step through a float32 before it enters the expression."""
    var, acc, sq = slots
    t = var.dtype.type
    step = t(np.float32(s["global_step"]))
    lr, l1, l2 = t(s["lr"]), t(s["l1"]), t(s["l2"])
    acc += grad
    sq += grad * grad
    denominator = l2 * (step * lr) + xp.sqrt(sq)
    if l1 > 0:
        shrunk = xp.maximum(xp.abs(acc) - step * l1, t(0))
        var[...] = (-lr) * xp.sign(acc) * shrunk / denominator
    else:
        var[...] = lr * acc * t(-1) / denominator


def _adagrad_da_rows(rows, s, grad):
    """TF's sparse loop over rows of more than one value: in the variable's type, the
    accumulated gradient divided by the step."""
    var, acc, sq = rows
    t = var.dtype.type
    step = t(s["global_step"])
    lr, l1, l2 = t(s["lr"]), t(s["l1"]), t(s["l2"])
    acc += grad
    sq += grad * grad
    denominator = l2 + np.sqrt(sq) / (step * lr)
    if l1 > 0:
        shrunk = np.maximum(np.abs(acc) / step - l1, t(0))
        var[...] = t(-1) * np.sign(acc) * shrunk / denominator
    else:
        var[...] = t(-1) * (acc / step) / denominator


def _adagrad_da_values(rows, s, grad):
    """TF's sparse loop over one-value rows: each step in double (the square root in the
    variable's type), the accumulators and the variable rounded to their type once."""
    var, acc, sq = rows
    t = var.dtype.type
    step = np.float64(s["global_step"])
    lr, l1, l2 = (np.float64(s[n]) for n in ("lr", "l1", "l2"))
    g = grad.astype(np.float64)
    acc[...] = (acc.astype(np.float64) + g).astype(t)
    sq[...] = (sq.astype(np.float64) + g * g).astype(t)
    denominator = step * l2 * lr + np.sqrt(sq).astype(np.float64)
    wide = acc.astype(np.float64)
    if l1 > 0:
        shrunk = np.maximum(np.abs(wide) - step * l1, 0.0)
        var[...] = (np.sign(-acc).astype(np.float64) * lr * shrunk / denominator).astype(t)
    else:
        var[...] = (-wide * lr / denominator).astype(t)


class _AdagradDAKernel(_ApplyKernel):
    """ApplyAdagradDA in its four forms (TF's ApplyAdagradDAOp, SparseApplyAdagradDAOp):
    TF's checks in TF's order, then the dual-averaging update of the rows given (in turn
    for repeated indices; a bad index stops the loop there, as TF's)."""

    def __init__(self, ctx):
        OpKernel.__init__(self, ctx)
        self.dtype = ctx.get_attr("T")
        self.slot_names = ADAGRAD_DA.slots
        self.names = ADAGRAD_DA.input_names(self.sparse)
        self._init_variables(3)

    def compute(self, ctx):
        variables = self._variables(ctx)
        inputs = {n: ctx.input(3 + i) for i, n in enumerate(self.names)}
        with locked(variables):
            stored = [writable_value(var) for var in variables]
            for value in stored[1:]:
                _same_shape(stored[0], value, "var and accum")
            if self.sparse:
                inputs = {k: host_copy(v) for k, v in inputs.items()}
                on_host(ctx.xp, stored[0], lambda *hosts: self._sparse(list(hosts), inputs),
                        *stored[1:])
            else:
                _same_shape(stored[0], inputs["grad"], "var and grad")
                adagrad_da_dense(ctx.xp, stored, self._scalars(inputs), inputs["grad"])
        if self.ref:
            set_output_ref(ctx, 0, variables[0])

    @staticmethod
    def _scalars(inputs):
        """The scalar inputs, checked with TF's messages, as host scalars."""
        values = {}
        for name in ("lr", "l1", "l2", "global_step"):
            value = host_copy(inputs[name])
            if value.ndim != 0:
                raise InvalidArgumentError(f"{_DA_LABELS.get(name, name)} is not a scalar: "
                                           f"{shape_str(value.shape)}")
            values[name] = value[()]
        return values

    def _sparse(self, stored, inputs):
        var, grad, indices = stored[0], inputs["grad"], inputs["indices"]
        if var.ndim < 1:
            raise InvalidArgumentError("var must be at least 1 dimensional")
        if indices.ndim != 1:
            raise InvalidArgumentError("indices must be one-dimensional")
        scalars = self._scalars(inputs)
        _check_rows(var, grad, indices)
        inner = int(np.prod(var.shape[1:], dtype=np.int64))
        if inner <= 0:
            raise InvalidArgumentError("Inner dimension should be greater than zero.")
        flat = indices.astype(np.int64)
        bad = np.flatnonzero((flat < 0) | (flat >= var.shape[0]))
        count = int(bad[0]) if bad.size else flat.size
        update = _adagrad_da_values if inner == 1 else _adagrad_da_rows
        for positions in math.occurrence_rounds(flat[:count]):
            rows = flat[positions]
            work = [v[rows] for v in stored]
            update(work, scalars, grad[positions])
            for target, value in zip(stored, work):
                target[rows] = value
        if bad.size:
            raise _index_error(flat, count)


def _register_adagrad_da():
    types = {"T": [dtypes.float32, dtypes.float64]}
    for ref in (True, False):
        for sparse in (False, True):
            name = op_name("AdagradDA", ref, sparse)
            cls = type(name + "Kernel", (_AdagradDAKernel,),
                       {"ref": ref, "sparse": sparse, "__module__": __name__})
            register_kernel(name, ("CPU", "GPU"), types)(cls)


_register_adagrad_da()
