"""TF1's Adadelta, Ftrl, ProximalAdagrad and ProximalGradientDescent optimizers
(tf.compat.v1.train.*Optimizer), with TF's slots, hyperparameter names and update nodes
(Apply/ResourceApply/SparseApply/ResourceSparseApply of the same name; Ftrl's V2 forms
when it has an L2 shrinkage)."""

from graphops.api import raw_ops
from graphops.training.optimizers import RuleOptimizer, check_positive_accumulator


class AdadeltaOptimizer(RuleOptimizer):
    """Adadelta: slots "accum" and "accum_update" (zeros)."""

    def __init__(self, learning_rate=0.001, rho=0.95, epsilon=1e-8, use_locking=False,
                 name="Adadelta"):
        super().__init__(use_locking, name)
        self._lr, self._rho, self._epsilon = learning_rate, rho, epsilon

    def _create_slots(self, variables):
        for v in variables:
            self._zeros_slot(v, "accum", self._name)
            self._zeros_slot(v, "accum_update", self._name)

    def _prepare(self):
        self._lr_t = self._hyper(self._lr, "lr")
        self._rho_t = self._hyper(self._rho, "rho")
        self._epsilon_t = self._hyper(self._epsilon, "epsilon")

    def _rule(self, var):
        slots = {"accum": self.get_slot(var, "accum"),
                 "accum_update": self.get_slot(var, "accum_update")}
        return "Adadelta", slots, {"lr": self._lr_t, "rho": self._rho_t,
                                   "epsilon": self._epsilon_t}


class ProximalGradientDescentOptimizer(RuleOptimizer):
    """Gradient descent followed by TF's proximal L1/L2 step (FOBOS)."""

    def __init__(self, learning_rate, l1_regularization_strength=0.0,
                 l2_regularization_strength=0.0, use_locking=False,
                 name="ProximalGradientDescent"):
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._l1, self._l2 = l1_regularization_strength, l2_regularization_strength

    def _prepare(self):
        self._lr_t = self._hyper(self._learning_rate, "learning_rate")
        self._l1_t = self._hyper(self._l1, "l1_regularization_strength")
        self._l2_t = self._hyper(self._l2, "l2_regularization_strength")

    def _rule(self, var):
        return "ProximalGradientDescent", {}, {"alpha": self._lr_t, "l1": self._l1_t,
                                               "l2": self._l2_t}


class ProximalAdagradOptimizer(ProximalGradientDescentOptimizer):
    """Adagrad's learning rate with the proximal step: slot "accumulator"."""

    def __init__(self, learning_rate, initial_accumulator_value=0.1,
                 l1_regularization_strength=0.0, l2_regularization_strength=0.0,
                 use_locking=False, name="ProximalAdagrad"):
        check_positive_accumulator(initial_accumulator_value)
        super().__init__(learning_rate, l1_regularization_strength,
                         l2_regularization_strength, use_locking, name)
        self._initial_accumulator_value = initial_accumulator_value

    def _create_slots(self, variables):
        for v in variables:
            self._constant_slot(v, self._initial_accumulator_value, "accumulator", self._name)

    def _rule(self, var):
        return "ProximalAdagrad", {"accum": self.get_slot(var, "accumulator")}, {
            "lr": self._lr_t, "l1": self._l1_t, "l2": self._l2_t}


def _check_ftrl(initial, power, l1, l2, shrinkage):
    checks = ((initial < 0.0, f"initial_accumulator_value {initial:f} needs to be positive "
                              "or zero"),
              (power > 0.0, f"learning_rate_power {power:f} needs to be negative or zero"),
              (l1 < 0.0, f"l1_regularization_strength {l1:f} needs to be positive or zero"),
              (l2 < 0.0, f"l2_regularization_strength {l2:f} needs to be positive or zero"),
              (shrinkage < 0.0, f"l2_shrinkage_regularization_strength {shrinkage:f} needs "
                                "to be positive or zero"))
    for failed, message in checks:
        if failed:
            raise ValueError(message)


class FtrlOptimizer(RuleOptimizer):
    """FTRL-proximal: slots "accum" (starting at `initial_accumulator_value`) and
    "linear"; ApplyFtrlV2 when `l2_shrinkage_regularization_strength` > 0; `beta` adds
    beta / (2 * learning_rate) to the L2 strength, as TF."""

    def __init__(self, learning_rate, learning_rate_power=-0.5, initial_accumulator_value=0.1,
                 l1_regularization_strength=0.0, l2_regularization_strength=0.0,
                 use_locking=False, name="Ftrl", accum_name=None, linear_name=None,
                 l2_shrinkage_regularization_strength=0.0, beta=None):
        super().__init__(use_locking, name)
        _check_ftrl(initial_accumulator_value, learning_rate_power,
                    l1_regularization_strength, l2_regularization_strength,
                    l2_shrinkage_regularization_strength)
        self._learning_rate, self._power = learning_rate, learning_rate_power
        self._initial_accumulator_value = initial_accumulator_value
        self._l1, self._l2 = l1_regularization_strength, l2_regularization_strength
        self._beta = 0.0 if beta is None else beta
        self._shrinkage = l2_shrinkage_regularization_strength
        self._accum_name, self._linear_name = accum_name, linear_name

    def _create_slots(self, variables):
        for v in variables:
            self._constant_slot(v, self._initial_accumulator_value, "accum",
                                self._accum_name or self._name)
            self._zeros_slot(v, "linear", self._linear_name or self._name)

    def _prepare(self):
        self._lr_t = self._hyper(self._learning_rate, "learning_rate")
        self._l1_t = self._hyper(self._l1, "l1_regularization_strength")
        floor = raw_ops.Maximum(x=self._hyper(self._learning_rate, "x"),
                                y=self._hyper(1e-36, "y"))
        self._l2_t = self._l2 + self._beta / (2.0 * floor)
        self._shrinkage_t = self._hyper(self._shrinkage, "l2_shrinkage_regularization_strength")
        self._power_t = self._hyper(self._power, "learning_rate_power")

    def _rule(self, var):
        slots = {"accum": self.get_slot(var, "accum"), "linear": self.get_slot(var, "linear")}
        hypers = {"lr": self._lr_t, "l1": self._l1_t, "l2": self._l2_t}
        name = "Ftrl"
        if self._shrinkage > 0.0:
            hypers["l2_shrinkage"], name = self._shrinkage_t, "FtrlV2"
        hypers["lr_power"] = self._power_t
        return name, slots, hypers
