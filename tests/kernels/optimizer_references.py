"""Slow, obvious references for the optimizer update ops, in float64: the textbook form of
each update on one element at a time (Python floats), applied to the whole variable
(dense) or to the rows `indices` names, one index after the other (sparse: a repeated
index is updated twice, as TF's loops do). Also the table of each op's inputs and the
runner that builds one update node on fresh variables and returns their new values."""

import math

import numpy as np

import graphops as gp

SLOTS = {"GradientDescent": (), "Momentum": ("accum",), "Adam": ("m", "v"),
         "RMSProp": ("ms", "mom"), "CenteredRMSProp": ("mg", "ms", "mom"),
         "Adagrad": ("accum",), "AdagradV2": ("accum",), "Adadelta": ("accum", "accum_update"),
         "Ftrl": ("accum", "linear"), "FtrlV2": ("accum", "linear"),
         "ProximalAdagrad": ("accum",), "ProximalGradientDescent": ()}
SCALARS = {"GradientDescent": {"alpha": 0.1}, "Momentum": {"lr": 0.1, "momentum": 0.9},
           "Adam": {"beta1_power": 0.9, "beta2_power": 0.999, "lr": 0.01, "beta1": 0.9,
                    "beta2": 0.999, "epsilon": 1e-7},
           "RMSProp": {"lr": 0.05, "rho": 0.9, "momentum": 0.5, "epsilon": 1e-3},
           "CenteredRMSProp": {"lr": 0.05, "rho": 0.9, "momentum": 0.5, "epsilon": 1e-3},
           "Adagrad": {"lr": 0.1}, "AdagradV2": {"lr": 0.1, "epsilon": 1e-3},
           "Adadelta": {"lr": 1.0, "rho": 0.95, "epsilon": 1e-3},
           "Ftrl": {"lr": 0.1, "l1": 0.05, "l2": 0.02, "lr_power": -0.5},
           "FtrlV2": {"lr": 0.1, "l1": 0.05, "l2": 0.02, "l2_shrinkage": 0.01,
                      "lr_power": -0.3},
           "ProximalAdagrad": {"lr": 0.1, "l1": 0.05, "l2": 0.02},
           "ProximalGradientDescent": {"alpha": 0.1, "l1": 0.05, "l2": 0.02}}
ATTRS = {"Momentum": [{}, {"use_nesterov": True}], "Adam": [{}, {"use_nesterov": True}],
         "Adagrad": [{}, {"update_slots": False}], "AdagradV2": [{}, {"update_slots": False}],
         "Ftrl": [{}, {"multiply_linear_by_lr": True}],
         "FtrlV2": [{}, {"multiply_linear_by_lr": True}]}
SPARSE = [b for b in SLOTS if b not in ("GradientDescent", "Adam")]


def _sign(x):
    return (x > 0) - (x < 0)


def _ftrl(x, s, g, attrs, shrinkage):
    var, accum, linear = x
    lr, l1, l2, power = s["lr"], s["l1"], s["l2"], -s["lr_power"]
    step = g + 2 * s["l2_shrinkage"] * var if shrinkage else g
    new_accum = accum + g * g
    grown = new_accum ** power - accum ** power
    if attrs.get("multiply_linear_by_lr"):
        linear += step * lr - grown * var
        threshold, y = l1 * lr, new_accum ** power + 2 * l2 * lr
    else:
        linear += step - grown / lr * var
        threshold, y = l1, new_accum ** power / lr + 2 * l2
    var = (threshold * _sign(linear) - linear) / y if abs(linear) > threshold else 0.0
    return [var, new_accum, linear]


def _proximal(prox, rate, l1, l2):
    return _sign(prox) * max(abs(prox) - rate * l1, 0.0) / (1 + rate * l2)


