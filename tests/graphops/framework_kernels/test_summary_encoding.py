"""The summary kernels' bytes are protobuf's: ScalarSummary byte for byte against a Summary built with the protobuf classes, and MergeSummary against protobuf's
serialization of the merged message, whether its inputs come from summary kernels (taken as
they are) or from elsewhere (parsed: unknown fields, fields out of order, garbage, duplicate
tags)."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import graphops as gp
from graphops.framework_kernels import summary as summary_kernels
from graphops.interchange.proto import summary_pb2
from graphops.registry import errors
from tests.op_runners import session_run as run

R = gp.raw_ops


def as_bytes(result):
    return np.asarray(result, dtype=object).item()


def protobuf_scalars(tags, values):
    """The reference: a Summary built with the protobuf classes, one value per tag."""
    summary = summary_pb2.Summary()
    for tag, value in zip(tags, np.asarray(values, np.float32).reshape(-1).tolist()):
        summary.value.add(tag=tag, simple_value=value)
    return summary.SerializeToString()


tags_strategy = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=200)
floats32 = st.floats(width=32, allow_nan=True, allow_infinity=True)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(tags_strategy, floats32), max_size=5), st.booleans())
def test_scalar_summary_bytes_are_protobufs(pairs, as_vector):
    tags = [t for t, _ in pairs]
    values = np.array([v for _, v in pairs], np.float32)
    if not as_vector and len(pairs) == 1:
        tags, values = tags[0], values[0]
    with gp.Graph().as_default():
        out = R.ScalarSummary(tags=np.array(tags, dtype=object), values=values)
        got = as_bytes(run(out))
    want = protobuf_scalars(np.array(tags, dtype=object).reshape(-1).tolist(), values)
    if any(np.isnan(values.reshape(-1))):        # NaN payloads: compare what parses back
        got_values = summary_pb2.Summary.FromString(got).value
        want_values = summary_pb2.Summary.FromString(want).value
        assert [v.tag for v in got_values] == [v.tag for v in want_values]
        np.testing.assert_array_equal([v.simple_value for v in got_values],
                                      [v.simple_value for v in want_values])
    else:
        assert got == want


def test_scalar_summary_of_doubles_that_overflow_float32_is_infinity():
    with gp.Graph().as_default():
        got = as_bytes(run(R.ScalarSummary(tags="big", values=np.float64(1e300))))
    assert got == protobuf_scalars(["big"], [np.inf])


def test_scalar_summary_of_a_long_tag_uses_a_multibyte_length():
    tag = "t" * 300
    with gp.Graph().as_default():
        got = as_bytes(run(R.ScalarSummary(tags=tag, values=np.float32(-0.0))))
    assert got == protobuf_scalars([tag], [-0.0])


def _values(*pairs):
    return summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=t, simple_value=v)
                                      for t, v in pairs])


def merged_reference(serialized_inputs):
    """protobuf's serialization of the Summary holding every input's values in order."""
    merged = summary_pb2.Summary()
    for data in serialized_inputs:
        merged.value.extend(summary_pb2.Summary.FromString(data).value)
    return merged.SerializeToString()


def test_merge_of_kernel_outputs_and_other_summaries_is_protobufs_merge():
    # an input no kernel made: a value's fields out of order, and a field Summary lacks
    value = summary_pb2.Summary.Value(tag="outside", simple_value=5.0).SerializeToString()
    reordered = value[-5:] + value[:-5]
    foreign = b"\n" + bytes([len(reordered)]) + reordered + b"\x10\x07"
    with gp.Graph().as_default():
        x = gp.constant(np.arange(6, dtype=np.float32).reshape(2, 3))
        parts = [R.ScalarSummary(tags=["a", "b"], values=[1.5, 2.5]),
                 R.HistogramSummary(tag="h", values=x),
                 R.TensorSummaryV2(tag="t", tensor=x, serialized_summary_metadata=b""),
                 gp.constant(np.array([foreign], dtype=object))]
        merged = R.MergeSummary(inputs=parts)
        again = R.MergeSummary(inputs=[merged, R.ScalarSummary(tags="c", values=3.0)])
        results = run(parts + [merged, again])
    inputs = [as_bytes(r) if np.ndim(r) == 0 else r[0] for r in results[:4]]
    assert as_bytes(results[4]) == merged_reference(inputs)
    tags = [v.tag for v in summary_pb2.Summary.FromString(as_bytes(results[5])).value]
    assert tags == ["a", "b", "h", "t", "outside", "c"]
    assert as_bytes(results[5]) == merged_reference([as_bytes(results[4]),
                                                     protobuf_scalars(["c"], [3.0])])


def test_merge_refuses_a_tag_seen_in_an_earlier_input_kernel_made_or_not():
    with gp.Graph().as_default():
        made = R.ScalarSummary(tags=["x", "loss"], values=[1.0, 2.0])
        fed = gp.constant(np.array(_values(("loss", 3.0)).SerializeToString(), dtype=object))
        for inputs, tag in (([made, fed], "loss"), ([fed, made], "loss"),
                            ([made, made], "x")):
            with pytest.raises(errors.InvalidArgumentError,
                               match=f"Duplicate tag {tag} found in summary inputs "):
                run(R.MergeSummary(inputs=inputs))


def test_untagged_values_may_repeat_and_garbage_is_refused():
    with gp.Graph().as_default():
        untagged = R.ScalarSummary(tags=["", ""], values=[1.0, 2.0])
        merged = as_bytes(run(R.MergeSummary(inputs=[untagged, untagged])))
        assert [v.simple_value for v in summary_pb2.Summary.FromString(merged).value] == \
            [1.0, 2.0, 1.0, 2.0]
        garbage = gp.constant(np.array(b"\n\x05ab", dtype=object))
        with pytest.raises(errors.InvalidArgumentError,
                           match="Could not parse one of the summary inputs"):
            run(R.MergeSummary(inputs=[untagged, garbage]))


def test_the_summaries_remembered_are_bounded():
    with gp.Graph().as_default():
        values = gp.placeholder(gp.float32, [])
        out = R.ScalarSummary(tags="s", values=values)
        with gp.Session() as sess:
            for k in range(600):
                sess.run(out, {values: float(k)})
    assert 0 < len(summary_kernels._made) <= 256


def reference_histogram(values):
    """TF's Histogram::Add per value, in order, then EncodeToProto without zero buckets."""
    positive, v = [], 1.0e-12
    while v < 1.0e20:
        positive.append(v)
        v *= 1.1
    limits = [-x for x in reversed(positive + [DBL_MAX])] + [0.0] + positive + [DBL_MAX]
    counts = [0.0] * len(limits)
    low, high, total, squares = DBL_MAX, -DBL_MAX, 0.0, 0.0
    with np.errstate(over="ignore", invalid="ignore"):
        for v in values:
            counts[next((i for i, limit in enumerate(limits) if limit > v),
                        len(limits) - 1)] += 1
            low, high = min(low, v), max(high, v)
            total = float(np.float64(total) + np.float64(v))
            squares = float(np.float64(squares) + np.float64(v) * np.float64(v))
    out_limits, out_counts = [], []
    for i, count in enumerate(counts):
        if count or i == len(counts) - 1 or counts[i + 1]:
            out_limits.append(limits[i])
            out_counts.append(count)
    return dict(min=low, max=high, num=float(len(values)), sum=total, sum_squares=squares,
                bucket_limit=out_limits, bucket=out_counts)


