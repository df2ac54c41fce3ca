"""Element-wise op definitions TF1's math wrappers need beyond `math.py`: FloorDiv, Rint,
the logical ops, the float predicates IsNan/IsInf/IsFinite, and ClipByValue."""

from graphops.registry.op_registry import register_op
from graphops.registry.op_defs.math import _broadcast_binary_shape, _unchanged

_DIV = ("{bfloat16, half, float, double, uint8, int8, uint16, int16, int32, uint32, uint64, "
        "int64, complex64, complex128}")
_REAL_FLOATS = "{bfloat16, half, float, double}"

register_op("FloorDiv") \
    .input("x: T") \
    .input("y: T") \
    .output("z: T") \
    .attr(f"T: {_DIV}") \
    .set_shape_fn(_broadcast_binary_shape) \
    .doc("Returns x // y element-wise (the floor of the quotient).")

for _name, _doc in (("LogicalAnd", "Returns the truth value of x AND y element-wise."),
                    ("LogicalOr", "Returns the truth value of x OR y element-wise.")):
    register_op(_name) \
        .input("x: bool") \
        .input("y: bool") \
        .output("z: bool") \
        .set_is_commutative() \
        .set_shape_fn(_broadcast_binary_shape) \
        .doc(_doc)

register_op("LogicalNot") \
    .input("x: bool") \
    .output("y: bool") \
    .set_shape_fn(_unchanged) \
    .doc("Returns the truth value of `NOT x` element-wise.")

register_op("Rint") \
    .input("x: T") \
    .output("y: T") \
    .attr(f"T: {_REAL_FLOATS}") \
    .set_shape_fn(_unchanged) \
    .doc("Returns the element-wise integer closest to x (halves to even).")

for _name, _what in (("IsNan", "NaN"), ("IsInf", "Inf"), ("IsFinite", "finite")):
    register_op(_name) \
        .input("x: T") \
        .output("y: bool") \
        .attr(f"T: {_REAL_FLOATS}") \
        .set_shape_fn(_unchanged) \
        .doc(f"Returns which elements of x are {_what}.")

register_op("ClipByValue") \
    .input("t: T") \
    .input("clip_value_min: T") \
    .input("clip_value_max: T") \
    .output("output: T") \
    .attr("T: numbertype") \
    .set_shape_fn(_unchanged) \
    .doc("Clips tensor values to [clip_value_min, clip_value_max]; the bounds are scalars or "
         "have t's shape.")
