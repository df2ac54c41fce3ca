"""TF's generic N-d convolution op ``Conv``, reduced to the fixed-rank dense convs.

``Conv``'s spatial rank (2 or 3) follows from its input's rank and ``batch_dims``: the
leading ``batch_dims`` dims fold into one batch dim (none gives a batch of 1), and the
folded conv is that rank's dense forward op of ``CONV_OPS`` (Conv2D, Conv3D) with
``CHANNELS_LAST``/``CHANNELS_FIRST`` read as NHWC/NCHW (NDHWC/NCDHW) and an explicit
``groups``. The checks are TF's ``ConvOp::Compute``'s, in its order and words; where TF's
CPU kernel refuses a valid configuration (groups > 1, channels-first), graphops computes
it, and where TF's kernel crashes or misreads (3-D EXPLICIT padding, negative batch_dims,
a filter rank other than the input's) it raises the message of TF's shape function.
"""

import math
from dataclasses import dataclass

from graphops.registry.conv_family import (CONV_OPS, GENERIC_CONV, dense_forward_op,
                                           fixed_rank_format)
from graphops.registry.conv_shapes import (ConvGeometry, ConvParams, checked_params, dims_of,
                                           format_dims, make_shape, spatial_output)
from graphops.registry.errors import InvalidArgumentError


@dataclass(frozen=True)
class GenericConv:
    """A Conv node's checked configuration, as the folded fixed-rank conv."""

    params: ConvParams          # attrs in the fixed-rank op's terms (NHWC, NCDHW, ...)
    batch_shape: list           # the input's leading batch_dims dims (None where unknown)
    flat_input_shape: list      # the input with its batch dims folded into one
    geometry: ConvGeometry      # the folded conv's output shape, pads and groups

    @property
    def output_shape(self):
        """The op's output: the batch dims unfolded again."""
        return [*self.batch_shape, *self.geometry.output_shape[1:]]


def num_spatial_dims(input_rank, batch_dims):
    """The spatial rank of a ``input_rank``-d input, checked to be 2 or 3."""
    if batch_dims < 0:
        raise InvalidArgumentError("Batch dims must be non-negative.")
    spatial = input_rank - 1 - batch_dims
    if spatial not in (2, 3):
        raise InvalidArgumentError(
            f"The input must have 2 or 3 spatial dimensions but got {spatial}")
    return spatial


def generic_conv(get_attr, input_shape, filter_shape):
    """TF's ConvOp::Compute checks on a Conv node's attrs and shapes; a GenericConv.

    The input's rank must be known; unknown dims (None) and an unknown filter rank skip the
    checks that need them.
    """
    groups = get_attr("groups")
    if groups < 1:
        raise InvalidArgumentError("Groups attribute should be a positive integer")
    x, w = dims_of(input_shape), dims_of(filter_shape)
    batch_dims = get_attr("batch_dims")
    spatial = num_spatial_dims(len(x), batch_dims)
    num_dims = spatial + 2
    if w is not None:
        if 0 in w:
            raise InvalidArgumentError(
                "filter must not have zero elements (i.e. all dimensions must be non-zero)")
        if len(w) not in (4, 5):
            raise InvalidArgumentError(f"The filter must be rank 4 or 5 but got {len(w)}")
    data_format = fixed_rank_format(get_attr("data_format") == "CHANNELS_LAST", spatial)
    padding = get_attr("padding")
    params = checked_params((GENERIC_CONV, "forward"), num_dims, data_format,
                            get_attr("strides"), list(get_attr("dilations")) or [1] * num_dims,
                            padding, _explicit_paddings(padding, spatial, get_attr))
    if w is not None and len(w) != num_dims:
        raise InvalidArgumentError("Input tensor rank must be the same as filter rank.")
    w = w if w is not None else [None] * num_dims
    batch_shape = x[:batch_dims]
    batch = math.prod(batch_shape) if None not in batch_shape else None
    flat = [batch, *x[batch_dims:]]
    _, feature, spatial_dims = format_dims(data_format, num_dims)
    _check_depths(flat[feature], w[-2], w[-1], groups)
    outs, pads = spatial_output(params, [flat[d] for d in spatial_dims], w[:-2])
    geometry = ConvGeometry(make_shape(batch, outs, w[-1], data_format), pads, groups)
    return GenericConv(params, batch_shape, flat, geometry)


def _check_depths(in_depth, filter_depth, out_depth, groups):
    """TF's kernel wants equal depths; with groups, the depths TF's shape function wants."""
    if None not in (in_depth, filter_depth) and in_depth != filter_depth * groups:
        raise InvalidArgumentError(
            f"Input depth must be equal to filter depth: {in_depth} vs {filter_depth}"
            if groups == 1 else
            "Input depth divided by filter input depth does not match with groups parameter "
            f"({groups})")
    if out_depth is not None and out_depth % groups:
        raise InvalidArgumentError("Number of groups should divide output depth")


def _explicit_paddings(padding, spatial, get_attr):
    """explicit_paddings, refused with 3-D EXPLICIT padding (TF's shape function's check;
    its kernel crashes there), as the 3-D fixed-rank op has no explicit padding."""
    if padding == "EXPLICIT" and not CONV_OPS[dense_forward_op(spatial)].has_explicit:
        raise InvalidArgumentError("Explicit padding not supported for 3D Convolution")
    return list(get_attr("explicit_paddings"))
