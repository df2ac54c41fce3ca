"""gp.summary against TensorFlow 2.21 (skips without it): the same graphs (op types, names,
tags), byte-identical Summary protos from the kernels, TF's error messages, and event files
that TF's summary_iterator and TensorBoard's EventAccumulator read."""

import glob
import os

import numpy as np
import pytest

import graphops as gp
from graphops.interchange.messages import GraphDef
from graphops.registry import errors

tf = pytest.importorskip("tensorflow")
tf1 = tf.compat.v1


def build_summaries(lib, x):
    """The same summaries, in graphops or TF1."""
    with lib.name_scope("outer"):
        lib.summary.scalar("loss", lib.reduce_sum(x))
        lib.summary.scalar("loss", lib.reduce_sum(x))
        lib.summary.scalar("loss", lib.reduce_sum(x), family="fam")
        lib.summary.scalar("bad name!", lib.reduce_sum(x))
    lib.summary.histogram("dist", x, family="hists")
    lib.summary.text("notes", lib.constant(["a", "b"]))
    return lib.summary.merge_all()


def summary_ops(graph):
    return [(op.name, op.type) for op in graph.get_operations()
            if "Summary" in op.type or op.name.endswith(("/tags", "/tag"))]


FEED = np.array([1.0, -2.0, 0.0, 3.5, 1e-13, 7e21], np.float32)


@pytest.fixture(scope="module")
def both():
    """(tf graph, tf merged result, gp graph, gp merged result) for FEED."""
    tg = tf.Graph()
    with tg.as_default():
        x = tf1.placeholder(tf.float32, [None], name="x")
        merged = build_summaries(tf1, x)
        with tf1.Session() as sess:
            tf_result = sess.run(merged, {x: FEED})
    gg = gp.Graph()
    with gg.as_default():
        x = gp.placeholder(gp.float32, [None], name="x")
        merged = build_summaries(gp, x)
        with gp.Session() as sess:
            gp_result = sess.run(merged, {x: FEED})
    return tg, tf_result, gg, gp_result


def test_same_summary_ops_names_and_tags(both):
    tg, _, gg, _ = both
    assert summary_ops(gg) == summary_ops(tg)


def test_same_graph_op_for_op():
    def build(lib, graph):
        with graph.as_default():
            x = lib.placeholder(lib.float32, [], name="x")
            words = lib.placeholder(lib.string, [None], name="words")
            with lib.name_scope("block"):
                lib.summary.scalar("x", x, family="f")
                lib.summary.histogram("x", x, collections=["custom"])
            lib.summary.text("words", words)
            lib.summary.merge([lib.summary.scalar("x", x)], name="m")
            lib.summary.merge_all(key="custom")
        return [(op.name, op.type, [t.name for t in op.inputs]) for op in graph.get_operations()]

    assert build(gp, gp.Graph()) == build(tf1, tf.Graph())


def test_merged_summary_is_byte_identical(both):
    _, tf_result, _, gp_result = both
    assert gp_result == tf_result


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int32, np.uint8,
                                   np.int64])
def test_kernels_match_tf_byte_for_byte(dtype):
    rng = np.random.default_rng(1)
    values = (rng.standard_normal([4, 5]) * 10.0 ** rng.integers(-3, 4, [4, 5]))
    values = np.abs(values).astype(dtype) if dtype == np.uint8 else values.astype(dtype)
    tags = np.array([[f"t{i}_{j}" for j in range(5)] for i in range(4)], dtype=object)
    for op, kwargs in [("HistogramSummary", dict(tag="h", values=values)),
                       ("ScalarSummary", dict(tags=tags, values=values)),
                       ("TensorSummaryV2", dict(tag="t", tensor=values,
                                                serialized_summary_metadata=b"\x12\x01d"))]:
        theirs = getattr(tf.raw_ops, op)(**kwargs).numpy()
        assert getattr(gp.raw_ops, op)(**kwargs).item() == theirs, op


def test_string_tensor_summary_matches_tf():
    kwargs = dict(tag="t", tensor=np.array([b"x", b"yz"], dtype=object),
                  serialized_summary_metadata=b"")
    assert gp.raw_ops.TensorSummaryV2(**kwargs).item() == \
        tf.raw_ops.TensorSummaryV2(**kwargs).numpy()


def _message(fn):
    with pytest.raises(Exception) as info:
        fn()
    text = info.value.message if isinstance(info.value, errors.OpError) else str(info.value)
    return text.splitlines()[-1].split(" [Op:")[0].split("}} ")[-1]


