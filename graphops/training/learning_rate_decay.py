"""TF1's learning-rate decays (tf.compat.v1.train.exponential_decay, ...): tensors of the
default graph computed from the global step, built from the same ops, under the same
names, as TF's (its Keras schedules called at the step).

`piecewise_constant` and `cosine_decay_restarts` build `gp.case` / `gp.cond` (StatelessIf
ops) as TF does, without the Assert that TF's exclusive `case` adds.
"""

import contextlib
import math

from graphops.api import raw_ops
from graphops.api.control_flow import case, cond
from graphops.building.constant_op import constant, convert_to_tensor
from graphops.building.graph import get_default_graph
from graphops.building.tensor import Tensor, as_graph_element
from graphops.registry import dtypes


@contextlib.contextmanager
def _scope(name, default_name):
    graph = get_default_graph()
    with graph.as_default(), graph.name_scope(name or default_name) as scope:
        yield scope


def _cast(value, dtype):
    """TF's math_ops.cast: a tensor (or Variable) of `dtype` as it is; anything else
    converted under a "Cast" scope ("Cast/x") and cast when its dtype differs."""
    element = as_graph_element(value)
    if isinstance(element, Tensor) and element.dtype == dtype:
        return value
    graph = get_default_graph()
    with graph.name_scope("Cast") as scope:
        tensor = convert_to_tensor(value, name="x")
        if tensor.dtype == dtype:
            return tensor
        return raw_ops.Cast(x=tensor, DstT=dtype, name=scope)


def _required(global_step, what):
    if global_step is None:
        raise ValueError(f"global_step is required for {what}.")


def _progress(learning_rate, global_step, decay_steps, decay_rate, staircase):
    """(learning rate, decay rate, global_step / decay_steps floored when staircase), all
    of the learning rate's dtype, built in the caller's scope as TF does."""
    lr = convert_to_tensor(learning_rate, name="initial_learning_rate")
    steps = _cast(decay_steps, lr.dtype)
    rate = _cast(decay_rate, lr.dtype)
    p = _cast(global_step, lr.dtype) / steps
    if staircase:
        p = raw_ops.Floor(x=p)
    return lr, rate, p


def exponential_decay(learning_rate, global_step, decay_steps, decay_rate, staircase=False,
                      name=None):
    """learning_rate * decay_rate ** (global_step / decay_steps) (floored when staircase)."""
    _required(global_step, "exponential_decay")
    with _scope(name, "ExponentialDecay") as scope:
        lr, rate, p = _progress(learning_rate, global_step, decay_steps, decay_rate, staircase)
        return raw_ops.Mul(x=lr, y=raw_ops.Pow(x=rate, y=p), name=scope)


def natural_exp_decay(learning_rate, global_step, decay_steps, decay_rate, staircase=False,
                      name=None):
    """learning_rate * exp(-decay_rate * global_step / decay_steps)."""
    _required(global_step, "natural_exp_decay")
    graph = get_default_graph()
    with graph.as_default():
        rate = raw_ops.Exp(x=raw_ops.Neg(x=decay_rate))
    return exponential_decay(learning_rate, global_step, decay_steps, rate, staircase, name)


def inverse_time_decay(learning_rate, global_step, decay_steps, decay_rate, staircase=False,
                       name=None):
    """learning_rate / (1 + decay_rate * global_step / decay_steps)."""
    _required(global_step, "inverse_time_decay")
    with _scope(name, "InverseTimeDecay") as scope:
        lr, rate, p = _progress(learning_rate, global_step, decay_steps, decay_rate, staircase)
        one = _cast(constant(1), lr.dtype)
        denominator = raw_ops.AddV2(x=one, y=raw_ops.Mul(x=rate, y=p), name="Add")
        return raw_ops.RealDiv(x=lr, y=denominator, name=scope)


def polynomial_decay(learning_rate, global_step, decay_steps, end_learning_rate=0.0001,
                     power=1.0, cycle=False, name=None):
    """(learning_rate - end) * (1 - step / decay_steps) ** power + end, the step clipped to
    decay_steps (or, with `cycle`, decay_steps stretched to the next multiple)."""
    _required(global_step, "polynomial_decay")
    with _scope(name, "PolynomialDecay") as scope:
        lr = convert_to_tensor(learning_rate, name="initial_learning_rate")
        end = _cast(end_learning_rate, lr.dtype)
        power = _cast(power, lr.dtype)
        step = _cast(global_step, lr.dtype)
        steps = _cast(decay_steps, lr.dtype)
        if cycle:
            first = raw_ops.Equal(x=step, y=0)
            multiplier = raw_ops.SelectV2(condition=first, t=1.0,
                                          e=raw_ops.Ceil(x=step / decay_steps))
            steps = raw_ops.Mul(x=steps, y=multiplier)
        else:
            step = raw_ops.Minimum(x=step, y=steps)
        p = step / steps
        scaled = raw_ops.Mul(x=lr - end, y=raw_ops.Pow(x=1 - p, y=power))
        return raw_ops.AddV2(x=scaled, y=end, name=scope)


