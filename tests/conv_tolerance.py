"""How close a conv kernel's result must be to the float64 reference, per dtype."""

import ml_dtypes
import numpy as np


def assert_conv_close(got, ref, dtype, half_ulps, magnitude=None):
    """float32/float64: within 1e-4 (1e-10) of the output max, or of ``magnitude`` (the
    largest sum of |terms| of an output, where they may cancel) when given; float16/bfloat16:
    within `half_ulps` ulps-at-1.0 relative error (the final rounding), plus a small absolute
    slack."""
    assert got.dtype == np.dtype(dtype)
    assert got.shape == ref.shape
    got = got.astype(np.float64)
    scale = float(np.max(np.abs(ref), initial=0.0)) if magnitude is None else magnitude
    if np.dtype(dtype) == np.float64:
        np.testing.assert_allclose(got, ref, rtol=0, atol=1e-10 * scale + 1e-300)
    elif np.dtype(dtype) == np.float32:
        np.testing.assert_allclose(got, ref, rtol=0, atol=1e-4 * scale + 1e-30)
    else:
        ulp = float(ml_dtypes.finfo(dtype).eps)
        assert np.all(np.abs(got - ref) <= half_ulps * ulp * np.abs(ref) + 1e-5 * scale + 1e-7)
