"""The summary kernels' prepared calls in a Session's runs: ScalarSummary's template and
HistogramSummary's encoding give protobuf's own bytes (a Summary built field by field and
serialized) for any value and tag, run after run and when the tag changes; MergeSummary of
scalar inputs merges and refuses as compute does."""

import struct
import sys
import threading

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import graphops as gp
from graphops.framework_kernels import summary as summary_kernels
from graphops.interchange.proto import summary_pb2
from graphops.runtime import steps

_tags = st.one_of(st.sampled_from(["", "loss", "a/b/histogram", "x" * 200]),
                  st.text(max_size=20))


def _session(op, value_dtype, value_shape):
    """A Session running `op` on a fed tag and values, and the run."""
    graph = gp.Graph()
    with graph.as_default():
        tag = gp.placeholder(gp.string, [], name="tag")
        values = gp.placeholder(value_dtype, value_shape, name="values")
        tag_input = "tags" if op is gp.raw_ops.ScalarSummary else "tag"
        out = op(**{tag_input: tag}, values=values, name="summary")
    sess = gp.Session(graph=graph)
    return sess, lambda name, x: sess.run(out, {tag: name, values: x})


def _prepared_steps(monkeypatch):
    """The op types whose step ran a prepared call."""
    ran, real = set(), steps.HostKernelStep._prepared_outputs

    def recording(step, inputs):
        outputs = real(step, inputs)
        if outputs is not None:
            ran.add(step.op.type)
        return outputs
    monkeypatch.setattr(steps.HostKernelStep, "_prepared_outputs", recording)
    return ran


def _scalar_bytes(name, value):
    summary = summary_pb2.Summary()
    summary.value.add(tag=name, simple_value=float(value))
    return summary.SerializeToString()


_signalling_nan = np.frombuffer(struct.pack("<I", 0x7F800001), np.float32)[0]


@settings(max_examples=60, deadline=None)
@given(tags=st.lists(_tags, min_size=1, max_size=3),
       values=st.lists(st.one_of(
           st.floats(width=32), st.sampled_from([0.0, -0.0, np.inf, 3e38, -1e-45])),
           min_size=1, max_size=3))
def test_scalar_summaries_are_protobufs_bytes(tags, values):
    sess, run = _session(gp.raw_ops.ScalarSummary, gp.float32, [])
    with sess, pytest.MonkeyPatch.context() as monkeypatch:
        ran = _prepared_steps(monkeypatch)
        for name in tags:
            for value in values + [_signalling_nan]:
                value = np.float32(value)
                got = run(name, value)
                assert got == _scalar_bytes(name, value.item()), (name, value)
        assert ran == {"ScalarSummary"}


def test_scalar_summaries_of_other_types_round_to_float32():
    for dtype, value, want in ((gp.float64, 1e300, np.inf), (gp.float64, 0.1, np.float32(0.1)),
                               (gp.int64, 2**40 + 1, np.float32(2**40))):
        sess, run = _session(gp.raw_ops.ScalarSummary, dtype, [])
        with sess:
            assert run("s", np.array(value, dtype.as_numpy_dtype)) == \
                run("s", np.array(value, dtype.as_numpy_dtype)) == \
                _scalar_bytes("s", float(want))


def _histogram_bytes(name, fields):
    """protobuf's encoding of the Summary of one histogram, its fields set from lists."""
    fields = {key: value.tolist() if isinstance(value, np.ndarray) else value
              for key, value in fields.items()}
    value = summary_pb2.Summary.Value(tag=name, histo=summary_pb2.HistogramProto(**fields))
    return summary_pb2.Summary(value=[value]).SerializeToString()


@settings(max_examples=40, deadline=None)
@given(name=_tags, size=st.integers(0, 300), scale=st.sampled_from([1e-3, 1.0, 1e30]),
       seed=st.integers(0, 2**16))