def cosine_decay(learning_rate, global_step, decay_steps, alpha=0.0, name=None):
    """learning_rate * ((1 - alpha) * 0.5 * (1 + cos(pi * min(step, decay_steps) /
    decay_steps)) + alpha)."""
    _required(global_step, "cosine decay")
    with _scope(name, "CosineDecay"):
        lr = convert_to_tensor(learning_rate, name="initial_learning_rate")
        steps = _cast(decay_steps, lr.dtype)
        step = raw_ops.Minimum(x=_cast(global_step, lr.dtype), y=steps)
        fraction = step / steps
        cosine = 0.5 * (1.0 + raw_ops.Cos(x=constant(math.pi) * fraction))
        decayed = (1 - alpha) * cosine + alpha
        return raw_ops.Mul(x=lr, y=decayed)


def piecewise_constant(x, boundaries, values, name=None):
    """values[i] where boundaries[i-1] < x <= boundaries[i] (values[0] up to the first
    boundary, values[-1] after the last)."""
    if len(boundaries) != len(values) - 1:
        raise ValueError("The length of boundaries should be 1 less than the length of "
                         "values")
    graph = get_default_graph()
    with graph.as_default():
        boundaries = [convert_to_tensor(b) for b in boundaries]
        values = [convert_to_tensor(v) for v in values]
        x_dtype = convert_to_tensor(x).dtype
        for i, b in enumerate(boundaries):
            if b.dtype != x_dtype:
                if b.dtype == dtypes.int32 and x_dtype == dtypes.int64:
                    boundaries[i] = raw_ops.Cast(x=b, DstT=x_dtype)
                else:
                    raise ValueError(f"Boundaries ({b.dtype.name}) must have the same dtype "
                                     f"as x ({x_dtype.name}).")
        for v in values[1:]:
            if v.dtype != values[0].dtype:
                raise ValueError(f"Values must have elements all with the same dtype "
                                 f"({values[0].dtype.name} vs {v.dtype.name}).")
        with graph.name_scope(name or "PiecewiseConstant"):
            x = convert_to_tensor(x)           # TF's schedule converts it again
            preds = [raw_ops.LessEqual(x=x, y=boundaries[0]),
                     raw_ops.Greater(x=x, y=boundaries[-1])]
            for low, high in zip(boundaries[:-1], boundaries[1:]):
                preds.append(raw_ops.LogicalAnd(x=raw_ops.Greater(x=x, y=low),
                                                y=raw_ops.LessEqual(x=x, y=high), name="and"))
            pairs = [(pred, lambda v=value: v)
                     for pred, value in zip(preds, [values[0], values[-1]] + values[1:-1])]
            return case(pairs, default=lambda: values[0], exclusive=True)


def cosine_decay_restarts(learning_rate, global_step, first_decay_steps, t_mul=2.0, m_mul=1.0,
                          alpha=0.0, name=None):
    """Cosine decay with warm restarts (SGDR): period i lasts first_decay_steps * t_mul**i
    steps and starts at learning_rate * m_mul**i."""
    _required(global_step, "cosine decay restarts")
    with _scope(name, "SGDRDecay") as scope:
        lr = convert_to_tensor(learning_rate, name="initial_learning_rate")
        dtype = lr.dtype
        first_steps = _cast(first_decay_steps, dtype)
        alpha = _cast(alpha, dtype)
        t_mul = _cast(t_mul, dtype)
        m_mul = _cast(m_mul, dtype)
        fraction = _cast(global_step, dtype) / first_steps

        def constant_periods():
            restart = raw_ops.Floor(x=fraction)
            return restart, fraction - restart

        def growing_periods():
            restart = raw_ops.Floor(x=raw_ops.Log(x=1.0 - fraction * (1.0 - t_mul)) /
                                    raw_ops.Log(x=t_mul))
            done = (1.0 - raw_ops.Pow(x=t_mul, y=restart)) / (1.0 - t_mul)
            return restart, (fraction - done) / raw_ops.Pow(x=t_mul, y=restart)

        restart, fraction = cond(raw_ops.Equal(x=t_mul, y=1.0), constant_periods,
                                 growing_periods)
        m_fac = raw_ops.Pow(x=m_mul, y=restart, name="pow")
        cosine = 0.5 * m_fac * (1.0 + raw_ops.Cos(x=constant(math.pi) * fraction))
        decayed = (1 - alpha) * cosine + alpha
        return raw_ops.Mul(x=lr, y=decayed, name=scope)
