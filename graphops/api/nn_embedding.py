"""TF1's ``tf.compat.v1.nn.embedding_lookup`` for one (unpartitioned) params tensor: a
GatherV2 of the rows `ids` names (a resource variable's ResourceGather, through its
`sparse_read`, as TF's `array_ops.gather`), then an Identity, under the scope
"embedding_lookup"; rows optionally clipped to an L2 norm of at most `max_norm`
(clip_by_norm, as TF)."""

import numpy as np

from graphops.api import raw_ops
from graphops.api.clip_ops import clip_by_norm
from graphops.api.nn_args import op_scope, static_dims
from graphops.building.values import convert_value


def embedding_lookup(params, ids, partition_strategy="mod", name=None, validate_indices=True,
                     max_norm=None):
    """The rows of `params` (a tensor, or a list holding one) at `ids`: shape
    ids.shape + params.shape[1:]. `validate_indices` is ignored, as in TF. Several
    partitions (a list of more than one tensor) are not supported here."""
    del validate_indices
    if isinstance(params, (list, tuple)):
        if not params:
            raise ValueError("Need at least one param")
        if len(params) > 1:
            raise NotImplementedError(
                "embedding_lookup over several partitioned params is not implemented in "
                "graphops; concatenate them or use gp.raw_ops.DynamicPartition/"
                "ParallelDynamicStitch")
        params = params[0]
    if partition_strategy not in ("mod", "div"):
        raise ValueError(f"Unrecognized partition strategy: {partition_strategy}")
    with op_scope(name, "embedding_lookup", [params, ids]) as scope:
        if hasattr(params, "sparse_read"):
            ids = convert_value(ids)
            rows = params.sparse_read(ids, name=scope)
        else:
            params, ids = convert_value(params), convert_value(ids)
            rows = raw_ops.GatherV2(params=params, indices=ids, axis=np.int32(0), name=scope)
        if max_norm is not None:
            rows = _clip_rows(rows, ids, max_norm)
        return raw_ops.Identity(input=rows)


def _clip_rows(rows, ids, max_norm):
    """Each embedding (the axes after ids') scaled down to an L2 norm of at most `max_norm`
    (TF's _clip: clip_by_norm over those axes)."""
    ids_rank, rows_rank = len(static_dims(ids)), len(static_dims(rows))
    return clip_by_norm(rows, max_norm, axes=list(range(ids_rank, rows_rank)))
