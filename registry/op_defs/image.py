"""Image resizing ops (TF's image_ops.cc): ResizeBilinear, ResizeNearestNeighbor and their
gradients, with TF's shape functions."""

from registry.errors import InvalidArgumentError
from registry.op_defs.array import int_values
from registry.op_defs.pad import with_value
from registry.op_registry import register_op
from registry.tensor_shape import TensorShape, unknown_shape

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


def _resize_op(name, images_types, output_type, doc):
    builder = register_op(name).input("images: T").input("size: int32") \
        .output(f"resized_images: {output_type}").attr(f"T: {{{images_types}}}")
    for flag in RESIZE_FLAGS:
        builder = builder.attr(flag)
    builder.set_shape_fn(_sized_image_shape).doc(doc)


# TF lists bfloat16 twice for ResizeBilinear; kept, since the order shows in messages.
_resize_op("ResizeBilinear", "int8, uint8, int16, uint16, int32, int64, bfloat16, half, float, "
           "double, bfloat16", "float",
           "Resizes images to `size` by bilinear interpolation; the result is float32.")
_resize_op("ResizeNearestNeighbor", "int8, uint8, int16, uint16, int32, int64, half, float, "
           "double, bfloat16", "T", "Resizes images to `size` by nearest-neighbour sampling.")

_grad = register_op("ResizeBilinearGrad").input("grads: float").input("original_image: T") \
    .output("output: T").attr("T: {float, bfloat16, half, double}")
for _flag in RESIZE_FLAGS:
    _grad = _grad.attr(_flag)
_grad.set_shape_fn(_original_image_shape) \
    .doc("The gradient of ResizeBilinear with respect to its images.")

_grad = register_op("ResizeNearestNeighborGrad").input("grads: T").input("size: int32") \
    .output("output: T").attr("T: {uint8, int8, int32, half, float, double, bfloat16}")
for _flag in RESIZE_FLAGS:
    _grad = _grad.attr(_flag)
_grad.set_shape_fn(_sized_image_shape) \
    .doc("The gradient of ResizeNearestNeighbor: grads summed onto the original `size`.")
