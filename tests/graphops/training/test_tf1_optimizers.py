"""TF1 optimizers and learning-rate decays: the RMSProp/Adagrad update kernels and every
optimizer's steps against NumPy, slots and node names, TF1's minimize/compute_gradients/
apply_gradients arguments, and the decays' values at several steps against NumPy.
"""

import math

import numpy as np
import pytest

import graphops as gp
from graphops.registry import errors

F64 = np.float64


def _kernel_step(op_type, var, slots, scalars, grad, **attrs):
    """Values of var and its slots after one `op_type` update."""
    with gp.Graph().as_default():
        variables = [gp.Variable(np.array(v)) for v in [var, *slots.values()]]
        handles = dict(zip(["var", *slots], [v.handle for v in variables]))
        op = getattr(gp.raw_ops, op_type)(**handles, **scalars, grad=grad, **attrs)
        with gp.Session() as sess:
            sess.run(gp.global_variables_initializer())
            sess.run(op)
            return sess.run(variables)


RNG = np.random.default_rng(5)
VAR, GRAD = RNG.normal(size=4), RNG.normal(size=4)
MS, MOM, MG = RNG.uniform(0.5, 1.5, 4), RNG.normal(size=4), RNG.normal(size=4) * 0.1


def test_rmsprop_kernel_matches_reference():
    lr, rho, momentum, eps = F64(0.01), F64(0.9), F64(0.5), F64(1e-6)
    got = _kernel_step("ResourceApplyRMSProp", VAR, {"ms": MS, "mom": MOM},
                       dict(lr=lr, rho=rho, momentum=momentum, epsilon=eps), GRAD)
    ms = MS + (GRAD ** 2 - MS) * (1 - rho)
    mom = MOM * momentum + lr * GRAD / np.sqrt(ms + eps)
    for have, want in zip(got, (VAR - mom, ms, mom)):
        np.testing.assert_allclose(have, want, rtol=1e-14)


def test_centered_rmsprop_kernel_matches_reference():
    lr, rho, momentum, eps = F64(0.01), F64(0.8), F64(0.3), F64(1e-6)
    got = _kernel_step("ResourceApplyCenteredRMSProp", VAR, {"mg": MG, "ms": MS, "mom": MOM},
                       dict(lr=lr, rho=rho, momentum=momentum, epsilon=eps), GRAD)
    ms = MS + (GRAD ** 2 - MS) * (1 - rho)
    mg = MG + (GRAD - MG) * (1 - rho)
    mom = MOM * momentum + lr * GRAD / np.sqrt(ms - mg ** 2 + eps)
    for have, want in zip(got, (VAR - mom, mg, ms, mom)):
        np.testing.assert_allclose(have, want, rtol=1e-14)


@pytest.mark.parametrize("update_slots", [True, False])
def test_adagrad_kernels_match_reference(update_slots):
    lr, eps = F64(0.1), F64(1e-3)
    var, accum = _kernel_step("ResourceApplyAdagrad", VAR, {"accum": MS}, {"lr": lr}, GRAD,
                              update_slots=update_slots)
    want_accum = MS + GRAD ** 2 if update_slots else MS
    np.testing.assert_allclose(accum, want_accum, rtol=1e-15)
    np.testing.assert_allclose(var, VAR - lr * GRAD / np.sqrt(want_accum), rtol=1e-14)
    var2, _ = _kernel_step("ResourceApplyAdagradV2", VAR, {"accum": MS},
                           {"lr": lr, "epsilon": eps}, GRAD, update_slots=update_slots)
    np.testing.assert_allclose(var2, VAR - lr * GRAD / (np.sqrt(want_accum) + eps), rtol=1e-14)


def test_kernel_shape_and_scalar_errors():
    with gp.Graph().as_default():
        var = gp.Variable(np.zeros(2, np.float32), name="w")
        accum = gp.Variable(np.zeros(3, np.float32), name="acc")
        lr = gp.placeholder(gp.float32)
        bad_accum = gp.raw_ops.ResourceApplyAdagrad(var=var.handle, accum=accum.handle,
                                                    lr=np.float32(1), grad=np.zeros(2, np.float32))
        bad_lr = gp.raw_ops.ResourceApplyRMSProp(
            var=var.handle, ms=var.handle, mom=var.handle, lr=lr, rho=np.float32(0.9),
            momentum=np.float32(0), epsilon=np.float32(1e-7), grad=np.zeros(2, np.float32))
        with pytest.raises(errors.InvalidArgumentError, match="Shape must be rank 0 but is rank 1"):
            gp.raw_ops.ResourceApplyAdagrad(var=var.handle, accum=accum.handle,
                                            lr=np.float32([1, 2]), grad=np.zeros(2, np.float32))
        with gp.Session() as sess:
            sess.run(gp.global_variables_initializer())
            with pytest.raises(errors.InvalidArgumentError,
                               match=r"var and accum do not have the same shape\[2\] \[3\]"):
                sess.run(bad_accum)
            # TF 2.21's RMSProp kernels word it with a space before the colon
            with pytest.raises(errors.InvalidArgumentError, match=r"lr is not a scalar : \[2\]"):
                sess.run(bad_lr, {lr: [1.0, 2.0]})


