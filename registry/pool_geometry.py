"""Pooling geometry and argument checks, written once for shape functions and kernels.

A pooling op's window (``ksize``), ``strides``, padding and data format reduce to
``PoolParams`` (spatial values only); ``output_geometry`` turns them and an input shape into
the output shape and the (before, after) pads of each spatial dim, with the kernels'
output-size formula; ``static_output_shape`` is the shape functions' version (partial
shapes, TF's stricter formula). The arithmetic and the padding checks are the conv
family's (``registry.conv_shapes``). Messages are TF's (its non-oneDNN CPU kernels).
"""

from dataclasses import dataclass, replace

from graphops.registry.conv_shapes import (check_valid_padding, format_dims, is_channels_last,
                                           spatial_explicit_pads, windowed_output_dim,
                                           windowed_output_size)
from graphops.registry.attr_values import int32_attr
from graphops.registry.errors import InvalidArgumentError, UnimplementedError
from graphops.registry.tensor_shape import TensorShape, as_shape

_DEPTH = "Pooling is not yet supported on the depth dimension."
_NON_SPATIAL = "Non-spatial pooling is not yet supported. Volunteers? :)"
_EXACTLY_ONE = ("MaxPooling supports exactly one of pooling across depth or pooling across "
                "width/height.")
_POSITIVE = "Sliding window ksize must be positive. The specified or inferred ksize is: {}"
_POSITIVE_INT32 = "ksize must be a positive int32 value, got:{}"


@dataclass(frozen=True)
class PoolOp:
    """The per-op facts: rank, which messages its kernel uses, what pools across depth."""

    num_spatial: int
    positive: str          # message for a ksize entry < 1 ({} is the ksize or the entry)
    depth: str = None      # Unimplemented message for a depth window; None: pools across it
    depth_stride: bool = True    # a depth stride alone is refused too
    exactly_one: bool = False    # a depth window with a spatial one: TF's "exactly one" error
    static: str = "MaxPool"      # the shape function's name for the op in its messages


_MAX2D = PoolOp(2, _POSITIVE, depth_stride=False, exactly_one=True)
_GRAD2D = PoolOp(2, _POSITIVE, "MaxPoolingGrad is not yet supported on the depth dimension.")
_GRADGRAD2D = PoolOp(2, _POSITIVE,
                     "MaxPoolingGradGrad is not yet supported on the depth dimension.")
_V2 = "Sliding window ksize must be positive."      # the V2 kernels name no ksize
_ARGMAX = PoolOp(2, _POSITIVE_INT32, _DEPTH)
_3D = PoolOp(3, "Sliding window ksize field must have non-negative dimensions", _DEPTH,
             static="Pool3D")
POOL_OPS = {
    "MaxPool": _MAX2D, "MaxPoolV2": replace(_MAX2D, positive=_V2),
    "AvgPool": PoolOp(2, _POSITIVE_INT32, _NON_SPATIAL, depth_stride=False, exactly_one=True,
                      static="AvgPool"),
    "MaxPoolWithArgmax": _ARGMAX, "MaxPoolGradWithArgmax": _ARGMAX,
    "MaxPoolGrad": _GRAD2D, "MaxPoolGradV2": replace(_GRAD2D, positive=_V2),
    "AvgPoolGrad": PoolOp(2, _POSITIVE, _NON_SPATIAL, static="AvgPool"),
    "MaxPoolGradGrad": _GRADGRAD2D, "MaxPoolGradGradV2": replace(_GRADGRAD2D, positive=_V2),
    "MaxPool3D": _3D, "AvgPool3D": _3D, "MaxPool3DGrad": _3D, "AvgPool3DGrad": _3D,
    "MaxPool3DGradGrad": PoolOp(
        3, _3D.positive, "MaxPooling3dGradGrad is not yet supported on the depth dimension.",
        static="Pool3D"),
}
# gradient ops whose shape function is their forward op's
FORWARD_OF = {"MaxPoolGradGrad": "MaxPool", "MaxPoolGradGradV2": "MaxPoolV2",
              "MaxPool3DGradGrad": "MaxPool3D"}


@dataclass(frozen=True)
class PoolParams:
    """A pooling node's validated window, reduced to the spatial dims."""

    data_format: str
    channels_last: bool
    ksize: tuple            # one per spatial dim
    strides: tuple
    padding: str
    explicit_pads: tuple    # (before, after) per spatial dim; zeros unless EXPLICIT
    depth_window: int = 1   # > 1: MaxPool across channels (spatial window 1, stride = window)


def _format(data_format, num_dims):
    """(batch, feature, spatial dims) of a data format; NCHW_VECT_C refused as on TF's CPU."""
    if data_format == "NCHW_VECT_C":
        raise InvalidArgumentError("Default MaxPoolingOp only supports NHWC on device type CPU")
    return format_dims(data_format, num_dims)


