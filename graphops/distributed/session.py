"""DistributedSession: `gp.Session(target=client_or_"dask://host:port", cluster=...)`.

Fetch and feed handling is the in-process Session's; what differs is the plan. A plan here
is the Partitioning of the pruned graph over the cluster's tasks; each task's GraphDef is
sent once (as protobuf bytes, never pickled code) to its worker, where a long-lived holder
keeps it and its variables (task_holder.py). Each `run` is one step: all stages submitted
at once, tensors crossing tasks moving worker to worker, only feeds and fetches touching
the client. `map` streams many runs over the workers with bounded memory.
"""

import itertools
import uuid
from collections import deque
from typing import NamedTuple

import distributed

from graphops.client.session import FetchHandler, Session, fetched_value, run_deadline
from graphops.distributed import step
from graphops.distributed.cluster_spec import ClusterSpec, task_device, task_devices
from graphops.distributed.partition import partition
from graphops.distributed.task_holder import load_partition, release_session
from graphops.distributed.workers import default_cluster, task_addresses, worker_names
from graphops.interchange.messages import graph_def_to_proto
from graphops.runtime.devices import DeviceSpec
from graphops.runtime.executor import tensor_key
from graphops.registry.errors import AbortedError, InvalidArgumentError, UnavailableError

DASK_SCHEME = "dask://"


class TaskDevice(NamedTuple):
    """A device of the cluster, as `list_devices` returns it."""

    name: str
    device_type: str


class _Plan:
    """A Partitioning ready to send: each task's GraphDef bytes and stage specs, and which
    outputs of which stages the client fetches ({stage: [output positions]})."""

    def __init__(self, key, partitioning):
        self.key = key
        self.stages = partitioning.stages
        self.fetch_sources = partitioning.fetch_sources
        self.client_outputs = {}
        for source in self.fetch_sources:
            if source[0] == "stage" and source[2] not in self.client_outputs.setdefault(
                    source[1], []):
                self.client_outputs[source[1]].append(source[2])
        self.graph_defs = {task: graph_def_to_proto(gd).SerializeToString()
                           for task, gd in partitioning.graph_defs.items()}
        self.stage_specs = {task: [] for task in self.graph_defs}
        for index, stage in enumerate(self.stages):
            self.stage_specs[stage.task].append(
                (index, stage.feed_names, stage.fetch_names, stage.target_names))


def connect(target):
    """(client, owned): a distributed.Client as given, or a new one for "dask://host:port"."""
    if not isinstance(target, str):
        return target, False
    if not target.startswith(DASK_SCHEME):
        raise InvalidArgumentError(f"Session target '{target}' is not a Dask scheduler "
                                   f"address: expected '{DASK_SCHEME}host:port'")
    try:
        return distributed.Client("tcp://" + target[len(DASK_SCHEME):],
                                  set_as_default=False), True
    except OSError as e:
        raise UnavailableError(f"Cannot reach the Dask scheduler at '{target}': {e}") from None


