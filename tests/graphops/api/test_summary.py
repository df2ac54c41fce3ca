"""gp.summary without TensorFlow: the summary ops' kernels (values against slow references
of TF's rules, TF's errors), tag naming and collections, TFRecord framing and the
FileWriter round trip through our reader."""

import gc
import glob
import logging
import os
import socket
import struct
import sys
import warnings

import numpy as np
import pytest

import graphops as gp
from graphops.interchange import crc32c, event_file
from graphops.kernels import compiled
from graphops.interchange.graph_def import as_graph_def
from graphops.interchange.proto import event_pb2, summary_pb2
from graphops.building.graph_collections import GraphKeys
from graphops.registry import errors
from tests.histogram_reference import reference_histogram

# The first record of an event file TF 2.21's FileWriter wrote (filename_suffix=".sfx"):
# Event(wall_time=1795426251, file_version="brain.Event:2",
#       source_metadata.writer="tensorflow.core.util.events_writer").
TF_FIRST_RECORD = bytes.fromhex(
    "3e00000000000000d9d240e7090000c0f201c1da411a0d627261696e2e4576656e743a3252240a2274656e"
    "736f72666c6f772e636f72652e7574696c2e6576656e74735f7772697465727cb76b13")
DBL_MAX = sys.float_info.max


def parse(serialized):
    """A Summary from an op's result: bytes (Session.run) or a 0-d array (eager)."""
    return summary_pb2.Summary.FromString(np.asarray(serialized, dtype=object).item())


@pytest.fixture(params=["eager", "graph"])
def run(request):
    """`run(op, **inputs)`: the raw op eagerly, or in a Session with every input fed to a
    placeholder of unknown shape (strings as object arrays)."""
    def eager(op, **kwargs):
        return getattr(gp.raw_ops, op)(**kwargs)

    def graph(op, **kwargs):
        g, feeds = gp.Graph(), {}
        with g.as_default():
            for key, value in kwargs.items():
                values = [_array(v) for v in value] if key == "inputs" else _array(value)
                holders = [gp.placeholder(gp.as_dtype(v.dtype), None) for v in values] \
                    if key == "inputs" else gp.placeholder(gp.as_dtype(values.dtype), None)
                feeds.update(zip(holders, values) if key == "inputs" else [(holders, values)])
                kwargs[key] = holders
            out = getattr(gp.raw_ops, op)(**kwargs)
            with gp.Session() as sess:
                return sess.run(out, feeds)

    return eager if request.param == "eager" else graph


def _array(value):
    value = np.asarray(value)
    return value.astype(object) if value.dtype.kind in "SU" else value


def run_graph(build, feeds=None):
    g = gp.Graph()
    with g.as_default():
        fetch, feed_dict = build(), {}
        for name, value in (feeds or {}).items():
            feed_dict[g.get_tensor_by_name(name)] = value
        with gp.Session(graph=g) as sess:
            return sess.run(fetch, feed_dict)


# ----------------------------------------------------------------------------- TFRecord framing

def test_reader_reads_a_record_tensorflow_wrote_and_the_encoder_frames_it_identically(tmp_path):
    path = tmp_path / "tf.events"
    path.write_bytes(TF_FIRST_RECORD)
    (data,) = list(event_file.read_records(path))
    event = event_pb2.Event.FromString(data)
    assert (event.wall_time, event.file_version) == (1795426251.0, "brain.Event:2")
    assert event.source_metadata.writer == "tensorflow.core.util.events_writer"
    assert event_file.encode_record(data) == TF_FIRST_RECORD


def test_record_layout():
    data = b"payload bytes"
    record = event_file.encode_record(data)
    length, length_crc = struct.unpack("<QI", record[:12])
    assert length == len(data) and record[12:12 + len(data)] == data
    assert length_crc == crc32c.mask(crc32c.crc32c(record[:8]))
    assert struct.unpack("<I", record[-4:])[0] == crc32c.mask(crc32c.crc32c(data))


