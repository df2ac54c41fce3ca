"""gp.gen_ops: every registered op as TF's generated `gen_*_ops` modules have it, a
positional snake_case wrapper (graphops/api/snake_case_ops.py):

    gp.gen_ops.conv3d_backprop_filter_v2(x, filter_sizes, dy, [1, 1, 1, 1, 1], "SAME")
    gp.gen_ops.zero_out(t)                  # an op registered by the program itself

Ops registered later appear too; `dir()` lists them all.
"""

from graphops.api.snake_case_ops import positional_wrapper, snake_case_names


def __getattr__(name):
    op_name = snake_case_names().get(name)
    if op_name is None:
        raise AttributeError(f"module 'graphops.gen_ops' has no attribute {name!r} (no "
                             "registered op has that snake_case name)")
    return positional_wrapper(op_name)


def __dir__():
    return sorted(set(globals()) | set(snake_case_names()))
