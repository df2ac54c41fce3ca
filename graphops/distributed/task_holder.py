"""Worker-side state: each task's partition GraphDefs, imported into one in-process Session
per (session id, task) whose variables live across runs.

These functions run inside Dask worker processes. Dask ships them by reference (module and
name) and their arguments are data only: GraphDef bytes, names, arrays. A worker that
restarted holds nothing, so `run_stage` there raises AbortedError until the client loads
the partitions again.
"""

import collections
import threading

from graphops.building.graph import Graph
from graphops.client.session import Session
from graphops.interchange.graph_def import import_graph_def
from graphops.interchange.graph_io import graph_def_from_bytes
from graphops.registry.errors import AbortedError

REMEMBERED_STAGES = 4096  # how many recent (step, stage) each task holder remembers
_holders = {}            # (worker address, session id, task) -> _TaskHolder
_holders_lock = threading.Lock()


class _TaskHolder:
    """One task's Graph (every plan's partition, under the plan's key) and Session."""

    def __init__(self):
        self.graph = Graph()
        self.session = Session(graph=self.graph)
        self.plans = set()        # the keys of the plans imported
        self.stages = {}          # (plan key, stage index) -> (callable, number of outputs)
        self.lock = threading.Lock()
        self.ran = collections.OrderedDict()    # the latest (step, stage index) run here

    def claim(self, step, stage_index):
        """True the first time a stage of a step asks to run. Dask re-runs a task whose
        result was lost with a worker; a stage updates variables, so it must not run twice."""
        with self.lock:
            if (step, stage_index) in self.ran:
                return False
            self.ran[(step, stage_index)] = None
            if len(self.ran) > REMEMBERED_STAGES:
                self.ran.popitem(last=False)
            return True

    def load(self, plan_key, graph_def_bytes, stage_specs):
        """Imports a plan's GraphDef under its key and makes one callable per stage."""
        with self.lock:
            if plan_key in self.plans:
                return
            graph_def = graph_def_from_bytes(graph_def_bytes)
            with self.graph.as_default():
                import_graph_def(graph_def, name=plan_key)
            prefix = plan_key + "/"
            for index, feed_names, fetch_names, target_names in stage_specs:
                fetches = [prefix + n for n in fetch_names] + [prefix + n for n in target_names]
                call = self.session.make_callable(fetches, [prefix + n for n in feed_names])
                self.stages[(plan_key, index)] = (call, len(fetch_names))
            self.plans.add(plan_key)


def _worker_address():
    from distributed import get_worker
    return get_worker().address


def load_partition(session_id, task, plan_key, graph_def_bytes, stage_specs):
    """Imports `task`'s GraphDef of a plan and readies its stages (idempotent)."""
    key = (_worker_address(), session_id, task)
    with _holders_lock:
        holder = _holders.get(key) or _holders.setdefault(key, _TaskHolder())
    holder.load(plan_key, graph_def_bytes, stage_specs)


def run_stage(session_id, task, plan_key, stage_index, step, picks, *values):
    """Runs stage `stage_index` of step `step` (once: a repeat is AbortedError): input i
    is `values[a]` (a feed) or `values[a][k]` (output k of an earlier stage) for
    `picks[i] == (a, k)`, k = -1 for a feed. Returns the outputs."""
    holder = _holders.get((_worker_address(), session_id, task))
    stage = holder.stages.get((plan_key, stage_index)) if holder is not None else None
    if stage is None:
        raise AbortedError(f"{task} holds no state for this session: its worker restarted "
                           "(variables must be initialised or restored again)")
    if not holder.claim(step, stage_index):
        raise AbortedError(f"{task} already ran stage {stage_index} of step {step}: a step "
                           "is never run twice (Dask asked again after losing a worker)")
    call, num_outputs = stage
    results = call(*[values[a] if k < 0 else values[a][k] for a, k in picks])
    return tuple(results[:num_outputs])


def select_outputs(outputs, positions):
    """The outputs of a stage at `positions`: what the client fetches of them."""
    return tuple(outputs[k] for k in positions)


def release_session(session_id, dask_worker):
    """Drops every task holder (variables included) of a session on this worker."""
    with _holders_lock:
        dropped = [_holders.pop(k) for k in list(_holders)
                   if k[:2] == (dask_worker.address, session_id)]
    for holder in dropped:
        holder.session.close()
