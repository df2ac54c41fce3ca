"""gp.train: TF1's optimizers, building ResourceApply* update nodes in the graph.

    train_op = gp.train.GradientDescentOptimizer(0.1).minimize(loss)
    sess.run(train_op, feed_dict=...)      # one step: gradients, then in-place updates

`minimize` = `compute_gradients` (gp.gradients w.r.t. the trainable Variables) followed by
`apply_gradients` (one update op per variable, grouped into one NoOp).
"""

import numpy as np

from graphops.api import raw_ops
from graphops.autodiff.gradients import gradients
from graphops.building.graph import get_default_graph
from graphops.building.tensor import Tensor, as_graph_element
from graphops.autodiff.variables import Variable, trainable_variables
from registry import dtypes

_VALID_DTYPES = (dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64)


class Optimizer:
    """Base class: subclasses define `_create_slots`, `_prepare`, `_apply_dense`, `_finish`."""

    def __init__(self, use_locking, name):
        if not name:
            raise ValueError("Must specify the optimizer name")
        self._use_locking = use_locking
        self._name = name
        self._slots = {}          # slot name -> {Variable: slot Variable}

    def get_name(self):
        return self._name

    def minimize(self, loss, global_step=None, var_list=None, name=None, grad_loss=None):
        """An op that takes one step towards minimising `loss` over `var_list`."""
        grads_and_vars = self.compute_gradients(loss, var_list=var_list, grad_loss=grad_loss)
        if not any(g is not None for g, _ in grads_and_vars):
            raise ValueError(
                "No gradients provided for any variable, check your graph for ops that do not "
                f"support gradients, between variables {[v.name for _, v in grads_and_vars]} "
                f"and loss {loss}.")
        return self.apply_gradients(grads_and_vars, global_step=global_step, name=name)

    def compute_gradients(self, loss, var_list=None, grad_loss=None):
        """[(gradient or None, variable)] for the trainable Variables (or `var_list`);
        `grad_loss` seeds the backward pass instead of ones."""
        loss = as_graph_element(loss)
        if not isinstance(loss, Tensor):
            raise TypeError(f"loss must be a Tensor, got {loss!r}")
        var_list = trainable_variables(graph=loss.graph) if var_list is None else list(var_list)
        for v in var_list:
            if not isinstance(v, Variable):
                raise TypeError(f"Argument is not a gp.Variable: {v!r}")
        if not var_list:
            raise ValueError("No variables to optimize.")
        _check_dtypes([loss] + var_list)
        grad_ys = None if grad_loss is None else [grad_loss]
        return list(zip(gradients(loss, var_list, grad_ys=grad_ys), var_list))

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        """One op applying each (gradient, variable) update; None gradients are skipped."""
        pairs = [(g, v) for g, v in grads_and_vars if g is not None]
        if not pairs:
            raise ValueError(f"No gradients provided for any variable: "
                             f"{[v.name for _, v in grads_and_vars]}.")
        variables = [v for _, v in pairs]
        _check_dtypes(variables)
        graph = variables[0].graph
        with graph.as_default():
            with graph.name_scope(None):
                self._create_slots(variables)
            with graph.name_scope(name or self._name) as scope:
                self._prepare(variables)
                updates = []
                for grad, var in pairs:
                    with graph.name_scope("update_" + var.op.name):
                        updates.append(self._apply_dense(grad, var))
                finish = self._finish(updates)
                if global_step is None:
                    return self._group(updates + finish, scope)
                with graph.control_dependencies(updates + finish):
                    return global_step.assign_add(1, name=scope, read_value=False)

    @staticmethod
    def _group(ops, name):
        with get_default_graph().control_dependencies(ops):
            return raw_ops.NoOp(name=name)

    # ------------------------------------------------------------------ slots

    def _zeros_slot(self, var, slot_name, var_suffix):
        """A non-trainable Variable of zeros shaped like `var`, kept per slot name."""
        slots = self._slots.setdefault(slot_name, {})
        if var not in slots:
            slots[var] = Variable(lambda: raw_ops.ZerosLike(x=var.initial_value),
                                  name=f"{var.op.name}/{var_suffix}", trainable=False)
        return slots[var]

    def get_slot(self, var, name):
        return self._slots.get(name, {}).get(var)

    def get_slot_names(self):
        return sorted(self._slots)

    def _tensor(self, value, var):
        """A hyperparameter as a tensor of `var`'s dtype."""
        value = as_graph_element(value)
        if isinstance(value, Tensor):
            return value if value.dtype is var.dtype else raw_ops.Cast(x=value, DstT=var.dtype)
        return raw_ops.Const(value=_array(value, var.dtype), dtype=var.dtype)

    # ------------------------------------------------------------------ subclass hooks

    def _create_slots(self, variables):
        pass

    def _prepare(self, variables):
        pass

    def _apply_dense(self, grad, var):
        raise NotImplementedError

    def _finish(self, updates):
        return []


