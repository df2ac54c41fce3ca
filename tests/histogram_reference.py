"""TF's summary histogram the slow, obvious way: tsl's histogram.cc default limits,
Histogram::Add for each value, then EncodeToProto(preserve_zero_buckets=false)."""

import sys

DBL_MAX = sys.float_info.max


def reference_limits():
    """TF's histogram.cc default limits, built the obvious way."""
    positive, v = [], 1.0e-12
    while v < 1.0e20:
        positive.append(v)
        v *= 1.1
    positive.append(DBL_MAX)
    return [-x for x in reversed(positive)] + [0.0] + positive


def reference_histogram(values):
    """Histogram::Add for each value, then EncodeToProto(preserve_zero_buckets=false)."""
    limits = reference_limits()
    buckets = [0.0] * len(limits)
    lo, hi, total, squares = DBL_MAX, -DBL_MAX, 0.0, 0.0
    for v in values:
        b = next((i for i, limit in enumerate(limits) if limit > v),    # upper_bound;
                 len(limits) - 1)                # DBL_MAX: the last (TF writes past it)
        buckets[b] += 1
        lo, hi = min(lo, v), max(hi, v)
        total += v
        squares += v * v
    out_limits, out_counts, i = [], [], 0
    while i < len(buckets):
        end, count = limits[i], buckets[i]
        i += 1
        if count <= 0:
            while i < len(buckets) and buckets[i] <= 0:
                end, count = limits[i], buckets[i]
                i += 1
        out_limits.append(end)
        out_counts.append(count)
    return dict(min=lo, max=hi, num=float(len(values)), sum=total, sum_squares=squares,
                bucket_limit=out_limits, bucket=out_counts)
