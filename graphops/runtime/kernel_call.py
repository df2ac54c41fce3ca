"""Calling a kernel: the one path that graph execution and eager execution share.

`instantiate` builds a placed node's kernel (its construction context and the kernel object);
`compute` runs it once on input arrays and returns the outputs, refusing a kernel that left
one unset; `node_error` turns any failure into the OpError TF would raise, naming the node,
its op type, device and inputs. `host_memory_indices` says which args stay in host memory.
"""

from graphops.runtime import devices
from graphops.registry.errors import InternalError, OpError, ResourceExhaustedError
from graphops.registry.kernel_registry import OpKernelConstruction, OpKernelContext
from graphops.registry.op_def import arg_types
from graphops.registry.tensor_shape import shape_str

_SITE_FRAMES = 5     # creation-site frames shown in error messages (innermost last)


def _arg_ranges(arg_defs, attrs):
    """{arg name: range of flat indices} for OpDef input or output args."""
    ranges, start = {}, 0
    for arg in arg_defs:
        if arg.type_list_attr:
            n = len(attrs[arg.type_list_attr])
        elif arg.number_attr:
            n = attrs[arg.number_attr]
        else:
            n = 1
        ranges[arg.name] = range(start, start + n)
        start += n
    return ranges


def host_memory_indices(kernel_def, arg_defs, attrs):
    """Flat indices of the args the kernel keeps in host memory: those it names, and on
    other devices than the CPU every resource, variant or string arg (as in TF, no device
    memory holds those)."""
    named = kernel_def.host_memory
    ranges = _arg_ranges(arg_defs, attrs) if named else {}
    indices = {i for name in named for i in ranges.get(name, ())}
    if kernel_def.device_type != "CPU":
        flat, _ = arg_types(arg_defs, attrs)
        indices.update(i for i, dtype in enumerate(flat) if dtype.kind in ("handle", "string"))
    return frozenset(indices)


def ref_indices(arg_defs, attrs):
    """Flat indices of the `Ref(T)` args (TF1 variable references: the kernel gets the
    variable itself)."""
    ranges = _arg_ranges(arg_defs, attrs)
    return frozenset(i for arg in arg_defs if arg.is_ref for i in ranges[arg.name])


def dereference(value):
    """What a plain input reads from a reference edge: the variable's current value (a
    read-only view; FailedPreconditionError when uninitialized). A fed value passes as it
    is."""
    read = getattr(value, "ref_value", None)
    return value if read is None else read()


def describe_value(value):
    """`float32[2,3]` for an array (what error messages show of each input)."""
    dtype, shape = getattr(value, "dtype", None), getattr(value, "shape", None)
    if dtype is None or shape is None:
        return type(value).__name__
    return f"{getattr(dtype, 'name', dtype)}{shape_str(shape)}"


def node_error(exc, node_name, op_type, device_name, inputs, creation_site=(), tail=None,
               op=None, node_def=None, header="Graph execution error"):
    """The error to raise for `exc` raised by (or while preparing) a node.

    OpErrors keep their class; a MemoryError (a host allocation, or CuPy's OutOfMemoryError
    on a GPU) becomes ResourceExhaustedError, "OOM when allocating" as TF says it; anything
    else becomes InternalError. The message is TF's
    "Graph execution error" layout: creation site, node, op type, device and inputs, then
    the original message, then `tail` (default "\\n\\t [[{{node NAME}}]]").
    """
    if isinstance(exc, OpError):
        cls, text = type(exc), exc.message
    else:
        cls, text = unexpected_error_class(exc), f"{type(exc).__name__}: {exc}"
        if cls is ResourceExhaustedError:
            text = f"OOM when allocating: {text}"
    site = "".join(f"\n  {frame}" for frame in list(creation_site)[-_SITE_FRAMES:])
    if site:
        site = f"Detected at node '{node_name}' defined at (most recent call last):{site}\n"
    described = ", ".join(describe_value(v) for v in inputs)
    if tail is None:
        tail = f"\n\t [[{{{{node {node_name}}}}}]]"
    message = (f"{header}:\n\n{site}Node: '{node_name}' (op: {op_type}, "
               f"device: {device_name})\nInputs: [{described}]\n{text}{tail}")
    try:
        return cls(message, op=op, node_def=node_def)
    except TypeError:     # an OpError subclass with another constructor
        return InternalError(message, op=op, node_def=node_def)


def unexpected_error_class(exc):
    """The OpError class a failure that is not one becomes: ResourceExhaustedError for a
    MemoryError (a host allocation, or CuPy's OutOfMemoryError on a GPU), as TF reports an
    OOM; InternalError for anything else."""
    return ResourceExhaustedError if isinstance(exc, MemoryError) else InternalError


def error_cause(exc):
    """What a node error chains to: the original only for unexpected (non-OpError) ones."""
    return None if isinstance(exc, OpError) else exc


def instantiate(op_def, node_name, attrs, input_dtypes, output_dtypes, placed, resources,
                function_library=None):
    """(construction, kernel) for one node placed by `placement` (`placed.device`,
    `placed.kernel_def`); errors raised by the kernel's constructor propagate.
    `function_library` (name -> FunctionDef) is what call kernels look functions up in."""
    device = placed.device
    construction = OpKernelConstruction(
        op_def, node_name, attrs, input_dtypes, output_dtypes, device_type=device.type.name,
        xp=device.type.xp, device_name=device.name, resources=resources,
        host_outputs=host_memory_indices(placed.kernel_def, op_def.output_arg, attrs),
        function_library=function_library)
    with devices.activated(device):
        return construction, placed.kernel_def.kernel_class(construction)


def unset_output(k):
    """The error of a kernel that left output `k` unset."""
    return InternalError(f"The kernel did not set output {k}.")


def compute(kernel, construction, inputs, device, epilogue=None):
    """Runs `kernel` on `inputs` on `device` and returns its list of outputs, all set;
    `epilogue`: what the plan fused after output 0, for kernels that take it (see
    `fusion.ConvChain`)."""
    ctx = OpKernelContext(construction, inputs, epilogue)
    activate = device.type.activate
    if activate is None:
        kernel.compute(ctx)
    else:
        with activate(device.index):
            kernel.compute(ctx)
    outputs = ctx.outputs
    for k, value in enumerate(outputs):
        if value is None:
            raise unset_output(k)
    return outputs