DBL_MAX = np.finfo(np.float64).max
extremes = st.sampled_from([DBL_MAX, -DBL_MAX, 1e308, -1e308, 1e150, 1e-300, 0.0, -0.0,
                            1e-12, 1.1e-12, 1e20, -1e20])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(extremes, st.floats(-1e30, 1e30)), max_size=12))
def test_histogram_is_tfs_at_the_extremes(values):
    with gp.Graph().as_default():
        got = as_bytes(run(R.HistogramSummary(tag="h", values=np.array(values, np.float64))))
    histo = summary_pb2.Summary.FromString(got).value[0].histo
    fields = dict(min=histo.min, max=histo.max, num=histo.num, sum=histo.sum,
                  sum_squares=histo.sum_squares, bucket_limit=list(histo.bucket_limit),
                  bucket=list(histo.bucket))
    want = reference_histogram(values)
    assert np.isnan(fields.pop("sum")) == np.isnan(want["sum"])
    assert np.isnan(fields.pop("sum_squares")) == np.isnan(want["sum_squares"])
    total, squares = want.pop("sum"), want.pop("sum_squares")
    assert fields == want
    if not np.isnan(total):
        assert histo.sum == total and histo.sum_squares == squares


def test_a_large_summary_is_not_remembered_but_merges_all_the_same():
    tag = "big" * 20000
    with gp.Graph().as_default():
        big = R.ScalarSummary(tags=tag, values=1.0)
        small = R.ScalarSummary(tags="small", values=2.0)
        got_big, merged = run([big, R.MergeSummary(inputs=[big, small])])
    assert as_bytes(got_big) not in summary_kernels._made
    assert as_bytes(merged) == merged_reference([as_bytes(got_big),
                                                 protobuf_scalars(["small"], [2.0])])
