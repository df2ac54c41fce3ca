"""Session: TF1's `Session.run` semantics over cached execution plans.

Fetches may be any nesting of lists, tuples, namedtuples and mappings whose leaves are
tensors, operations (run as targets, value None), their names, IndexedSlices (fetched as
an IndexedSlicesValue) or SparseTensors (a SparseTensorValue); feeds are keyed by tensor
or tensor name, and any tensor may be fed (a SparseTensor key by a SparseTensorValue or
an (indices, values, dense_shape) tuple, one feed per part). One plan is cached per
(feeds, fetches, targets), with a second, order-insensitive key as TF's DirectSession has;
plans are dropped when the graph (or the device table) changes. `run` may be called from
several threads at once; `close` stops the runs in flight at their next step
(CancelledError) and waits for them.
"""

import operator
import threading
import time
from collections import defaultdict
from collections.abc import Mapping

import numpy as np

from graphops.runtime import devices, executor
from graphops.building.indexed_slices import IndexedSlices, IndexedSlicesValue
from graphops.building.sparse_tensor import SparseTensor, SparseTensorValue
from graphops.building.graph import DefaultController, DefaultStack, get_default_graph
from graphops.building.tensor import Operation, Tensor
from graphops.kernels.support.parallelism import set_intra_op_threads
from graphops.registry.errors import (CancelledError, DeadlineExceededError, InvalidArgumentError,
                                      UnimplementedError)
from graphops.registry.resources import ResourceMgr

_tensor_key = executor.tensor_key
_default_sessions = DefaultStack()
_FETCH_LEAVES = (Tensor, Operation, str)
HANDLERS_KEPT = 64      # fetch structures a Session keeps its FetchHandler for


def get_default_session():
    """The innermost Session entered with `with sess:` / `sess.as_default()` on this thread
    (or an InteractiveSession's), or None."""
    stack = _default_sessions.stack
    return stack[-1] if stack else None


def fetched_value(value, keep_device=False):
    """A fetched value as the caller gets it: `_as_numpy`, or with `keep_device` a copy of a
    device array (a CuPy array stays on its GPU; the copy keeps constants intact)."""
    if keep_device and type(value) is not np.ndarray and devices.location_of(value) is not None:
        return value.copy()
    return _as_numpy(value)


def _as_numpy(value):
    """A fetched value as NumPy: 0-d arrays become NumPy scalars, as TF's Session returns;
    read-only buffers (constants, variables' storage) are copied so the caller may write."""
    if type(value) is not np.ndarray:
        value = devices.to_host(value)
    if isinstance(value, np.ndarray):
        if value.ndim == 0:
            return value[()]
        if not value.flags.writeable:
            return value.copy()
    return value


def _none(_):
    return None


def _sparse_feeds(feed_dict):
    """The (key, value) feeds, a SparseTensor key's value split into its three parts."""
    for key, value in feed_dict.items():
        if not isinstance(key, SparseTensor):
            yield key, value
            continue
        if isinstance(value, SparseTensor) or not (
                isinstance(value, (tuple, list)) and len(value) == 3):
            raise TypeError(f"The value of a SparseTensor feed must be a SparseTensorValue or "
                            f"an (indices, values, dense_shape) tuple; got {type(value)!r} for "
                            f"the key {key}.")
        yield from zip((key.indices, key.values, key.dense_shape), value)