# ----------------------------------------------------------------------------- optimizers

X = RNG.normal(size=(6, 3))
Y = RNG.normal(size=(6, 1))


def _train(optimizer, steps, **minimize_kwargs):
    """w (float64) after `steps` on mean((X w - Y)^2), and the graph."""
    with gp.Graph().as_default() as g:
        w = gp.Variable(np.full((3, 1), 0.1), name="w")
        loss = gp.reduce_mean((gp.matmul(X, w) - Y) * (gp.matmul(X, w) - Y))
        train_op = optimizer.minimize(loss, **minimize_kwargs)
        with gp.Session() as sess:
            sess.run(gp.global_variables_initializer())
            for _ in range(steps):
                sess.run(train_op)
            return sess.run(w), g, train_op


def _grad(w):
    return 2 * X.T @ (X @ w - Y) / len(X)


def _numpy_steps(update, steps, state=()):
    w = np.full((3, 1), 0.1)
    for _ in range(steps):
        w, state = update(w, _grad(w), state)
    return w


@pytest.mark.parametrize("momentum, centered", [(0.0, False), (0.6, False), (0.6, True)])
def test_rmsprop_steps_match_numpy(momentum, centered):
    lr, decay, eps = 0.05, 0.8, 1e-6
    got, g, _ = _train(gp.train.RMSPropOptimizer(F64(lr), F64(decay), F64(momentum), F64(eps),
                                                 centered=centered), 5)

    def update(w, grad, state):
        ms, mg, mom = state or (np.ones_like(w), np.zeros_like(w), np.zeros_like(w))
        ms = ms + (grad ** 2 - ms) * (1 - decay)
        mg = mg + (grad - mg) * (1 - decay)
        denominator = ms - mg ** 2 if centered else ms
        mom = mom * momentum + lr * grad / np.sqrt(denominator + eps)
        return w - mom, (ms, mg, mom)

    np.testing.assert_allclose(got, _numpy_steps(update, 5), rtol=1e-12)
    update_op = "ResourceApplyCenteredRMSProp" if centered else "ResourceApplyRMSProp"
    assert g.get_operation_by_name(f"RMSProp/update_w/{update_op}").type == update_op


def test_adagrad_steps_match_numpy():
    got, _, _ = _train(gp.train.AdagradOptimizer(F64(0.2), initial_accumulator_value=0.5), 5)

    def update(w, grad, state):
        (accum,) = state or (np.full_like(w, 0.5),)
        accum = accum + grad ** 2
        return w - 0.2 * grad / np.sqrt(accum), (accum,)

    np.testing.assert_allclose(got, _numpy_steps(update, 5), rtol=1e-12)
    with pytest.raises(ValueError, match="initial_accumulator_value must be positive: 0.0"):
        gp.train.AdagradOptimizer(0.1, initial_accumulator_value=0.0)


def test_float32_hyperparameters_are_cast_to_a_float64_variable_as_in_tf():
    got, g, _ = _train(gp.train.GradientDescentOptimizer(0.1), 3)
    lr = F64(np.float32(0.1))          # TF: a float32 Const "learning_rate", then a Cast
    np.testing.assert_allclose(got, _numpy_steps(lambda w, gr, s: (w - lr * gr, s), 3),
                               rtol=1e-12)
    assert g.get_operation_by_name("GradientDescent/learning_rate").get_attr("dtype") is gp.float32
    assert g.get_operation_by_name("GradientDescent/update_w/Cast").type == "Cast"


