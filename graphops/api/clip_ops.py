"""TF1's clipping wrappers (TF's clip_ops.py): clip_by_value (Minimum then Maximum, no
broadcasting beyond t's shape), clip_by_norm, global_norm and clip_by_global_norm, built
from the ops TF's versions build."""

from collections.abc import Sequence

import numpy as np

from graphops.api import raw_ops
from graphops.api.math_ops import all_axes
from graphops.api.nn_args import op_scope
from graphops.api.shape_ops import ones_like
from graphops.api.tensor_args import graph_of, static_shape, to_tensor
from graphops.building.indexed_slices import IndexedSlices
from graphops.building.values import dtype_of


def _check_compatible(shape, other):
    if not shape.is_compatible_with(other):
        raise ValueError(f"Shapes {shape} and {other} are incompatible")


def clip_by_value(t, clip_value_min, clip_value_max, name=None):
    """`t` with values below `clip_value_min` / above `clip_value_max` set to them; the
    bounds may not broadcast `t` to a larger shape."""
    with op_scope(name, "clip_by_value", [t, clip_value_min, clip_value_max]) as scope:
        values = to_tensor(t, graph_of(t, clip_value_min, clip_value_max), name="t")
        t_min = raw_ops.Minimum(x=values, y=clip_value_max)
        _check_compatible(static_shape(values), static_shape(t_min))
        t_max = raw_ops.Maximum(x=t_min, y=clip_value_min, name=scope)
        _check_compatible(static_shape(values), static_shape(t_max))
        return t_max


def clip_by_norm(t, clip_norm, axes=None, name=None):
    """`t` scaled down so that its L2 norm (over `axes`, all when None) is at most
    `clip_norm`."""
    with op_scope(name, "clip_by_norm", [t, clip_norm]) as scope:
        graph = graph_of(t, clip_norm)
        values = to_tensor(t, graph, name="t")
        squares = raw_ops.Mul(x=values, y=values, name="mul")
        axes = (all_axes(values) if axes is None else
                to_tensor(np.asarray(axes, np.int32), graph))
        l2sum = raw_ops.Sum(input=squares, axis=axes, keep_dims=True)
        positive = raw_ops.Greater(x=l2sum, y=0)
        l2sum_safe = raw_ops.Select(condition=positive, x=l2sum, y=ones_like(l2sum))
        l2norm = raw_ops.Select(condition=positive, x=raw_ops.Sqrt(x=l2sum_safe), y=l2sum)
        intermediate = raw_ops.Mul(x=values, y=clip_norm, name="mul")
        _check_compatible(static_shape(values), static_shape(intermediate))
        scaled = raw_ops.RealDiv(x=intermediate, y=raw_ops.Maximum(x=l2norm, y=clip_norm),
                                 name="truediv")
        return raw_ops.Identity(input=scaled, name=scope)


def _tensor_list(t_list):
    if not isinstance(t_list, Sequence) or isinstance(t_list, str):
        raise TypeError(f"`t_list` should be a sequence of tensors. Received {type(t_list)}.")
    return list(t_list)


def _dense_part(t):
    """What TF's norms read of a list entry: an IndexedSlices' values, else the entry."""
    return t.values if isinstance(t, IndexedSlices) else t


def global_norm(t_list, name=None):
    """sqrt(sum of the squared L2 norms of the tensors in `t_list`) (None entries skipped;
    of an IndexedSlices, its values)."""
    t_list = [_dense_part(t) for t in _tensor_list(t_list)]
    with op_scope(name, "global_norm", t_list) as scope:
        graph = graph_of(t_list)
        values = [None if t is None else to_tensor(t, graph, name=f"t_{i}")
                  for i, t in enumerate(t_list)]
        half_squares = [raw_ops.L2Loss(t=v) for v in values if v is not None]
        stacked = raw_ops.Pack(values=half_squares, name="stack")
        total = raw_ops.Sum(input=stacked, axis=to_tensor(np.int32([0]), graph))
        two = to_tensor(np.asarray(2.0, dtype_of(total).np_dtype), graph)
        return raw_ops.Sqrt(x=raw_ops.Mul(x=total, y=two, name="mul"),
                            name="global_norm" if scope else None)


def clip_by_global_norm(t_list, clip_norm, use_norm=None, name=None):
    """The tensors of `t_list` scaled by clip_norm / max(global_norm, clip_norm), and the
    global norm (NaN scale when the norm is not finite); an IndexedSlices gives one with
    its values scaled."""
    given = _tensor_list(t_list)
    t_list = [_dense_part(t) for t in given]
    if use_norm is None:
        use_norm = global_norm(t_list, name)
    with op_scope(name, "clip_by_global_norm", t_list + [clip_norm]) as scope:
        graph = graph_of(t_list, clip_norm)
        norm_type = dtype_of(use_norm)
        with op_scope(None, "truediv") as truediv:
            inverse_norm = raw_ops.RealDiv(x=to_tensor(1.0, graph, norm_type, name="x"),
                                           y=use_norm, name=truediv)
        one = to_tensor(np.asarray(1.0, norm_type.np_dtype), graph)
        inverse_clip = raw_ops.RealDiv(x=one, y=clip_norm, name="truediv")
        scale = raw_ops.Mul(x=clip_norm, y=raw_ops.Minimum(x=inverse_norm, y=inverse_clip),
                            name="mul")
        scale = raw_ops.AddV2(x=scale, y=raw_ops.Sub(x=use_norm, y=use_norm, name="sub"),
                              name="add")
        clipped = []
        for i, t in enumerate(t_list):
            if t is None:
                clipped.append(None)
                continue
            product = raw_ops.Mul(x=to_tensor(t, graph, name=f"t_{i}"), y=scale, name="mul")
            clipped.append(raw_ops.Identity(input=product,
                                            name=f"{scope}_{i}" if scope else None))
        clipped = [IndexedSlices(c, t.indices, t.dense_shape) if isinstance(t, IndexedSlices)
                   else c for c, t in zip(clipped, given)]
        return clipped, use_norm
