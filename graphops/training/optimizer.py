"""TF1's `Optimizer` base class: `minimize` = `compute_gradients` (gp.gradients w.r.t. the
trainable Variables) followed by `apply_gradients` (one update per variable under
"<name>/update_<var>", grouped into one NoOp, or an increment of the global step that
runs after them), with TF's slot variables and node names:

    Adam/learning_rate, ..., Adam/update_w/ResourceApplyAdam, Adam/update, Adam
    w/Adam, w/Adam_1 (slots "m" and "v"), beta1_power, beta2_power (non-slot variables)

Each update goes where TF1's variable processors send it: a dense gradient of a resource
variable to `_resource_apply_dense` (ResourceApply*), of a reference variable to
`_apply_dense` (Apply*); an IndexedSlices gradient to
`_resource_apply_sparse_duplicate_indices` / `_apply_sparse_duplicate_indices`, which sum
the rows of repeated indices (TF's `_deduplicate_indexed_slices`: Unique and
UnsortedSegmentSum) and call `_resource_apply_sparse` / `_apply_sparse`.

GATE_OP (the default) gates each op's input gradients together where some variable is a
reference variable: there it keeps TF's executor from reading a weight that an update has
already changed in place. Resource variables are read as snapshots, here and in TF, so
their graphs are built without the gates (and without computing the gradients only a gate
would need, such as a first conv's input gradient).
"""

from graphops.api import group_ops, raw_ops
from graphops.api.init_ops import Constant, Zeros
from graphops.autodiff.gradients import gradients
from graphops.training.variable_scope import get_variable, variable_scope
from graphops.training.variables import Variable, trainable_variables
from graphops.building.constant_op import convert_to_tensor
from graphops.building.graph import get_default_graph
from graphops.building.indexed_slices import IndexedSlices, first_item
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
        gate_ops = gate_gradients == self.GATE_OP and not all(map(is_resource_variable,
                                                                    var_list))
        grads = gradients(loss, var_list, grad_ys=None if grad_loss is None else [grad_loss],
                          gate_gradients=gate_ops,
                          aggregation_method=aggregation_method,
                          colocate_gradients_with_ops=colocate_gradients_with_ops)
        if gate_gradients == self.GATE_GRAPH:
            grads = group_ops.tuple(grads)
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
            if grad is not None and not isinstance(grad, IndexedSlices):
                with var.graph.as_default():
                    try:
                        grad = convert_to_tensor(grad)
                    except (TypeError, ValueError):
                        raise TypeError(f"Gradient must be convertible to a Tensor or "
                                        f"IndexedSlices, or None: {grad}") from None
            if grad is not None:
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
                        updates.append(self._update_op(grad, var))
                if global_step is None:
                    train_op = self._finish(updates, scope)
                else:
                    with graph.control_dependencies([self._finish(updates, "update")]):
                        train_op = _increment(global_step, scope)
            collection = graph.get_collection_ref(GraphKeys.TRAIN_OP)
            if train_op not in collection:
                collection.append(train_op)
            return train_op

    def _update_op(self, grad, var):
        """TF1's processors: the update of `var` by `grad` by the variable's kind and the
        gradient's (a constraint is applied after a dense update)."""
        resource = is_resource_variable(var)
        if isinstance(grad, IndexedSlices):
            if var.constraint is not None:
                raise RuntimeError("Cannot use a constraint function on a sparse variable.")
            if resource:
                return self._resource_apply_sparse_duplicate_indices(grad.values, var,
                                                                     grad.indices)
            return self._apply_sparse_duplicate_indices(grad, var)
        update = self._resource_apply_dense(grad, var) if resource else \
            self._apply_dense(grad, var)
        if var.constraint is None:
            return update
        with var.graph.control_dependencies([update]):
            return var.assign(var.constraint(var))

    def _resource_apply_sparse_duplicate_indices(self, grad, var, indices):
        """Sums the rows of repeated indices, then `_resource_apply_sparse`."""
        summed, unique = deduplicate_indexed_slices(grad, indices)
        return self._resource_apply_sparse(summed, var, unique)

    def _apply_sparse_duplicate_indices(self, grad, var):
        """Sums the rows of repeated indices, then `_apply_sparse`."""
        summed, unique = deduplicate_indexed_slices(grad.values, grad.indices)
        return self._apply_sparse(IndexedSlices(summed, unique, grad.dense_shape), var)

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

    def _constant_slot(self, var, value, slot_name, op_name):
        return self._slot(var, Constant(value, dtype=var.dtype.base_dtype), slot_name, op_name)

    def _non_slot(self, initial_value, name, colocate_with=None):
        """A variable of the optimizer itself, one per graph (TF's non-slot variables); a
        reference variable when `colocate_with` is one."""
        graph = get_default_graph()
        key = (name, graph)
        if key not in self._non_slots:
            resource = colocate_with is None or is_resource_variable(colocate_with)
            with graph.control_dependencies(None):
                self._non_slots[key] = Variable(initial_value, name=name, trainable=False,
                                                use_resource=resource)
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
        if value.dtype.base_dtype == dtype:
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

    def _resource_apply_dense(self, grad, var):
        raise NotImplementedError

    def _apply_sparse(self, grad, var):
        raise NotImplementedError

    def _resource_apply_sparse(self, grad, var, indices):
        raise NotImplementedError

    def _finish(self, updates, name):
        return self._group(updates, name)


def is_resource_variable(var):
    """TF's test: a resource variable has the `_should_act_as_resource_variable` mark."""
    return hasattr(var, "_should_act_as_resource_variable")


def deduplicate_indexed_slices(values, indices):
    """TF's `_deduplicate_indexed_slices`: (the rows of `values` summed per distinct index,
    the distinct indices)."""
    unique, positions = raw_ops.Unique(x=indices)
    count = first_item(raw_ops.Shape(input=unique))
    summed = raw_ops.UnsortedSegmentSum(data=values, segment_ids=positions,
                                        num_segments=count)
    return summed, unique


def _increment(global_step, name):
    """The step's increment by one TF builds: AssignAddVariableOp or AssignAdd."""
    one = convert_to_tensor(1, dtype=global_step.dtype.base_dtype)
    if is_resource_variable(global_step):
        return raw_ops.AssignAddVariableOp(resource=global_step.handle, value=one, name=name)
    return global_step.assign_add(one, name=name)


def _create_slot(primary, initializer, op_name):
    """TF's slot_creator: get_variable("") in a new variable scope "<primary>/<op_name>",
    a resource variable for a resource primary, else a reference one."""
    shape = primary.shape
    if not shape.is_fully_defined():
        def initial_value(make=initializer):
            return make(raw_ops.Shape(input=primary.initial_value), primary.dtype)
        initializer, shape = initial_value, None
    with variable_scope(None, primary.op.name + "/" + op_name):
        return get_variable("", shape=shape, dtype=primary.dtype.base_dtype,
                            initializer=initializer, trainable=False,
                            validate_shape=shape is not None,
                            use_resource=is_resource_variable(primary))


def _check_dtypes(values):
    for v in values:
        if v.dtype.base_dtype not in _VALID_DTYPES:
            raise ValueError(f"Invalid type {v.dtype!r} for {v.name}, expected: "
                             f"[{', '.join(repr(d) for d in _VALID_DTYPES)}].")
