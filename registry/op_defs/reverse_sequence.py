"""ReverseSequence (TF's array_ops.cc): along `seq_dim`, the first seq_lengths[b] entries of
each batch entry b (along `batch_dim`) reversed, the rest left as they are."""

from graphops.registry.errors import InvalidArgumentError
from graphops.registry.op_registry import register_op
from graphops.registry.tensor_shape import TensorShape, unknown_shape


def _reverse_sequence_shape(c):
    source, lengths = c.input(0), c.with_rank(c.input(1), 1)
    if source.rank is None:
        c.set_output(0, unknown_shape())
        return
    for name in ("batch_dim", "seq_dim"):
        if c.get_attr(name) < 0:
            raise InvalidArgumentError(f"Invalid {name} {c.get_attr(name)}")
        if c.get_attr(name) >= source.rank:
            raise InvalidArgumentError(f"{name} must be < input rank: {c.get_attr(name)} vs. "
                                       f"{source.rank}")
    batch_dim = c.get_attr("batch_dim")
    dims = list(source.dims)
    dims[batch_dim] = c.merge_dim(dims[batch_dim], lengths[0])
    c.set_output(0, TensorShape(dims))


register_op("ReverseSequence") \
    .input("input: T") \
    .input("seq_lengths: Tlen") \
    .output("output: T") \
    .attr("seq_dim: int") \
    .attr("batch_dim: int = 0") \
    .attr("T: type") \
    .attr("Tlen: {int32, int64} = DT_INT64") \
    .set_shape_fn(_reverse_sequence_shape) \
    .doc("Reverses variable length slices: for each b, input[b, :seq_lengths[b]] along "
         "`seq_dim` (b along `batch_dim`).")
