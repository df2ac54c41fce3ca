"""Kernel classes and their registry: TF's REGISTER_KERNEL_BUILDER and kernel selection."""

import contextvars
import threading
from dataclasses import dataclass, field

import numpy as np

from graphops.registry import memory
from graphops.registry.errors import (AlreadyExistsError, InternalError, InvalidArgumentError,
                                      NotFoundError)
from graphops.registry.op_def import format_attr_value
from graphops.registry.resources import DEFAULT_RESOURCES

DEVICE_PREFERENCE = ("GPU", "CPU")   # unpinned nodes prefer earlier device types


@dataclass(frozen=True)
class KernelDef:
    """One registration: which op, device and attr values a kernel class serves."""

    op: str
    device_type: str
    kernel_class: type
    type_constraints: dict = field(default_factory=dict)
    attr_constraints: dict = field(default_factory=dict)
    host_memory: tuple = ()
    priority: int = 0
    label: str = ""

    def matches(self, attrs):
        for constraints in (self.type_constraints, self.attr_constraints):
            for name, allowed in constraints.items():
                value = attrs.get(name)
                if isinstance(value, list):
                    if not all(v in allowed for v in value):
                        return False
                elif value not in allowed:
                    return False
        return True

    def summary(self):
        text = f"  device='{self.device_type}'"
        if self.label:
            text += f"; label='{self.label}'"
        for constraints in (self.type_constraints, self.attr_constraints):
            for name, allowed in constraints.items():
                text += f"; {name} in {format_attr_value(list(allowed))}"
        if self.priority:
            text += f"; priority={self.priority}"
        return text


_lock = threading.Lock()
_kernels = {}     # (op, device_type, label) -> [KernelDef]


def _could_overlap(a, b):
    """True when some attr values would match both registrations."""
    for mine, theirs in ((a.type_constraints, b.type_constraints),
                         (a.attr_constraints, b.attr_constraints)):
        for name in mine.keys() & theirs.keys():
            if not set(mine[name]) & set(theirs[name]):
                return False
    return True


def register_kernel(op, device="CPU", type_constraints=None, attr_constraints=None,
                    host_memory=(), priority=0, label=""):
    """Class decorator registering an OpKernel subclass for `op` on `device`.

    `device` is a device type or a sequence of them ("CPU", ("CPU", "GPU")).
    `type_constraints`/`attr_constraints` map attr names to allowed values; on "GPU" every
    type attr is further limited to `dtypes.GPU_TYPES`. `host_memory` names inputs and
    outputs that stay NumPy arrays on any device. A registration that would match the
    same node at the same priority as an existing one is refused.
    """
    device_types = (device,) if isinstance(device, str) else tuple(device)
    others = {k: tuple(v) for k, v in (attr_constraints or {}).items()}

    def decorate(cls):
        if not (isinstance(cls, type) and issubclass(cls, OpKernel)):
            raise TypeError(f"register_kernel expects an OpKernel subclass, got {cls!r}")
        for device_type in device_types:
            types = _type_constraints(op, device_type, type_constraints)
            if types is None:
                continue       # no type this device can hold: nothing to register
            _add(KernelDef(op, device_type, cls, types, others, tuple(host_memory), priority,
                           label))
        return cls

    return decorate


def _type_constraints(op, device_type, given):
    """The constraints a registration on `device_type` gets, or None when none can match."""
    from graphops.registry.dtypes import GPU_TYPES, as_dtype

    types = {k: tuple(as_dtype(t) for t in v) for k, v in (given or {}).items()}
    if device_type != "GPU":
        return types
    from graphops.registry.op_registry import get_op_def, is_registered

    type_attrs = {name: None for name in types}
    if is_registered(op):
        type_attrs.update((a.name, a.allowed_values) for a in get_op_def(op).attr
                          if a.type in ("type", "list(type)"))
    for name, op_allowed in type_attrs.items():
        allowed = types.get(name) or op_allowed or GPU_TYPES
        types[name] = tuple(t for t in map(as_dtype, allowed) if t in GPU_TYPES)
        if not types[name]:
            return None
    return types


def _add(kdef):
    with _lock:
        existing = _kernels.setdefault((kdef.op, kdef.device_type, kdef.label), [])
        for other in existing:
            if other.priority == kdef.priority and _could_overlap(other, kdef):
                raise AlreadyExistsError(
                    f"Multiple OpKernel registrations match NodeDef at the same priority "
                    f"'{kdef.priority}': '{other.kernel_class.__name__}' and "
                    f"'{kdef.kernel_class.__name__}' for op {kdef.op} on {kdef.device_type}")
        existing.append(kdef)


def deregister_kernels(op):
    """Removes every kernel of `op` (for tests and interactive redefinition)."""
    with _lock:
        for key in [k for k in _kernels if k[0] == op]:
            del _kernels[key]


