"""The dense updates of resource variables in a Session's runs, where each step runs the
call its kernel prepared: the variables' bits of compute's runs for every optimizer, a
variable made anew between runs found again, and TF's errors on a later run."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import graphops as gp
from graphops.runtime import steps
from tests.kernels.optimizer_references import (ATTRS, SCALARS, SLOTS, run_update,
                                                start_values)

DENSE = sorted(base for base in SLOTS if base != "AdagradDA")


def _updates(monkeypatch, prepared, **kwargs):
    """run_update's values, with prepared calls on or off; with them on, the op types
    whose steps ran one."""
    ran, real = set(), steps.HostKernelStep._prepared_outputs

    def recording(step, inputs):
        outputs = real(step, inputs)
        if outputs is not None:
            ran.add(step.op.type)
        return outputs
    with monkeypatch.context() as patch:
        patch.setattr(steps.HostKernelStep, "_prepared_outputs", recording)
        if not prepared:
            patch.setattr(steps, "prepares", lambda kernel_class: False)
        return run_update(**kwargs), ran


@settings(max_examples=30, deadline=None)
@given(base=st.sampled_from(DENSE), nesterov=st.integers(0, 1),
       dtype=st.sampled_from([np.float32, np.float64]),
       shape=st.sampled_from([(5,), (4, 3), (1,)]), seed=st.integers(0, 999))
def test_prepared_updates_give_computes_bits(base, nesterov, dtype, shape, seed):
    rng = np.random.default_rng(seed)
    attrs = ATTRS.get(base, [{}])[nesterov % len(ATTRS.get(base, [{}]))]
    kwargs = dict(base=base, arrays=start_values(base, shape, rng, dtype),
                  scalars=SCALARS[base], grad=rng.uniform(-1, 1, shape).astype(dtype),
                  attrs=attrs, steps=3)
    with pytest.MonkeyPatch.context() as monkeypatch:
        got, ran = _updates(monkeypatch, True, **kwargs)
        want, _ = _updates(monkeypatch, False, **kwargs)
    # (ProximalAdagrad checks its scalars' signs each run: compute's checked path)
    assert any(op.startswith("ResourceApply") for op in ran) == (base != "ProximalAdagrad")
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.tobytes() == w.tobytes()


def _descent_graph():
    var = gp.Variable(np.float32([1, 2, 3]))
    alpha = gp.placeholder(gp.float32, None, name="alpha")
    delta = gp.placeholder(gp.float32, None, name="delta")
    step = gp.raw_ops.ResourceApplyGradientDescent(var=var.handle, alpha=alpha, delta=delta,
                                                   name="descent")
    return var, alpha, delta, step


def test_a_variable_made_anew_is_updated_and_bad_inputs_are_tfs_errors():
    with gp.Graph().as_default():
        var, alpha, delta, step = _descent_graph()
        with gp.Session() as sess:
            sess.run(var.initializer)
            feed = {alpha: np.float32(0.5), delta: np.float32([2, 2, 2])}
            sess.run(step, feed)
            sess.run(step, feed)
            np.testing.assert_array_equal(sess.run(var.value()), [-1, 0, 1])
            sess.run(var.initializer)                # the Var stored anew
            sess.run(step, feed)
            np.testing.assert_array_equal(sess.run(var.value()), [0, 1, 2])
            with pytest.raises(gp.errors.InvalidArgumentError,
                               match="alpha is not a scalar: \\[1\\]") as err:
                sess.run(step, {alpha: np.float32([0.5]), delta: np.float32([2, 2, 2])})
            assert err.value.op.name == "descent"
            with pytest.raises(gp.errors.InvalidArgumentError,
                               match="var and delta do not have the same shape"):
                sess.run(step, {alpha: np.float32(0.5), delta: np.float32([2, 2])})
            np.testing.assert_array_equal(sess.run(var.value()), [0, 1, 2])
