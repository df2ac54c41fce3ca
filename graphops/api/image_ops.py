"""TF1's ``tf.compat.v1.image`` resize wrappers (``gp.image``): resize_bilinear (float32
result for any input type) and resize_nearest_neighbor, with TF's signatures and defaults."""

from graphops.api import raw_ops


def resize_bilinear(images, size, align_corners=False, name=None, half_pixel_centers=False):
    """Bilinear resize of 4-D `images` to `size` = [height, width]."""
    return raw_ops.ResizeBilinear(images=images, size=size, align_corners=align_corners,
                                  half_pixel_centers=half_pixel_centers, name=name)


def resize_nearest_neighbor(images, size, align_corners=False, name=None,
                            half_pixel_centers=False):
    """Nearest-neighbour resize of 4-D `images` to `size` = [height, width]."""
    return raw_ops.ResizeNearestNeighbor(images=images, size=size, align_corners=align_corners,
                                         half_pixel_centers=half_pixel_centers, name=name)
