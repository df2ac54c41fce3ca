"""A summary histogram in one pass (numba): every value's bucket, its least and greatest
value and the sums TF keeps, then the runs of empty buckets collapsed, as tsl's
histogram.cc adds values and encodes them (EncodeToProto, preserve_zero_buckets=false).
NumPy takes a dozen passes over the values and the ~1,500 buckets for the same."""

import math

import numpy as np
from numba import njit

_STEPS_PER_E = 1.0 / math.log(1.1)       # buckets per factor e of a value


@njit(cache=True, nogil=True)
def histogram(flat, limits, searched, counts, kept_limits, kept_counts):
    """Fills `counts` (zeros, one per limit) with how many values of `flat` fall in each
    bucket (bucket i: limits[i - 1] <= v < limits[i]; `searched` is `limits` with its last,
    DBL_MAX, as infinity), then `kept_limits` / `kept_counts` with the non-empty buckets
    and the last of each run of empty ones. Returns (how many were kept, min, max, sum,
    sum of squares, the index of the first non-finite value or -1): min and max start at
    +-DBL_MAX and the sums add in order, in float64, as TF's Histogram::Add does."""
    low, high, total, squares = limits[-1], -limits[-1], 0.0, 0.0
    first, last = counts.size, -1                # the non-empty buckets lie between
    for i in range(flat.size):
        value = np.float64(flat[i])
        if not math.isfinite(value):
            return 0, low, high, total, squares, i
        if value < low:
            low = value
        if value > high:
            high = value
        total += value
        squares += value * value
        b = _bucket(value, searched)
        counts[b] += 1.0
        first, last = min(first, b), max(last, b)
    return _collapse(limits, counts, first, last, kept_limits, kept_counts), low, high, \
        total, squares, -1


@njit(cache=True, nogil=True, inline="always")
def _bucket(value, searched):
    """The index of the first of `searched` above `value`: the limits grow by 10% from
    1e-12 on either side of the middle one (0), so the logarithm of |value| finds the
    bucket but for rounding, which the steps after it settle against the limits."""
    middle = searched.size // 2
    if value == 0.0:
        return middle + 1
    below = math.floor(math.log(abs(value) * 1e12) * _STEPS_PER_E) + 1   # limits <= |value|
    k = int(min(max(below, 0.0), float(middle)))      # (|value| * 1e12 may be infinite)
    b = min(middle + 1 + k, searched.size - 1) if value > 0 else middle - k
    while b < searched.size - 1 and searched[b] <= value:
        b += 1
    while b > 0 and searched[b - 1] > value:
        b -= 1
    return b


@njit(cache=True, nogil=True)
def _collapse(limits, counts, first, last, kept_limits, kept_counts):
    """Fills `kept_*` with the buckets EncodeToProto keeps (those of buckets first..last
    of `counts` that are not empty or end a run of empty ones, the empty run before
    `first` by its last bucket, the one after `last` by the final bucket); returns how
    many."""
    kept = 0
    for b in range(max(first - 1, 0), last + 1):
        if counts[b] != 0.0 or counts[b + 1] != 0.0:     # (counts[last] is not 0)
            kept_limits[kept], kept_counts[kept] = limits[b], counts[b]
            kept += 1
    if last < counts.size - 1:
        kept_limits[kept], kept_counts[kept] = limits[-1], 0.0
        kept += 1
    return kept