class FetchHandler:
    """Flattens a fetch structure into unique tensors and target ops; rebuilds results."""

    def __init__(self, graph, fetches):
        self.tensors = []        # unique fetched tensors, in first-seen order
        self.targets = []        # unique fetched operations
        self._positions = {}     # tensor key -> index in self.tensors
        self._target_ids = set()
        self.build = self._mapper(graph, fetches)

    def _mapper(self, graph, fetch):
        if fetch is None:
            raise TypeError(f"Fetch argument None has invalid type {type(fetch)!r}")
        if isinstance(fetch, (list, tuple)):
            subs = [self._mapper(graph, f) for f in fetch]
            kind = type(fetch)
            if issubclass(kind, list):
                return lambda values: [sub(values) for sub in subs]
            if kind is tuple:
                return lambda values: tuple(sub(values) for sub in subs)
            return lambda values: kind(*[sub(values) for sub in subs])   # namedtuple
        if isinstance(fetch, Mapping):
            keys = list(fetch.keys())
            subs = [self._mapper(graph, fetch[k]) for k in keys]
            kind = type(fetch)
            factory = getattr(fetch, "default_factory", None)

            def build(values):
                out = kind(factory) if isinstance(fetch, defaultdict) else kind()
                for key, sub in zip(keys, subs):
                    out[key] = sub(values)
                return out
            return build
        if isinstance(fetch, IndexedSlices):
            parts = [self._mapper(graph, part) if part is not None else _none
                     for part in (fetch.values, fetch.indices, fetch.dense_shape)]
            return lambda values: IndexedSlicesValue(*[part(values) for part in parts])
        if isinstance(fetch, SparseTensor):
            parts = [self._mapper(graph, part)
                     for part in (fetch.indices, fetch.values, fetch.dense_shape)]
            return lambda values: SparseTensorValue(*[part(values) for part in parts])
        element = self._resolve(graph, fetch)
        if isinstance(element, Operation):
            if element._id not in self._target_ids:
                self._target_ids.add(element._id)
                self.targets.append(element)
            return _none
        key = _tensor_key(element)
        if key not in self._positions:
            self._positions[key] = len(self.tensors)
            self.tensors.append(element)
        return operator.itemgetter(self._positions[key])

    @staticmethod
    def _resolve(graph, fetch):
        try:
            return graph.as_graph_element(fetch, allow_tensor=True, allow_operation=True)
        except TypeError as e:
            raise TypeError(f"Fetch argument {fetch!r} has invalid type {type(fetch)!r}, "
                            f"must be a string or Tensor. ({_text(e)}){_eager_hint(fetch)}"
                            ) from None
        except (ValueError, KeyError) as e:
            raise InvalidArgumentError(f"Fetch argument {fetch!r} cannot be interpreted as a "
                                       f"Tensor. ({_text(e)})") from None


def _fetch_cache_key(fetches):
    """A key for `fetches` that is a tensor, an operation or a name, or a list or tuple of
    them (what a training loop passes run after run), by their identities; None for any
    other structure."""
    kind = type(fetches)
    if kind is list or kind is tuple:
        for fetch in fetches:
            if type(fetch) not in _FETCH_LEAVES:
                return None
        return kind, tuple(map(id, fetches))
    return (kind, id(fetches)) if kind in _FETCH_LEAVES else None


def _text(exc):
    return str(exc.args[0]) if exc.args else str(exc)


def _eager_hint(value):
    """What to do when a fetch or feed key is an array: the op that made it ran eagerly."""
    is_array = isinstance(value, (np.ndarray, np.generic))
    if not (is_array or devices.location_of(value) is not None):
        return ""
    return (" This value was computed eagerly: no graph was entered when its op was built, "
            "and eager execution was on, so the op ran at once and returned an array instead "
            "of a graph Tensor. For a TF1 program, call gp.disable_eager_execution() at its "
            "start (ops then go into the default graph), or build the ops inside "
            "`with graph.as_default():`.")


def _shape_ok(dims, shape):
    if dims is None or dims == shape:
        return True
    return len(dims) == len(shape) and all(d is None or d == s for d, s in zip(dims, shape))


def _is_complex(value):
    """True for complex scalars and arrays, and for lists that NumPy makes complex."""
    if isinstance(value, (np.ndarray, np.generic)):
        return value.dtype.kind == "c"
    if isinstance(value, (list, tuple)):
        try:
            return np.asarray(value).dtype.kind == "c"
        except (TypeError, ValueError):
            return False
    return isinstance(value, complex)


def convert_feed(tensor, value, key):
    """A fed value as the NumPy array the kernels see, with TF's checks and messages."""
    if type(value) is np.ndarray and value.dtype == tensor.dtype.np_dtype:
        return _checked_shape(tensor, value)         # what np.asarray below would give
    if isinstance(value, (Tensor, Operation)) or hasattr(value, "_as_graph_element"):
        raise TypeError(
            "The value of a feed cannot be a tf.Tensor object. Acceptable feed values include "
            "Python scalars, strings, lists, numpy ndarrays, or TensorHandles. For reference, "
            f"the tensor object was {value} which was passed to the feed with key {key}.")
    dtype = tensor.dtype
    np_type = dtype.as_numpy_dtype
    if dtype.kind in ("float", "int", "uint", "bool") and (
            _is_complex(value) or getattr(getattr(value, "dtype", None), "kind", "") == "c"):
        raise TypeError(f"Cannot feed a complex value to Tensor '{tensor.name}' of dtype "
                        f"{dtype.name}: the imaginary part would be lost.")
    if devices.location_of(value) is not None:      # a CuPy array: stays on its device
        if dtype.kind in ("string", "handle"):
            raise InvalidArgumentError(f"Cannot feed a device array to Tensor '{tensor.name}' "
                                       f"of dtype {dtype.name}")
        try:
            array = value if value.dtype == np_type else value.astype(np_type)
        except TypeError as e:      # a type CuPy cannot hold (bfloat16)
            raise InvalidArgumentError(f"Cannot convert the feed value for Tensor "
                                       f"'{tensor.name}' to {dtype.name}: {e}") from None
        return _checked_shape(tensor, array)
    if isinstance(value, int) and dtype.kind not in ("string", "handle"):
        try:
            fits = bool(np_type(value) == value)
        except OverflowError:
            fits = False
        if not fits:
            raise TypeError(f"Type of feed value {value} with type {type(value)} is not "
                            f"compatible with Tensor type {np_type}. Try explicitly setting the "
                            "type of the feed tensor to a larger type (e.g. int64).")
    try:
        array = np.asarray(value, dtype=np_type)
    except OverflowError as e:
        raise TypeError(f"Feed value for Tensor '{tensor.name}' is not compatible with Tensor "
                        f"type {np_type}: {e}") from None
    except (TypeError, ValueError) as e:
        raise InvalidArgumentError(f"Cannot convert the feed value for Tensor '{tensor.name}' "
                                   f"to {dtype.name}: {e}") from None
    return _checked_shape(tensor, array)


