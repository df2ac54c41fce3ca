"""Checkpoints in TF's V2 format: CRC-32C, the table format, tensor bundles, the SaveV2 /
RestoreV2 family of ops, gp.train.Saver and the checkpoint readers. TensorFlow is not
needed: tests/data/tf_checkpoint was written by TF (tests/data/make_tf_checkpoint.py)."""

import importlib.util
import os
import struct

import ml_dtypes
import numpy as np
import pytest

import graphops as gp
from graphops.interchange import crc32c as crc
from graphops.interchange import sstable, tensor_bundle
from graphops.registry import errors
from tests import paths

DATA = paths.DATA
TF_CHECKPOINT = os.path.join(DATA, "tf_checkpoint")


def _tf_expected_values():
    spec = importlib.util.spec_from_file_location(
        "make_tf_checkpoint", os.path.join(DATA, "make_tf_checkpoint.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.expected_values()


def _bitwise_crc32c(data):
    """The textbook bit-at-a-time CRC-32C: the independent reference."""
    value = 0xFFFFFFFF
    for byte in data:
        value ^= byte
        for _ in range(8):
            value = (value >> 1) ^ (0x82F63B78 if value & 1 else 0)
    return value ^ 0xFFFFFFFF


def _assert_same(actual, expected):
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    if expected.dtype == object:
        assert list(actual.reshape(-1)) == list(expected.reshape(-1))
    else:
        assert actual.tobytes() == expected.tobytes()


# ------------------------------------------------------------------------------- CRC-32C

@pytest.mark.parametrize("data, expected", [
    (b"", 0), (b"123456789", 0xE3069283), (bytes(32), 0x8A9136AA),
    (b"\xff" * 32, 0x62A8AB43), (bytes(range(32)), 0x46DD794E),
    (bytes(range(31, -1, -1)), 0x113FDB5C)])
def test_crc32c_known_vectors(data, expected):
    assert crc.crc32c(data) == expected


@pytest.mark.parametrize("size", [1, 127, 128, 129, 2047, 2048, 4099, 70001])
def test_crc32c_matches_bitwise_reference_and_extends(size):
    data = np.random.default_rng(size).integers(0, 256, size, dtype=np.uint8).tobytes()
    expected = _bitwise_crc32c(data)
    assert crc.crc32c(data) == expected
    assert crc.crc32c(np.frombuffer(data, np.uint8)) == expected
    assert crc.crc32c(data[size // 3:], crc.crc32c(data[:size // 3])) == expected


def test_crc32c_mask_matches_tf_files():
    # TF stored mask(crc32c(bytes)) = 0x173ddbc0 for the bytes whose CRC is 0x78743a5d.
    assert crc.mask(0x78743A5D) == 0x173DDBC0
    for value in (0, 1, 0xE3069283, 0xFFFFFFFF):
        assert crc.unmask(crc.mask(value)) == value
        assert crc.mask(value) != value


# ------------------------------------------------------------------------------- tables

def _items(count):
    return [(f"key/{i:05d}/{'x' * (i % 7)}".encode(), struct.pack("<I", i) * (i % 5))
            for i in range(count)]


@pytest.mark.parametrize("count, block_size, restart_interval",
                         [(0, 4096, 16), (1, 4096, 16), (3000, 300, 4), (500, 262144, 16)])
def test_table_round_trip(count, block_size, restart_interval):
    items = _items(count)
    data = sstable.build_table(items, block_size=block_size, restart_interval=restart_interval)
    assert struct.unpack("<Q", data[-8:])[0] == 0xDB4775248B80FB57
    assert sstable.read_table(data) == items


def _varints(data, count):
    values, pos = [], 0
    for _ in range(count):
        value = shift = 0
        while True:
            byte = data[pos]
            pos += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                break
        values.append(value)
    return values, pos


def test_table_blocks_have_restarts_and_prefix_compression():
    items = [(f"prefix/{i:03d}".encode(), b"v") for i in range(40)]
    data = sstable.build_table(items, block_size=1 << 20, restart_interval=4)
    (metaindex_offset, _, _, _), _ = _varints(data[-48:], 4)
    block = data[:metaindex_offset - 5]             # the one data block, without its trailer
    assert data[metaindex_offset - 5] == 0         # compression type: none
    num_restarts = struct.unpack("<I", block[-4:])[0]
    restarts = struct.unpack(f"<{num_restarts}I", block[-4 - 4 * num_restarts:-4])
    assert num_restarts == 10 and restarts[0] == 0
    for offset in restarts:                         # a restart entry shares no prefix
        (shared, unshared, _), _ = _varints(block[offset:], 3)
        assert (shared, unshared) == (0, len(items[0][0]))
    (shared, unshared, length), header = _varints(block[restarts[0]:], 3)
    (shared, unshared, _), _ = _varints(block[header + unshared + length:], 3)
    assert (shared, unshared) == (len("prefix/00"), 1)


def test_table_matches_tf_index_bytes():
    with open(os.path.join(TF_CHECKPOINT, "model.ckpt-7.index"), "rb") as f:
        data = f.read()
    assert sstable.build_table(sstable.read_table(data)) == data


def test_table_refuses_unsorted_keys_and_corruption():
    with pytest.raises(ValueError, match="strictly increasing"):
        sstable.build_table([(b"b", b""), (b"a", b"")])
    data = bytearray(sstable.build_table(_items(10)))
    with pytest.raises(errors.DataLossError, match="too short"):
        sstable.read_table(data[:20])
    bad_magic = data[:-1] + b"\0"
    with pytest.raises(errors.DataLossError, match="magic"):
        sstable.read_table(bad_magic)
    data[5] ^= 0xFF
    with pytest.raises(errors.DataLossError, match="checksum mismatch"):
        sstable.read_table(data)


# ------------------------------------------------------------------------------- bundles

ALL_DTYPES = [
    (np.array([[1.5, -2.25]], np.float32), gp.float32),
    (np.array(3.0, np.float64), gp.float64),
    (np.array([1.0, 65504.0], np.float16), gp.float16),
    (np.array([1.0, -0.5], ml_dtypes.bfloat16), gp.bfloat16),
    (np.array([True, False]), gp.bool),
    (np.array([-1, 2], np.int8), gp.int8), (np.array([-1, 2], np.int16), gp.int16),
    (np.array([-1, 2], np.int32), gp.int32), (np.array([-1, 2**40], np.int64), gp.int64),
    (np.array([255], np.uint8), gp.uint8), (np.array([65535], np.uint16), gp.uint16),
    (np.array([2**32 - 1], np.uint32), gp.uint32), (np.array([2**63], np.uint64), gp.uint64),
    (np.array([1 + 2j], np.complex64), gp.complex64),
    (np.array([[1 - 2j]], np.complex128), gp.complex128),
    (np.array([b"ab", b"", b"\xff\x00"], dtype=object), gp.string),
    (np.zeros((0, 4), np.float32), gp.float32)]


def test_bundle_round_trip_of_every_dtype(tmp_path):
    prefix = str(tmp_path / "sub" / "ckpt")
    tensors = [(f"t{i:02d}", value, dtype) for i, (value, dtype) in enumerate(ALL_DTYPES)]
    tensor_bundle.write_bundle(prefix, tensors[::-1])
    assert sorted(os.listdir(tmp_path / "sub")) == ["ckpt.data-00000-of-00001", "ckpt.index"]
    reader = tensor_bundle.BundleReader(prefix)
    assert list(reader.entries) == [name for name, _, _ in tensors]
    for name, value, dtype in tensors:
        assert reader.dtype(name) is dtype and reader.shape(name) == list(value.shape)
        _assert_same(reader.read(name), value)


def test_bundle_data_file_holds_raw_little_endian_bytes(tmp_path):
    prefix = str(tmp_path / "ckpt")
    a, b = np.arange(5, dtype=np.int32), np.array([[1.5, 2.5]], np.float64)
    tensor_bundle.write_bundle(prefix, [("z", a, gp.int32), ("a", b, gp.float64)])
    with open(prefix + ".data-00000-of-00001", "rb") as f:
        assert f.read() == a.astype("<i4").tobytes() + b.astype("<f8").tobytes()
    entry = tensor_bundle.BundleReader(prefix).entry("a")
    assert (entry.offset, entry.size, entry.shard_id) == (20, 16, 0)
    assert crc.unmask(entry.crc32c) == _bitwise_crc32c(b.tobytes())


def test_bundle_errors(tmp_path):
    prefix = str(tmp_path / "ckpt")
    with pytest.raises(errors.InvalidArgumentError, match="^Adding duplicate key: a$"):
        tensor_bundle.write_bundle(prefix, [("a", np.zeros(1), gp.float64)] * 2)
    assert os.listdir(tmp_path) == []                    # no half-written files are left
    with pytest.raises(errors.NotFoundError, match="Failed to find any matching files for "):
        tensor_bundle.BundleReader(prefix)
    tensor_bundle.write_bundle(prefix, [("a", np.arange(4.0), gp.float64)])
    reader = tensor_bundle.BundleReader(prefix)
    with pytest.raises(errors.NotFoundError, match="^Key b not found in checkpoint$"):
        reader.read("b")
    with open(prefix + ".data-00000-of-00001", "r+b") as f:
        f.seek(3)
        f.write(b"\x01")
    with pytest.raises(errors.DataLossError, match="Checksum does not match"):
        reader.read("a")


def test_merge_bundles(tmp_path):
    parts = [str(tmp_path / "tmp" / f"part-{i}") for i in range(2)]
    tensor_bundle.write_bundle(parts[0], [("b", np.arange(3), gp.int64)])
    tensor_bundle.write_bundle(parts[1], [("a", np.array([b"s"], dtype=object), gp.string)])
    merged = str(tmp_path / "merged")
    tensor_bundle.merge_bundles(parts, merged)
    assert sorted(os.listdir(tmp_path)) == ["merged.data-00000-of-00002",
                                            "merged.data-00001-of-00002", "merged.index"]
    reader = tensor_bundle.BundleReader(merged)
    assert reader.entry("a").shard_id == 1 and reader.header.num_shards == 2
    _assert_same(reader.read("b"), np.arange(3))
    _assert_same(reader.read("a"), np.array([b"s"], dtype=object))
    with pytest.raises(errors.InvalidArgumentError, match="allow_missing_files was set to false"):
        tensor_bundle.merge_bundles(parts, merged)


# ------------------------------------------------------------------------------- ops

def _run(fetches, feed_dict=None):
    with gp.Session() as sess:
        return sess.run(fetches, feed_dict)


def test_save_v2_and_restore_v2_ops(tmp_path):
    prefix = str(tmp_path / "ops")
    with gp.Graph().as_default():
        save = gp.raw_ops.SaveV2(prefix=prefix, tensor_names=["x", "s"], shape_and_slices=["", ""],
                                 tensors=[gp.constant([[1, 2]], dtype=gp.int16),
                                          gp.constant([b"a", b"bc"])])
        restore = gp.raw_ops.RestoreV2(prefix=prefix, tensor_names=["s", "x"],
                                       shape_and_slices=["", ""], dtypes=[gp.string, gp.int16])
        _run(save)
        s, x = _run(restore)
    _assert_same(x, np.array([[1, 2]], np.int16))
    _assert_same(s, np.array([b"a", b"bc"], dtype=object))


def test_restore_v2_eager(tmp_path):
    prefix = str(tmp_path / "eager")
    tensor_bundle.write_bundle(prefix, [("v", np.arange(3.0, dtype=np.float32), gp.float32)])
    (value,) = gp.raw_ops.RestoreV2(prefix=prefix, tensor_names=["v"], shape_and_slices=[""],
                                    dtypes=[gp.float32])
    _assert_same(np.asarray(value), np.arange(3.0, dtype=np.float32))


@pytest.mark.parametrize("names, slices, dtypes, error, message", [
    (["nokey"], [""], [gp.float32], errors.NotFoundError,
     "Key nokey not found in checkpoint"),
    (["v"], [""], [gp.float64], errors.InvalidArgumentError,
     "tensor_name = v; expected dtype double does not equal original dtype float"),
    (["v", "w"], [""], [gp.float32, gp.float32], errors.InvalidArgumentError,
     "Dimension 0 in both shapes must be equal, but are 2 and 1"),
    (["v", "w"], ["", ""], [gp.float32], errors.InvalidArgumentError,
     "The number of shape_and_slice doesn't match tensor outputs."),
    (["v"], ["3 0,1"], [gp.float32], errors.UnimplementedError, "Slices are not supported")])
def test_restore_v2_errors(tmp_path, names, slices, dtypes, error, message):
    prefix = str(tmp_path / "ckpt")
    tensor_bundle.write_bundle(prefix, [("v", np.arange(3.0, dtype=np.float32), gp.float32)])
    with gp.Graph().as_default():
        with pytest.raises(error, match=message):
            _run(gp.raw_ops.RestoreV2(prefix=prefix, tensor_names=names,
                                      shape_and_slices=slices, dtypes=dtypes))


def test_restore_v2_missing_prefix_and_save_v2_errors(tmp_path):
    prefix = str(tmp_path / "nothere")
    with gp.Graph().as_default():
        restore = gp.raw_ops.RestoreV2(prefix=prefix, tensor_names=["v"],
                                       shape_and_slices=[""], dtypes=[gp.float32])
        with pytest.raises(errors.NotFoundError, match=(
                "Unsuccessful TensorSliceReader constructor: Failed to find any matching "
                f"files for {prefix}")):
            _run(restore)
        names = gp.placeholder(gp.string, [None])
        save = gp.raw_ops.SaveV2(prefix=prefix, tensor_names=names, shape_and_slices=[""],
                                 tensors=[gp.constant(1.0)])
        with pytest.raises(errors.InvalidArgumentError, match="Adding duplicate key: a"):
            _run(gp.raw_ops.SaveV2(prefix=prefix, tensor_names=["a", "a"],
                                   shape_and_slices=["", ""],
                                   tensors=[gp.constant(1.0), gp.constant(2.0)]))
        with pytest.raises(errors.InvalidArgumentError,
                           match="tensor_names and shape_and_slices have different number"):
            _run(save, {names: [b"a", b"b"]})
    assert not os.path.exists(tmp_path / "nothere.index")


def test_merge_and_filename_ops(tmp_path):
    with gp.Graph().as_default():
        parts = [str(tmp_path / "t" / f"p{i}") for i in range(2)]
        saves = [gp.raw_ops.SaveV2(prefix=p, tensor_names=[n], shape_and_slices=[""],
                                   tensors=[gp.constant(float(i))])
                 for i, (p, n) in enumerate(zip(parts, "ab"))]
        merge = gp.raw_ops.MergeV2Checkpoints(checkpoint_prefixes=parts,
                                              destination_prefix=str(tmp_path / "m"))
        _run(saves)
        _run(merge)
        assert not os.path.exists(tmp_path / "t")          # delete_old_dirs
        names = _run([gp.raw_ops.ShardedFilename(basename="/x/y", shard=3, num_shards=10),
                      gp.raw_ops.ShardedFilespec(basename="/x/y", num_shards=10),
                      gp.raw_ops.StringJoin(inputs=["a", gp.constant([b"b", b"c"])],
                                            separator="-"),
                      gp.raw_ops.StaticRegexFullMatch(input=gp.constant([b"s3://b", b"/t"]),
                                                      pattern="^s3://.*")])
    assert names[:2] == [b"/x/y-00003-of-00010", b"/x/y-?????-of-00010"]
    assert list(names[2]) == [b"a-b", b"a-c"] and list(names[3]) == [True, False]
    reader = gp.train.load_checkpoint(str(tmp_path / "m"))
    assert reader.get_tensor("a") == 0.0 and reader.get_tensor("b") == 1.0


# ------------------------------------------------------------------------------- Saver

def _model(values):
    """Variables named as `values`' keys, initialised to them."""
    return {name: gp.Variable(value, name=name) for name, value in values.items()}


VALUES = {"conv1/w": np.arange(6, dtype=np.float32).reshape(2, 3),
          "conv1/b": np.array([0.5, -1.5], np.float64), "step": np.array(3, np.int64)}


def test_saver_round_trip_into_a_fresh_session(tmp_path):
    with gp.Graph().as_default():
        variables = _model(VALUES)
        saver = gp.train.Saver()
        with gp.Session() as sess:
            sess.run(gp.global_variables_initializer())
            path = saver.save(sess, str(tmp_path / "model"), global_step=12)
        assert path == str(tmp_path / "model-12")
        assert sorted(os.listdir(tmp_path)) == ["checkpoint", "model-12.data-00000-of-00001",
                                                "model-12.index", "model-12.meta"]
        with gp.Session() as sess:
            saver.restore(sess, path)
            restored = sess.run(variables)
    for name, value in VALUES.items():
        _assert_same(np.asarray(restored[name]), value)
    assert gp.train.list_variables(str(tmp_path)) == [("conv1/b", [2]), ("conv1/w", [2, 3]),
                                                      ("step", [])]


def test_saver_builds_tf_nodes():
    with gp.Graph().as_default() as graph:
        _model(VALUES)
        saver = gp.train.Saver()
        saver_ops = [(op.name, op.type) for op in graph.get_operations()
                     if op.name.startswith("save/")]
    assert saver_ops == [
        ("save/filename/input", "Const"), ("save/filename", "PlaceholderWithDefault"),
        ("save/Const", "PlaceholderWithDefault"), ("save/SaveV2/tensor_names", "Const"),
        ("save/SaveV2/shape_and_slices", "Const"), ("save/SaveV2", "SaveV2"),
        ("save/control_dependency", "Identity"), ("save/RestoreV2/tensor_names", "Const"),
        ("save/RestoreV2/shape_and_slices", "Const"), ("save/RestoreV2", "RestoreV2"),
        ("save/Identity", "Identity"), ("save/AssignVariableOp", "AssignVariableOp"),
        ("save/Identity_1", "Identity"), ("save/AssignVariableOp_1", "AssignVariableOp"),
        ("save/Identity_2", "Identity"), ("save/AssignVariableOp_2", "AssignVariableOp"),
        ("save/restore_all", "NoOp")]
    assert (saver.saver_def.filename_tensor_name, saver.saver_def.save_tensor_name,
            saver.saver_def.restore_op_name) == ("save/Const:0", "save/control_dependency:0",
                                                 "save/restore_all")


def test_saver_max_to_keep_and_checkpoint_state(tmp_path):
    with gp.Graph().as_default():
        (w,) = _model({"w": np.zeros(2, np.float32)}).values()
        saver = gp.train.Saver(max_to_keep=2)
        step = w.assign_add(np.ones(2, np.float32))
        with gp.Session() as sess:
            sess.run(gp.global_variables_initializer())
            for i in range(4):
                sess.run(step)
                saver.save(sess, str(tmp_path / "ckpt"), global_step=i)
    kept = [str(tmp_path / "ckpt-2"), str(tmp_path / "ckpt-3")]
    assert saver.last_checkpoints == kept
    assert not gp.train.checkpoint_exists(str(tmp_path / "ckpt-1"))
    assert sorted(os.listdir(tmp_path)) == ["checkpoint"] + [
        f"ckpt-{i}{suffix}" for i in (2, 3)
        for suffix in (".data-00000-of-00001", ".index", ".meta")]
    assert gp.train.latest_checkpoint(str(tmp_path)) == kept[-1]
    with open(tmp_path / "checkpoint") as f:
        assert f.read() == (f'model_checkpoint_path: "{kept[1]}"\n'
                            f'all_model_checkpoint_paths: "{kept[0]}"\n'
                            f'all_model_checkpoint_paths: "{kept[1]}"\n')
    state = gp.train.get_checkpoint_state(str(tmp_path))
    assert list(state.all_model_checkpoint_paths) == kept
    np.testing.assert_array_equal(gp.train.load_variable(str(tmp_path), "w:0"), [4, 4])


def test_saver_relative_save_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with gp.Graph().as_default():
        _model({"w": np.ones(2, np.float32)})
        saver = gp.train.Saver()
        with gp.Session() as sess:
            sess.run(gp.global_variables_initializer())
            assert saver.save(sess, "model", global_step=np.int64(4)) == "model-4"
    with open("checkpoint") as f:
        assert f.read() == 'model_checkpoint_path: "model-4"\nall_model_checkpoint_paths: "model-4"\n'
    assert gp.train.latest_checkpoint(".") == os.path.join(".", "model-4")


def test_saver_var_list_dict_sharded_and_padded_steps(tmp_path):
    with gp.Graph().as_default():
        variables = _model(VALUES)
        saver = gp.train.Saver({"renamed": variables["conv1/w"]}, sharded=True,
                               pad_step_number=True, save_relative_paths=True)
        with gp.Session() as sess:
            sess.run(gp.global_variables_initializer())
            step = gp.Variable(np.int64(5), name="global_step")
            sess.run(step.initializer)
            path = saver.save(sess, str(tmp_path / "m"), global_step=step,
                              write_meta_graph=False)
        assert path == str(tmp_path / "m-00000005")
        assert sorted(os.listdir(tmp_path)) == ["checkpoint", "m-00000005.data-00000-of-00001",
                                                "m-00000005.index"]
        with open(tmp_path / "checkpoint") as f:
            assert f.readline() == 'model_checkpoint_path: "m-00000005"\n'
        reader = gp.train.NewCheckpointReader(path)
        assert reader.get_variable_to_shape_map() == {"renamed": [2, 3]}
        assert reader.get_variable_to_dtype_map() == {"renamed": gp.float32}
        with gp.Session() as sess:
            saver.restore(sess, gp.train.latest_checkpoint(str(tmp_path)))
            _assert_same(sess.run(variables["conv1/w"]), VALUES["conv1/w"])


def test_saver_errors(tmp_path):
    with gp.Graph().as_default():
        with pytest.raises(ValueError, match="^No variables to save$"):
            gp.train.Saver()
        assert gp.train.Saver(allow_empty=True).save(gp.Session(), str(tmp_path / "x")) is None
        variables = _model(VALUES)
        with pytest.raises(ValueError, match="build cannot be deferred"):
            gp.train.Saver([variables["step"]], defer_build=True)
        with pytest.raises(ValueError, match="At least two variables have the same name: step"):
            gp.train.Saver([variables["step"], variables["step"]])
        saver = gp.train.Saver([variables["step"]])
        with gp.Session() as sess:
            with pytest.raises(ValueError, match=(
                    "^The passed save_path is not a valid checkpoint: "
                    f"{tmp_path / 'none'}$")):
                saver.restore(sess, str(tmp_path / "none"))
            with pytest.raises(ValueError, match="Can't load save_path when it is None."):
                saver.restore(sess, None)
            with pytest.raises(TypeError, match="'sess' must be a Session"):
                saver.save(object(), str(tmp_path / "x"))
            with pytest.raises(ValueError, match="must not contain path components"):
                saver.save(sess, str(tmp_path / "x"), latest_filename="a/b")
        tensor_bundle.write_bundle(str(tmp_path / "other"),
                                   [("w", np.zeros(1, np.float32), gp.float32),
                                    ("step", np.zeros(1, np.float32), gp.float32)])
        with gp.Session() as sess:
            with pytest.raises(errors.InvalidArgumentError, match=(
                    "^Restoring from checkpoint failed. This is most likely due to a mismatch "
                    "between the current graph and the graph from the checkpoint(.|\n)*"
                    "tensor_name = step; expected dtype int64 does not equal original "
                    "dtype float")):
                saver.restore(sess, str(tmp_path / "other"))
            tensor_bundle.write_bundle(str(tmp_path / "wide"),
                                       [("conv1/b", np.zeros(3), gp.float64)])
            sess.run(variables["conv1/b"].initializer)
            with pytest.raises(errors.InvalidArgumentError, match=(
                    "^Restoring from checkpoint failed(.|\n)*Trying to assign to variable "
                    "with tensor with wrong shape. Expected \\[2\\] got \\[3\\]")):
                gp.train.Saver([variables["conv1/b"]]).restore(sess, str(tmp_path / "wide"))
            missing = gp.train.Saver([variables["conv1/b"]])
            with pytest.raises(errors.NotFoundError, match=(
                    "due to a Variable name or other graph key that is missing from the "
                    "checkpoint(.|\n)*Key conv1/b not found in checkpoint")):
                missing.restore(sess, str(tmp_path / "other"))
    with pytest.raises(ValueError, match="Couldn't find 'checkpoint' file or checkpoints"):
        gp.train.load_checkpoint(str(tmp_path))
    assert gp.train.latest_checkpoint(str(tmp_path / "nodir")) is None
    assert gp.train.get_checkpoint_state(str(tmp_path)) is None


@pytest.mark.parametrize("sharded", [False, True])
def test_saver_with_variables_on_the_gpu(tmp_path, gpu, sharded):
    values = {"w": VALUES["conv1/w"], "b": VALUES["conv1/b"]}
    with gp.Graph().as_default():
        with gp.device("/device:GPU:0"):
            variables = _model({"w": values["w"]})
        with gp.device("/device:CPU:0"):
            variables.update(_model({"b": values["b"]}))
        saver = gp.train.Saver(sharded=sharded)        # sharded: one shard per device
        with gp.Session() as sess:
            sess.run(gp.global_variables_initializer())
            path = saver.save(sess, str(tmp_path / "gpu"), write_meta_graph=False)
            shards = 2 if sharded else 1
            assert sorted(os.listdir(tmp_path)) == ["checkpoint"] + [
                f"gpu.data-{i:05d}-of-{shards:05d}" for i in range(shards)] + ["gpu.index"]
            sess.run([v.assign(np.zeros_like(values[k])) for k, v in variables.items()])
            saver.restore(sess, path)
            restored = sess.run(variables)
    for name, value in values.items():
        _assert_same(np.asarray(restored[name]), value)


def test_import_meta_graph_restores_into_a_new_graph(tmp_path):
    with gp.Graph().as_default():
        _model(VALUES)
        saver = gp.train.Saver()
        with gp.Session() as sess:
            sess.run(gp.global_variables_initializer())
            path = saver.save(sess, str(tmp_path / "model"))
    with gp.Graph().as_default() as graph:
        restorer = gp.train.import_meta_graph(path + ".meta", import_scope="imported")
        assert restorer.saver_def.restore_op_name == "imported/save/restore_all"
        with gp.Session() as sess:
            restorer.restore(sess, path)
            value = sess.run(graph.get_tensor_by_name("imported/conv1/w/Read/ReadVariableOp:0"))
        with pytest.raises(OSError, match="does not exist"):
            gp.train.import_meta_graph(str(tmp_path / "none.meta"))
    _assert_same(value, VALUES["conv1/w"])


# ------------------------------------------------------------------------------- TF's files

def test_reads_checkpoint_written_by_tf():
    expected = _tf_expected_values()
    reader = gp.train.load_checkpoint(TF_CHECKPOINT)
    assert reader.get_variable_to_shape_map() == {k: list(v.shape) for k, v in expected.items()}
    dtypes = reader.get_variable_to_dtype_map()
    for name, value in expected.items():
        assert dtypes[name] is gp.as_dtype(value.dtype)
        _assert_same(reader.get_tensor(name), value)
    assert gp.train.latest_checkpoint(TF_CHECKPOINT) == os.path.join(TF_CHECKPOINT,
                                                                     "model.ckpt-7")


def test_restores_checkpoint_written_by_tf():
    expected = _tf_expected_values()
    with gp.Graph().as_default():
        zeros = {k: (np.full(v.shape, b"", dtype=object) if v.dtype == object
                     else np.zeros(v.shape, v.dtype)) for k, v in expected.items()}
        variables = _model(zeros)
        saver = gp.train.Saver()
        with gp.Session() as sess:
            saver.restore(sess, gp.train.latest_checkpoint(TF_CHECKPOINT))
            restored = sess.run(variables)
    for name, value in expected.items():
        _assert_same(np.asarray(restored[name]), value)
