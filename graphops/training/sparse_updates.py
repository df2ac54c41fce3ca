"""Row-wise reads and updates of resource variables (TF's ResourceVariable.sparse_read and
scatter_* methods), the nodes `Variable`'s methods of those names build."""

from graphops.api import raw_ops
from graphops.building.constant_op import convert_to_tensor
from graphops.building.indexed_slices import IndexedSlices
from graphops.registry.tensor_shape import TensorShape


def sparse_read(var, indices, name=None):
    """TF's sparse_read: a ResourceGather of the rows `indices` (named "Gather" or `name`)."""
    graph = var.graph
    with graph.as_default():
        with graph.name_scope("Gather" if name is None else name) as scope:
            indices = convert_to_tensor(indices)
            value = raw_ops.ResourceGather(resource=var.handle, indices=indices,
                                           dtype=var.dtype, name=scope)
            if var.shape.rank is not None and indices.shape.rank is not None:
                value.set_shape(indices.shape.concatenate(TensorShape(var.shape.dims[1:])))
            return value


_SCATTERS = {"add": "ResourceScatterAdd", "sub": "ResourceScatterSub",
             "update": "ResourceScatterUpdate", "mul": "ResourceScatterMul",
             "div": "ResourceScatterDiv", "min": "ResourceScatterMin",
             "max": "ResourceScatterMax"}


def scatter(var, mode, sparse_delta, name=None):
    """TF's scatter_<mode>: a ResourceScatter<Mode> of `sparse_delta` (an IndexedSlices);
    returns a read of the variable made after it."""
    if not isinstance(sparse_delta, IndexedSlices):
        raise TypeError(f"Argument `sparse_delta` must be a `tf.IndexedSlices`. Received arg: "
                        f"{sparse_delta}")
    graph = var.graph
    with graph.as_default():
        values = convert_to_tensor(sparse_delta.values, dtype=var.dtype)
        update = getattr(raw_ops, _SCATTERS[mode])(
            resource=var.handle, indices=sparse_delta.indices, updates=values, name=name)
        with graph.control_dependencies([update]):
            return var.value()
