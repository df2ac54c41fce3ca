"""Image resizing ops (TF's image_ops.cc): ResizeBilinear, ResizeNearestNeighbor and their
gradients, with TF's shape functions."""

from graphops.registry.errors import InvalidArgumentError
from graphops.registry.op_defs.array import int_values
from graphops.registry.op_registry import register_op
from graphops.registry.shape_inference import with_value
from graphops.registry.tensor_shape import TensorShape, unknown_shape

RESIZE_FLAGS = ("align_corners: bool = false", "half_pixel_centers: bool = false")


def _size_dim(value):
    """TF's MakeDim on a size entry: -1 is unknown; other negatives fail (Python's check)."""
    if value == -1:
        return None
    if value < -1:
        raise InvalidArgumentError(f"Dimension {value} must be >= 0")
    return value


def _sized_image_shape(c):
    """TF's ResizeShapeFn (also ResizeNearestNeighborGrad's): [batch, size[0], size[1],
    channels] of a 4-D input; `size` is a 2-vector."""
    images = c.with_rank(c.input(0), 4)
    if images.rank is None:
        images = unknown_shape(4)
    size = c.with_rank(c.input(1), 1)
    with_value(size.dims[0], 2)
    value = c.input_value(1)
    height, width = (None, None) if value is None else map(_size_dim, int_values(value))
    c.set_output(0, TensorShape([images.dims[0], height, width, images.dims[3]]))


def _original_image_shape(c):
    """TF's ResizeBilinearGrad shape function: the original image's shape, as it is."""
    c.set_output(0, c.input(1))


def _resize_op(name, inputs, output, types, shape_fn, doc):
    builder = register_op(name)
    for spec in inputs:
        builder = builder.input(spec)
    builder = builder.output(output).attr(f"T: {{{types}}}")
    for flag in RESIZE_FLAGS:
        builder = builder.attr(flag)
    builder.set_shape_fn(shape_fn).doc(doc)


_RESIZE_INPUTS = ("images: T", "size: int32")
# TF lists bfloat16 twice for ResizeBilinear; kept, since the order shows in messages.
_resize_op("ResizeBilinear", _RESIZE_INPUTS, "resized_images: float",
           "int8, uint8, int16, uint16, int32, int64, bfloat16, half, float, double, bfloat16",
           _sized_image_shape,
           "Resizes images to `size` by bilinear interpolation; the result is float32.")
_resize_op("ResizeNearestNeighbor", _RESIZE_INPUTS, "resized_images: T",
           "int8, uint8, int16, uint16, int32, int64, half, float, double, bfloat16",
           _sized_image_shape, "Resizes images to `size` by nearest-neighbour sampling.")
_resize_op("ResizeBilinearGrad", ("grads: float", "original_image: T"), "output: T",
           "float, bfloat16, half, double", _original_image_shape,
           "The gradient of ResizeBilinear with respect to its images.")
_resize_op("ResizeNearestNeighborGrad", ("grads: T", "size: int32"), "output: T",
           "uint8, int8, int32, half, float, double, bfloat16", _sized_image_shape,
           "The gradient of ResizeNearestNeighbor: grads summed onto the original `size`.")
