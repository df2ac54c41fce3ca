"""The argument conventions TF1's wrappers share (``tf.nn``, math): explicit padding
given as a list of [before, after] pairs, strides/dilations/ksize given as 1, n or n+2
values, arguments with a deprecated spelling, the static dims of a value, and the name
scope a composite wrapper opens."""

import contextlib
from collections.abc import Sized

from graphops.building import graph as graph_lib
from graphops.building.tensor import Tensor, as_graph_element


def convert_padding(padding, expected_length=4):
    """A padding string, or a list of [before, after] pairs -> ("EXPLICIT", flat list)."""
    explicit_paddings = []
    if padding == "EXPLICIT":
        raise ValueError("'EXPLICIT' is not a valid value for `padding`. To use explicit "
                         "padding, `padding` must be a list.")
    if isinstance(padding, (list, tuple)):
        for i, dim_paddings in enumerate(padding):
            if not isinstance(dim_paddings, (list, tuple)):
                raise ValueError(
                    "When `padding` is a list, each element of `padding` must be a list/tuple "
                    f"of size 2. Received: padding={padding} with element at index {i} of type "
                    f"{type(dim_paddings)}")
            if len(dim_paddings) != 2:
                raise ValueError(
                    "When `padding` is a list, each element of `padding` must be a list/tuple "
                    f"of size 2. Received: padding={padding} with element at index {i} of size "
                    f"{len(dim_paddings)}")
            explicit_paddings.extend(dim_paddings)
        if len(padding) != expected_length:
            raise ValueError(f"When padding is a list, it must be of size {expected_length}. "
                             f"Received: padding={padding} of size {len(padding)}")
        padding = "EXPLICIT"
    return padding, explicit_paddings


def get_sequence(value, n, channel_index, name):
    """strides/dilations of length 1, n or n+2 -> the n+2 values the op wants."""
    if value is None:
        return [1] * (n + 2)
    if isinstance(value, list):
        pass
    elif isinstance(value, tuple):
        value = list(value)
    elif isinstance(value, int) or not isinstance(value, Sized):
        value = [value]
    else:
        value = list(value)
    len_value = len(value)
    if len_value == n + 2:
        return value
    if len_value == 1:
        value = value * n
    elif len_value != n:
        raise ValueError(f"{name} should be of length 1, {n} or {n + 2}. "
                         f"Received: {name}={value} of length {len_value}")
    return [1, 1] + value if channel_index == 1 else [1] + value + [1]


def deprecated_argument_lookup(new_name, new_value, old_name, old_value):
    """TF's lookup of an argument with a deprecated spelling: at most one may be given."""
    if old_value is not None:
        if new_value is not None:
            raise ValueError(f"Cannot specify both '{old_name}' and '{new_name}'")
        return old_value
    return new_value


def static_dims(value):
    """The static dims of a Tensor (None if its rank is unknown) or of an array."""
    shape = value.shape
    return shape.dims if hasattr(shape, "dims") else list(shape)


def building_graph(*values):
    """The graph a wrapper on `values` builds into: that of a graph Tensor among them, else
    the entered graph (the default graph once eager execution is disabled); None: eager."""
    for value in values:
        element = as_graph_element(value)
        if isinstance(element, Tensor):
            return element.graph
    return graph_lib.entered_graph()


@contextlib.contextmanager
def op_scope(name, default_name, values=()):
    """TF's `ops.name_scope(name, default_name, values)` for a composite wrapper: inside the
    values' graph and its new scope (yields "scope/", which names the wrapper's main op
    as the scope itself); eagerly nothing is named (yields None)."""
    graph = building_graph(*values)
    if graph is None:
        yield None
        return
    with graph.as_default(), graph.name_scope(name or default_name) as scope:
        yield scope