def test_histogram_summaries_are_protobufs_bytes(name, size, scale, seed):
    rng = np.random.default_rng(seed)
    values = rng.standard_normal(size) * scale ** rng.uniform(-1, 1, size)
    values[:size // 5] = 0.0
    sess, run = _session(gp.raw_ops.HistogramSummary, gp.float64, [None])
    with sess, pytest.MonkeyPatch.context() as monkeypatch:
        ran = _prepared_steps(monkeypatch)
        got, again = run(name, values), run(name, values)
        assert ran == {"HistogramSummary"}
    want = _histogram_bytes(name, summary_kernels.histogram_fields(values, "summary"))
    assert got == again == want


def test_a_histogram_of_every_bucket_and_an_empty_one_are_protobufs_bytes():
    """About 1,500 kept buckets: byte lengths of two and three varint groups."""
    limits = summary_kernels.BUCKET_LIMITS[1:-1]
    sess, run = _session(gp.raw_ops.HistogramSummary, gp.float64, [None])
    lengths = []
    with sess:
        for values in (limits, np.zeros(0), -limits[::7]):
            want = _histogram_bytes("h", summary_kernels.histogram_fields(values, "summary"))
            assert run("h", values) == want
            lengths.append(len(want))
    assert lengths[0] > 1 << 14 and lengths[1] < 1 << 7


def test_merged_scalar_inputs_and_a_duplicate_tag():
    graph = gp.Graph()
    with graph.as_default():
        x = gp.placeholder(gp.float32, [], name="x")
        first = gp.summary.scalar("a", x)
        second = gp.summary.histogram("b", gp.stack([x, x * 2.0]))
        merged = gp.summary.merge([first, second])
        duplicate = gp.summary.merge([first, gp.raw_ops.ScalarSummary(tags="a", values=x)])
    with gp.Session(graph=graph) as sess, pytest.MonkeyPatch.context() as monkeypatch:
        ran = _prepared_steps(monkeypatch)
        for value in (1.5, -2.0):
            out, a, b = sess.run([merged, first, second], {x: value})
            assert out == a + b
            parsed = summary_pb2.Summary.FromString(out)
            assert [v.tag for v in parsed.value] == ["a", "b"]
        assert {"MergeSummary", "ScalarSummary", "HistogramSummary"} <= ran
        with pytest.raises(gp.errors.InvalidArgumentError,
                           match="Duplicate tag a found in summary inputs"):
            sess.run(duplicate, {x: 1.0})


def test_a_fed_tag_of_a_non_scalar_shape_is_refused_on_a_later_run():
    graph = gp.Graph()
    with graph.as_default():
        tag = gp.placeholder(gp.string, None, name="tag")
        out = gp.raw_ops.HistogramSummary(tag=tag, values=[1.0, 2.0], name="h")
    with gp.Session(graph=graph) as sess:
        assert summary_pb2.Summary.FromString(sess.run(out, {tag: "t"})).value[0].tag == "t"
        with pytest.raises(gp.errors.InvalidArgumentError, match="tags must be scalar"):
            sess.run(out, {tag: ["t", "u"]})


def test_threads_running_one_step_with_other_tags_keep_their_own():
    """Two threads feed their own tags to one Session's summaries: each output carries the
    thread's tag, though both runs share the steps' prepared calls."""
    graph = gp.Graph()
    with graph.as_default():
        tag = gp.placeholder(gp.string, [], name="tag")
        x = gp.placeholder(gp.float32, [], name="x")
        scalar = gp.raw_ops.ScalarSummary(tags=tag, values=x)
        histogram = gp.raw_ops.HistogramSummary(tag=tag, values=gp.stack([x, x]))
    wrong = []

    def work(sess, name):
        for i in range(1000):
            value = np.float32(i + 1)
            for out in sess.run([scalar, histogram], {tag: name, x: value}):
                if [v.tag for v in summary_pb2.Summary.FromString(out).value] != [name]:
                    wrong.append((name, out))
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)              # the threads take turns within the steps
    try:
        with gp.Session(graph=graph) as sess:
            threads = [threading.Thread(target=work, args=(sess, name)) for name in "ab"]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert not wrong


def test_a_non_finite_value_on_a_later_run_is_tfs_error_naming_the_node():
    sess, run = _session(gp.raw_ops.HistogramSummary, gp.float32, [2])
    with sess:
        run("h", np.float32([1, 2]))
        for bad, what in ((np.nan, "Nan in summary histogram"), (np.inf, "Infinity in Histogram")):
            with pytest.raises(gp.errors.InvalidArgumentError, match=f"{what} for: summary"):
                run("h", np.float32([1, bad]))
