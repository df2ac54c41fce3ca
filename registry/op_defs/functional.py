"""Functional ops (TF's functional_ops.cc): run functions of the graph's library.

PartitionedCall / StatefulPartitionedCall call the function of their `f` attr; their
outputs' shapes are unknown when building, as TF's shape function says. If / StatelessIf
and While / StatelessWhile (TF 2's control flow) run branch, condition and body functions;
their outputs take the `output_shapes` attr when it is set. graphops.interchange registers
the kernels, which run the function bodies as sub-graphs.
"""

from graphops.registry.errors import InvalidArgumentError
from graphops.registry.op_registry import register_op
from graphops.registry.tensor_shape import TensorShape


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


def _declared_shapes(c, otherwise):
    """Outputs shaped by the `output_shapes` attr when it is set (TF's If/While shape fns),
    else by `otherwise(i)`."""
    shapes = c.get_attr("output_shapes")
    if not shapes:
        for i in range(c.num_outputs):
            c.set_output(i, otherwise(i))
        return
    if len(shapes) != c.num_outputs:
        raise InvalidArgumentError(
            "`output_shapes` must be the same length as num outputs "
            f"({len(shapes)} vs. {c.num_outputs}")
    for i, shape in enumerate(shapes):
        c.set_output(i, shape)


for _name, _stateful in (("If", True), ("StatelessIf", False)):
    _builder = register_op(_name) \
        .input("cond: Tcond") \
        .input("input: Tin") \
        .output("output: Tout") \
        .attr("Tcond: type") \
        .attr("Tin: list(type) >= 0") \
        .attr("Tout: list(type) >= 0") \
        .attr("then_branch: func") \
        .attr("else_branch: func") \
        .attr("output_shapes: list(shape) = []") \
        .set_shape_fn(lambda c: _declared_shapes(c, lambda i: TensorShape(None))) \
        .doc("output = cond ? then_branch(input) : else_branch(input).")
    if _stateful:
        _builder.set_is_stateful()

for _name, _stateful in (("While", True), ("StatelessWhile", False)):
    _builder = register_op(_name) \
        .input("input: T") \
        .output("output: T") \
        .attr("T: list(type) >= 0") \
        .attr("cond: func") \
        .attr("body: func") \
        .attr("output_shapes: list(shape) = []") \
        .attr("parallel_iterations: int = 10") \
        .set_shape_fn(lambda c: _declared_shapes(c, c.input)) \
        .doc("output = input; While (cond(output)) { output = body(output) }.")
    if _stateful:
        _builder.set_is_stateful()