@pytest.mark.parametrize("op, kwargs", [
    ("ScalarSummary", dict(tags=["a", "b"], values=np.ones(3, np.float32))),
    ("ScalarSummary", dict(tags="a", values=np.ones(3, np.float32))),
    ("HistogramSummary", dict(tag=["a"], values=np.ones(3, np.float32))),
    ("HistogramSummary", dict(tag="a", values=np.array([1, np.nan, np.inf], np.float32))),
    ("HistogramSummary", dict(tag="a", values=np.array([1, np.inf, np.nan], np.float32))),
    ("TensorSummaryV2", dict(tag=["a"], tensor=1.0, serialized_summary_metadata=b"")),
    ("TensorSummaryV2", dict(tag="a", tensor=1.0, serialized_summary_metadata=[b""])),
    ("MergeSummary", dict(inputs=[b"\xff\xff"]))])
def test_errors_match_tf(op, kwargs):
    ours = _message(lambda: getattr(gp.raw_ops, op)(**kwargs))
    theirs = _message(lambda: getattr(tf.raw_ops, op)(**kwargs))
    assert ours == theirs


def test_duplicate_tag_error_matches_tf():
    s = tf.raw_ops.ScalarSummary(tags="a", values=1.0).numpy()
    inputs = [np.array(s, dtype=object)] * 2
    assert _message(lambda: gp.raw_ops.MergeSummary(inputs=inputs)) == \
        _message(lambda: tf.raw_ops.MergeSummary(inputs=inputs))


def _event_file(logdir):
    (path,) = glob.glob(os.path.join(str(logdir), "events.out.tfevents.*"))
    return path


@pytest.fixture(scope="module")
def our_logdir(both, tmp_path_factory):
    _, _, gg, gp_result = both
    logdir = tmp_path_factory.mktemp("gp_run")
    with gp.summary.FileWriter(str(logdir), gg) as writer:
        for step in (1, 2):
            writer.add_summary(gp_result, step)
        writer.add_summary(gp.Summary(value=[gp.Summary.Value(tag="lr", simple_value=0.5)]), 3)
    return logdir


def test_tensorflow_reads_our_event_file(both, our_logdir):
    _, tf_result, gg, _ = both
    events = list(tf1.train.summary_iterator(_event_file(our_logdir)))
    assert events[0].file_version == "brain.Event:2"
    graph_def = tf1.GraphDef.FromString(events[1].graph_def)
    assert [n.name for n in graph_def.node] == [op.name for op in gg.get_operations()]
    assert "_output_shapes" in graph_def.node[0].attr
    with tf.Graph().as_default():
        tf1.import_graph_def(graph_def, name="")       # TF accepts the graph
    assert [e.step for e in events[2:]] == [1, 2, 3]
    assert events[2].summary == tf1.Summary.FromString(tf_result)
    assert events[4].summary.value[0].simple_value == 0.5


def test_we_read_tensorflows_event_file(both, tmp_path):
    tg, tf_result, _, _ = both
    with tg.as_default():
        writer = tf1.summary.FileWriter(str(tmp_path), tg)
        writer.add_summary(tf_result, 5)
        writer.close()
    events = list(gp.summary.summary_iterator(_event_file(tmp_path)))
    assert events[0].file_version == "brain.Event:2"
    graph_def = GraphDef.FromString(events[1].graph_def)
    assert [n.name for n in graph_def.node] == [op.name for op in tg.get_operations()]
    summary_event = next(e for e in events if e.HasField("summary"))
    assert summary_event.step == 5
    assert summary_event.summary.SerializeToString() == tf_result


def test_tensorboard_loads_our_graph_scalars_and_histograms(our_logdir):
    event_accumulator = pytest.importorskip(
        "tensorboard.backend.event_processing.event_accumulator")
    accumulator = event_accumulator.EventAccumulator(str(our_logdir))
    accumulator.Reload()
    tags = accumulator.Tags()
    assert tags["graph"] is True
    assert set(tags["scalars"]) == {"outer/loss", "outer/loss_1", "fam/outer/fam/loss",
                                    "outer/bad_name_", "lr"}
    assert tags["histograms"] == ["hists/hists/dist"]
    total = float(np.float32(FEED.sum()))
    assert [(s.step, s.value) for s in accumulator.Scalars("outer/loss")] == [(1, total),
                                                                             (2, total)]
    histogram = accumulator.Histograms("hists/hists/dist")[0].histogram_value
    assert histogram.num == FEED.size and histogram.max == float(FEED.max())
    assert [n.name for n in accumulator.Graph().node][:1] == ["x"]