def registered_kernels(op=None):
    """All KernelDefs, or those of one op (in the order of their (op, device, label) keys)."""
    keys = sorted(key for key in _kernels if op is None or key[0] == op)
    return [k for key in keys for k in _kernels[key]]


CONTROL_FLOW_ROLES = ("switch", "merge", "enter", "exit", "next_iteration", "control_trigger")


def control_flow_role(op_type):
    """The `OpKernel.control_flow` role every kernel registered for `op_type` declares, or
    None (graph import and planning ask before any node is placed)."""
    roles = {k.kernel_class.control_flow for k in registered_kernels(op_type)}
    return roles.pop() if len(roles) == 1 else None


def kernels_registered_for_op(op):
    """TF's listing of the kernels registered for `op`, one per line."""
    defs = registered_kernels(op)
    if not defs:
        return "  <no registered kernels>\n"
    return "".join(k.summary() + "\n" for k in defs)


def find_kernel(op_type, device_type, attrs, label="", node_name=None):
    """The highest-priority KernelDef matching the node's attrs, or NotFoundError."""
    candidates = _kernels.get((op_type, device_type, label), ())
    best = None
    for kdef in candidates:
        if kdef.matches(attrs) and (best is None or kdef.priority > best.priority):
            best = kdef
    if best is not None:
        return best
    node = f"{{{{node {node_name}}}}}" if node_name else f"{{{{node {op_type}}}}}"
    message = (f"No registered '{op_type}' OpKernel for '{device_type}' devices compatible "
               f"with node {node}")
    if candidates:
        requested = ", ".join(f"{k}={format_attr_value(v)}" for k, v in sorted(attrs.items())
                              if not k.startswith("_") and not _is_bulky(v))
        message += ("\n\t (OpKernel was found, but attributes didn't match) Requested "
                    f"Attributes: {requested}")
    message += f"\n\t.  Registered:{kernels_registered_for_op(op_type)}"
    raise NotFoundError(message.rstrip("\n"))


def _is_bulky(value):
    return isinstance(value, np.ndarray)


def supported_device_types(op_type, attrs, label=""):
    """Device types with a matching kernel, most preferred first (priority, then GPU > CPU)."""
    found = []
    for (op, device, lab), defs in list(_kernels.items()):
        if op == op_type and lab == label:
            matching = [k.priority for k in defs if k.matches(attrs)]
            if matching:
                found.append((device, max(matching)))
    rank = {d: i for i, d in enumerate(DEVICE_PREFERENCE)}
    found.sort(key=lambda dp: (-dp[1], rank.get(dp[0], len(rank))))
    return [d for d, _ in found]


# ----------------------------------------------------------------------------- kernel API

class OpKernelConstruction:
    """What a kernel's constructor sees, once per node: attrs, dtypes, device."""

    def __init__(self, op_def, node_name, attrs, input_dtypes, output_dtypes, device_type="CPU",
                 xp=np, device_name=None, resources=None, host_outputs=frozenset(),
                 function_library=None):
        self.op_def = op_def
        self.op_type = op_def.name
        self.node_name = node_name
        self.attrs = attrs
        self.input_dtypes = list(input_dtypes)
        self.output_dtypes = list(output_dtypes)
        self.device_type = device_type
        self.device_name = device_name or f"/device:{device_type}:0"
        self.xp = xp
        self.resources = resources if resources is not None else DEFAULT_RESOURCES
        self.host_outputs = frozenset(host_outputs)   # output indices kept in host memory
        self.function_library = function_library or {}   # name -> FunctionDef (call ops)
        self.np_output_dtypes = [d.np_dtype for d in self.output_dtypes]
        # per output: whether it is a NumPy array (host memory, or a host device's xp)
        self.numpy_outputs = [xp is np or i in self.host_outputs
                              for i in range(len(self.output_dtypes))]

    def get_attr(self, name):
        try:
            return self.attrs[name]
        except KeyError:
            raise InvalidArgumentError(
                f"No attr named '{name}' in NodeDef {self.node_name} ({self.op_type})") from None

    def has_attr(self, name):
        return name in self.attrs


_RUN_CANCELLED = contextvars.ContextVar("run_cancelled", default=None)


def prepares(kernel_class):
    """Whether steps may call `kernel_class.prepare`: it defines one together with the
    `compute` it stands for and the `prepared_values` its calls depend on (the class, or
    the same ancestor, defines all three; OpKernel's default of none may stand)."""
    def owner(name):
        return next(c for c in kernel_class.__mro__ if name in c.__dict__)
    prepare = owner("prepare")
    return (prepare is not OpKernel and prepare is owner("compute")
            and owner("prepared_values") in (prepare, OpKernel))


