"""The op and kernel registries, installed as graphops.registry: dtypes, errors,
TensorShape, the OpDef spec grammar, shape inference, the OpKernel base class, the kernel
registry, conv and pool arithmetic, and the built-in op definitions (``op_defs/``, one
module per op family). Imports nothing of graphops.kernels or graphops' rooms."""

from graphops.registry import dtypes, errors
from graphops.registry.kernel_registry import (OpKernel, OpKernelConstruction, OpKernelContext,
                                               find_kernel, register_kernel, registered_kernels)
from graphops.registry.op_registry import get_op_def, list_ops, register_op
from graphops.registry.tensor_shape import TensorShape
from graphops.registry import op_defs  # noqa: E402  (registers the built-in op definitions)

__all__ = ["dtypes", "errors", "OpKernel", "OpKernelConstruction", "OpKernelContext",
           "find_kernel", "register_kernel", "registered_kernels", "get_op_def", "list_ops",
           "register_op", "TensorShape", "op_defs"]