def _write(path, payloads):
    path.write_bytes(b"".join(event_file.encode_record(p) for p in payloads))


def test_records_round_trip_including_empty_and_binary_ones(tmp_path):
    payloads = [b"", b"a", bytes(range(256)) * 7, b"\x00" * 3]
    _write(tmp_path / "r", payloads)
    assert list(event_file.read_records(tmp_path / "r")) == payloads


def test_every_truncation_inside_a_record_is_data_loss(tmp_path):
    payloads = [b"first", b"second record"]
    _write(tmp_path / "full", payloads)
    full = (tmp_path / "full").read_bytes()
    first_end = 12 + 5 + 4
    for cut in range(1, len(full)):
        (tmp_path / "cut").write_bytes(full[:cut])
        if cut == first_end:
            assert list(event_file.read_records(tmp_path / "cut")) == [b"first"]
            continue
        offset = 0 if cut < first_end else first_end
        with pytest.raises(errors.DataLossError, match=f"^truncated record at {offset}$"):
            list(event_file.read_records(tmp_path / "cut"))


@pytest.mark.parametrize("position, message", [
    (3, "corrupted record at 0 (Is this even a TFRecord file?)"),     # length
    (9, "corrupted record at 0 (Is this even a TFRecord file?)"),     # length's CRC
    (14, "corrupted record at 12"),                                   # data
    (22, "corrupted record at 12")])                                  # data's CRC
def test_a_flipped_bit_is_data_loss(tmp_path, position, message):
    _write(tmp_path / "r", [b"0123456789"])
    data = bytearray((tmp_path / "r").read_bytes())
    data[position] ^= 0x10
    (tmp_path / "r").write_bytes(bytes(data))
    with pytest.raises(errors.DataLossError) as info:
        list(event_file.read_records(tmp_path / "r"))
    assert info.value.message == message


def test_corruption_in_a_later_record_names_its_offset(tmp_path):
    _write(tmp_path / "r", [b"abc", b"defg"])
    data = bytearray((tmp_path / "r").read_bytes())
    data[19 + 8] ^= 1          # second record's length CRC (the first is 12 + 3 + 4 bytes)
    (tmp_path / "r").write_bytes(bytes(data))
    with pytest.raises(errors.DataLossError, match="^corrupted record at 19$"):
        list(event_file.read_records(tmp_path / "r"))


# ----------------------------------------------------------------------------- histograms

def _histo_fields(histo):
    return dict(min=histo.min, max=histo.max, num=histo.num, sum=histo.sum,
                sum_squares=histo.sum_squares, bucket_limit=list(histo.bucket_limit),
                bucket=list(histo.bucket))


@pytest.mark.parametrize("values", [
    [1.0, -2.0, 0.0, 3.5],
    [0.0, 0.0, 1e-12, -1e-12, 1e-13, 5e19, -7e25, 1.1e-12],
    list(np.random.default_rng(0).standard_normal(300) * 10.0 ** np.arange(-6, 9, 0.05)),
    []])
def test_histogram_matches_tf_bucket_rule(run, values):
    values = np.array(values, dtype=np.float64)
    summary = parse(run("HistogramSummary", tag="h", values=values))
    (value,) = summary.value
    assert value.tag == "h"
    assert _histo_fields(value.histo) == reference_histogram(values.tolist())


@pytest.fixture(params=["compiled", "numpy"])
def histogram_path(request, monkeypatch):
    """Histograms by the compiled pass, or by NumPy's operations (where compiled loops
    cannot run)."""
    if request.param == "numpy":
        monkeypatch.setattr(compiled, "usable", lambda: False)
    return request.param


def test_empty_histogram_is_one_empty_bucket(run):
    summary = parse(run("HistogramSummary", tag="h", values=np.zeros([0, 3], np.float32)))
    histo = summary.value[0].histo
    assert list(histo.bucket_limit) == [DBL_MAX] and list(histo.bucket) == [0.0]
    assert (histo.min, histo.max, histo.num) == (DBL_MAX, -DBL_MAX, 0.0)


