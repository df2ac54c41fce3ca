"""Slow float64 references of the normalisation ops (explicit loops over channels and depth
windows) and random inputs for them, shared by the normalisation test modules."""

import math

import numpy as np

import graphops as gp

HALF_TYPES = [np.float16, gp.bfloat16.np_dtype]
HALF_TOLERANCE = {np.float16: 2e-3, gp.bfloat16.np_dtype: 2e-2}


def _channels_last(x, data_format):
    return np.moveaxis(x, 1, -1) if data_format.startswith("NC") else x


def _channels_back(x, data_format):
    return np.moveaxis(x, -1, 1) if data_format.startswith("NC") else x


def ref_batch_norm(x, scale, offset, mean, variance, epsilon=1e-4, exponential_avg_factor=1.0,
                   data_format="NHWC", is_training=True):
    """(y, batch_mean, batch_variance, reserve_space_1, reserve_space_2) in float64, one
    channel at a time."""
    last = _channels_last(np.asarray(x, np.float64), data_format)
    channels = last.shape[-1]
    y = np.empty_like(last)
    stats = np.zeros((4, channels))
    for c in range(channels):
        values = last[..., c].ravel()
        n = values.size
        if is_training:
            m = math.fsum(values) / n
            v = math.fsum((values - m) ** 2) / n
            running_m, running_v = m, v * n / max(n - 1, 1)
            if exponential_avg_factor != 1.0:
                f = exponential_avg_factor
                running_m = (1 - f) * float(mean[c]) + f * running_m
                running_v = (1 - f) * float(variance[c]) + f * running_v
            stats[:, c] = running_m, running_v, m, v
        else:
            m, v = float(mean[c]), float(variance[c])
            stats[:, c] = m, v, m, v
        y[..., c] = (last[..., c] - m) / math.sqrt(v + epsilon) * float(scale[c]) + float(offset[c])
    return [_channels_back(y, data_format)] + list(stats)


def ref_batch_norm_grad(y_backprop, x, scale, mean, variance, epsilon=1e-4, data_format="NHWC",
                        is_training=True):
    """(x_backprop, scale_backprop, offset_backprop) in float64, one channel at a time."""
    dy_last = _channels_last(np.asarray(y_backprop, np.float64), data_format)
    x_last = _channels_last(np.asarray(x, np.float64), data_format)
    dx = np.empty_like(x_last)
    channels = x_last.shape[-1]
    dscale, doffset = np.zeros(channels), np.zeros(channels)
    for c in range(channels):
        dy, centered = dy_last[..., c], x_last[..., c] - float(mean[c])
        n = dy.size
        inv = 1 / math.sqrt(float(variance[c]) + epsilon)
        doffset[c] = math.fsum(dy.ravel())
        dy_centered = math.fsum((dy * centered).ravel())
        dscale[c] = dy_centered * inv
        if is_training:
            dx[..., c] = float(scale[c]) * inv * (
                dy - doffset[c] / n - centered * dy_centered / n * inv * inv)
        else:
            dx[..., c] = float(scale[c]) * inv * dy
    return [_channels_back(dx, data_format), dscale, doffset]


def _window(d, depth, radius):
    return range(max(0, d - radius), min(depth, d + radius + 1))


def ref_lrn(x, depth_radius=5, bias=1.0, alpha=1.0, beta=0.5):
    x = np.asarray(x, np.float64)
    out = np.empty_like(x)
    depth = x.shape[-1]
    for d in range(depth):
        squares = sum(x[..., k] ** 2 for k in _window(d, depth, depth_radius))
        out[..., d] = x[..., d] / (bias + alpha * squares) ** beta
    return out


def ref_lrn_grad(grads, image, output, depth_radius=5, bias=1.0, alpha=1.0, beta=0.5):
    """TF's loop: every output j spreads its gradient over the inputs k of its window."""
    grads, image, output = (np.asarray(a, np.float64) for a in (grads, image, output))
    result = np.zeros_like(image)
    depth = image.shape[-1]
    for j in range(depth):
        window = _window(j, depth, depth_radius)
        norm = bias + alpha * sum(image[..., k] ** 2 for k in window)
        for k in window:
            d = -2 * alpha * beta * image[..., k] * output[..., j] / norm
            if k == j:
                d = d + norm ** -beta
            result[..., k] += d * grads[..., j]
    return result


def assert_close(got, want, dtype=np.float32):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    assert got.shape == want.shape
    scale = max(1.0, float(np.max(np.abs(want)))) if want.size else 1.0
    tol = HALF_TOLERANCE.get(dtype, 2e-5) * scale
    np.testing.assert_allclose(got, want, rtol=0, atol=tol, equal_nan=True)


# ----------------------------------------------------------------------------- inputs

def _x_shape(data_format, channels, rest):
    return (rest[0], channels) + tuple(rest[1:]) if data_format.startswith("NC") \
        else tuple(rest) + (channels,)


def batch_norm_inputs(rng, data_format="NHWC", channels=3, rest=(2, 3, 2), dtype=np.float32,
                      stat_dtype=np.float32):
    x = (rng.standard_normal(_x_shape(data_format, channels, rest)) * 2 + 0.5).astype(dtype)
    scale, offset, mean = (rng.standard_normal(channels).astype(stat_dtype) for _ in range(3))
    variance = (rng.random(channels) + 0.5).astype(stat_dtype)
    return {"x": x, "scale": scale, "offset": offset, "mean": mean, "variance": variance}


def grad_inputs(rng, version, data_format="NHWC", channels=3, rest=(2, 3, 2), dtype=np.float32):
    shape = _x_shape(data_format, channels, rest)
    inputs = {"y_backprop": rng.standard_normal(shape).astype(dtype),
              "x": rng.standard_normal(shape).astype(dtype),
              "scale": rng.standard_normal(channels).astype(np.float32),
              "reserve_space_1": rng.standard_normal(channels).astype(np.float32),
              "reserve_space_2": (rng.random(channels) + 0.5).astype(np.float32)}
    if version == "V3":
        inputs["reserve_space_3"] = np.zeros((), np.float32)
    return inputs
