"""TF1's optimizers (tf.compat.v1.train.*Optimizer) over resource variables: each builds
its hyperparameter tensors once per `apply_gradients` ("<name>/learning_rate", ...), cast
to a variable's dtype where they differ, and one ResourceApply* node per variable."""

from graphops.api import raw_ops
from graphops.api.init_ops import Constant, Ones
from graphops.training.optimizer import Optimizer
from graphops.building.graph import get_default_graph


class GradientDescentOptimizer(Optimizer):
    """var -= learning_rate * grad."""

    def __init__(self, learning_rate, use_locking=False, name="GradientDescent"):
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate

    def _prepare(self):
        self._lr_t = self._hyper(self._learning_rate, "learning_rate")

    def _apply_dense(self, grad, var):
        return raw_ops.ResourceApplyGradientDescent(
            var=var.handle, alpha=self._cast(self._lr_t, grad.dtype), delta=grad,
            use_locking=self._use_locking)


class MomentumOptimizer(Optimizer):
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

    def _apply_dense(self, grad, var):
        return raw_ops.ResourceApplyMomentum(
            var=var.handle, accum=self.get_slot(var, "momentum").handle,
            lr=self._cast(self._lr_t, grad.dtype), grad=grad,
            momentum=self._cast(self._momentum_t, grad.dtype), use_locking=self._use_locking,
            use_nesterov=self._use_nesterov)


class AdamOptimizer(Optimizer):
    """Adam (Kingma & Ba), TF1's formulation: slots "m" and "v" ("<var>/Adam",
    "<var>/Adam_1") and the float32 accumulators "beta1_power", "beta2_power" updated
    after the variables."""

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
            self._non_slot(self._beta1, "beta1_power")
            self._non_slot(self._beta2, "beta2_power")
        for v in variables:
            self._zeros_slot(v, "m", self._name)
            self._zeros_slot(v, "v", self._name)

    def _prepare(self):
        self._lr_t = self._hyper(self._lr, "learning_rate")
        self._beta1_t = self._hyper(self._beta1, "beta1")
        self._beta2_t = self._hyper(self._beta2, "beta2")
        self._epsilon_t = self._hyper(self._epsilon, "epsilon")

    def _apply_dense(self, grad, var):
        beta1_power, beta2_power = self._powers()
        dtype = grad.dtype
        return raw_ops.ResourceApplyAdam(
            var=var.handle, m=self.get_slot(var, "m").handle, v=self.get_slot(var, "v").handle,
            beta1_power=self._cast(beta1_power, dtype), beta2_power=self._cast(beta2_power, dtype),
            lr=self._cast(self._lr_t, dtype), beta1=self._cast(self._beta1_t, dtype),
            beta2=self._cast(self._beta2_t, dtype), epsilon=self._cast(self._epsilon_t, dtype),
            grad=grad, use_locking=self._use_locking)

    def _finish(self, updates, name):
        beta1_power, beta2_power = self._powers()
        graph = get_default_graph()
        assigns = []
        with graph.control_dependencies(updates):
            for power, beta in ((beta1_power, self._beta1_t), (beta2_power, self._beta2_t)):
                assigns.append(power.assign(power * beta, read_value=False))
                with graph.control_dependencies(assigns[-1:]):
                    power.value()       # the read TF's assign makes (unused): same GraphDef
        return self._group(updates + assigns, name)


class RMSPropOptimizer(Optimizer):
    """RMSProp: slots "rms" (initially ones), "momentum" and, when centered, "mg"."""

    def __init__(self, learning_rate, decay=0.9, momentum=0.0, epsilon=1e-10,
                 use_locking=False, centered=False, name="RMSProp"):
        super().__init__(use_locking, name)
        self._learning_rate, self._decay = learning_rate, decay
        self._momentum, self._epsilon, self._centered = momentum, epsilon, centered

    def _create_slots(self, variables):
        for v in variables:
            self._slot(v, Ones(dtype=v.dtype), "rms", self._name)
            if self._centered:
                self._zeros_slot(v, "mg", self._name)
            self._zeros_slot(v, "momentum", self._name)

    def _prepare(self):
        self._lr_t = self._hyper(self._learning_rate, "learning_rate")
        self._decay_t = self._hyper(self._decay, "decay")
        self._momentum_t = self._hyper(self._momentum, "momentum")
        self._epsilon_t = self._hyper(self._epsilon, "epsilon")

    def _apply_dense(self, grad, var):
        dtype = grad.dtype
        common = dict(var=var.handle, ms=self.get_slot(var, "rms").handle,
                      mom=self.get_slot(var, "momentum").handle,
                      lr=self._cast(self._lr_t, dtype), rho=self._cast(self._decay_t, dtype),
                      momentum=self._cast(self._momentum_t, dtype),
                      epsilon=self._cast(self._epsilon_t, dtype), grad=grad,
                      use_locking=self._use_locking)
        if self._centered:
            return raw_ops.ResourceApplyCenteredRMSProp(mg=self.get_slot(var, "mg").handle,
                                                        **common)
        return raw_ops.ResourceApplyRMSProp(**common)


class AdagradOptimizer(Optimizer):
    """Adagrad (ResourceApplyAdagrad): slot "accumulator" starting at
    `initial_accumulator_value`."""

    def __init__(self, learning_rate, initial_accumulator_value=0.1, use_locking=False,
                 name="Adagrad"):
        if initial_accumulator_value <= 0.0:
            raise ValueError(f"initial_accumulator_value must be positive: "
                             f"{initial_accumulator_value}")
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._initial_accumulator_value = initial_accumulator_value

    def _create_slots(self, variables):
        for v in variables:
            init = Constant(self._initial_accumulator_value, dtype=v.dtype)
            self._slot(v, init, "accumulator", self._name)

    def _prepare(self):
        self._lr_t = self._hyper(self._learning_rate, "learning_rate")

    def _apply_dense(self, grad, var):
        return raw_ops.ResourceApplyAdagrad(
            var=var.handle, accum=self.get_slot(var, "accumulator").handle,
            lr=self._cast(self._lr_t, grad.dtype), grad=grad, use_locking=self._use_locking)