@pytest.mark.parametrize("dtype", [np.float16, np.int32, np.uint8, np.int64, gp.bfloat16.np_dtype])
def test_histogram_of_other_types_uses_their_values_as_doubles(run, dtype):
    values = np.array([[3, 1], [0, 250]]).astype(dtype)
    histo = parse(run("HistogramSummary", tag="h", values=values)).value[0].histo
    assert _histo_fields(histo) == reference_histogram(values.astype(np.float64).ravel().tolist())


@pytest.mark.parametrize("values, message", [
    ([1.0, np.nan, np.inf], "Nan in summary histogram for: hist"),
    ([1.0, -np.inf, np.nan], "Infinity in Histogram for: hist")])
def test_histogram_of_non_finite_values_is_tf_error(histogram_path, values, message):
    with pytest.raises(errors.InvalidArgumentError, match=message):
        run_graph(lambda: gp.raw_ops.HistogramSummary(
            tag="h", values=np.array(values, np.float32), name="hist"))


def test_histogram_tag_must_be_scalar(run):
    with pytest.raises(errors.InvalidArgumentError, match="tags must be scalar"):
        run("HistogramSummary", tag=["h"], values=np.ones(2, np.float32))


# ----------------------------------------------------------------------------- scalars and merge

def test_scalar_summary_has_one_float_value_per_tag(run):
    values = np.array([[1.5, -2.0], [1e300, 7.0]])
    summary = parse(run("ScalarSummary", tags=[["a", "b"], ["c", "d"]], values=values))
    assert [(v.tag, v.simple_value) for v in summary.value] == [
        ("a", 1.5), ("b", -2.0), ("c", float("inf")), ("d", 7.0)]     # as float32


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint8, np.float16, np.float64])
def test_scalar_summary_of_other_types(run, dtype):
    summary = parse(run("ScalarSummary", tags="x", values=np.array(3, dtype)))
    assert [(v.tag, v.simple_value) for v in summary.value] == [("x", 3.0)]


@pytest.mark.parametrize("tags, values, message", [
    (["a", "b"], [1.0, 2.0, 3.0], r"tags and values are not the same shape: \[2\] != \[3\]"),
    ("a", [1.0, 2.0], r"tags and values are not the same shape: \[\] != \[2\] \(tag 'a'\)"),
    (["a"], [[1.0]], r"not the same shape: \[1\] != \[1,1\] \(tag 'a'\)")])
def test_scalar_summary_shape_mismatch_is_tf_error(run, tags, values, message):
    with pytest.raises(errors.InvalidArgumentError, match=message + r"(\n| \[Op)"):
        run("ScalarSummary", tags=tags, values=np.array(values, np.float32))


def _scalar(tag, value):
    return summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=tag, simple_value=value)])


def test_merge_keeps_every_value_in_order(run):
    a = _scalar("a", 1.0).SerializeToString()
    b = summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag="b", simple_value=2.0),
                                   summary_pb2.Summary.Value(tag="c", simple_value=3.0)])
    untagged = summary_pb2.Summary(value=[summary_pb2.Summary.Value(simple_value=4.0)] * 2)
    inputs = [np.array([a], dtype=object), np.array(b.SerializeToString(), dtype=object),
              np.array([[untagged.SerializeToString()]], dtype=object)]
    merged = parse(run("MergeSummary", inputs=inputs))
    assert [(v.tag, v.simple_value) for v in merged.value] == [
        ("a", 1.0), ("b", 2.0), ("c", 3.0), ("", 4.0), ("", 4.0)]


def test_merge_of_a_duplicate_tag_is_tf_error(run):
    a = np.array(_scalar("loss", 1.0).SerializeToString(), dtype=object)
    with pytest.raises(errors.InvalidArgumentError,
                       match="Duplicate tag loss found in summary inputs "):
        run("MergeSummary", inputs=[a, a])


def test_merge_of_garbage_is_tf_error(run):
    with pytest.raises(errors.InvalidArgumentError,
                       match="Could not parse one of the summary inputs"):
        run("MergeSummary", inputs=[np.array(b"\xff\xff\xff", dtype=object)])


