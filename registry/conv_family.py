"""The convolution ops in one table: what each op computes and which family it belongs to.

Derived from it: the conv checks' per-op facts (``registry.conv_shapes``), the gradient ops'
shape functions (``registry/op_defs/conv.py``), the kernels' host-memory inputs
(``kernels/ops/conv.py``) and the gradient pairing (``graphops/autodiff/rules/conv.py``).
``tests/registry/test_conv_family.py`` checks the OpDefs against it.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class ConvOpInfo:
    """One conv op.

    A gradient op computes the gradient of its family's forward op w.r.t. the input (kind
    "input") or the filter ("filter"). It gets that tensor's shape either from a tensor of
    the shape or from an int sizes vector (``sizes_name``), which kernels keep in host memory.
    """

    family: str                     # the forward op it belongs to (itself for a forward op)
    kind: str                       # "forward", "input" or "filter"
    num_spatial: int
    depthwise: bool = False
    sizes_name: str | None = None   # "input_sizes" / "filter_sizes"; None: takes a tensor
    has_gradient: bool = True       # False: TF's DTensor-only V2 2-D gradient ops
    has_data_format: bool = True    # False: always NDHWC (the deprecated V1 3-D gradients)

    @property
    def has_explicit(self):
        """Whether it takes explicit_paddings: TF's 2-D convs do, its 3-D ones do not."""
        return self.num_spatial == 2

    @property
    def result_input(self):
        """A gradient op's input that gives its result's shape: 0 (input) or 1 (filter)."""
        return {"input": 0, "filter": 1}.get(self.kind)

    @property
    def sizes_input(self):
        """Index of the sizes vector input, or -1."""
        return -1 if self.sizes_name is None else self.result_input


_2D, _3D, _DW = "Conv2D", "Conv3D", "DepthwiseConv2dNative"

CONV_OPS = {
    "Conv2D": ConvOpInfo(_2D, "forward", 2),
    "Conv2DBackpropInput": ConvOpInfo(_2D, "input", 2, sizes_name="input_sizes"),
    "Conv2DBackpropInputV2": ConvOpInfo(_2D, "input", 2, has_gradient=False),
    "Conv2DBackpropFilter": ConvOpInfo(_2D, "filter", 2, sizes_name="filter_sizes"),
    "Conv2DBackpropFilterV2": ConvOpInfo(_2D, "filter", 2, has_gradient=False),
    "Conv3D": ConvOpInfo(_3D, "forward", 3),
    "Conv3DBackpropInput": ConvOpInfo(_3D, "input", 3, has_data_format=False),
    "Conv3DBackpropFilter": ConvOpInfo(_3D, "filter", 3, has_data_format=False),
    "Conv3DBackpropInputV2": ConvOpInfo(_3D, "input", 3, sizes_name="input_sizes"),
    "Conv3DBackpropFilterV2": ConvOpInfo(_3D, "filter", 3, sizes_name="filter_sizes"),
    "DepthwiseConv2dNative": ConvOpInfo(_DW, "forward", 2, depthwise=True),
    "DepthwiseConv2dNativeBackpropInput": ConvOpInfo(_DW, "input", 2, depthwise=True,
                                                     sizes_name="input_sizes"),
    "DepthwiseConv2dNativeBackpropFilter": ConvOpInfo(_DW, "filter", 2, depthwise=True,
                                                      sizes_name="filter_sizes"),
}


def backprop_ops(forward):
    """(input gradient op, filter gradient op) of ``forward``'s family: the ones that take a
    sizes vector, which are what the family's gradients are built from."""
    return tuple(next(op for op, info in CONV_OPS.items()
                      if info.family == forward and info.kind == kind and info.sizes_name)
                 for kind in ("input", "filter"))


# TF's generic N-d "Conv": a dense forward conv whose spatial rank (2 or 3) follows from its
# input's rank and `batch_dims`; each rank computes as that rank's dense forward op above.
GENERIC_CONV = "Conv"
GENERIC_DATA_FORMATS = ("CHANNELS_FIRST", "CHANNELS_LAST")


def dense_forward_op(num_spatial):
    """The dense (not depthwise) forward op with ``num_spatial`` spatial dims, or None."""
    return next((op for op, info in CONV_OPS.items() if info.kind == "forward"
                 and not info.depthwise and info.num_spatial == num_spatial), None)


def fixed_rank_format(channels_last, num_spatial):
    """The fixed-rank ops' data_format for a layout: NHWC, NCHW, NDHWC or NCDHW."""
    spatial = "DHW"[-num_spatial:]
    return f"N{spatial}C" if channels_last else f"NC{spatial}"
