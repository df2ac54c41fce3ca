"""The op and kernel registries (imports nothing of graphops or kernels)."""

from graphops.registry import dtypes, errors
from graphops.registry.kernel_registry import (OpKernel, OpKernelConstruction, OpKernelContext,
                                      find_kernel, register_kernel, registered_kernels)
from graphops.registry.op_registry import get_op_def, list_ops, register_op
from graphops.registry.tensor_shape import TensorShape
from graphops.registry import op_defs  # noqa: E402  (registers the built-in op definitions)

__all__ = ["dtypes", "errors", "OpKernel", "OpKernelConstruction", "OpKernelContext",
           "find_kernel", "register_kernel", "registered_kernels", "get_op_def", "list_ops",
           "register_op", "TensorShape", "op_defs"]