def test_tensor_summary_holds_the_tensor_and_metadata(run):
    metadata = summary_pb2.SummaryMetadata(display_name="shown")
    value = parse(run("TensorSummaryV2", tag="t", tensor=np.array([[1, 2]], np.int32),
                      serialized_summary_metadata=metadata.SerializeToString())).value[0]
    assert value.tag == "t" and value.metadata.display_name == "shown"
    assert value.tensor.dtype == gp.int32.enum and value.tensor.tensor_shape.dim[1].size == 2
    assert np.frombuffer(value.tensor.tensor_content, "<i4").tolist() == [1, 2]
    with pytest.raises(errors.InvalidArgumentError, match="tag must be scalar"):
        run("TensorSummaryV2", tag=["t"], tensor=np.ones(1), serialized_summary_metadata=b"")


# ----------------------------------------------------------------------------- the Python API

def test_tags_names_and_collections_follow_tf():
    g = gp.Graph()
    with g.as_default():
        x = gp.placeholder(gp.float32, [None], name="x")
        with gp.name_scope("outer"):
            s1 = gp.summary.scalar("loss", x[0])
            s2 = gp.summary.scalar("loss", x[0])
            s3 = gp.summary.scalar("loss", x[0], family="fam")
        h = gp.summary.histogram("weights", x, collections=["mine"])
        assert [s.op.name for s in (s1, s2, s3, h)] == [
            "outer/loss", "outer/loss_1", "outer/fam/loss", "weights"]
        assert g.get_collection(GraphKeys.SUMMARIES) == [s1, s2, s3]
        assert g.get_collection("mine") == [h]
        merged = gp.summary.merge_all()
        assert merged.op.name == "Merge/MergeSummary" and merged.op.type == "MergeSummary"
        assert gp.summary.merge([s1], name="m").op.name == "m/m"
        with gp.Session() as sess:
            out = parse(sess.run(merged, {x: [2.0, 3.0]}))
    assert [v.tag for v in out.value] == ["outer/loss", "outer/loss_1", "fam/outer/fam/loss"]
    assert s1.op.inputs[0].op.name == "outer/loss/tags"


def test_invalid_characters_are_replaced_with_tfs_log_line(caplog):
    g = gp.Graph()
    with g.as_default(), caplog.at_level(logging.INFO, logger="graphops"):
        s = gp.summary.scalar("/bad name!", gp.constant(1.0))
        f = gp.summary.scalar("x", gp.constant(1.0), family="my fam")
        with gp.Session() as sess:
            tag = parse(sess.run(f)).value[0].tag
    assert s.op.name == "bad_name_" and (f.op.name, tag) == ("my_fam/x", "my_fam/my_fam/x")
    assert "Summary name /bad name! is illegal; using bad_name_ instead." in caplog.text


def test_merge_all_without_summaries_is_none_and_eager_merge_is_refused():
    with gp.Graph().as_default():
        assert gp.summary.merge_all() is None
    with pytest.raises(RuntimeError, match="not compatible with eager execution"):
        gp.summary.merge([b""])


def test_merge_all_finds_summaries_of_the_default_graph_outside_any_block():
    gp.reset_default_graph()
    try:
        x = gp.placeholder(gp.float32, [], name="x")      # built in the default graph
        gp.summary.scalar("x", x)
        merged = gp.summary.merge_all()
        assert merged.graph is gp.get_default_graph() is x.graph
        with gp.Session(graph=x.graph) as sess:
            assert parse(sess.run(merged, {x: 2.0})).value[0].simple_value == 2.0
    finally:
        gp.reset_default_graph()


def test_summaries_run_eagerly_outside_a_graph():
    out = parse(gp.summary.scalar("acc", np.float32(0.5), family="eval"))
    assert [(v.tag, v.simple_value) for v in out.value] == [("eval/eval/acc", 0.5)]
    assert parse(gp.summary.histogram("h", np.arange(3.0))).value[0].histo.num == 3


