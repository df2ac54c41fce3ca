"""The process-wide execution mode: eager (the default) or graph (TF1's).

With eager execution enabled, an op whose inputs are plain values (no graph Tensor) and
that is built outside any `with graph.as_default():` block runs at once. With it disabled
(`gp.disable_eager_execution()`, as a TF1 program starts), such ops go into the default
graph instead, and a Session runs them. `graphops.building.graph.entered_graph()` reads the
mode; `gp.executing_eagerly()` tells the current thread's state.
"""

_mode = {"eager": True}


def eager_enabled():
    """True unless `disable_eager_execution()` switched the process to graph mode."""
    return _mode["eager"]


def disable_eager_execution():
    """tf.compat.v1.disable_eager_execution: ops built outside any graph block go into the
    default graph from now on (call it at program start)."""
    _mode["eager"] = False


def enable_eager_execution(config=None, device_policy=None, execution_mode=None):
    """tf.compat.v1.enable_eager_execution: ops on plain values outside any graph block run
    at once again. The arguments are accepted for TF's signature and ignored."""
    _mode["eager"] = True


def disable_v2_behavior():
    """tf.compat.v1.disable_v2_behavior: of TF2's behaviours only eager execution applies
    here (Tensors already compare by identity; variables are resource variables)."""
    disable_eager_execution()


def enable_v2_behavior():
    """tf.compat.v1.enable_v2_behavior: eager execution on again."""
    enable_eager_execution()
