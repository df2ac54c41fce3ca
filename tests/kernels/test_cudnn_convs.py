"""The conv family on cuDNN (``cudnn_convs``), run on the CPU against ``cudnn_emulation``:
every conv's tensors, layouts, filter transposes, padding and groups as cuDNN reads them,
checked against the slow float64 references; which convs cuDNN takes; autotuning. On a GPU
with cuDNN installed, ``test_real_gpu_paths_match_the_references`` runs the same draws
there (and tests/kernels/test_gpu_conv.py the ops).
"""

import sys

import numpy as np
import pytest
from hypothesis import given, strategies as st

from graphops.kernels.conv_algorithms import cuda_build, cudnn_convs
from graphops.kernels.conv_algorithms import tuning as conv_tuning
from graphops.kernels.conv_algorithms.dense import (conv_backprop_filter, conv_backprop_input,
                                                    conv_forward)
from graphops.kernels.conv_algorithms.depthwise import depthwise_forward
from graphops.runtime import devices
from tests.kernels import cuda_emulation, cudnn_emulation
from tests.kernels.test_cuda_kernels import SETTINGS, check_all_three
from tests.reference_conv import conv_forward_ref

pytestmark = pytest.mark.skipif(cuda_emulation.COMPILER is None, reason="no C++ compiler")
xp = cuda_emulation.xp
GEOMETRY = ((1, 1), (1, 1), ((1, 1), (1, 1)))


def _autotuning(monkeypatch, on):
    """cuDNN's autotuning on or off (its switch, and the conv tuning the suite turns off)."""
    monkeypatch.setenv("TF_CUDNN_USE_AUTOTUNE", "1" if on else "0")
    monkeypatch.setattr(conv_tuning, "_enabled", on)


@pytest.fixture
def emulated(monkeypatch):
    """cuDNN's emulation installed, autotuning off (each conv on cuDNN's first plan);
    ``.runs`` counts the convs cuDNN ran."""
    cudnn_emulation.install(monkeypatch, cudnn_convs)
    _autotuning(monkeypatch, False)
    graphs = cudnn_emulation.pygraph
    monkeypatch.setattr(graphs, "runs", [], raising=False)
    original = cudnn_convs._execute
    monkeypatch.setattr(cudnn_convs, "_execute",
                        lambda *args: graphs.runs.append(1) or original(*args))
    return graphs


@SETTINGS
@given(data=st.data(), depthwise=st.booleans(), channels_last=st.booleans(),
       dtype=st.sampled_from([np.float64, np.float32, np.float16]), autotuned=st.booleans())
def test_cudnn_convs_match_the_references(emulated, monkeypatch, data, depthwise, dtype,
                                          channels_last, autotuned):
    """Forward, input and filter gradient of 1-3-D dense and 2-D depthwise convs, both
    layouts, every padding, stride and dilation: each op on cuDNN (none where an operand is
    empty). Autotuned with the own kernels timed slowest, every op keeps a cuDNN plan: the
    agreement check takes cuDNN's sums in another order, in every dtype."""
    _autotuning(monkeypatch, autotuned)   # (set in each draw: the fixture spans them)
    monkeypatch.setattr(cudnn_convs, "_graphs", type(cudnn_convs._graphs)())
    monkeypatch.setattr(cudnn_convs, "_milliseconds",
                        lambda xp_, run: [run(), 0.0 if "plan" in run.__code__.co_varnames
                                          else 1.0][1])
    before = len(emulated.runs)
    operands = check_all_three(data, depthwise, dtype, channels_last)
    expected = 3 if all(a.size for a in operands) else 0
    assert [built.plan for built in cudnn_convs._graphs.values()] == [0] * expected
    if not autotuned:                  # plan 0 checked once, then run
        assert len(emulated.runs) == before + 2 * expected