class DistributedSession(Session):
    """A Session whose runs execute on the workers of a Dask cluster."""

    def __init__(self, graph=None, config=None, allow_soft_placement=True,
                 log_device_placement=False, target="", fetch_device_arrays=False,
                 cluster=None):
        super().__init__(graph, config, allow_soft_placement, log_device_placement,
                         fetch_device_arrays=fetch_device_arrays)
        self._client, self._owns_client = connect(target)
        self._target = target if isinstance(target, str) else (
            DASK_SCHEME + self._client.scheduler.address.split("://", 1)[-1])
        self._cluster = (ClusterSpec(cluster) if cluster is not None
                         else default_cluster(self._client))
        self._task_entries = task_devices(self._cluster)
        jobs = self._cluster.jobs
        job = "worker" if "worker" in jobs else jobs[0]
        self._default_task = task_device(job, self._cluster.task_indices(job)[0])
        self._session_id = uuid.uuid4().hex
        self._plan_keys = itertools.count()
        self._distributed_plans = {}  # (feeds, fetches, targets, default task) -> _Plan
        self._plans_version = None    # the graph version they were made for
        self._addresses = None        # task -> worker address; None: resolve again
        self._loaded = set()          # (worker address, task, plan key)

    @property
    def sess_str(self):
        return self._target

    @property
    def cluster_spec(self):
        return self._cluster

    def list_devices(self):
        """The CPU device of every task of the cluster, as TF names them."""
        return [TaskDevice(f"{task}/device:CPU:0", "CPU") for task in self._task_entries]

    # --------------------------------------------------------------------- planning

    def _plan(self, feeds, fetches, targets, default_task=None):
        default_task = default_task or self._default_task
        key = (tuple(map(tensor_key, feeds)), tuple(map(tensor_key, fetches)),
               tuple(op._id for op in targets), default_task)
        with self._lock:
            if self._plans_version != self._graph.version:     # the graph changed
                self._distributed_plans.clear()
                self._plans_version = self._graph.version
            plan = self._distributed_plans.get(key)
            if plan is None:
                self._check_graph_not_empty()
                parts = partition(self._graph, feeds, fetches, targets, self._task_entries,
                                  default_task)
                plan = _Plan(f"p{next(self._plan_keys)}", parts)
                self._distributed_plans[key] = plan
            return plan

    # ---------------------------------------------------------------------- running

    def _run_plan(self, plan, values, options):
        deadline = run_deadline(options)
        submitted, addresses = self._submit(plan, values, deadline)
        return self._results(plan, values, submitted, addresses, deadline)

    def _submit(self, plan, values, deadline):
        addresses = self._resolve()
        self._load(plan, addresses, deadline)
        return step.submit(self._client, self._session_id, plan, addresses, values), addresses

    def _results(self, plan, values, submitted, addresses, deadline):
        """Waits for a submitted step (step.submit's result) and returns its fetched
        values, in fetch order."""
        futures, fetched = submitted
        tasks = [s.task for s in plan.stages]
        self._guarded(step.wait, futures, tasks, addresses, deadline)
        stages = list(fetched)
        gathered = self._guarded(step.gather, [fetched[s] for s in stages],
                                 [tasks[s] for s in stages], addresses, deadline)
        step.release([*futures, *fetched.values()])
        outputs = {s: dict(zip(plan.client_outputs[s], picked))
                   for s, picked in zip(stages, gathered)}
        return [values[s[1]] if s[0] == "feed" else outputs[s[1]][s[2]]
                for s in plan.fetch_sources]

    def _resolve(self):
        """{task: worker address}, resolved again after a failure."""
        addresses = self._addresses
        if addresses is None:
            try:
                names = worker_names(self._client)
            except OSError as e:
                raise UnavailableError(f"The Dask scheduler cannot be reached: {e}") from None
            addresses = self._addresses = task_addresses(self._task_entries, names)
        return addresses

    def _load(self, plan, addresses, deadline):
        """Sends each task's GraphDef of `plan` to its worker, once per worker."""
        missing = [t for t in plan.graph_defs
                   if (addresses[t], t, plan.key) not in self._loaded]
        if not missing:
            return
        futures = [self._client.submit(
            load_partition, self._session_id, task, plan.key, plan.graph_defs[task],
            plan.stage_specs[task], key=f"graphops-load-{plan.key}-{uuid.uuid4().hex[:12]}",
            workers=[addresses[task]], allow_other_workers=False, pure=False)
            for task in missing]
        self._guarded(step.wait, futures, missing, addresses, deadline)
        step.release(futures)
        self._loaded.update((addresses[t], t, plan.key) for t in missing)

    def _guarded(self, watch, futures, tasks, addresses, deadline):
        """step.wait or step.gather; after a lost worker or lost state, workers are looked
        up (and partitions sent) again on the next run."""
        try:
            return watch(self._client, futures, tasks, addresses, deadline)
        except (UnavailableError, AbortedError):
            self._addresses = None
            self._loaded.clear()
            raise

    def map(self, fetches, feed_dicts, tasks=None, max_in_flight=None, options=None):
        """Yields `run(fetches, feed_dict)` for each feed_dict of an iterable, in order.

        The runs go round-robin to `tasks` (task device strings; default: every task of job
        "worker"): nodes without a job run on the run's task, pinned ones where pinned. At
        most `max_in_flight` runs (default: two per task) are under way at once, and the
        iterable is read only as results are taken, so memory stays bounded however long
        it is. Runs may overlap: use it for inference, not for steps that update state.
        """
        handler = FetchHandler(self._graph, fetches)
        tasks = self._spread_tasks(tasks)
        max_in_flight = max_in_flight or 2 * len(tasks)
        keep = not self._fetch_to_host
        in_flight = deque()

        def finish():
            plan, values, (submitted, addresses), deadline = in_flight.popleft()
            results = self._results(plan, values, submitted, addresses, deadline)
            return handler.build([fetched_value(v, keep) for v in results])

        for n, feed_dict in enumerate(feed_dicts):
            if self._closed:
                raise RuntimeError("Attempted to use a closed Session.")
            feeds, values = self._feeds(feed_dict) if feed_dict else ((), ())
            plan = self._plan(feeds, handler.tensors, handler.targets, tasks[n % len(tasks)])
            deadline = run_deadline(options)
            in_flight.append((plan, values, self._submit(plan, values, deadline), deadline))
            if len(in_flight) >= max_in_flight:
                yield finish()
        while in_flight:
            yield finish()

    def _spread_tasks(self, tasks):
        """The task devices `map` spreads over: `tasks` checked, or job "worker"'s."""
        if tasks is None:
            chosen = [t for t in self._task_entries if DeviceSpec.from_string(t).job == "worker"]
        else:
            tasks = list(tasks)
            chosen = [task_device(spec.job, spec.task or 0)
                      for spec in map(DeviceSpec.from_string, tasks)]
        unknown = [t for t in chosen if t not in self._task_entries]
        if unknown or not chosen:
            raise InvalidArgumentError(f"map needs tasks of the cluster to run on, got "
                                       f"{tasks} (the cluster's tasks: "
                                       f"{sorted(self._task_entries)})")
        return chosen

    # -------------------------------------------------------------------- lifecycle

    def close(self):
        """Closes the Session and drops its tasks' state (variables) on every worker."""
        if self._closed:
            return
        super().close()
        with self._lock:
            self._distributed_plans.clear()
        try:
            self._client.run(release_session, self._session_id, on_error="ignore")
        except OSError:
            pass                        # the cluster is gone: nothing left to release
        if self._owns_client:
            self._client.close()
