"""HistogramSummary's fields (`framework_kernels.summary.histogram_fields`) by the compiled
pass and by NumPy's operations against TF's rule done the slow way: values near every
bucket limit, zeros of both signs, the extremes of float64 and float32."""

import numpy as np
from hypothesis import example, given, settings, strategies as st

from graphops.framework_kernels import summary as summary_kernels
from graphops.kernels import compiled
from tests.histogram_reference import DBL_MAX, reference_histogram, reference_limits
from tests.module_settings import module_settings

_edges = st.sampled_from(reference_limits()[1:-1]).flatmap(   # a limit, or a neighbour
    lambda limit: st.sampled_from([limit, np.nextafter(limit, np.inf),
                                   np.nextafter(limit, -np.inf)]))
_values = st.lists(st.one_of(
    st.floats(allow_nan=False, allow_infinity=False), _edges,
    st.sampled_from([0.0, -0.0, 5e-324, -5e-324, DBL_MAX, -DBL_MAX])), max_size=40)


def _as_lists(fields):
    """The fields with the buckets' limits and counts as lists of floats, as the reference
    gives them."""
    return {**fields, "bucket_limit": fields["bucket_limit"].tolist(),
            "bucket": fields["bucket"].tolist()}


@settings(max_examples=150, deadline=None)
@given(_values, st.sampled_from([np.float64, np.float32]),
       st.sampled_from(["compiled", "numpy"]))
@example([0.0, -0.0], np.float64, "compiled")
@example([-0.0, 0.0, 1.0], np.float32, "numpy")
@example([0.0, -0.0, -1.0], np.float64, "numpy")
@example([-0.0, -0.0], np.float64, "numpy")
def test_histogram_fields_follow_tf_add_and_encode(values, dtype, path):
    with np.errstate(over="ignore"):
        values = np.array(values, dtype)
    finite = values[np.isfinite(values)]            # (float32 overflows to infinity)
    with module_settings(compiled, **({"usable": lambda: False} if path == "numpy" else {})):
        fields = _as_lists(summary_kernels.histogram_fields(finite, "h"))
    want = reference_histogram(finite.astype(np.float64).tolist())
    if not finite.size:
        want.update(min=DBL_MAX, max=-DBL_MAX)
    assert fields == want
    assert repr(fields) == repr(want)                  # zeros' signs too


def test_a_million_values_give_the_reference_counts():
    values = np.random.default_rng(5).standard_normal(1 << 20) * 10.0 ** np.repeat(
        np.arange(-8, 8), 1 << 16)
    fields = _as_lists(summary_kernels.histogram_fields(values, "h"))
    limits = np.array(reference_limits())
    counts = np.bincount(np.minimum(np.searchsorted(limits, values, side="right"),
                                    limits.size - 1), minlength=limits.size)
    kept = np.flatnonzero(counts)
    assert fields["num"] == values.size and sum(fields["bucket"]) == values.size
    assert set(limits[kept].tolist()) <= set(fields["bucket_limit"])
    np.testing.assert_array_equal(
        [fields["bucket"][fields["bucket_limit"].index(limit)] for limit in limits[kept]],
        counts[kept])
    assert (fields["min"], fields["max"]) == (values.min(), values.max())
    assert fields["sum"] == float(np.cumsum(values)[-1])
