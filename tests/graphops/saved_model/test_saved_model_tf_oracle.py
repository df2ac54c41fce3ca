"""SavedModels both ways with TensorFlow (skipped without it): what graphops' simple_save and
SavedModelBuilder write, TF's TF1 loader loads and runs (outputs, main op, assets); what
TF writes (simple_save, SavedModelBuilder with assets and a main op, a Keras model's TF 2
export, a tf.Module's tf.saved_model.save) graphops' loader loads and runs with TF's
outputs (within 1e-5)."""

import os

import numpy as np
import pytest

import graphops as gp

tf = pytest.importorskip("tensorflow")
tf1 = tf.compat.v1

RNG = np.random.RandomState(11)
X = RNG.uniform(-1, 1, (5, 3)).astype(np.float32)
W = RNG.randn(3, 2).astype(np.float32)
B = RNG.randn(2).astype(np.float32)
IMAGES = RNG.uniform(-1, 1, (2, 6, 6, 1)).astype(np.float32)


def _model(t, asset_dir, use_resource):
    """The same graph in tf.compat.v1 or graphops: y = relu(x w + b), a flag variable the
    main op sets to 7, an asset path constant. Returns (x, y, asset, main op)."""
    x = t.placeholder(t.float32, [None, 3], name="x")
    w = t.Variable(W, name="w", use_resource=use_resource)
    b = t.Variable(B, name="b", use_resource=use_resource)
    flag = t.Variable(0, name="flag", trainable=False, use_resource=use_resource)
    y = t.nn.relu(t.matmul(x, w) + b, name="y")
    path = os.path.join(asset_dir, "vocab.txt")
    with open(path, "w") as f:
        f.write("one\ntwo\n")
    asset = t.constant(path, name="asset_path")
    return x, y, asset, t.group(flag.assign(7), name="main")


def _write(t, export_dir, asset_dir, how, use_resource):
    with t.Graph().as_default():
        x, y, asset, main_op = _model(t, asset_dir, use_resource)
        with t.Session() as sess:
            sess.run(t.global_variables_initializer())
            if how == "simple_save":
                t.add_to_collection(t.GraphKeys.ASSET_FILEPATHS, asset)
                t.saved_model.simple_save(sess, export_dir, {"x": x}, {"y": y},
                                          legacy_init_op=main_op)
                return
            sig = t.saved_model.signature_def_utils.predict_signature_def({"x": x}, {"y": y})
            builder = t.saved_model.builder.SavedModelBuilder(export_dir)
            builder.add_meta_graph_and_variables(sess, ["serve"], {"serving_default": sig},
                                                 assets_collection=[asset], main_op=main_op)
            builder.add_meta_graph(["train"], {"serving_default": sig})
            builder.save()


def _load_and_run(t, export_dir, tags=("serve",), flag="flag/Read/ReadVariableOp:0"):
    with t.Graph().as_default() as graph:
        with t.Session(graph=graph) as sess:
            meta = t.saved_model.loader.load(sess, list(tags), export_dir)
            sig = meta.signature_def["serving_default"]
            y = sess.run(sig.outputs["y"].name, {sig.inputs["x"].name: X})
            flag = sess.run(flag)
    return y, flag


@pytest.mark.parametrize("use_resource", [None, False])
@pytest.mark.parametrize("how", ["simple_save", "builder"])
@pytest.mark.parametrize("writer", ["gp", "tf"])
def test_tf1_saved_models_both_ways(tmp_path, how, writer, use_resource):
    export_dir = str(tmp_path / "model")
    (tmp_path / "src").mkdir()
    _write(gp if writer == "gp" else tf1, export_dir, str(tmp_path / "src"), how,
           use_resource)
    assert (tmp_path / "model" / "assets" / "vocab.txt").read_text() == "one\ntwo\n"
    expected = np.maximum(X @ W + B, 0)
    flag_name = "flag:0" if use_resource is False else "flag/Read/ReadVariableOp:0"
    for t in (tf1, gp):
        y, flag = _load_and_run(t, export_dir, flag=flag_name)
        np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-6)
        assert flag == 7                               # the main op ran after the restore
    if how == "builder":
        for t in (tf1, gp):
            y, _ = _load_and_run(t, export_dir, ["train"], flag_name)
            np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-6)


def _keras_export(export_dir):
    tf.keras.utils.set_random_seed(5)
    inp = tf.keras.Input((6, 6, 1))
    h = tf.keras.layers.Conv2D(3, 3, activation="relu", padding="same")(inp)
    h = tf.keras.layers.MaxPooling2D()(h)
    out = tf.keras.layers.Dense(4, activation="softmax")(tf.keras.layers.Flatten()(h))
    model = tf.keras.Model(inp, out)
    model.export(export_dir)
    return model(IMAGES).numpy()