def _array(value, dtype):
    return np.asarray(value, dtype=dtype.np_dtype)


def _check_dtypes(values):
    for v in values:
        if v.dtype not in _VALID_DTYPES:
            raise ValueError(f"Invalid type {v.dtype!r} for {v.name}, expected: "
                             f"[{', '.join(repr(d) for d in _VALID_DTYPES)}].")


class GradientDescentOptimizer(Optimizer):
    """var -= learning_rate * grad."""

    def __init__(self, learning_rate, use_locking=False, name="GradientDescent"):
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate

    def _apply_dense(self, grad, var):
        return raw_ops.ResourceApplyGradientDescent(
            var=var.handle, alpha=self._tensor(self._learning_rate, var), delta=grad,
            use_locking=self._use_locking)


class MomentumOptimizer(Optimizer):
    """accum = momentum * accum + grad; var -= learning_rate * accum (or Nesterov's form)."""

    def __init__(self, learning_rate, momentum, use_locking=False, name="Momentum",
                 use_nesterov=False):
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._momentum = momentum
        self._use_nesterov = use_nesterov

    def _create_slots(self, variables):
        for v in variables:
            self._zeros_slot(v, "momentum", self._name)

    def _apply_dense(self, grad, var):
        return raw_ops.ResourceApplyMomentum(
            var=var.handle, accum=self.get_slot(var, "momentum").handle,
            lr=self._tensor(self._learning_rate, var), grad=grad,
            momentum=self._tensor(self._momentum, var), use_locking=self._use_locking,
            use_nesterov=self._use_nesterov)


class AdamOptimizer(Optimizer):
    """Adam (Kingma & Ba), TF1's formulation with the beta1/beta2 power accumulators."""

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 use_locking=False, name="Adam"):
        super().__init__(use_locking, name)
        self._learning_rate, self._beta1, self._beta2 = learning_rate, beta1, beta2
        self._epsilon = epsilon
        self._powers = {}          # graph -> (beta1_power, beta2_power) Variables
        self._power_reads = None

    def _create_slots(self, variables):
        first = min(variables, key=lambda v: v.name)
        graph = first.graph
        if graph not in self._powers:
            self._powers[graph] = tuple(
                Variable(_array(beta, first.dtype), name=name, trainable=False)
                for beta, name in ((self._beta1, "beta1_power"), (self._beta2, "beta2_power")))
        for v in variables:
            self._zeros_slot(v, "m", self._name)
            self._zeros_slot(v, "v", self._name + "_1")

    def _prepare(self, variables):
        graph = variables[0].graph
        self._power_reads = [p.value() for p in self._powers[graph]]

    def _apply_dense(self, grad, var):
        beta1_power, beta2_power = (self._tensor(p, var) for p in self._power_reads)
        return raw_ops.ResourceApplyAdam(
            var=var.handle, m=self.get_slot(var, "m").handle, v=self.get_slot(var, "v").handle,
            beta1_power=beta1_power, beta2_power=beta2_power,
            lr=self._tensor(self._learning_rate, var), beta1=self._tensor(self._beta1, var),
            beta2=self._tensor(self._beta2, var), epsilon=self._tensor(self._epsilon, var),
            grad=grad, use_locking=self._use_locking)

    def _finish(self, updates):
        graph = get_default_graph()
        beta1_power, beta2_power = self._powers[graph]
        with graph.control_dependencies(updates):
            return [power.assign(power * _array(beta, power.dtype), read_value=False)
                    for power, beta in ((beta1_power, self._beta1), (beta2_power, self._beta2))]