def pool_params(op_type, ksize, strides, padding, data_format, explicit_paddings=()):
    """Validates a pooling node's attrs (or V2 inputs) as TF's kernels do; -> PoolParams."""
    info = POOL_OPS[op_type]
    num_dims = info.num_spatial + 2
    ksize = [int(k) for k in int32_attr("ksize", list(ksize))]
    strides = [int(s) for s in int32_attr("strides", list(strides))]
    batch, feature, spatial = _format(data_format, num_dims)
    if len(ksize) != num_dims:
        raise InvalidArgumentError(f"Sliding window ksize field must specify {num_dims} dimensions")
    if len(strides) != num_dims:
        raise InvalidArgumentError(
            f"Sliding window stride field must specify {num_dims} dimensions")
    if ksize[batch] != 1 or strides[batch] != 1:
        raise UnimplementedError("Pooling is not yet supported on the batch dimension.")
    for k in ksize:
        if k < 1:
            raise InvalidArgumentError(info.positive.format(
                k if info.positive == _POSITIVE_INT32 else ",".join(map(str, ksize))))
    depth_window = _depth_window(info, ksize, strides, feature, spatial)
    explicit = list(explicit_paddings)
    check_valid_padding(padding, explicit, num_dims, data_format)
    pads = ((0, 0),) * info.num_spatial
    if padding == "EXPLICIT":
        pads = spatial_explicit_pads(explicit, data_format, num_dims)
        for (before, after), k, names in zip(pads, (ksize[d] for d in spatial),
                                             (("Top", "Bottom"), ("Left", "Right"))):
            for pad, name in zip((before, after), names):
                if pad >= k:
                    raise InvalidArgumentError(
                        f"{name} padding {pad} needs to be smaller than the window size {k}")
    return PoolParams(data_format, is_channels_last(data_format),
                      tuple(ksize[d] for d in spatial), tuple(strides[d] for d in spatial),
                      padding, pads, depth_window)


def _depth_window(info, ksize, strides, feature, spatial):
    """The window across channels (1 when none), or TF's refusal of one."""
    k, s = ksize[feature], strides[feature]
    if k == 1 and (s == 1 or not info.depth_stride):
        return 1
    if info.exactly_one and any(ksize[d] != 1 for d in spatial):
        raise UnimplementedError(_EXACTLY_ONE)
    if info.depth is not None:
        raise UnimplementedError(info.depth)
    if k != s:
        raise UnimplementedError(
            "Depthwise max pooling requires the depth window to equal the depth stride")
    return k


def output_geometry(params, input_shape):
    """(full output shape, (before, after) pads per spatial dim) of a pool over an input of
    ``input_shape`` (ints, layout ``params.data_format``), by the kernels' formula."""
    dims = list(input_shape)
    _, feature, spatial = format_dims(params.data_format, len(dims))
    out, pads = list(dims), []
    for d, k, s, (before, after) in zip(spatial, params.ksize, params.strides,
                                        params.explicit_pads):
        out[d], before, after = windowed_output_size(dims[d], k, 1, s, params.padding,
                                                     before, after)
        pads.append((before, after))
    if params.depth_window > 1:
        if dims[feature] % params.depth_window:
            raise UnimplementedError("Depthwise max pooling requires the depth window to "
                                     "evenly divide the input depth")
        out[feature] = dims[feature] // params.depth_window
    return out, tuple(pads)


def static_output_shape(op_type, input_shape, ksize, strides, padding, data_format,
                        explicit_paddings=()):
    """TF's pooling shape functions (MaxPoolShape, AvgPoolShape, Pool3DShape): the output
    shape of a pool over ``input_shape`` (unknown dims allowed), with their messages."""
    info = POOL_OPS[op_type]
    num_dims = info.num_spatial + 2
    int32_attr("ksize", list(ksize))
    int32_attr("strides", list(strides))
    vect_c = data_format == "NCHW_VECT_C"
    shape = as_shape(input_shape)
    rank = num_dims + 1 if vect_c else num_dims
    if shape.rank is not None and shape.rank != rank:
        raise InvalidArgumentError(f"Shape must be rank {rank} but is rank {shape.rank}")
    stride_what = "ops require the stride" if info.static == "Pool3D" else "requires the stride"
    if len(ksize) != num_dims:
        raise InvalidArgumentError(f"{info.static} requires the ksize attribute to contain "
                                   f"{num_dims} values, but got: {len(ksize)}")
    if len(strides) != num_dims:
        raise InvalidArgumentError(f"{info.static} {stride_what} attribute to contain "
                                   f"{num_dims} values, but got: {len(strides)}")
    if op_type == "MaxPoolWithArgmax":
        for k in ksize:
            if k < 1:
                raise InvalidArgumentError(_POSITIVE_INT32.format(k))
    layout = "NCHW" if vect_c else data_format
    batch, feature, spatial = format_dims(layout, num_dims)
    check_valid_padding(padding, list(explicit_paddings), num_dims, layout)
    pads = (spatial_explicit_pads(list(explicit_paddings), layout, num_dims)
            if padding == "EXPLICIT" else ((0, 0),) * info.num_spatial)
    dims = shape.dims if shape.rank is not None else [None] * rank
    out = list(dims)
    for d, (before, after) in zip(spatial, pads):
        out[d] = _static_dim(dims[d], ksize[d], strides[d], padding, before, after)
    if info.static == "MaxPool" and not vect_c:      # MaxPoolShape pools across channels
        out[feature] = _static_dim(dims[feature], ksize[feature], strides[feature], padding)
    return TensorShape(out)


def _static_dim(size, k, stride, padding, before=0, after=0):
    if k < 0:
        windowed_output_dim(size, 1, 1, stride, padding)   # the stride check alone
        return None
    return windowed_output_dim(size, k, 1, stride, padding, before, after)