def cancellation(cancelled):
    """Within the block, kernels' `ctx.cancelled()` asks `cancelled()` (None: never
    cancelled): a plan's run sets it, so a kernel that waits can stop when the run stops."""
    return _Cancellation(cancelled)


class _Cancellation:
    """`cancellation`'s context, a class rather than a generator: every run enters one."""

    __slots__ = ("cancelled", "token")

    def __init__(self, cancelled):
        self.cancelled = cancelled

    def __enter__(self):
        self.token = _RUN_CANCELLED.set(self.cancelled)

    def __exit__(self, *exc_info):
        _RUN_CANCELLED.reset(self.token)


class OpKernelContext:
    """What `compute` sees, once per run: the input arrays; it collects the outputs."""

    __slots__ = ("construction", "inputs", "outputs", "epilogue")

    def __init__(self, construction, inputs, epilogue=None):
        self.construction = construction
        self.inputs = inputs
        self.outputs = [None] * len(construction.output_dtypes)
        self.epilogue = epilogue    # what a plan fused after output 0 (a conv's BiasAdd, Relu)

    def input(self, i):
        return self.inputs[i]

    @staticmethod
    def cancelled():
        """Whether the run this kernel is part of has been cancelled (its Session closed,
        its deadline passed); a kernel that blocks polls it and stops with CancelledError."""
        check = _RUN_CANCELLED.get()
        return check is not None and bool(check())

    @property
    def num_inputs(self):
        return len(self.inputs)

    @property
    def xp(self):
        return self.construction.xp

    @property
    def device_type(self):
        return self.construction.device_type

    @property
    def node_name(self):
        return self.construction.node_name

    @property
    def device_name(self):
        return self.construction.device_name

    @property
    def op_type(self):
        return self.construction.op_type

    @property
    def resources(self):
        """The Session's ResourceMgr (variables live there)."""
        return self.construction.resources

    def output_dtype(self, i):
        return self.construction.output_dtypes[i]

    def set_output(self, i, value):
        """Sets output `i`; scalars become arrays, the dtype must be the declared one.

        Host-memory outputs are NumPy arrays on every device; the others are `ctx.xp` arrays
        (a device kernel handing back a NumPy array is an InternalError)."""
        construction = self.construction
        if (type(value) is np.ndarray and construction.numpy_outputs[i]
                and value.dtype == construction.np_output_dtypes[i]):
            self.outputs[i] = value        # the common case, checked first
            return
        xp = np if i in construction.host_outputs else construction.xp
        if not isinstance(value, xp.ndarray):
            if isinstance(value, np.ndarray):
                raise InternalError(
                    f"Kernel for {construction.op_type} on {construction.device_type} produced "
                    f"output {i} as a NumPy (host) array; a {construction.device_type} kernel "
                    "must return device arrays made with ctx.xp")
            value = xp.asarray(value)
        expected = self.construction.np_output_dtypes[i]
        if value.dtype != expected:
            raise InternalError(
                f"Kernel for {self.construction.op_type} produced output {i} of dtype "
                f"{value.dtype}, expected {expected}")
        self.outputs[i] = value

    def check_allocation(self, shape, dtype):
        """ResourceExhaustedError/InvalidArgumentError before allocating an absurd output."""
        return memory.check_allocation(shape, dtype, self.construction.node_name)


