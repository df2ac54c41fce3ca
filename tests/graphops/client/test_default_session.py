"""The default session: Tensor.eval, Operation.run, Session.as_default, `with sess:`,
gp.get_default_session and InteractiveSession, with TF's errors."""

import gc
import threading

import numpy as np
import pytest

import graphops as gp


@pytest.fixture
def graph():
    g = gp.Graph()
    with g.as_default():
        yield g


def test_eval_and_run_use_the_session_entered_with_with(graph):
    x = gp.placeholder(gp.float32, [2])
    y = x * 2.0
    v = gp.Variable(np.float32(1.0))
    assert gp.get_default_session() is None
    with gp.Session() as sess:
        assert gp.get_default_session() is sess
        np.testing.assert_array_equal(y.eval(feed_dict={x: [1, 2]}), [2, 4])
        v.initializer.run()
        v.assign(7.0).op.run()
        assert v.eval() == 7.0
    assert gp.get_default_session() is None


def test_eval_with_an_explicit_session(graph):
    c = gp.constant([1, 2])
    sess = gp.Session()
    np.testing.assert_array_equal(c.eval(session=sess), [1, 2])
    assert c.op.run(session=sess) is None


def test_as_default_installs_without_closing(graph):
    c = gp.constant(3.0)
    sess = gp.Session()
    with sess.as_default() as entered:
        assert entered is sess and gp.get_default_session() is sess
        assert c.eval() == 3.0
    assert gp.get_default_session() is None
    assert sess.run(c) == 3.0                      # still open


def test_no_default_session_errors_are_tfs(graph):
    c = gp.constant(1.0)
    with pytest.raises(ValueError) as info:
        c.eval()
    assert str(info.value) == (
        "Cannot evaluate tensor using `eval()`: No default session is registered. Use `with "
        "sess.as_default()` or pass an explicit session to `eval(session=sess)`")
    with pytest.raises(ValueError) as info:
        c.op.run()
    assert str(info.value) == (
        "Cannot execute operation using `run()`: No default session is registered. Use `with "
        "sess.as_default():` or pass an explicit session to `run(session=sess)`")


def test_session_of_another_graph_is_refused(graph):
    c = gp.constant(1.0)
    other = gp.Session(graph=gp.Graph())
    with other.as_default():
        with pytest.raises(ValueError, match="Cannot use the default session to evaluate "
                                             "tensor: the tensor's graph is different from "
                                             "the session's graph. Pass an explicit session"):
            c.eval()
        with pytest.raises(ValueError, match="Cannot use the default session to execute "
                                             "operation: the operation's graph is different"):
            c.op.run()
    with pytest.raises(ValueError, match="Cannot use the given session to evaluate tensor: "
                                         "the tensor's graph is different"):
        c.eval(session=other)
    with pytest.raises(ValueError, match="Cannot use the given session to execute operation"):
        c.op.run(session=other)


def test_default_session_is_per_thread(graph):
    seen = []
    with gp.Session():
        worker = threading.Thread(target=lambda: seen.append(gp.get_default_session()))
        worker.start()
        worker.join()
    assert seen == [None]


def test_session_as_default_exit_out_of_order_is_tf_assertion_error(graph):
    a, b = gp.Session(), gp.Session()
    ca, cb = a.as_default(), b.as_default()
    ca.__enter__()
    cb.__enter__()
    with pytest.raises(AssertionError, match="Nesting violated for default stack of "):
        ca.__exit__(None, None, None)
    cb.__exit__(None, None, None)
    ca.__exit__(None, None, None)
    assert gp.get_default_session() is None


def test_interactive_session_is_default_until_closed(graph):
    c = gp.constant([1.0, 2.0]) * 3.0
    sess = gp.InteractiveSession()
    gc.collect()
    try:
        assert gp.get_default_session() is sess and sess.graph is graph
        np.testing.assert_array_equal(c.eval(), [3.0, 6.0])
        with gp.Session() as inner:                 # nests inside, then gives it back
            assert gp.get_default_session() is inner
        assert gp.get_default_session() is sess
    finally:
        sess.close()
    assert gp.get_default_session() is None
    sess.close()                                    # twice: harmless
    with pytest.raises(RuntimeError, match="closed Session"):
        sess.run(c)


def test_interactive_session_with_a_graph_makes_it_default_until_closed():
    g = gp.Graph()
    sess = gp.InteractiveSession(graph=g)
    try:
        assert gp.get_default_graph() is g and not gp.executing_eagerly()
        t = gp.constant(4) + 1
        assert t.graph is g and t.eval() == 5
    finally:
        sess.close()
    assert gp.get_default_graph() is not g and gp.executing_eagerly()


def test_a_second_interactive_session_warns(graph):
    first = gp.InteractiveSession()
    try:
        with pytest.warns(UserWarning, match="An interactive session is already active"):
            second = gp.InteractiveSession()
        second.close()
    finally:
        first.close()
    assert gp.get_default_session() is None
