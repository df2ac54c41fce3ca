"""TF1 variables: graph collections, gp.Variable's TF1 arguments and reads, assign functions,
get_variable / variable_scope naming, reuse and errors, initializers, the global step.

References are plain NumPy or the rules TF documents; `test_tf1_training_tf_oracle.py`
compares the same programs with TensorFlow itself.
"""

import math

import numpy as np
import pytest

import graphops as gp
from graphops.registry import errors


@pytest.fixture
def graph():
    g = gp.Graph()
    with g.as_default():
        yield g


def _run(fetches, init=True):
    with gp.Session() as sess:
        if init:
            sess.run(gp.global_variables_initializer())
        return sess.run(fetches)


# ----------------------------------------------------------------------------- collections

def test_collections_add_get_scope_ref_and_clear(graph):
    class Named:
        def __init__(self, name):
            self.name = name

    a, b, c = Named("layer1/w"), Named("layer2/w"), object()
    gp.add_to_collection("things", a)
    gp.add_to_collections(["things", "more"], b)
    gp.add_to_collections("things", c)              # a string is one collection name
    assert gp.get_collection("things") == [a, b, c]
    assert gp.get_collection("things", scope="layer2") == [b]      # unnamed items skipped
    assert gp.get_collection("things", scope=".*/w") == [a, b]
    assert gp.get_collection("missing") == []
    copy = gp.get_collection("things")
    copy.append(1)
    assert len(graph.get_collection("things")) == 3
    ref = gp.get_collection_ref("refd")
    ref.append(a)
    assert graph.get_collection("refd") == [a]
    assert set(graph.get_all_collection_keys()) == {"things", "more", "refd"}
    graph.clear_collection("things")
    assert graph.get_collection("things") == [] and "things" not in graph.get_all_collection_keys()
    graph.finalize()
    with pytest.raises(RuntimeError, match="Graph is finalized"):
        graph.add_to_collection("x", a)


def test_graph_keys_are_tf_strings():
    keys = gp.GraphKeys
    assert (keys.GLOBAL_VARIABLES, keys.LOCAL_VARIABLES, keys.TRAINABLE_VARIABLES,
            keys.MODEL_VARIABLES, keys.GLOBAL_STEP, keys.LOSSES, keys.REGULARIZATION_LOSSES,
            keys.SUMMARIES, keys.UPDATE_OPS, keys.TRAIN_OP, keys.INIT_OP, keys.SAVERS) == (
        "variables", "local_variables", "trainable_variables", "model_variables",
        "global_step", "losses", "regularization_losses", "summaries", "update_ops",
        "train_op", "init_op", "savers")


def test_variables_register_in_their_collections(graph):
    w = gp.Variable(1.0, name="w")
    frozen = gp.Variable(2.0, name="frozen", trainable=False)
    local = gp.Variable(3.0, name="local", collections=[gp.GraphKeys.LOCAL_VARIABLES],
                        trainable=False)
    model = gp.Variable(4.0, name="model", collections=[gp.GraphKeys.GLOBAL_VARIABLES,
                                                        gp.GraphKeys.MODEL_VARIABLES])
    assert gp.global_variables() == [w, frozen, model]
    assert gp.trainable_variables() == [w, model]
    assert gp.local_variables() == [local] and gp.model_variables() == [model]
    assert gp.get_collection(gp.GraphKeys.TRAINABLE_VARIABLES, scope="mo") == [model]
    with gp.Session() as sess:
        sess.run(gp.initialize_all_variables())
        assert not sess.run(gp.is_variable_initialized(local))
        assert sess.run(gp.report_uninitialized_variables()).tolist() == [b"local"]
        sess.run(gp.local_variables_initializer())
        assert sess.run(gp.is_variable_initialized(local))
        assert sess.run(gp.report_uninitialized_variables()).shape == (0,)
        assert sess.run(local) == 3.0
    assert gp.initialize_local_variables().type == "NoOp"


# ----------------------------------------------------------------------------- Variable