class OpKernel:
    """Base class of kernels: read and validate attrs in `__init__`, compute in `compute`.

    One instance serves one node and may run in several threads at once, so `compute`
    must not mutate `self`, with one exception: it may keep what it derives from its
    inputs' shapes alone (checked axes, output shapes, geometry, allocation checks), keyed
    by everything those checks read (shapes, index inputs' values, the memory budget), in
    an attribute replaced whole or a dict added to whole, never changed in place, so a
    thread sees an answer complete or not at all: `checked_once` keeps the last one.

    Class attributes declare what a plan may do with the kernel's node: the runtime
    (constant folding, fusion, pruning) reads them from the node's kernel and knows no op
    by name. A kernel may withdraw one for its node in ``__init__`` (a channels-first
    BiasAdd or conv sets its chain declarations to None).
    """

    # -- folding and feeds (graphops/runtime/constant_folding.py, executor.py)
    invariant = False     # outputs never change: fold once per plan (a Const; a handle op,
    #                       also off the host); a node without inputs folds only if invariant
    foldable = True       # False: never computed when a plan is built (placeholders)
    feed_satisfies_control = False   # a feed of the node satisfies control edges from it
    #                                  too, as TF rewrites a fed Placeholder
    reads_shape_only = False  # outputs follow from the inputs' shapes and dtypes alone (a
    #                           Shape, Size): folds once a plan knows them (shape_folding)
    reads_variable = False    # output 0 is a resource variable's value and nothing else
    #                           happens (ReadVariableOp): a loop writing no state reads it
    #                           once per run (functional.LoopBody)
    # -- steps a plan leaves out (executor.py: its steps run in order, one at a time)
    forwards_input = False   # output 0 is input 0 unchanged: its slot is the input's
    forwards_inputs = False  # each output k is input k unchanged (IdentityN): the same
    does_nothing = False     # no outputs, no effect: only ordering, which the plan keeps
    # -- TF1 control flow (graphops/runtime/frame_executor.py runs the node by its role)
    control_flow = None   # one of CONTROL_FLOW_ROLES: "switch", "merge", "enter", "exit",
    #                       "next_iteration" (its edges into a merge close the loop's cycle)
    #                       or "control_trigger" (runs even when its inputs are dead)
    # -- fused chains (graphops/runtime/fusion.py): activation(x op v op v ...)
    chain_stage = None    # x op a per-channel v: "mul" or "add" (v either input), "sub"
    #                       (x - v) or "bias_add" (v input 1, channels last); a constant
    #                       "mul" after a conv (and "bias_add") folds into it (fold_scales)
    chain_activation = None   # ends a chain: one of kernel_util.CHAIN_ACTIVATIONS ("Relu",
    #                           "Relu6"; other names are not fused); after an "add" of two
    #                           tensors: SumActivation
    swish_gate = False    # the logistic sigmoid: x times it (a "mul") fuses into Swish
    # -- elementwise clusters (graphops/runtime/elementwise_clusters.py): one compiled pass
    elementwise = None    # the float kernel is this instruction of constants.FUSED_OPCODES
    #                       ("add", "tanh", ...; its inputs broadcast as NumPy's), or
    #                       "bias_add" (a channels-last BiasAdd)
    # -- compiled loop bodies (graphops/runtime/loop_program_builder.py): a TF1 loop whose
    #    steps all declare one of these runs as one compiled program
    moves_data = False    # outputs are elements of the one float input, chosen by static
    #                       integer operands (a Split, Squeeze, StridedSlice): views of it
    scalar_op = None      # on int or bool scalars: one of compiled.constants.LOOP_SCALAR_OPS
    #                       ("less", "logical_and", ...); integer "elementwise" ones too
    matmul = None         # (transpose_a, transpose_b) of a product of two real matrices
    #                       (a batched product's operands of rank 2 too)
    list_access = None    # "get", "set" or "push": a TensorList element read, written in
    #                       place or appended
    reduction = None      # "sum": a float sum over the axes its input 1 names
    # -- fused blocks (graphops/runtime/squeeze_excite.py)
    averages = False      # a mean over the axes its input 1 names (a squeeze's pooling)
    reshapes = False      # output 0 is input 0's elements in order, in the shape input 1 gives
    # -- convs
    channels_last_format = None   # a forward conv's channels-last data_format ("NHWC"),
    #                               its filter input 1: a constant per-output-channel scale
    #                               of its output folds into the filter (fold_scales)
    depthwise_filter = False      # filter [..., C, M]: output channel c*M + m is w[..., c, m]
    chain_epilogue = False        # takes a chain (ctx.epilogue) in its channels_last_format

    def __init__(self, ctx):
        self.node_name = ctx.node_name
        self.op_type = ctx.op_type
        self.device_type = ctx.device_type

    _last_checked = None     # (key, answer) of the last `checked_once` call
    prepared_values = ()     # inputs whose bytes, not only shapes, a `prepare`d call keeps

    def compute(self, ctx):
        raise NotImplementedError(f"{type(self).__name__}.compute")

    def prepare(self, ctx):
        """A function of the input list returning the output list, as `compute` would set
        them, for every later run whose inputs have the shapes of ``ctx.inputs`` (the inputs
        `prepared_values` names: the same bytes) under the same memory budget; None where
        `compute` runs instead (the default). It runs compute's checks at once, raising what
        compute raises, and keeps only what those inputs' shapes decide, so a host step of
        few values skips the context, the checks and `set_output`'s. The call gets NumPy
        arrays (never a subclass) under the plan's `np.errstate(all="ignore")`, and must
        return arrays of the output types (its first outputs are checked). A class defining
        `compute` or `prepared_values` without `prepare` is never prepared (a subclass's
        compute stays in force)."""
        return None

    def checked_once(self, key, check):
        """``check()``'s answer, computed again only when ``key`` (everything else the
        check reads: input shapes, index inputs' bytes) or the memory budget differs from
        the last call's: the one thing ``compute`` may keep (see the class docstring). A
        check that raises keeps nothing, so it raises again."""
        key = (key, memory.get_memory_budget())
        last = self._last_checked
        if last is None or last[0] != key:
            last = self._last_checked = (key, check())
        return last[1]
