"""TF1's `Optimizer` base class: `minimize` = `compute_gradients` (gp.gradients w.r.t. the
trainable Variables) followed by `apply_gradients` (one ResourceApply* node per variable
under "<name>/update_<var>", grouped into one NoOp, or an AssignAddVariableOp of the
global step that runs after them), with TF's slot variables and node names:

    Adam/learning_rate, ..., Adam/update_w/ResourceApplyAdam, Adam/update, Adam
    w/Adam, w/Adam_1 (slots "m" and "v"), beta1_power, beta2_power (non-slot variables)
"""

from graphops.api import raw_ops
from graphops.api.init_ops import Zeros
from graphops.autodiff.gradients import gradients
from graphops.training.variable_scope import get_variable, variable_scope
from graphops.training.variables import Variable, trainable_variables
from graphops.building.constant_op import convert_to_tensor
from graphops.building.graph import get_default_graph
from graphops.building.graph_collections import GraphKeys
from graphops.building.tensor import Tensor, as_graph_element
from graphops.registry import dtypes

_VALID_DTYPES = (dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64)


class Optimizer:
    """Base class: subclasses define `_create_slots`, `_prepare`, `_apply_dense`, `_finish`."""

    GATE_NONE = 0
    GATE_OP = 1
    GATE_GRAPH = 2

    def __init__(self, use_locking, name):
        if not name:
            raise ValueError("Must specify the optimizer name")
        self._use_locking = use_locking
        self._name = name
        self._slots = {}          # slot name -> {Variable: slot Variable}
        self._non_slots = {}      # (name, graph) -> Variable (Adam's beta powers)

    def get_name(self):
        return self._name

    def minimize(self, loss, global_step=None, var_list=None, gate_gradients=GATE_OP,
                 aggregation_method=None, colocate_gradients_with_ops=False, name=None,
                 grad_loss=None):
        """An op that takes one step towards minimising `loss` over `var_list`."""
        grads_and_vars = self.compute_gradients(
            loss, var_list=var_list, gate_gradients=gate_gradients,
            aggregation_method=aggregation_method,
            colocate_gradients_with_ops=colocate_gradients_with_ops, grad_loss=grad_loss)
        if not any(g is not None for g, _ in grads_and_vars):
            raise ValueError(
                "No gradients provided for any variable, check your graph for ops that do not "
                f"support gradients, between variables {[str(v) for _, v in grads_and_vars]} "
                f"and loss {loss}.")
        return self.apply_gradients(grads_and_vars, global_step=global_step, name=name)

    def compute_gradients(self, loss, var_list=None, gate_gradients=GATE_OP,
                          aggregation_method=None, colocate_gradients_with_ops=False,
                          grad_loss=None):
        """[(gradient or None, variable)] for the trainable Variables (or `var_list`);
        `grad_loss` seeds the backward pass instead of ones."""
        if gate_gradients not in (self.GATE_NONE, self.GATE_OP, self.GATE_GRAPH):
            raise ValueError("gate_gradients must be one of: Optimizer.GATE_NONE, "
                             "Optimizer.GATE_OP, Optimizer.GATE_GRAPH.  Not "
                             f"{gate_gradients}")
        if callable(loss) and not isinstance(loss, (Tensor, Variable)):
            loss = loss()
        loss = as_graph_element(loss)
        if not isinstance(loss, Tensor):
            raise TypeError(f"loss must be a Tensor, got {loss!r}")
        _check_dtypes([loss])
        if var_list is None:
            var_list = trainable_variables(graph=loss.graph)
        else:
            var_list = list(var_list.values() if isinstance(var_list, dict) else var_list)
        for v in var_list:
            if not isinstance(v, Variable):
                raise TypeError(f"Argument is not a gp.Variable: {v!r}")
        if not var_list:
            raise ValueError("No variables to optimize.")
        grads = gradients(loss, var_list, grad_ys=None if grad_loss is None else [grad_loss],
                          gate_gradients=gate_gradients == self.GATE_OP,
                          aggregation_method=aggregation_method,
                          colocate_gradients_with_ops=colocate_gradients_with_ops)
        grads_and_vars = list(zip(grads, var_list))
        _check_dtypes([v for g, v in grads_and_vars if g is not None])
        return grads_and_vars

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        """One op applying each (gradient, variable) update (None gradients skipped), then
        incrementing `global_step` when given; added to the TRAIN_OP collection."""
        grads_and_vars = tuple(grads_and_vars)
        if not grads_and_vars:
            raise ValueError("No variables provided.")
        pairs = []
        for grad, var in grads_and_vars:
            if not isinstance(var, Variable):
                raise TypeError(f"Argument is not a gp.Variable: {var!r}")
            if grad is not None:
                with var.graph.as_default():
                    try:
                        grad = convert_to_tensor(grad)
                    except (TypeError, ValueError):
                        raise TypeError(f"Gradient must be convertible to a Tensor or "
                                        f"IndexedSlices, or None: {grad}") from None
                pairs.append((grad, var))
        if not pairs:
            raise ValueError(f"No gradients provided for any variable: "
                             f"{[str(v) for _, v in grads_and_vars]}.")
        variables = [v for _, v in pairs]
        _check_dtypes(variables)
        graph = variables[0].graph
        with graph.as_default():
            with graph.control_dependencies(None):          # TF's init_scope
                self._create_slots(variables)
            with graph.name_scope(name or self._name) as scope:
                self._prepare()
                updates = []
                for grad, var in pairs:
                    with graph.name_scope("update_" + var.op.name):
                        updates.append(self._apply_dense(grad, var))
                if global_step is None:
                    train_op = self._finish(updates, scope)
                else:
                    with graph.control_dependencies([self._finish(updates, "update")]):
                        one = convert_to_tensor(1, dtype=global_step.dtype)
                        train_op = raw_ops.AssignAddVariableOp(
                            resource=global_step.handle, value=one, name=scope)
            collection = graph.get_collection_ref(GraphKeys.TRAIN_OP)
            if train_op not in collection:
                collection.append(train_op)
            return train_op

    # ------------------------------------------------------------------ slots

    def _slot(self, var, initializer, slot_name, op_name):
        """The slot `slot_name` of `var`: a non-trainable variable "<var>/<op_name>" (made
        unique: "w/Adam_1") initialised by `initializer`, created once."""
        slots = self._slots.setdefault(slot_name, {})
        if var not in slots:
            slots[var] = _create_slot(var, initializer, op_name)
        return slots[var]

    def _zeros_slot(self, var, slot_name, op_name):
        return self._slot(var, Zeros(), slot_name, op_name)

    def _non_slot(self, initial_value, name):
        """A variable of the optimizer itself, one per graph (TF's non-slot variables)."""
        graph = get_default_graph()
        key = (name, graph)
        if key not in self._non_slots:
            with graph.control_dependencies(None):
                self._non_slots[key] = Variable(initial_value, name=name, trainable=False)
        return self._non_slots[key]

    def get_slot(self, var, name):
        return self._slots.get(name, {}).get(var)

    def get_slot_names(self):
        return sorted(self._slots)

    def variables(self):
        """The optimizer's variables in the default graph (slots and non-slots), by name."""
        graph = get_default_graph()
        found = [v for (_, g), v in self._non_slots.items() if g is graph]
        found += [v for slots in self._slots.values() for v in slots.values() if v.graph is graph]
        return sorted(found, key=lambda v: v.name)

    # ------------------------------------------------------------------ helpers

    @staticmethod
    def _hyper(value, name):
        """A hyperparameter (number, tensor, or callable returning one) as a tensor."""
        if callable(value) and not isinstance(value, (Tensor, Variable)):
            value = value()
        return convert_to_tensor(value, name=name)

    @staticmethod
    def _cast(value, dtype):
        """TF's math_ops.cast: `value` itself when it has `dtype`, else a Cast node."""
        if value.dtype == dtype:
            return value
        return raw_ops.Cast(x=value, DstT=dtype, name="Cast")

    @staticmethod
    def _group(ops, name):
        with get_default_graph().control_dependencies(ops):
            return raw_ops.NoOp(name=name)

    # ------------------------------------------------------------------ subclass hooks

    def _create_slots(self, variables):
        pass

    def _prepare(self):
        pass

    def _apply_dense(self, grad, var):
        raise NotImplementedError

    def _finish(self, updates, name):
        return self._group(updates, name)


def _create_slot(primary, initializer, op_name):
    """TF's slot_creator: get_variable("") in a new variable scope "<primary>/<op_name>"."""
    shape = primary.shape
    if not shape.is_fully_defined():
        def initial_value(make=initializer):
            return make(raw_ops.Shape(input=primary.initial_value), primary.dtype)
        initializer, shape = initial_value, None
    with variable_scope(None, primary.op.name + "/" + op_name):
        return get_variable("", shape=shape, dtype=primary.dtype, initializer=initializer,
                            trainable=False, validate_shape=shape is not None)


def _check_dtypes(values):
    for v in values:
        if v.dtype not in _VALID_DTYPES:
            raise ValueError(f"Invalid type {v.dtype!r} for {v.name}, expected: "
                             f"[{', '.join(repr(d) for d in _VALID_DTYPES)}].")