def test_text_summary_is_for_the_text_plugin():
    g = gp.Graph()
    with g.as_default():
        t = gp.summary.text("notes", gp.constant(["hello", "world"]))
        assert t.op.type == "TensorSummaryV2"
        with gp.Session() as sess:
            value = parse(sess.run(t)).value[0]
        with pytest.raises(ValueError, match="to have dtype string, got float32"):
            gp.summary.text("bad", gp.constant(1.0))
    assert value.metadata.plugin_data.plugin_name == "text"
    assert list(value.tensor.string_val) == [b"hello", b"world"]


def test_message_classes_are_ours():
    assert gp.Summary is gp.summary.Summary is summary_pb2.Summary
    assert gp.summary.Event is event_pb2.Event
    assert gp.summary.SessionLog.START == 1
    with pytest.raises(AttributeError, match="tf.compat.v1.summary.audio is part of"):
        gp.summary.audio


# ----------------------------------------------------------------------------- FileWriter

def _events(logdir):
    (path,) = glob.glob(os.path.join(str(logdir), "events.out.tfevents.*"))
    return path, list(gp.summary.summary_iterator(path))


def test_file_writer_round_trip(tmp_path):
    logdir = tmp_path / "run" / "1"
    g = gp.Graph()
    with g.as_default():
        x = gp.placeholder(gp.float32, [None], name="x")
        gp.summary.scalar("avg", gp.reduce_mean(x))
        gp.summary.histogram("x", x)
        merged = gp.summary.merge_all()
        with gp.summary.FileWriter(str(logdir), g, filename_suffix=".v2") as writer, \
                gp.Session() as sess:
            for step in range(3):
                writer.add_summary(sess.run(merged, {x: [step, 2.0 * step]}), step)
            writer.add_summary(gp.Summary(value=[gp.Summary.Value(tag="lr", simple_value=0.1)]),
                               global_step=np.int64(9))
            writer.add_session_log(gp.SessionLog(status=gp.SessionLog.STOP), 10)
            assert writer.get_logdir() == str(logdir)
    path, events = _events(logdir)
    name = os.path.basename(path)
    stamp = name.split(".")[3]
    assert name == f"events.out.tfevents.{stamp}.{socket.gethostname()}.v2" and len(stamp) == 10
    assert events[0].file_version == "brain.Event:2" and events[0].wall_time == int(stamp)
    graph_def = g.as_graph_def(add_shapes=True)
    assert events[1].graph_def == graph_def.SerializeToString()
    steps = [(e.step, [(v.tag, v.simple_value) for v in e.summary.value if v.HasField(
        "simple_value")]) for e in events[2:6]]
    assert steps == [(0, [("avg", 0.0)]), (1, [("avg", 1.5)]), (2, [("avg", 3.0)]),
                     (9, [("lr", pytest.approx(0.1))])]
    assert events[4].summary.value[1].histo.sum == 6.0
    assert events[6].step == 10 and events[6].session_log.status == gp.SessionLog.STOP
    assert all(e.wall_time >= events[0].wall_time for e in events)


def test_events_wait_for_flush_then_reach_the_disk(tmp_path):
    writer = gp.summary.FileWriter(str(tmp_path), max_queue=3, flush_secs=1000)
    assert os.listdir(tmp_path) == []            # no event yet: no file, as TF
    for step in range(2):                         # the first flushes at once, the second waits
        writer.add_summary(_scalar("s", step), step)
    path, events = _events(tmp_path)
    assert [e.step for e in events[1:]] == [0]
    writer.add_summary(_scalar("s", 2.0), 2)      # still below max_queue
    writer.add_summary(_scalar("s", 3.0), 3)      # max_queue pending: written out
    assert [e.step for e in _events(tmp_path)[1][1:]] == [0, 1, 2, 3]
    writer.add_summary(_scalar("s", 4.0), 4)
    writer.flush()
    assert [e.step for e in _events(tmp_path)[1][1:]] == [0, 1, 2, 3, 4]
    writer.close()