def _checked_shape(tensor, array):
    if not _shape_ok(tensor.shape.as_tuple(), array.shape):
        raise InvalidArgumentError("Cannot feed value of shape %r for Tensor %r, which has "
                                   "shape %r" % (tuple(array.shape), tensor.name,
                                                 str(tensor.shape)))
    return array


class RunOptions:
    """TF1's RunOptions: `timeout_in_ms` (0: none) bounds a run (DeadlineExceededError);
    `trace_level` is accepted for TF programs and unused."""

    NO_TRACE, SOFTWARE_TRACE, HARDWARE_TRACE, FULL_TRACE = 0, 1, 2, 3

    def __init__(self, timeout_in_ms=0, trace_level=0):
        self.timeout_in_ms = int(timeout_in_ms)
        self.trace_level = trace_level


class RunMetadata:
    """TF1's RunMetadata, filled by a traced run in TF. graphops collects no step statistics
    or partition graphs, so a run leaves it empty and it serializes to no bytes (an empty
    RunMetadata message), which FileWriter.add_run_metadata writes as TF does."""

    def __init__(self):
        self.step_stats = None
        self.cost_graph = None
        self.partition_graphs = []
        self.function_graphs = []

    def SerializeToString(self):   # noqa: N802  (protobuf's name)
        return b""


_remote_targets = []     # (accepts(target) -> bool, session class loader), see add_remote_target


def add_remote_target(accepts, session_class):
    """Lets `Session(target=...)` return `session_class()` (a Session subclass, loaded on
    first use) for targets that `accepts`: how graphops.distributed plugs in its session."""
    _remote_targets.append((accepts, session_class))


def _session_class_for(target):
    for accepts, session_class in _remote_targets:
        if accepts(target):
            return session_class()
    raise UnimplementedError(f"Session target '{target}' is not supported: use target='' "
                             "(in-process), or a dask.distributed Client or "
                             "'dask://host:port' (pip install graphops[distributed]).")


def run_deadline(options):
    """The monotonic time a run given `options` (RunOptions or None) must end by; None when
    it has no timeout."""
    timeout_ms = getattr(options, "timeout_in_ms", 0)
    return time.monotonic() + timeout_ms / 1000 if timeout_ms > 0 else None


