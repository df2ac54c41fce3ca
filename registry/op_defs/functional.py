"""Function-call ops (TF's functional_ops.cc): run a function of the graph's library.

The called function comes from the `f` attr; graphops.interchange registers the kernel,
which runs the function body as a sub-graph. The outputs' shapes are unknown when
building, as TF's shape function says.
"""

from registry.op_registry import register_op
from registry.tensor_shape import TensorShape


def _unknown_shapes(c):
    for i in range(c.num_outputs):
        c.set_output(i, TensorShape(None))


for _name, _stateful in (("PartitionedCall", False), ("StatefulPartitionedCall", True)):
    _builder = register_op(_name) \
        .input("args: Tin") \
        .output("output: Tout") \
        .attr("Tin: list(type) >= 0") \
        .attr("Tout: list(type) >= 0") \
        .attr("f: func") \
        .attr("config: string = ''") \
        .attr("config_proto: string = ''") \
        .attr("executor_type: string = ''") \
        .set_shape_fn(_unknown_shapes) \
        .doc("Calls function `f` on `args`; its outputs are `output`.")
    if _stateful:
        _builder.set_is_stateful()