def _module_save(export_dir):
    class Net(tf.Module):
        def __init__(self):
            super().__init__()
            self.k = tf.Variable(RNG.randn(3, 3, 1, 2).astype(np.float32), name="conv/kernel")
            self.w = tf.Variable(RNG.randn(32, 3).astype(np.float32), name="dense/kernel")

        @tf.function(input_signature=[tf.TensorSpec([None, 6, 6, 1], tf.float32)])
        def __call__(self, x):
            h = tf.nn.relu(tf.nn.conv2d(x, self.k, 1, "VALID"))
            return {"y": tf.matmul(tf.reshape(h, [-1, 32]), self.w)}

    net = Net()
    tf.saved_model.save(net, export_dir, signatures=net.__call__)
    return net(IMAGES)["y"].numpy()


@pytest.mark.parametrize("save", [_keras_export, _module_save])
def test_tf2_saved_models_load_through_the_tf1_loader(tmp_path, save):
    export_dir = str(tmp_path / "model")
    expected = save(export_dir)
    with gp.Graph().as_default() as graph, gp.Session(graph=graph) as sess:
        meta = gp.saved_model.load(sess, [gp.saved_model.SERVING], export_dir)
        sig = meta.signature_def[gp.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY]
        (x,) = sig.inputs.values()
        (y,) = sig.outputs.values()
        out = sess.run(y.name, {x.name: IMAGES})
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)


def test_keras_tf_saved_model_save_fails_alike(tmp_path):
    """Keras 3's `tf.saved_model.save(model)` restores its checkpoint into other variables
    than its serving function reads, so TF's own TF1 loader cannot run it either: both
    fail with FailedPreconditionError (`model.export` above is the form that loads)."""
    tf.keras.utils.set_random_seed(5)
    inp = tf.keras.Input((6, 6, 1))
    out = tf.keras.layers.Dense(2)(tf.keras.layers.Flatten()(inp))
    export_dir = str(tmp_path / "model")
    tf.saved_model.save(tf.keras.Model(inp, out), export_dir)
    errors = []
    for t, error in ((tf1, tf.errors.FailedPreconditionError),
                     (gp, gp.errors.FailedPreconditionError)):
        with t.Graph().as_default() as graph, t.Session(graph=graph) as sess:
            meta = t.saved_model.loader.load(sess, ["serve"], export_dir)
            sig = meta.signature_def["serving_default"]
            (x,) = sig.inputs.values()
            (y,) = sig.outputs.values()
            with pytest.raises(error) as err:
                sess.run(y.name, {x.name: IMAGES})
            errors.append(err.value)
    assert "dense" in errors[1].message


def test_signature_defs_are_tfs_bytes():
    def build(t):
        with t.Graph().as_default():
            examples = t.placeholder(t.string, [None], name="examples")
            scores = t.placeholder(t.float32, [None, 3], name="scores")
            classes = t.placeholder(t.string, [None, 3], name="classes")
            utils = t.saved_model.signature_def_utils
            return [s.SerializeToString(deterministic=True) for s in (
                utils.predict_signature_def({"x": scores, "e": examples}, {"y": classes}),
                utils.classification_signature_def(examples, classes, scores),
                utils.regression_signature_def(examples, scores))]

    assert build(gp) == build(tf1)


def test_simple_save_writes_what_tf_writes(tmp_path):
    from graphops.interchange.proto.saved_model_pb2 import SavedModel

    (tmp_path / "src").mkdir()
    metas = []
    for name, t in (("tf", tf1), ("gp", gp)):
        _write(t, str(tmp_path / name), str(tmp_path / "src"), "simple_save", None)
        saved = SavedModel.FromString((tmp_path / name / "saved_model.pb").read_bytes())
        assert saved.saved_model_schema_version == 1 and len(saved.meta_graphs) == 1
        metas.append(saved.meta_graphs[0])
    theirs, ours = metas
    assert sorted(ours.collection_def) == sorted(theirs.collection_def)
    for key in ("asset_filepaths", "saved_model_assets", "saved_model_main_op"):
        assert ours.collection_def[key] == theirs.collection_def[key], key
    assert ours.saver_def == theirs.saver_def
    assert ours.signature_def == theirs.signature_def
    assert {(n.name, n.op) for n in ours.graph_def.node} == \
        {(n.name, n.op) for n in theirs.graph_def.node}
    assert list(ours.meta_info_def.tags) == list(theirs.meta_info_def.tags) == ["serve"]