def test_slots_names_and_optimizer_variables():
    with gp.Graph().as_default() as g:
        w = gp.Variable(np.ones(2, np.float32), name="w")
        loss = gp.reduce_sum(w * w)
        rms = gp.train.RMSPropOptimizer(0.1, momentum=0.9, centered=True)
        train_op = rms.minimize(loss)
        assert rms.get_slot_names() == ["mg", "momentum", "rms"]
        assert [rms.get_slot(w, n).name for n in ("rms", "mg", "momentum")] == [
            "w/RMSProp:0", "w/RMSProp_1:0", "w/RMSProp_2:0"]
        assert [v.name for v in rms.variables()] == ["w/RMSProp:0", "w/RMSProp_1:0",
                                                     "w/RMSProp_2:0"]
        assert rms.get_slot(w, "nope") is None
        assert train_op.name == "RMSProp" and train_op.type == "NoOp"
        assert gp.get_collection(gp.GraphKeys.TRAIN_OP) == [train_op]
        adagrad = gp.train.AdagradOptimizer(0.1)
        adagrad.minimize(loss)
        assert adagrad.get_slot(w, "accumulator").name == "w/Adagrad:0"
        assert g.get_operation_by_name("w/Adagrad/Initializer/Const").type == "Const"
        adam = gp.train.AdamOptimizer()
        adam.minimize(loss)
        assert [v.name for v in adam.variables()] == ["beta1_power:0", "beta2_power:0",
                                                      "w/Adam:0", "w/Adam_1:0"]
        for slot in rms.variables() + adam.variables():
            assert not slot.trainable and slot in gp.global_variables()
        with gp.Session() as sess:
            sess.run(gp.global_variables_initializer())
            np.testing.assert_array_equal(sess.run(rms.get_slot(w, "rms")), [1.0, 1.0])
            np.testing.assert_allclose(sess.run(adagrad.get_slot(w, "accumulator")), [0.1, 0.1])


def test_minimize_tf1_arguments_global_step_and_learning_rate_forms():
    with gp.Graph().as_default():
        w = gp.Variable(np.array([1.0, 2.0]), name="w")
        loss = gp.reduce_sum(w * w)
        step = gp.train.get_or_create_global_step()
        lr = gp.placeholder(gp.float64, [], name="lr")
        opt = gp.train.GradientDescentOptimizer(lambda: lr)
        train_op = opt.minimize(loss, global_step=step, var_list=[w],
                                gate_gradients=gp.train.Optimizer.GATE_GRAPH,
                                aggregation_method=None, colocate_gradients_with_ops=True,
                                name="sgd", grad_loss=None)
        assert train_op.name == "sgd" and train_op.type == "AssignAddVariableOp"
        one = train_op.inputs[1].op
        assert one.name == "sgd/Const" and one.control_inputs[0].name == "sgd/update"
        with pytest.raises(ValueError, match="gate_gradients must be one of"):
            opt.compute_gradients(loss, gate_gradients=7)
        with pytest.raises(ValueError, match="No variables provided."):
            opt.apply_gradients([])
        with pytest.raises(ValueError, match="No gradients provided for any variable"):
            opt.apply_gradients([(None, w)])
        with gp.Session() as sess:
            sess.run(gp.global_variables_initializer())
            sess.run(train_op, {lr: 0.25})
            sess.run(train_op, {lr: 0.5})
            np.testing.assert_allclose(sess.run(w), [0.0, 0.0], atol=1e-15)
            assert sess.run(step) == 2


# ----------------------------------------------------------------------------- decays

def _decayed(build, steps=10):
    with gp.Graph().as_default():
        step = gp.train.get_or_create_global_step()
        rate = build(step)
        bump = gp.assign_add(step, 1)
        with gp.Session() as sess:
            sess.run(gp.global_variables_initializer())
            values = []
            for _ in range(steps):
                values.append(sess.run(rate))
                sess.run(bump)
            return np.array(values, np.float64), rate


STEPS = np.arange(10, dtype=np.float64)


@pytest.mark.parametrize("staircase", [False, True])
def test_exponential_and_inverse_time_decay(staircase):
    p = np.floor(STEPS / 3) if staircase else STEPS / 3
    got, rate = _decayed(lambda s: gp.train.exponential_decay(0.1, s, 3, 0.5, staircase))
    np.testing.assert_allclose(got, 0.1 * 0.5 ** p, rtol=1e-6)
    assert rate.name == "ExponentialDecay:0" and rate.op.type == "Mul"
    got, rate = _decayed(lambda s: gp.train.inverse_time_decay(0.1, s, 3, 0.5, staircase))
    np.testing.assert_allclose(got, 0.1 / (1 + 0.5 * p), rtol=1e-6)
    assert rate.name == "InverseTimeDecay:0" and rate.op.type == "RealDiv"
    got, _ = _decayed(lambda s: gp.train.natural_exp_decay(0.1, s, 3, 0.5, staircase))
    np.testing.assert_allclose(got, 0.1 * np.exp(-0.5 * p), rtol=1e-6)


@pytest.mark.parametrize("cycle", [False, True])
def test_polynomial_decay(cycle):
    got, rate = _decayed(lambda s: gp.train.polynomial_decay(0.1, s, 4, 0.01, power=2.0,
                                                             cycle=cycle))
    if cycle:
        steps = 4 * np.where(STEPS == 0, 1.0, np.ceil(STEPS / 4))
        step = STEPS
    else:
        steps, step = 4.0, np.minimum(STEPS, 4)
    np.testing.assert_allclose(got, (0.1 - 0.01) * (1 - step / steps) ** 2 + 0.01, rtol=1e-6)
    assert rate.name == "PolynomialDecay:0"