class Session:
    """Runs (parts of) a graph, as tf.compat.v1.Session."""

    def __new__(cls, graph=None, config=None, allow_soft_placement=True,
                log_device_placement=False, target="", fetch_device_arrays=False,
                cluster=None):
        """A remote `target` (a Dask client or "dask://host:port") makes the Session a
        distributed one (graphops.distributed); "" or "local" runs in-process."""
        if target not in ("", "local", None):
            remote = _session_class_for(target)
            if cls is Session:
                cls = remote
            elif not issubclass(cls, remote):
                raise UnimplementedError(f"{cls.__name__} runs in-process only: use "
                                         "target='' (or gp.Session for a remote target).")
        return super().__new__(cls)

    def __init__(self, graph=None, config=None, allow_soft_placement=True,
                 log_device_placement=False, target="", fetch_device_arrays=False,
                 cluster=None):
        """`config` (a `gp.ConfigProto`, a dict or an object with attributes) may set
        allow_soft_placement, log_device_placement, fetch_device_arrays and
        intra_op_parallelism_threads (when not 0, the process's count, as
        `gp.config.set_intra_op_parallelism_threads`); with fetch_device_arrays, fetches
        computed on a GPU come back as CuPy arrays instead of NumPy ones. `cluster` (a
        ClusterSpec) maps the jobs of a remote `target`; in-process it is unused."""
        if graph is None:
            graph = get_default_graph()
        if config is not None:
            get = config.get if isinstance(config, Mapping) else (
                lambda name, default: getattr(config, name, default))
            allow_soft_placement = get("allow_soft_placement", allow_soft_placement)
            log_device_placement = get("log_device_placement", log_device_placement)
            fetch_device_arrays = get("fetch_device_arrays", fetch_device_arrays)
            if get("intra_op_parallelism_threads", 0):
                set_intra_op_threads(get("intra_op_parallelism_threads", 0))
        self._graph = graph
        self._fetch_to_host = not fetch_device_arrays
        self._allow_soft_placement = bool(allow_soft_placement)
        self._log_device_placement = bool(log_device_placement)
        self._resources = ResourceMgr()
        self._lock = threading.Lock()
        self._plans = {}          # (feed keys, fetch keys, target ids) in caller order -> Plan
        self._sorted_plans = {}   # the same, each part sorted -> Plan
        self._kernels = {}        # (op id, Device) -> (construction, kernel)
        self._handlers = {}       # `_fetch_cache_key` -> (FetchHandler, the fetches)
        self._state = None        # (graph.version, device table version) the caches are for
        self._closed = False
        self._idle = threading.Condition(threading.Lock())   # guards _closed and _running
        self._running = {}                   # thread id -> number of its runs in flight
        self._cancel = threading.Event()     # set by close(): runs in flight stop
        self._contexts = []

    @property
    def graph(self):
        return self._graph

    @property
    def sess_str(self):
        return ""

    def list_devices(self):
        """The devices this session can place nodes on."""
        return devices.local_devices()

    # ------------------------------------------------------------------------- running

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        """Runs what `fetches` needs and returns their values in the same structure."""
        me = self._begin()
        try:
            handler = self._fetch_handler(fetches)
            feeds, values = self._feeds(feed_dict) if feed_dict else ((), ())
            plan = self._plan(feeds, handler.tensors, handler.targets)
            results = self._run_plan(plan, values, options)
        finally:
            self._end(me)
        keep = not self._fetch_to_host
        return handler.build([fetched_value(v, keep) for v in results])

    def _fetch_handler(self, fetches):
        """The FetchHandler of `fetches`, kept for those `_fetch_cache_key` keys (with the
        fetches themselves, so that their identities stay theirs): a graph's elements and
        names never change."""
        key = _fetch_cache_key(fetches)
        if key is None:
            return FetchHandler(self._graph, fetches)
        kept = self._handlers.get(key)
        if kept is None:
            handler = FetchHandler(self._graph, fetches)
            if len(self._handlers) >= HANDLERS_KEPT:
                self._handlers.clear()
            kept = self._handlers[key] = (handler, fetches if key[0] is not list
                                          else tuple(fetches))
        return kept[0]

    def make_callable(self, fetches, feed_list=None, accept_options=False):
        """A function of the `feed_list` values returning the fetches, planned once."""
        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")
        handler = FetchHandler(self._graph, fetches)
        feed_list = list(feed_list or ())
        tensors = [self._feed_tensor(key) for key in feed_list]
        last = {_tensor_key(t): i for i, t in enumerate(tensors)}    # repeated feed: last wins
        positions = sorted(last.values())
        feeds = [tensors[i] for i in positions]
        plan = self._plan(feeds, handler.tensors, handler.targets)
        build, count = handler.build, len(feed_list)
        keep = not self._fetch_to_host

        def call(*args, **run_kwargs):
            if len(args) != count:
                raise TypeError(f"This callable takes {count} feed value(s) "
                                f"({len(args)} given).")
            me = self._begin()
            try:
                values = [convert_feed(feeds[j], args[i], feed_list[i])
                          for j, i in enumerate(positions)]
                results = self._run_plan(plan, values, run_kwargs.get("options"))
            finally:
                self._end(me)
            return build([fetched_value(v, keep) for v in results])
        return call

    def _run_plan(self, plan, values, options):
        """The fetched values of one run of `plan`. With `options.timeout_in_ms`, a run
        still going at the deadline stops before its next node (DeadlineExceededError)."""
        deadline = run_deadline(options)
        if deadline is None:
            return plan.run(values, self._cancel.is_set)
        try:
            return plan.run(values, lambda: self._cancel.is_set()
                            or time.monotonic() >= deadline)
        except CancelledError:
            if self._cancel.is_set():
                raise
            raise DeadlineExceededError(f"Timed out waiting for the run: it did not finish "
                                        f"within {options.timeout_in_ms} ms") from None

    def _begin(self):
        """Counts a run in progress (returns its thread id); RuntimeError once closed."""
        me = threading.get_ident()
        with self._idle:
            if self._closed:
                raise RuntimeError("Attempted to use a closed Session.")
            self._running[me] = self._running.get(me, 0) + 1
        return me

    def _end(self, me):
        with self._idle:
            left = self._running.pop(me) - 1
            if left:
                self._running[me] = left
            if self._closed:
                self._idle.notify_all()

    def _feed_tensor(self, key):
        try:
            return self._graph.as_graph_element(key, allow_tensor=True, allow_operation=False)
        except Exception as e:
            raise TypeError(f"Cannot interpret feed_dict key as Tensor: {_text(e)}"
                            f"{_eager_hint(key)}") from None

    def _feeds(self, feed_dict):
        """Unique fed tensors and their converted values (a repeated tensor: last wins)."""
        index, tensors, values = {}, [], []
        for key, value in _sparse_feeds(feed_dict):
            tensor = self._feed_tensor(key)
            array = convert_feed(tensor, value, key)
            k = _tensor_key(tensor)
            if k in index:
                values[index[k]] = array
            else:
                index[k] = len(tensors)
                tensors.append(tensor)
                values.append(array)
        return tensors, values

    def _check_graph_not_empty(self):
        if not self._graph.get_operations():
            raise RuntimeError("The Session graph is empty. Add operations to the graph "
                               "before calling run().")

    def _plan(self, feeds, fetches, targets):
        key = (tuple(map(_tensor_key, feeds)), tuple(map(_tensor_key, fetches)),
               tuple(op._id for op in targets))
        state = (self._graph.version, devices.table_version())
        if state == self._state:
            plan = self._plans.get(key)
            if plan is not None:
                return plan
        with self._lock:
            if state != self._state:
                self._plans.clear()
                self._sorted_plans.clear()
                if state[1] != (self._state or (None, None))[1]:
                    self._kernels.clear()
                self._state = state
            plan = self._plans.get(key)
            if plan is None:
                plan = self._plans[key] = self._reordered_plan(key, feeds, fetches, targets)
            return plan

    def _reordered_plan(self, key, feeds, fetches, targets):
        feed_keys, fetch_keys, target_ids = key
        feed_rank = sorted(range(len(feeds)), key=lambda i: feed_keys[i])
        fetch_rank = sorted(range(len(fetches)), key=lambda i: fetch_keys[i])
        sorted_key = (tuple(feed_keys[i] for i in feed_rank),
                      tuple(fetch_keys[i] for i in fetch_rank), tuple(sorted(target_ids)))
        base = self._sorted_plans.get(sorted_key)
        if base is None:
            self._check_graph_not_empty()
            base = executor.build_plan(
                [feeds[i] for i in feed_rank], [fetches[i] for i in fetch_rank],
                sorted(targets, key=lambda op: op._id), self._allow_soft_placement,
                self._log_device_placement, self._kernels, self._resources,
                self._fetch_to_host)
            self._sorted_plans[sorted_key] = base
        feed_pos = {k: n for n, k in enumerate(sorted_key[0])}
        fetch_pos = {k: n for n, k in enumerate(sorted_key[1])}
        return base.reordered([feed_pos[k] for k in feed_keys], [fetch_pos[k] for k in fetch_keys])

    # ---------------------------------------------------------------------- lifecycle

    def close(self):
        """Closes the Session; later runs raise RuntimeError.

        Runs in flight in other threads either finish or stop before their next step with
        CancelledError; close waits for them, then releases plans, kernels and resources
        (variables included).
        """
        me = threading.get_ident()
        with self._idle:
            self._closed = True
            self._cancel.set()
            while any(n for thread, n in self._running.items() if thread != me):
                self._idle.wait()
        with self._lock:
            self._plans.clear()
            self._sorted_plans.clear()
            self._kernels.clear()
            self._handlers.clear()
            self._resources.clear()

    def as_default(self):
        """Makes this the default session in this thread inside the block (see
        `get_default_session`); it stays open after the block."""
        return DefaultController(_default_sessions, self)

    def __enter__(self):
        graph_ctx, session_ctx = self._graph.as_default(), self.as_default()
        graph_ctx.__enter__()
        session_ctx.__enter__()
        self._contexts.append((graph_ctx, session_ctx))
        return self

    def __exit__(self, exc_type, exc_value, tb):
        graph_ctx, session_ctx = self._contexts.pop()
        session_ctx.__exit__(exc_type, exc_value, tb)
        graph_ctx.__exit__(exc_type, exc_value, tb)
        self.close()
