"""Run one raw op eagerly or in a Session, with its inputs fed through placeholders of
unknown shape (so only the kernel's own checks apply); run one node again and again in one
Session (`Repeats`); build one for shape inference from placeholder specs; measure a
gradient against central differences. Shared by the op test modules."""

import re

import numpy as np
import pytest

import graphops as gp
from graphops.registry import dtypes, errors, get_op_def
from graphops.runtime import executor


def is_input(op_def, name):
    return any(op_def.python_name(arg.name) == name for arg in op_def.input_arg)


def map_inputs(op, kwargs, fn):
    """`kwargs` of raw op `op` with `fn` applied to each input value (to each item of a list
    input); attrs are left as they are."""
    op_def = get_op_def(op)
    return {k: ([fn(x) for x in v] if isinstance(v, list) else fn(v))
            if is_input(op_def, k) else v for k, v in kwargs.items()}


def feeder(feeds):
    """`feed(value)`: a placeholder of unknown shape for `value`, recorded in `feeds`."""
    def feed(value):
        value = np.asarray(value)
        ph = gp.placeholder(dtypes.as_dtype(value.dtype), None)
        feeds[ph] = value
        return ph
    return feed


def run_eager(op, **kwargs):
    return getattr(gp.raw_ops, op)(**kwargs)


def run_graph(op, **kwargs):
    """Builds `op` with every input (lists of inputs too) a placeholder of unknown shape and
    runs it in a Session."""
    feeds = {}
    with gp.Graph().as_default():
        out = getattr(gp.raw_ops, op)(**map_inputs(op, kwargs, feeder(feeds)))
        with gp.Session() as sess:
            return sess.run(out, feeds)


def readonly(value):
    value = np.array(value)
    value.flags.writeable = False
    return value


def as_arrays(out):
    """A kernel's result as NumPy: an array, or a list of them for multi-output ops."""
    if isinstance(out, (list, tuple)):
        return [as_arrays(x) for x in out]
    assert isinstance(out, (np.ndarray, np.generic)), type(out)   # Session.run: 0-d -> scalar
    return np.asarray(out)


def make_runner(mode):
    """`run(op, **kwargs)`: runs `op` in `mode` ("eager" or "graph") on read-only inputs
    (kernels never write into their inputs) and returns NumPy results."""
    runner = run_eager if mode == "eager" else run_graph

    def run(op, **kwargs):
        return as_arrays(runner(op, **map_inputs(op, kwargs, readonly)))
    return run


def raises(error, message):
    return pytest.raises(error, match=re.escape(message))


def invalid(message):
    return raises(errors.InvalidArgumentError, message)


class P:
    """A placeholder spec for shape-inference cases: a (partial) shape and a dtype."""

    def __init__(self, shape, dtype=np.float32):
        self.shape, self.dtype = shape, dtype


def build(op, **kwargs):
    """Builds `op` in a fresh graph (P specs become placeholders, arrays constants); returns
    what the raw op returns (its output tensor(s))."""
    def make(v):
        if isinstance(v, P):
            return gp.placeholder(dtypes.as_dtype(v.dtype), v.shape)
        return gp.constant(v)

    with gp.Graph().as_default():
        return getattr(gp.raw_ops, op)(**map_inputs(op, kwargs, make))


def gradient_error_and_types(build_fn, inputs, static=True):
    """(the largest error of `build_fn`'s gradient against central differences at the float64
    `inputs`, fed through placeholders of known or unknown shape; the op types of the
    gradient nodes)."""
    g = gp.Graph()
    with g.as_default():
        xs = [gp.placeholder(gp.float64, v.shape if static else [None] * v.ndim)
              for v in inputs]
        y = build_fn(*xs)
        with gp.Session(graph=g) as sess:
            y_shape = np.shape(sess.run(y, dict(zip(xs, inputs))))
            error = gp.test.compute_gradient_error(xs, [v.shape for v in inputs], y, y_shape,
                                                   x_init_value=inputs)
        types = {op.type for op in g.get_operations() if op.name.startswith("gradients")}
    return error, types


class Repeats:
    """One node built on placeholders of unknown shape, run by one Session many times."""

    def __init__(self, build, *dtypes):
        self.graph = gp.Graph()
        with self.graph.as_default():
            self.inputs = [gp.placeholder(d, None) for d in dtypes]
            self.out = build(*self.inputs)
            self.sess = gp.Session()

    def __call__(self, *values):
        return self.sess.run(self.out, dict(zip(self.inputs, values)))


def session_run(fetches, feeds=None):
    """`fetches` run once by a fresh Session of the default graph."""
    with gp.Session() as sess:
        return sess.run(fetches, feeds)


def plan_kernel_steps(fetches, feeds=()):
    """The kernel steps (copy steps left out) of the plan for `fetches` given `feeds`."""
    plan = executor.build_plan(list(feeds), fetches, [])
    return [step for step in plan.steps if hasattr(step, "op")]