def test_cosine_decay_and_piecewise_constant():
    got, _ = _decayed(lambda s: gp.train.cosine_decay(0.1, s, 5, alpha=0.1))
    cosine = 0.5 * (1 + np.cos(math.pi * np.minimum(STEPS, 5) / 5))
    np.testing.assert_allclose(got, 0.1 * (0.9 * cosine + 0.1), rtol=1e-6)
    got, _ = _decayed(lambda s: gp.train.piecewise_constant(s, [2, 5], [1.0, 0.5, 0.1]))
    np.testing.assert_allclose(got, np.where(STEPS <= 2, 1.0, np.where(STEPS <= 5, 0.5, 0.1)),
                               rtol=1e-7)


@pytest.mark.parametrize("t_mul, m_mul, alpha", [(1.0, 0.5, 0.1), (2.0, 1.0, 0.0)])
def test_cosine_decay_restarts(t_mul, m_mul, alpha):
    got, rate = _decayed(lambda s: gp.train.cosine_decay_restarts(0.1, s, 2, t_mul, m_mul,
                                                                  alpha))
    fraction = STEPS / 2
    if t_mul == 1.0:
        restart = np.floor(fraction)
        fraction = fraction - restart
    else:
        restart = np.floor(np.log(1 - fraction * (1 - t_mul)) / np.log(t_mul))
        fraction = (fraction - (1 - t_mul ** restart) / (1 - t_mul)) / t_mul ** restart
    cosine = 0.5 * m_mul ** restart * (1 + np.cos(math.pi * fraction))
    np.testing.assert_allclose(got, 0.1 * ((1 - alpha) * cosine + alpha), rtol=1e-5, atol=1e-8)
    assert rate.name == "SGDRDecay:0"


def test_decay_errors_and_a_decayed_rate_drives_an_optimizer():
    with pytest.raises(ValueError, match="global_step is required for exponential_decay."):
        gp.train.exponential_decay(0.1, None, 3, 0.5)
    with gp.Graph().as_default():
        step = gp.train.get_or_create_global_step()
        with pytest.raises(ValueError, match="The length of boundaries should be 1 less"):
            gp.train.piecewise_constant(step, [1, 2], [1.0])
        with pytest.raises(ValueError, match="Values must have elements all with the same "
                                             "dtype"):
            gp.train.piecewise_constant(step, [1], [1.0, 2])
        w = gp.Variable(np.float32(1.0), name="w")
        rate = gp.train.exponential_decay(0.5, step, 1, 0.5, staircase=True)
        train_op = gp.train.GradientDescentOptimizer(rate).minimize(w * 1.0, global_step=step)
        with gp.Session() as sess:
            sess.run(gp.global_variables_initializer())
            for _ in range(3):
                sess.run(train_op)
            assert sess.run(w) == np.float32(1.0 - 0.5 - 0.25 - 0.125)


@pytest.mark.parametrize("make", [lambda: gp.train.RMSPropOptimizer(0.1, momentum=0.5),
                                  lambda: gp.train.RMSPropOptimizer(0.1, centered=True),
                                  lambda: gp.train.AdagradOptimizer(0.1)])
def test_new_updates_on_the_simulated_gpu_match_the_cpu(make):
    from graphops.testing.simulated_gpu import simulated_gpu

    def train():
        with gp.Graph().as_default():
            w = gp.get_variable("w", [3, 2], initializer=gp.random_normal_initializer(seed=1))
            train_op = make().minimize(gp.reduce_sum(w * w * w))
            with gp.Session() as sess:
                sess.run(gp.global_variables_initializer())
                for _ in range(3):
                    sess.run(train_op)
                return sess.run(w)

    cpu = train()
    with simulated_gpu():
        gpu = train()
    np.testing.assert_allclose(gpu, cpu, rtol=1e-6)


def test_apply_gradients_converts_values_and_checks_its_arguments():
    with gp.Graph().as_default():
        w = gp.Variable(np.array([1.0, 2.0]), name="w")
        opt = gp.train.GradientDescentOptimizer(F64(0.5))
        step = opt.apply_gradients([(np.array([2.0, 2.0]), w)])
        with pytest.raises(TypeError, match="Gradient must be convertible to a Tensor"):
            opt.apply_gradients([(object(), w)])
        with pytest.raises(TypeError, match="Argument is not a gp.Variable"):
            opt.apply_gradients([(np.ones(2), np.ones(2))])
        with gp.Session() as sess:
            sess.run(gp.global_variables_initializer())
            sess.run(step)
            np.testing.assert_array_equal(sess.run(w), [0.0, 1.0])
