"""The default session's users: `Tensor.eval`, `Operation.run` (installed on the building
room's classes from here) and `InteractiveSession`, which makes itself the default.

TF's rules: eval/run use the given session, else this thread's default session
(`with sess:`, `sess.as_default()`, an InteractiveSession); the session's graph must be the
tensor's graph. The messages are TF's.
"""

import threading
import warnings

from graphops.building.tensor import Operation, Tensor
from graphops.client.session import Session, get_default_session


# TF's messages (framework/tensor.py, framework/ops.py): eval() of a tensor, run() of an op
_NO_DEFAULT = {
    "eval": "Cannot evaluate tensor using `eval()`: No default session is registered. Use "
            "`with sess.as_default()` or pass an explicit session to `eval(session=sess)`",
    "run": "Cannot execute operation using `run()`: No default session is registered. Use "
           "`with sess.as_default():` or pass an explicit session to `run(session=sess)`"}
_OTHER_GRAPH = {
    "eval": ("Cannot use the default session to evaluate tensor: the tensor's graph is "
             "different from the session's graph. Pass an explicit session to "
             "`eval(session=sess)`.",
             "Cannot use the given session to evaluate tensor: the tensor's graph is "
             "different from the session's graph."),
    "run": ("Cannot use the default session to execute operation: the operation's graph is "
            "different from the session's graph. Pass an explicit session to "
            "run(session=sess).",
            "Cannot use the given session to execute operation: the operation's graph is "
            "different from the session's graph.")}


def _session_for(graph, session, call):
    """The session that runs `call` ("eval" / "run") for an element of `graph`."""
    given = session is not None
    if not given:
        session = get_default_session()
        if session is None:
            raise ValueError(_NO_DEFAULT[call])
    if session.graph is not graph:
        raise ValueError(_OTHER_GRAPH[call][given])
    return session


def _tensor_eval(self, feed_dict=None, session=None):
    """tf.Tensor.eval: the tensor's value, computed by `session` or the default session."""
    return _session_for(self.graph, session, "eval").run(self, feed_dict)


def _operation_run(self, feed_dict=None, session=None):
    """tf.Operation.run: runs the op in `session` or the default session."""
    _session_for(self.graph, session, "run").run(self, feed_dict)


Tensor.eval = _tensor_eval
Operation.run = _operation_run


class InteractiveSession(Session):
    """tf.compat.v1.InteractiveSession: a Session that makes itself this thread's default
    session when created (so `t.eval()` and `op.run()` need no `with`) until `close()`.
    With `graph`, that graph also stays the default graph until `close()`."""

    _count_lock = threading.Lock()
    _active_session_count = 0

    def __init__(self, target="", graph=None, config=None):
        super().__init__(graph=graph, config=config, target=target)
        with InteractiveSession._count_lock:
            if InteractiveSession._active_session_count > 0:
                warnings.warn("An interactive session is already active. You must explicitly "
                              "call `InteractiveSession.close()` to release resources held by "
                              "the other session(s).", stacklevel=2)
            InteractiveSession._active_session_count += 1
        self._explicitly_closed = False
        self._default_session = self.as_default()
        self._default_session.enforce_nesting = False
        self._default_session.__enter__()
        self._default_graph = None
        if graph is not None:
            self._default_graph = graph.as_default()
            self._default_graph.enforce_nesting = False
            self._default_graph.__enter__()

    def close(self):
        """Closes the session and stops it being the default (and its graph)."""
        super().close()
        with InteractiveSession._count_lock:
            if self._explicitly_closed:
                return
            self._explicitly_closed = True
            InteractiveSession._active_session_count -= 1
        if self._default_graph is not None:
            self._default_graph.__exit__(None, None, None)
            self._default_graph = None
        self._default_session.__exit__(None, None, None)
        self._default_session = None

