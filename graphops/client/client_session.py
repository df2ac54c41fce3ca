"""ClientSession: TF's C++ client for running a Scope's graph."""

from graphops.building.tensor import as_graph_element
from graphops.client.session import Session


class ClientSession:
    """Runs a Scope's graph: `ClientSession(scope).run(fetches, feed_dict)` -> list of arrays.

    Fetches (one or a list) and feed keys may be Tensors, Operations, op objects or names;
    Operation fetches run and give None. Extra keyword args go to `gp.Session`.
    """

    def __init__(self, scope, **session_kwargs):
        self._session = Session(graph=scope.graph, **session_kwargs)

    def run(self, fetches, feed_dict=None):
        if not isinstance(fetches, (list, tuple)):
            fetches = [fetches]
        fetches = [as_graph_element(f) for f in fetches]
        feeds = {as_graph_element(k): v for k, v in (feed_dict or {}).items()}
        return list(self._session.run(fetches, feed_dict=feeds))

    def close(self):
        self._session.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()
