"""The op and kernel registries (imports nothing of graphops or kernels)."""

from registry import dtypes, errors
from registry.kernel_registry import (OpKernel, OpKernelConstruction, OpKernelContext,
                                      find_kernel, register_kernel, registered_kernels)
from registry.op_registry import get_op_def, list_ops, register_op
from registry.tensor_shape import TensorShape
from registry import op_defs  # noqa: E402  (registers the built-in op definitions)

__all__ = ["dtypes", "errors", "OpKernel", "OpKernelConstruction", "OpKernelContext",
           "find_kernel", "register_kernel", "registered_kernels", "get_op_def", "list_ops",
           "register_op", "TensorShape", "op_defs"]