def test_variable_tf1_arguments(graph):
    v = gp.Variable([1.0, 2.0], validate_shape=False, name="free")
    assert v.shape.rank is None and v.handle.op.get_attr("shape").rank is None
    s = gp.Variable(np.zeros((2, 3)), shape=gp.TensorShape([None, 3]), name="partial")
    assert s.shape.as_list() == [None, 3]
    c = gp.Variable(1.0, constraint=lambda t: t, caching_device="/cpu:0", use_resource=False,
                    expected_shape=[], name="c")
    assert callable(c.constraint)
    with pytest.raises(ValueError, match=r"the initial value's shape \(\(2,\)\) is not "
                                         r"compatible with the explicitly supplied `shape` "
                                         r"argument \(\(3,\)\)"):
        gp.Variable([1.0, 2.0], shape=[3])
    with pytest.raises(ValueError, match="collections argument to Variable constructor must "
                                         "be a list, tuple, or set"):
        gp.Variable(1.0, collections="variables")
    with pytest.raises(ValueError, match="Argument `constraint` must be None or a callable"):
        gp.Variable(1.0, constraint=3)
    with pytest.raises(ValueError, match="variable_def and initial_value args to `tf.Variable` "
                                         "are mutually exclusive"):
        gp.Variable(1.0, variable_def={"variable_name": "v"})
    with pytest.raises(ValueError, match="`initial_value` arg to `tf.Variable` must be"):
        gp.Variable()


def test_a_variable_converts_to_a_new_read_in_the_consumers_scope(graph):
    v = gp.Variable(1.0, name="v")
    y = gp.raw_ops.Mul(x=v, y=2.0)
    assert y.op.inputs[0].op.name == "Mul/ReadVariableOp"
    z = v * v
    assert [t.op.name for t in z.op.inputs] == ["ReadVariableOp", "mul_1/ReadVariableOp"]
    assign = v.assign(5.0, read_value=False)
    with gp.control_dependencies([assign]):
        after = gp.raw_ops.Identity(input=v)      # a read made here runs after the assign
    assert after.op.inputs[0].op.control_inputs == (assign,)
    with gp.Session() as sess:
        sess.run(v.initializer)
        assert sess.run(after) == 5.0
        assert sess.run(v) == 5.0


def test_assign_functions_load_eval_and_initialized_value(graph):
    v = gp.Variable(np.array([1.0, 2.0]), name="v")
    w = gp.Variable(v.initialized_value() * 3.0, name="w")
    to_five = gp.assign(v, [5.0, 5.0], name="to_five")
    plus = gp.assign_add(v, [1.0, 0.0])
    minus = gp.assign_sub(v, [0.5, 0.5])
    assert to_five.op.control_inputs[0].name == "to_five"
    assert to_five.op.control_inputs[0].type == "AssignVariableOp"
    with gp.Session() as sess:
        sess.run(gp.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(w), [3.0, 6.0])
        np.testing.assert_array_equal(sess.run(to_five), [5.0, 5.0])
        np.testing.assert_array_equal(sess.run(plus), [6.0, 5.0])
        np.testing.assert_array_equal(sess.run(minus), [5.5, 4.5])
        v.load([7.0, 8.0], sess)
        np.testing.assert_array_equal(v.eval(session=sess), [7.0, 8.0])
    with pytest.raises(ValueError, match="Either session argument should be provided"):
        v.load([1.0, 1.0])


# ----------------------------------------------------------------------------- get_variable

def test_get_variable_names_and_variable_scope_name_scopes(graph):
    with gp.variable_scope("x"):
        w = gp.get_variable("w", [2, 3])
        y = w + 1.0
        with gp.variable_scope("inner"):
            b = gp.get_variable("b", [3], initializer=gp.zeros_initializer())
    assert w.name == "x/w:0" and b.name == "x/inner/b:0"
    assert y.name == "x/add:0"
    assert w.op.type == "VarHandleOp" and w.initial_value.op.name == "x/w/Initializer/random_uniform"
    assert b.initial_value.op.name == "x/inner/b/Initializer/zeros"
    with gp.variable_scope("x"):                   # the variable scope again, a new name scope
        z = gp.get_variable("z", [1])
        t = z * 2.0
    assert z.name == "x/z:0" and t.name == "x_1/mul:0"
    assert gp.get_variable_scope().name == ""
    with gp.variable_scope(None, default_name="block") as first:
        pass
    with gp.variable_scope(None, default_name="block") as second:
        c = gp.get_variable("c", [])
    assert (first.name, second.name, c.name) == ("block", "block_1", "block_1/c:0")