def test_unsupported_convs_run_on_the_own_kernels(emulated, monkeypatch):
    """A conv no engine takes (here every float64 one) runs on graphops' CUDA kernels, and
    its graph is not built again."""
    monkeypatch.setattr(emulated, "unsupported", (cudnn_emulation.data_type.DOUBLE,))
    calls = []
    original = cuda_build.kernel
    monkeypatch.setattr(cuda_build, "kernel", lambda *a: calls.append(a[2]) or original(*a))
    x, w = np.ones((1, 5, 5, 2)), np.ones((3, 3, 2, 2))
    want = conv_forward_ref(x, w, *GEOMETRY)
    for _ in range(2):
        np.testing.assert_allclose(conv_forward(x, w, *GEOMETRY, xp=xp), want)
    assert calls == ["im2col", "im2col"] and emulated.runs == []
    assert list(cudnn_convs._graphs.values()) == [cudnn_convs._UNSUPPORTED]
    conv_forward(x.astype(np.float32), w.astype(np.float32), *GEOMETRY, xp=xp)
    assert len(emulated.runs) == 2 and len(cudnn_convs._graphs) == 2   # checked, then run


def test_which_convs_cudnn_takes(emulated):
    """Float convs on the GPU module; not integer ones, NumPy's, mixed dtypes or empty ones
    (those have their own paths)."""
    x, w = np.ones((1, 5, 5, 2), np.float32), np.ones((3, 3, 2, 2), np.float32)
    assert cudnn_convs.available(xp, np.float16) and cudnn_convs.available(xp, np.float32)
    assert not cudnn_convs.available(xp, np.int32) and not cudnn_convs.available(np, np.float32)
    def own(a, b):
        return "own kernels"
    for a, b, module in ((x, w, np), (x.astype(np.int32), w.astype(np.int32), xp),
                         (x, w.astype(np.float64), xp), (x[:0], w, xp)):
        assert cudnn_convs.forward(a, b, *GEOMETRY, True, module, own) == "own kernels"
    assert conv_forward(x[:0], w, *GEOMETRY, xp=xp).shape == (0, 5, 5, 2)
    assert emulated.runs == []
    conv_backprop_input(x, w, x.shape, *GEOMETRY, xp=xp)
    conv_backprop_filter(x, x, w.shape, *GEOMETRY, xp=xp)
    depthwise_forward(x, w[..., :1], *GEOMETRY, xp=xp)
    assert len(emulated.runs) == 6         # each plan checked, then run


def test_the_fastest_candidate_is_kept(emulated, monkeypatch):
    """A conv's first run checks each cuDNN plan that builds (plans 0 and 2 here) against
    the own kernels' result on random operands, times the own kernels and the plans that
    agree, and keeps the fastest; later runs take it alone."""
    _autotuning(monkeypatch, True)
    times = iter([3.0, 2.0, 1.0, 1.0, 2.0, 3.0])   # own, plan 0, plan 2; then again
    monkeypatch.setattr(cudnn_convs, "_milliseconds", lambda xp_, run: [run(), next(times)][1])
    kernels = []
    original = cuda_build.kernel
    monkeypatch.setattr(cuda_build, "kernel", lambda *a: kernels.append(a[2]) or original(*a))
    w = np.ones((3, 3, 2, 2), np.float32)
    for size, chosen in ((5, 2), (6, cudnn_convs.OWN)):
        x = np.ones((1, size, size, 2), np.float32)
        want = conv_forward_ref(x, w, *GEOMETRY)
        for _ in range(2):
            np.testing.assert_allclose(conv_forward(x, w, *GEOMETRY, xp=xp), want, rtol=1e-6)
        assert list(cudnn_convs._graphs.values())[-1].plan == chosen
    assert emulated.executions == [0, 0, 2, 2, 2, 2, 0, 0, 2, 2]
    # The own kernels' reference and timed run for each conv, then both size-6 runs.
    assert kernels == ["im2col"] * 6


@pytest.mark.parametrize("wrong, chosen", [((), [0, 0]), ((0,), [0, 2, 2]),
                                           ((0, 2), [0, 2])])
