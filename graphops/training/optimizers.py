"""TF1's optimizers (tf.compat.v1.train.*Optimizer): each builds its hyperparameter
tensors once per `apply_gradients` ("<name>/learning_rate", ...), cast to a variable's
dtype where they differ, and per variable the node TF1 builds for its kind and its
gradient's: ResourceApply<X> / Apply<X> for dense gradients, ResourceSparseApply<X> /
SparseApply<X> for IndexedSlices (after the base class sums repeated indices), except
where TF's optimizer overrides that (GradientDescent's scatter of -lr * rows, Adam's
dense decay of its slots followed by a scatter-add of the new rows)."""

from graphops.api import raw_ops
from graphops.api.init_ops import Ones
from graphops.building.graph import get_default_graph
from graphops.building.indexed_slices import IndexedSlices
from graphops.training.optimizer import Optimizer, is_resource_variable


def apply_update(name, var, slots, *, ref, sparse=False, **inputs):
    """The update node `name` ("Momentum", ...) in the form for `var`: Apply/SparseApply
    on the reference tensors (returning the op, as TF's `.op`) or ResourceApply/
    ResourceSparseApply on the handles."""
    prefix = ("" if ref else "Resource") + ("SparseApply" if sparse else "Apply")
    handles = {k: (v._ref() if ref else v.handle) for k, v in slots.items()}
    node = getattr(raw_ops, prefix + name)(var=var._ref() if ref else var.handle,
                                           **handles, **inputs)
    return node.op if ref else node


def check_positive_accumulator(value):
    """Adagrad's check (TF's message) of `initial_accumulator_value`."""
    if value <= 0.0:
        raise ValueError(f"initial_accumulator_value must be positive: {value}")


_DELTA_NAMED = ("GradientDescent", "ProximalGradientDescent")   # dense forms' "delta" input


class RuleOptimizer(Optimizer):
    """An optimizer whose four update forms differ only in the node's form: `_rule(var)`
    gives (op name, {slot input: slot variable}, {input: hyperparameter tensor}) and
    `_rule_attrs()` any further attributes; the hyperparameters are cast to the dtype in
    the order given."""

    def _rule(self, var):
        raise NotImplementedError

    def _rule_attrs(self):
        return {}

    def _build(self, grad, var, dtype, ref, indices=None):
        name, slots, hypers = self._rule(var)
        inputs = {k: self._cast(v, dtype) for k, v in hypers.items()}
        sparse = {} if indices is None else {"indices": indices}
        grad_name = "delta" if name in _DELTA_NAMED and indices is None else "grad"
        return apply_update(name, var, slots, ref=ref, sparse=indices is not None,
                            **{grad_name: grad}, **sparse, **inputs,
                            use_locking=self._use_locking, **self._rule_attrs())

    def _apply_dense(self, grad, var):
        return self._build(grad, var, var.dtype.base_dtype, ref=True)

    def _resource_apply_dense(self, grad, var):
        return self._build(grad, var, grad.dtype, ref=False)

    def _apply_sparse(self, grad, var):
        return self._build(grad.values, var, var.dtype.base_dtype, True, grad.indices)

    def _resource_apply_sparse(self, grad, var, indices):
        return self._build(grad, var, grad.dtype, False, indices)


class GradientDescentOptimizer(RuleOptimizer):
    """var -= learning_rate * grad; rows of a sparse gradient scattered in, repeated
    indices adding up."""

    def __init__(self, learning_rate, use_locking=False, name="GradientDescent"):
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate

    def _prepare(self):
        self._lr_t = self._hyper(self._learning_rate, "learning_rate")

    def _rule(self, var):
        return "GradientDescent", {}, {"alpha": self._lr_t}

    def _resource_apply_sparse_duplicate_indices(self, grad, var, indices):
        return raw_ops.ResourceScatterAdd(resource=var.handle, indices=indices,
                                          updates=-grad * self._cast(self._lr_t, grad.dtype))

    def _apply_sparse_duplicate_indices(self, grad, var):
        delta = IndexedSlices(grad.values * self._cast(self._lr_t, var.dtype.base_dtype),
                              grad.indices, grad.dense_shape)
        return var.scatter_sub(delta, use_locking=self._use_locking)


