"""graphops: TensorFlow-style dataflow graphs of registered ops, run on NumPy or CuPy.

    import graphops as gp
    x = gp.placeholder(gp.float32, [None, 3], name="x")
    y = x * 2.0 + 1.0
    with gp.Session() as sess:
        sess.run(y, feed_dict={x: [[1, 2, 3]]})

The whole public surface is exported here; docs/INTERNALS.md maps the rooms behind it.
"""

import importlib

import kernels  # noqa: F401  (registers the op definitions, then their kernels)
from registry import errors
from registry.dtypes import (DType, as_dtype, bfloat16, complex64, complex128, double,
                             float16, float32, float64, half, int8, int16, int32, int64, string,
                             uint8, uint16, uint32, uint64)
from registry.dtypes import bool_ as bool  # noqa: A001  (TF's name: gp.bool)
from registry.kernel_registry import OpKernel, register_kernel
from registry.op_registry import register_op
from registry.tensor_shape import TensorShape

from graphops.runtime import config
from graphops.runtime.devices import to_host as to_numpy   # eager GPU results -> NumPy
from graphops.building.constant_op import constant, convert_to_tensor, placeholder
from graphops.building.graph import (Graph, control_dependencies, device, get_default_graph,
                                     name_scope, reset_default_graph)
from graphops.building.scope import Scope
from graphops.building.tensor import Operation, Tensor
from graphops.client.client_session import ClientSession
from graphops.client.session import Session
from graphops import interchange  # noqa: F401  (installs Graph.as_graph_def and Graph.to_dot)
from graphops.api import io, nn, raw_ops, scope_ops as ops
from graphops.api import random_ops as random
from graphops.api.random_ops import (get_seed, random_normal, random_uniform, set_random_seed,
                                     truncated_normal)
from graphops.api import math_ops as math
from graphops.api import image_ops as image
from graphops.api.array_ops import pad
from graphops.api.math_ops import (  # noqa: A004  (abs, pow: TF's names)
    abs, add_n, argmax, argmin, cast, einsum, equal, matmul, pow, reduce_all, reduce_any,
    reduce_max, reduce_mean, reduce_min, reduce_prod, reduce_sum, sign)
from graphops.autodiff import train
from graphops.autodiff.gradients import NoGradient, NotDifferentiable, RegisterGradient, gradients
from graphops.autodiff.variables import (Variable, global_variables,
                                         global_variables_initializer, trainable_variables,
                                         variables_initializer)
from graphops.testing import checks as test

__all__ = [
    "errors", "DType", "as_dtype", "bfloat16", "bool", "complex64", "complex128", "double",
    "float16", "float32", "float64", "half", "int8", "int16", "int32", "int64", "string",
    "uint8", "uint16", "uint32", "uint64", "TensorShape",
    "OpKernel", "register_kernel", "register_op", "RegisterGradient", "NoGradient",
    "NotDifferentiable", "config", "to_numpy", "constant", "convert_to_tensor", "placeholder",
    "Graph", "control_dependencies", "device", "get_default_graph", "name_scope",
    "reset_default_graph", "Scope", "Operation", "Tensor", "ClientSession", "Session",
    "import_graph_def", "graph_def_from_json", "graph_def_to_json", "visualize", "io", "nn",
    "raw_ops", "ops", "argmax", "cast", "equal", "reduce_mean", "reduce_sum", "train",
    "math", "abs", "add_n", "argmin", "einsum", "matmul", "pow", "reduce_all", "reduce_any",
    "reduce_max", "reduce_min", "reduce_prod", "sign",
    "gradients", "Variable", "global_variables", "global_variables_initializer",
    "trainable_variables", "variables_initializer", "test", "random", "get_seed",
    "random_normal", "random_uniform", "set_random_seed", "truncated_normal",
    "image", "pad",
]

# GraphDef interchange and pictures load on first use (they pull in json, subprocess, ...).
_LAZY = {"import_graph_def": "graphops.interchange.graph_def",
         "graph_def_from_json": "graphops.interchange.graph_json",
         "graph_def_to_json": "graphops.interchange.graph_json",
         "visualize": "graphops.interchange.pictures"}


def __getattr__(name):
    if name not in _LAZY:
        raise AttributeError(f"module 'graphops' has no attribute {name!r}")
    value = globals()[name] = getattr(importlib.import_module(_LAZY[name]), name)
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