def test_a_forgotten_writer_still_reaches_the_disk(tmp_path):
    writer = gp.summary.FileWriter(str(tmp_path), flush_secs=1000)
    for step in range(3):
        writer.add_summary(_scalar("s", step), step)
    del writer
    gc.collect()
    assert [e.step for e in _events(tmp_path)[1][1:]] == [0, 1, 2]


def test_closed_writer_warns_and_drops_until_reopened(tmp_path):
    writer = gp.summary.FileWriter(str(tmp_path))
    writer.add_summary(_scalar("a", 1.0), 1)
    writer.close()
    with pytest.warns(UserWarning, match="Attempting to use a closed FileWriter"):
        writer.add_summary(_scalar("a", 2.0), 2)
    writer.reopen()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        writer.add_summary(_scalar("a", 3.0), 3)
        writer.close()
    steps = [e.step for path in sorted(glob.glob(str(tmp_path / "*")))
             for e in gp.summary.summary_iterator(path) if e.HasField("summary")]
    assert steps == [1, 3]


def test_summary_metadata_is_written_once_per_tag(tmp_path):
    metadata = summary_pb2.SummaryMetadata(plugin_data={"plugin_name": "text"})
    summary = summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag="t", metadata=metadata)])
    with gp.summary.FileWriter(str(tmp_path)) as writer:
        writer.add_summary(summary.SerializeToString(), 1)
        writer.add_summary(summary, 2)
    _, events = _events(tmp_path)
    assert [e.summary.value[0].HasField("metadata") for e in events[1:]] == [True, False]


def test_add_event_keeps_its_time_and_a_graph_def_dict_is_written(tmp_path):
    g = gp.Graph()
    with g.as_default():
        gp.constant(1.0, name="c")
    with gp.summary.FileWriter(str(tmp_path)) as writer:
        writer.add_event(gp.Event(wall_time=12.5, step=4, summary=_scalar("e", 1.0)))
        writer.add_graph(None, global_step=6, graph_def=as_graph_def(g))    # the dict form
    _, events = _events(tmp_path)
    assert (events[1].wall_time, events[1].step, events[1].summary.value[0].tag) == (12.5, 4, "e")
    graph_def = g.as_graph_def()
    assert events[2].step == 6 and events[2].graph_def == graph_def.SerializeToString()


def test_file_writer_refuses_what_is_not_a_graph_or_summary(tmp_path):
    with gp.summary.FileWriter(str(tmp_path)) as writer:
        with pytest.raises(TypeError, match="must be an instance of `Graph`"):
            writer.add_graph(42)
        with pytest.raises(ValueError, match="only graph, or graph_def"):
            writer.add_graph(gp.Graph(), graph_def={})
        with pytest.raises(TypeError, match="Expected a Summary protocol buffer"):
            writer.add_summary(3.5)
        with pytest.raises(errors.InvalidArgumentError, match="Could not parse a Summary"):
            writer.add_summary(b"\xff\xff")


def test_file_writer_cache_shares_one_writer_per_logdir(tmp_path):
    try:
        first = gp.summary.FileWriterCache.get(str(tmp_path))
        assert gp.summary.FileWriterCache.get(str(tmp_path)) is first
    finally:
        gp.summary.FileWriterCache.clear()
    assert first._closed


def test_summaries_of_gpu_tensors_run_on_host_copies(sim_gpu):
    g = gp.Graph()
    with g.as_default():
        x = gp.placeholder(gp.float32, [None])
        with g.device("/GPU:0"):
            doubled = x * 2.0
            merged = gp.summary.merge([gp.summary.histogram("h", doubled),
                                       gp.summary.scalar("s", doubled[0])])
        with gp.Session() as sess:
            out = parse(sess.run(merged, {x: np.array([1.0, -3.0], np.float32)}))
    assert _histo_fields(out.value[0].histo) == reference_histogram([2.0, -6.0])
    assert out.value[1].simple_value == 2.0