class MomentumOptimizer(RuleOptimizer):
    """accum = momentum * accum + grad; var -= learning_rate * accum (or Nesterov's form).
    Slot "momentum" ("<var>/Momentum")."""

    def __init__(self, learning_rate, momentum, use_locking=False, name="Momentum",
                 use_nesterov=False):
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._momentum = momentum
        self._use_nesterov = use_nesterov

    def _create_slots(self, variables):
        for v in variables:
            self._zeros_slot(v, "momentum", self._name)

    def _prepare(self):
        self._lr_t = self._hyper(self._learning_rate, "learning_rate")
        self._momentum_t = self._hyper(self._momentum, "momentum")

    def _rule(self, var):
        return "Momentum", {"accum": self.get_slot(var, "momentum")}, {
            "lr": self._lr_t, "momentum": self._momentum_t}

    def _rule_attrs(self):
        return {"use_nesterov": self._use_nesterov}


class AdamOptimizer(RuleOptimizer):
    """Adam (Kingma & Ba), TF1's formulation: slots "m" and "v" ("<var>/Adam",
    "<var>/Adam_1") and the float32 accumulators "beta1_power", "beta2_power" updated
    after the variables. A sparse gradient decays all of m and v, then adds its rows."""

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 use_locking=False, name="Adam"):
        super().__init__(use_locking, name)
        self._lr, self._beta1, self._beta2, self._epsilon = learning_rate, beta1, beta2, epsilon

    def _powers(self):
        graph = get_default_graph()
        return (self._non_slots[("beta1_power", graph)], self._non_slots[("beta2_power", graph)])

    def _create_slots(self, variables):
        first = min(variables, key=lambda v: v.name)
        with first.graph.as_default():
            self._non_slot(self._beta1, "beta1_power", colocate_with=first)
            self._non_slot(self._beta2, "beta2_power", colocate_with=first)
        for v in variables:
            self._zeros_slot(v, "m", self._name)
            self._zeros_slot(v, "v", self._name)

    def _prepare(self):
        self._lr_t = self._hyper(self._lr, "learning_rate")
        self._beta1_t = self._hyper(self._beta1, "beta1")
        self._beta2_t = self._hyper(self._beta2, "beta2")
        self._epsilon_t = self._hyper(self._epsilon, "epsilon")

    def _rule(self, var):
        beta1_power, beta2_power = self._powers()
        return "Adam", {"m": self.get_slot(var, "m"), "v": self.get_slot(var, "v")}, {
            "beta1_power": beta1_power, "beta2_power": beta2_power, "lr": self._lr_t,
            "beta1": self._beta1_t, "beta2": self._beta2_t, "epsilon": self._epsilon_t}

    def _apply_sparse_shared(self, grad, var, indices, scatter_add):
        """TF1's adam.py: m = m * beta1 then += (1 - beta1) * rows; v likewise with the
        squared rows; var -= lr_t * m / (sqrt(v) + epsilon), all of it."""
        dtype = var.dtype.base_dtype
        beta1_power, beta2_power = (self._cast(p, dtype) for p in self._powers())
        lr_t, beta1_t = self._cast(self._lr_t, dtype), self._cast(self._beta1_t, dtype)
        beta2_t, epsilon_t = self._cast(self._beta2_t, dtype), self._cast(self._epsilon_t, dtype)
        lr = lr_t * raw_ops.Sqrt(x=1 - beta2_power) / (1 - beta1_power)
        graph = get_default_graph()
        m = self.get_slot(var, "m")
        m_scaled_g_values = grad * (1 - beta1_t)
        m_t = m.assign(m * beta1_t, use_locking=self._use_locking)
        with graph.control_dependencies([m_t]):
            m_t = scatter_add(m, indices, m_scaled_g_values)
        v = self.get_slot(var, "v")
        v_scaled_g_values = (grad * grad) * (1 - beta2_t)
        v_t = v.assign(v * beta2_t, use_locking=self._use_locking)
        with graph.control_dependencies([v_t]):
            v_t = scatter_add(v, indices, v_scaled_g_values)
        v_sqrt = raw_ops.Sqrt(x=v_t)
        var_update = var.assign_sub(lr * m_t / (v_sqrt + epsilon_t),
                                    use_locking=self._use_locking)
        return self._group([var_update, m_t, v_t], "group_deps")

    def _apply_sparse(self, grad, var):
        return self._apply_sparse_shared(
            grad.values, var, grad.indices,
            lambda x, i, v: x.scatter_add(IndexedSlices(v, i), use_locking=self._use_locking))

    def _resource_apply_sparse(self, grad, var, indices):
        def scatter_add(x, i, v):
            update = raw_ops.ResourceScatterAdd(resource=x.handle, indices=i, updates=v)
            with get_default_graph().control_dependencies([update]):
                return x.value()
        return self._apply_sparse_shared(grad, var, indices, scatter_add)

    def _finish(self, updates, name):
        beta1_power, beta2_power = self._powers()
        graph = get_default_graph()
        assigns = []
        with graph.control_dependencies(updates):
            for power, beta in ((beta1_power, self._beta1_t), (beta2_power, self._beta2_t)):
                if not is_resource_variable(power):
                    assigns.append(power.assign(power * beta, use_locking=self._use_locking))
                    continue
                assigns.append(power.assign(power * beta, read_value=False))
                with graph.control_dependencies(assigns[-1:]):
                    power.value()       # the read TF's assign makes (unused): same GraphDef
        return self._group(updates + assigns, name)


