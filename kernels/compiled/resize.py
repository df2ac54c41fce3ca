"""Image resizing loops (numba): the bilinear resize in one pass over the output, where NumPy
gathers the four neighbours of every output pixel into arrays of the output's size and
combines them in five more passes."""

from numba import njit, prange


@njit(cache=True, parallel=True, nogil=True)
def bilinear(image, y_lo, y_hi, y_lerp, x_lo, x_hi, x_lerp, out):
    """ResizeBilinear of float32 channels-last ``image`` [N, H, W, C] into ``out`` [N, OH,
    OW, C], as TF's compute_lerp rounds it in float32: top = tl + (tr - tl) * x_lerp and
    bottom alike, then top + (bottom - top) * y_lerp, for each output pixel's source rows
    ``y_lo``/``y_hi`` and columns ``x_lo``/``x_hi``. Parallel over output rows, each read
    through 2-D views of its two source rows; the channel loop innermost."""
    images, out_height, out_width, channels = out.shape
    for row in prange(images * out_height):
        n, oy = row // out_height, row % out_height
        upper, lower, dy = image[n, y_lo[oy]], image[n, y_hi[oy]], y_lerp[oy]
        target = out[n, oy]
        for ox in range(out_width):
            left, right, dx = x_lo[ox], x_hi[ox], x_lerp[ox]
            for c in range(channels):
                tl, tr = upper[left, c], upper[right, c]
                bl, br = lower[left, c], lower[right, c]
                top = tl + (tr - tl) * dx
                bottom = bl + (br - bl) * dx
                target[ox, c] = top + (bottom - top) * dy