def test_reuse_semantics_and_errors(graph):
    with gp.variable_scope("s"):
        w = gp.get_variable("w", [2])
    with pytest.raises(ValueError, match=r"^Variable s/w already exists, disallowed. Did you "
                                         r"mean to set reuse=True or reuse=tf.AUTO_REUSE in "
                                         r"VarScope\?$"):
        with gp.variable_scope("s"):
            gp.get_variable("w", [2])
    with gp.variable_scope("s", reuse=True):
        assert gp.get_variable("w", [2]) is w
        assert gp.get_variable("w") is w
        with gp.variable_scope("deeper", reuse=False):       # reuse is inherited
            assert gp.get_variable_scope().reuse is True
        with pytest.raises(ValueError, match=r"^Variable s/v does not exist, or was not "
                                             r"created with tf.get_variable\(\). Did you mean "
                                             r"to set reuse=tf.AUTO_REUSE in VarScope\?$"):
            gp.get_variable("v", [2])
        with pytest.raises(ValueError, match=r"Trying to share variable s/w, but specified "
                                             r"shape \(3,\) and found shape \(2,\)."):
            gp.get_variable("w", [3])
        with pytest.raises(ValueError, match="Trying to share variable s/w, but specified "
                                             "dtype float64 and found dtype float32."):
            gp.get_variable("w", [2], dtype=gp.float64)
    with gp.variable_scope("s", reuse=gp.AUTO_REUSE):
        assert gp.get_variable("w", [2]) is w
        made = gp.get_variable("auto", [1])
        assert gp.get_variable("auto", [1]) is made
    with gp.variable_scope("s") as scope:
        scope.reuse_variables()
        assert gp.get_variable("w") is w
    with gp.variable_scope(scope, reuse=True):               # entering by scope object
        assert gp.get_variable("w") is w
    with pytest.raises(ValueError, match="reuse=True cannot be used without a name_or_scope"):
        with gp.variable_scope(None, default_name="d", reuse=True):
            pass
    with pytest.raises(TypeError, match="name_or_scope must be a string or VariableScope"):
        with gp.variable_scope(3):
            pass