class RMSPropOptimizer(RuleOptimizer):
    """RMSProp: slots "rms" (initially ones), "momentum" and, when centered, "mg"."""

    def __init__(self, learning_rate, decay=0.9, momentum=0.0, epsilon=1e-10,
                 use_locking=False, centered=False, name="RMSProp"):
        super().__init__(use_locking, name)
        self._learning_rate, self._decay = learning_rate, decay
        self._momentum, self._epsilon, self._centered = momentum, epsilon, centered

    def _create_slots(self, variables):
        for v in variables:
            self._slot(v, Ones(dtype=v.dtype.base_dtype), "rms", self._name)
            if self._centered:
                self._zeros_slot(v, "mg", self._name)
            self._zeros_slot(v, "momentum", self._name)

    def _prepare(self):
        self._lr_t = self._hyper(self._learning_rate, "learning_rate")
        self._decay_t = self._hyper(self._decay, "decay")
        self._momentum_t = self._hyper(self._momentum, "momentum")
        self._epsilon_t = self._hyper(self._epsilon, "epsilon")

    def _rule(self, var):
        slots = {"ms": self.get_slot(var, "rms"), "mom": self.get_slot(var, "momentum")}
        name = "RMSProp"
        if self._centered:
            slots = {"mg": self.get_slot(var, "mg"), **slots}
            name = "CenteredRMSProp"
        return name, slots, {"lr": self._lr_t, "rho": self._decay_t,
                             "momentum": self._momentum_t, "epsilon": self._epsilon_t}


class AdagradOptimizer(RuleOptimizer):
    """Adagrad: slot "accumulator" starting at `initial_accumulator_value`."""

    def __init__(self, learning_rate, initial_accumulator_value=0.1, use_locking=False,
                 name="Adagrad"):
        check_positive_accumulator(initial_accumulator_value)
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._initial_accumulator_value = initial_accumulator_value

    def _create_slots(self, variables):
        for v in variables:
            self._constant_slot(v, self._initial_accumulator_value, "accumulator", self._name)

    def _prepare(self):
        self._lr_t = self._hyper(self._learning_rate, "learning_rate")

    def _rule(self, var):
        return "Adagrad", {"accum": self.get_slot(var, "accumulator")}, {"lr": self._lr_t}