def test_no_timing_under_deterministic_ops(emulated, monkeypatch, wrong, chosen):
    """With the conv tuning off (``TF_DETERMINISTIC_OPS``), the first of cuDNN's plans
    (0 and 2 here) that agrees with the own kernels runs untimed, as with
    ``TF_CUDNN_USE_AUTOTUNE=0``: the same plan in every process. None agreeing, the own
    kernels run."""
    _autotuning(monkeypatch, True)
    monkeypatch.setattr(conv_tuning, "_enabled", False)
    monkeypatch.setattr(emulated, "wrong_plans", wrong)
    monkeypatch.setattr(cudnn_convs, "_milliseconds", lambda *args: pytest.fail("timed"))
    x, w = np.ones((1, 5, 5, 2), np.float32), np.ones((3, 3, 2, 2), np.float32)
    np.testing.assert_allclose(conv_forward(x, w, *GEOMETRY, xp=xp),
                               conv_forward_ref(x, w, *GEOMETRY), rtol=1e-6)
    assert emulated.executions == chosen


def test_a_plan_with_other_numbers_is_never_kept(emulated, monkeypatch):
    """A plan whose result differs from the own kernels' (plan 2's sums 1% high) is not
    timed, however fast."""
    _autotuning(monkeypatch, True)
    monkeypatch.setattr(emulated, "wrong_plans", (2,))
    timed = []
    monkeypatch.setattr(cudnn_convs, "_milliseconds",
                        lambda xp_, run: [run(), timed.append(1), 3.0 - len(timed)][2])
    x, w = np.ones((1, 5, 5, 2), np.float32), np.ones((3, 3, 2, 2), np.float32)
    want = conv_forward_ref(x, w, *GEOMETRY)
    for _ in range(2):
        np.testing.assert_allclose(conv_forward(x, w, *GEOMETRY, xp=xp), want, rtol=1e-6)
    assert len(timed) == 2 and list(cudnn_convs._graphs.values())[0].plan == 0
    assert emulated.executions == [0, 0, 2, 0, 0]


def test_a_plan_that_fails_is_never_kept(emulated, monkeypatch):
    """A plan that fails as it runs while autotuning (plan 0 here) is dropped; and once a
    plan is kept, a run with no memory for its workspace falls back to the own kernels."""
    _autotuning(monkeypatch, True)
    monkeypatch.setattr(emulated, "failing_plans", (0,))
    monkeypatch.setattr(cudnn_convs, "_milliseconds", lambda xp_, run: [run(), 1.0][1])
    x, w = np.ones((1, 5, 5, 2), np.float32), np.ones((3, 3, 2, 2), np.float32)
    want = conv_forward_ref(x, w, *GEOMETRY)
    np.testing.assert_allclose(conv_forward(x, w, *GEOMETRY, xp=xp), want, rtol=1e-6)
    assert list(cudnn_convs._graphs.values())[0].plan == cudnn_convs.OWN   # (ties: own)
    monkeypatch.setattr(emulated, "failing_plans", ())
    built = list(cudnn_convs._graphs.values())[0]
    built.plan = 2

    def no_room(*args):
        raise MemoryError("out of memory allocating the workspace")
    monkeypatch.setattr(cudnn_convs, "_on_cudnn", no_room)
    np.testing.assert_allclose(conv_forward(x, w, *GEOMETRY, xp=xp), want, rtol=1e-6)


def test_agreement_is_relative_to_the_result():
    """A plan's result agrees with the own kernels' within a few roundings of a sum of its
    length, relative to the result's largest value, however small the values are."""
    rng = np.random.default_rng(0)
    for scale in (1e-6, 1.0, 1e6):
        reference = (rng.standard_normal(1000) * scale).astype(np.float32)
        assert cudnn_convs._agree(reference * np.float32(1 + 1e-6), reference, 100, np)
        assert not cudnn_convs._agree(reference * np.float32(1.01), reference, 100, np)
        assert not cudnn_convs._agree(np.zeros_like(reference), reference, 100, np)


def test_graphs_are_kept_per_conv(emulated, monkeypatch):
    """One graph per distinct conv, reused; the least recently used goes past MAX_GRAPHS."""
    monkeypatch.setattr(cudnn_convs, "MAX_GRAPHS", 2)
    w = np.ones((3, 3, 2, 2), np.float32)
    for size in (5, 6, 5, 7, 5):
        conv_forward(np.ones((1, size, size, 2), np.float32), w, *GEOMETRY, xp=xp)
    assert [key[2] for key in cudnn_convs._graphs] == [(1, 7, 7, 2), (1, 5, 5, 2)]