def test_get_variable_initializers_dtypes_and_errors(graph):
    ints = gp.get_variable("ints", [2], dtype=gp.int32)
    flags = gp.get_variable("flags", [2], dtype=gp.bool)
    from_value = gp.get_variable("from_value", initializer=[[1, 2]])
    from_callable = gp.get_variable("from_callable", initializer=lambda: gp.constant([4.0]))
    typed = gp.get_variable("typed", [2], dtype=gp.float64,
                            initializer=gp.constant_initializer(2.5))
    with gp.variable_scope("init", initializer=gp.ones_initializer(), dtype=gp.float64):
        inherited = gp.get_variable("v", [3])
    assert ints.dtype is gp.int32 and from_value.dtype is gp.int32
    assert inherited.dtype is gp.float64
    values = _run([ints, flags, from_value, from_callable, typed, inherited])
    np.testing.assert_array_equal(values[0], [0, 0])
    np.testing.assert_array_equal(values[1], [False, False])
    np.testing.assert_array_equal(values[2], [[1, 2]])
    np.testing.assert_array_equal(values[3], [4.0])
    np.testing.assert_array_equal(values[4], [2.5, 2.5])
    np.testing.assert_array_equal(values[5], [1.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="If initializer is a constant, do not specify shape."):
        gp.get_variable("bad", [2], initializer=[1.0, 2.0])
    with pytest.raises(ValueError, match="Variable noshape did not get an initializer, so its "
                                         "`shape` argument must be specified."):
        gp.get_variable("noshape")
    with pytest.raises(ValueError, match="Initializer type 'gp.int32' and explicit dtype "
                                         "'gp.float32' don't match."):
        gp.get_variable("mismatch", dtype=gp.float32, initializer=[1, 2])
    with pytest.raises(ValueError, match="An initializer for variable c of gp.complex64 is "
                                         "required"):
        gp.get_variable("c", [1], dtype=gp.complex64)


def test_regularizer_local_variable_and_custom_getter(graph):
    with gp.variable_scope("reg", regularizer=lambda t: gp.reduce_sum(t * t)):
        w = gp.get_variable("w", initializer=[1.0, 2.0])
    (loss,) = gp.get_collection(gp.GraphKeys.REGULARIZATION_LOSSES)
    assert loss.name.startswith("reg/w/Regularizer/") and w.name == "reg/w:0"
    local = gp.get_local_variable("counter", [], dtype=gp.int64)
    assert local in gp.local_variables() and local not in gp.global_variables()
    assert not local.trainable

    seen = []

    def getter(next_getter, name, *args, **kwargs):
        seen.append(name)
        return next_getter(name, *args, **kwargs)

    with gp.variable_scope("custom", custom_getter=getter):
        gp.get_variable("u", [1])
    assert seen == ["custom/u"]
    with gp.Session() as sess:
        sess.run(gp.global_variables_initializer())
        assert sess.run(loss) == 5.0
        sess.run(gp.local_variables_initializer())
        assert sess.run(local) == 0


# ----------------------------------------------------------------------------- initializers

def test_constant_initializers_values_and_nodes(graph):
    small = gp.zeros_initializer()([2, 3])
    large = gp.ones_initializer(dtype=gp.float64)([40, 30])
    const = gp.constant_initializer([1, 2, 3, 4])([2, 2])
    assert small.op.type == "Const" and small.op.name == "zeros"
    assert large.op.type == "Fill" and large.dtype is gp.float64
    got = _run([small, large, const], init=False)
    np.testing.assert_array_equal(got[0], np.zeros((2, 3), np.float32))
    np.testing.assert_array_equal(got[1], np.ones((40, 30)))
    np.testing.assert_array_equal(got[2], [[1.0, 2.0], [3.0, 4.0]])
    with pytest.raises(TypeError, match="Invalid type for initial value"):
        gp.constant_initializer(object())


@pytest.mark.parametrize("shape, fans", [([], (1, 1)), ([5], (5, 5)), ([4, 6], (4, 6)),
                                         ([3, 3, 4, 8], (36, 72))])
def test_glorot_uniform_bounds_from_fans(graph, shape, fans):
    values = _run(gp.glorot_uniform_initializer(seed=1)(shape), init=False)
    limit = math.sqrt(6.0 / sum(fans))
    assert values.shape == tuple(shape)
    assert np.all(np.abs(values) <= limit)


def test_random_initializers_statistics_and_seeds(graph):
    n = gp.truncated_normal_initializer(mean=1.0, stddev=0.5, seed=3)([4000])
    same = gp.truncated_normal_initializer(mean=1.0, stddev=0.5, seed=3)([4000])
    other = gp.truncated_normal_initializer(mean=1.0, stddev=0.5, seed=4)([4000])
    u = gp.random_uniform_initializer(-2.0, 3.0, seed=5)([4000])
    scaled = gp.variance_scaling_initializer(2.0, "fan_in", "untruncated_normal",
                                             seed=6)([50, 80])
    got_n, got_same, got_other, got_u, got_scaled = _run([n, same, other, u, scaled],
                                                         init=False)
    np.testing.assert_array_equal(got_n, got_same)
    assert not np.array_equal(got_n, got_other)
    assert np.all(np.abs(got_n - 1.0) <= 1.0) and abs(got_n.mean() - 1.0) < 0.05
    assert got_u.min() >= -2.0 and got_u.max() < 3.0 and abs(got_u.mean() - 0.5) < 0.15
    assert abs(got_scaled.std() - math.sqrt(2.0 / 50)) < 0.02


def test_variance_scaling_argument_errors():
    with pytest.raises(ValueError, match="Argument `scale` must be a positive float"):
        gp.variance_scaling_initializer(scale=0.0)
    with pytest.raises(ValueError, match="Argument `mode` should be one of"):
        gp.variance_scaling_initializer(mode="fan")
    with pytest.raises(ValueError, match="Argument `distribution` should be one of"):
        gp.variance_scaling_initializer(distribution="poisson")
    with pytest.raises(ValueError, match="Argument `dtype` is expected to be floating point"):
        gp.glorot_uniform_initializer(dtype=gp.int32)
    assert gp.initializers.glorot_uniform is gp.glorot_uniform_initializer
    assert gp.initializers.he_normal().scale == 2.0


# ----------------------------------------------------------------------------- global step

def test_global_step(graph):
    assert gp.train.get_global_step() is None
    step = gp.train.get_or_create_global_step()
    assert step.name == "global_step:0" and step.dtype is gp.int64 and not step.trainable
    assert step.shape == gp.TensorShape([])
    assert gp.get_collection(gp.GraphKeys.GLOBAL_STEP) == [step]
    assert gp.train.get_or_create_global_step() is step and gp.train.get_global_step() is step
    with pytest.raises(ValueError, match='"global_step" already exists.'):
        gp.train.create_global_step()
    with pytest.raises(TypeError, match='Existing "global_step" does not have integer type'):
        gp.train.assert_global_step(gp.constant(1.0))
    with pytest.raises(TypeError, match='Existing "global_step" is not scalar'):
        gp.train.assert_global_step(gp.constant([1, 2]))
    bump = gp.assign_add(step, 3)
    with gp.Session() as sess:
        sess.run(gp.global_variables_initializer())
        sess.run(bump)
        assert gp.train.global_step(sess, step) == 3
    other = gp.Graph()
    made = gp.train.create_global_step(other)
    assert made.graph is other and gp.train.get_global_step(other) is made


def test_uninitialized_variable_error_still_names_it(graph):
    v = gp.get_variable("never", [2])
    with gp.Session() as sess:
        with pytest.raises(errors.FailedPreconditionError, match="never"):
            sess.run(v)