def update_element(base, x, s, g, attrs):
    """One element's new [var, *slots] (Python floats)."""
    if base == "GradientDescent":
        return [x[0] - s["alpha"] * g]
    if base == "Momentum":
        accum = x[1] * s["momentum"] + g
        step = s["lr"] * g + s["lr"] * s["momentum"] * accum if attrs.get("use_nesterov") \
            else s["lr"] * accum
        return [x[0] - step, accum]
    if base == "Adam":
        lr = s["lr"] * math.sqrt(1 - s["beta2_power"]) / (1 - s["beta1_power"])
        m = x[1] + (g - x[1]) * (1 - s["beta1"])
        v = x[2] + (g * g - x[2]) * (1 - s["beta2"])
        top = g * (1 - s["beta1"]) + s["beta1"] * m if attrs.get("use_nesterov") else m
        return [x[0] - lr * top / (math.sqrt(v) + s["epsilon"]), m, v]
    if base in ("RMSProp", "CenteredRMSProp"):
        centered = base == "CenteredRMSProp"
        mg, ms, mom = x[1:] if centered else (0.0,) + tuple(x[1:])
        ms = ms + (g * g - ms) * (1 - s["rho"])
        mg = mg + (g - mg) * (1 - s["rho"]) if centered else 0.0
        mom = mom * s["momentum"] + s["lr"] * g / math.sqrt(ms - mg * mg + s["epsilon"])
        return [x[0] - mom] + ([mg] if centered else []) + [ms, mom]
    if base in ("Adagrad", "AdagradV2"):
        accum = x[1] + g * g if attrs.get("update_slots", True) else x[1]
        root = math.sqrt(accum) + (s["epsilon"] if base == "AdagradV2" else 0.0)
        return [x[0] - s["lr"] * g / root, accum]
    if base == "Adadelta":
        accum = x[1] * s["rho"] + g * g * (1 - s["rho"])
        update = math.sqrt(x[2] + s["epsilon"]) / math.sqrt(accum + s["epsilon"]) * g
        return [x[0] - s["lr"] * update, accum,
                x[2] * s["rho"] + update * update * (1 - s["rho"])]
    if base in ("Ftrl", "FtrlV2"):
        return _ftrl(list(x), s, g, attrs, base == "FtrlV2")
    if base == "ProximalAdagrad":
        accum = x[1] + g * g
        rate = s["lr"] / math.sqrt(accum)
        return [_proximal(x[0] - rate * g, rate, s["l1"], s["l2"]), accum]
    return [_proximal(x[0] - s["alpha"] * g, s["alpha"], s["l1"], s["l2"])]


def reference(base, arrays, scalars, grad, attrs, indices=None):
    """The new [var, *slots] (float64 arrays) after one update: every element (dense) or
    the rows `indices` in order (sparse)."""
    out = [np.array(a, np.float64) for a in arrays]
    flat = [a.reshape(len(a), -1) if a.ndim else a.reshape(1, 1) for a in out]
    if indices is None:
        pairs = [(r, np.reshape(grad, flat[0].shape)[r]) for r in range(flat[0].shape[0])]
    else:
        rows = np.reshape(grad, (len(indices), flat[0].shape[1]))
        pairs = [(int(i), rows[k]) for k, i in enumerate(indices)]
    for row, grads in pairs:
        for col, g in enumerate(grads):
            values = update_element(base, [float(a[row, col]) for a in flat], scalars,
                                    float(g), attrs)
            for a, v in zip(flat, values):
                a[row, col] = v
    return out


def op_type(base, ref, sparse):
    return ("" if ref else "Resource") + ("SparseApply" if sparse else "Apply") + base


def run_update(base, arrays, scalars, grad, attrs, indices=None, ref=False, steps=1,
               hide_shapes=False):
    """Builds one graphops update node on fresh variables holding `arrays` (resource or
    reference variables), runs it `steps` times and returns the variables' values;
    `hide_shapes` feeds the other inputs through placeholders of unknown shape, so the
    kernel (not the shape function) sees bad shapes."""
    dtype = arrays[0].dtype
    with gp.Graph().as_default():
        variables = [gp.Variable(a, use_resource=not ref) for a in arrays]
        handles = [v._ref() if ref else v.handle for v in variables]
        inputs = dict(zip(("var",) + SLOTS[base], handles))
        inputs.update({k: np.asarray(v, dtype) for k, v in scalars.items()})
        grad_name = "delta" if base.endswith("GradientDescent") and indices is None else "grad"
        inputs[grad_name] = grad
        if indices is not None:
            inputs["indices"] = indices
        if hide_shapes:
            inputs.update({k: gp.placeholder_with_default(np.asarray(v), shape=None)
                           for k, v in inputs.items() if k not in handles_of(base)})
        node = getattr(gp.raw_ops, op_type(base, ref, indices is not None))(**inputs, **attrs)
        with gp.Session() as sess:
            sess.run(gp.global_variables_initializer())
            for _ in range(steps):
                sess.run(node)
            return sess.run([v.value() for v in variables])


def handles_of(base):
    return ("var",) + SLOTS[base]


def start_values(base, shape, rng, dtype=np.float32):
    """A variable and slot values the updates take without NaN (positive accumulators,
    mean gradients smaller than mean squares)."""
    var = rng.uniform(-1, 1, shape)
    slots = []
    for name in SLOTS[base]:
        low, high = (-0.1, 0.1) if name in ("mg", "linear", "mom", "m") else (0.2, 1.0)
        slots.append(rng.uniform(low, high, shape))
    return [np.asarray(a, dtype) for a in [var] + slots]