def test_each_device_has_its_own_handle(emulated, monkeypatch):
    """A conv on a second GPU builds its graph with that device's handle (a handle works on
    the device it was made on), and keeps its graph apart from the first device's."""
    x, w = np.ones((1, 5, 5, 2), np.float32), np.ones((3, 3, 2, 2), np.float32)
    conv_forward(x, w, *GEOMETRY, xp=xp)
    monkeypatch.setattr(cuda_emulation._Device, "id", 1)
    conv_forward(x, w, *GEOMETRY, xp=xp)
    handles = cudnn_convs._state["session"][1]
    assert sorted(handles) == [0, 1] and handles[0] is not handles[1]
    assert [(key[-1], built.graph.handle) for key, built in cudnn_convs._graphs.items()] == [
        (0, handles[0]), (1, handles[1])]


def test_session_needs_the_frontend_and_can_be_turned_off(monkeypatch):
    """No ``cudnn`` module, or ``GRAPHOPS_USE_CUDNN=0``: no session, own kernels only."""
    monkeypatch.delitem(cudnn_convs._state, "session", raising=False)
    monkeypatch.setitem(sys.modules, "cudnn", None)
    assert cudnn_convs._session(xp) is None and not cudnn_convs.available(xp, np.float32)
    monkeypatch.delitem(cudnn_convs._state, "session")
    monkeypatch.setitem(sys.modules, "cudnn", cudnn_emulation)
    monkeypatch.setenv("GRAPHOPS_USE_CUDNN", "0")
    assert cudnn_convs._session(xp) is None
    monkeypatch.delitem(cudnn_convs._state, "session")
    monkeypatch.delenv("GRAPHOPS_USE_CUDNN")
    assert cudnn_convs._session(xp)[0] is cudnn_emulation


@pytest.mark.gpu
@pytest.mark.parametrize("path", ["cudnn", "autotuned", "own kernels"])
@SETTINGS
@given(data=st.data(), depthwise=st.booleans(), channels_last=st.booleans(),
       dtype=st.sampled_from([np.float64, np.float32, np.float16]))
def test_real_gpu_paths_match_the_references(monkeypatch, path, data, depthwise, dtype,
                                             channels_last):
    """On a CUDA GPU: the same convs on cuDNN's first plan, on the autotuned choice (where
    cuDNN is installed) and on graphops' own kernels, against the references."""
    gpu = devices.get_device_type("GPU")
    if gpu is None or gpu.xp.__name__ != "cupy":
        pytest.skip("no CUDA GPU")
    if path == "cudnn" and not cudnn_convs.available(gpu.xp, np.float32):
        pytest.skip("cuDNN's frontend (nvidia-cudnn-frontend) is not installed")
    if path == "own kernels":
        monkeypatch.setitem(cudnn_convs._state, "session", None)
    _autotuning(monkeypatch, path != "cudnn")
    monkeypatch.setattr(cudnn_convs, "_graphs", type(cudnn_convs._graphs)())
    runs, refused = [], []
    original_execute, original_graph = cudnn_convs._execute, cudnn_convs._graph
    monkeypatch.setattr(cudnn_convs, "_execute", lambda *a: runs.append(1) or original_execute(*a))

    def graph(*args):
        built = original_graph(*args)
        refused.extend([1] * (built is None))
        return built
    monkeypatch.setattr(cudnn_convs, "_graph", graph)
    operands = check_all_three(data, depthwise, dtype, channels_last, xp=gpu.xp)
    if path == "own kernels":
        assert runs == []
    elif path == "cudnn" and all(a.size for a in operands):
        kept = [built.plan for built in cudnn_convs._graphs.values()
                if built is not cudnn_convs._UNSUPPORTED]
        assert len(kept) + len(refused) == 3 and None not in kept   # each op chose its path
