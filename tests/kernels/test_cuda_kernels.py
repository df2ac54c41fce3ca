"""The conv family's CUDA kernels (``cuda_patches``, ``cuda_depthwise``), run on the CPU by
``cuda_emulation`` (every thread in turn) and checked against the slow float64 references:
the index arithmetic, bounds and sums of each kernel for any geometry, both index widths,
and chunked launches. On a GPU, tests/kernels/test_gpu_conv.py runs the same kernels there.
"""

import shutil
import subprocess

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from graphops.kernels.conv_algorithms import (cuda_build, cuda_depthwise, cuda_patches,
                                              cudnn_convs, layout)
from graphops.kernels.conv_algorithms.dense import (conv_backprop_filter, conv_backprop_input,
                                                    conv_forward)
from graphops.kernels.conv_algorithms.depthwise import (depthwise_backprop_filter,
                                                        depthwise_backprop_input,
                                                        depthwise_forward)
from graphops.testing import simulated_gpu
from tests.kernels import cuda_emulation
from tests.kernels.test_gpu_conv import geometries
from tests.reference_conv import (conv_backprop_filter_ref, conv_backprop_input_ref,
                                  conv_forward_ref, output_size)
from tests.reference_depthwise import (depthwise_backprop_filter_ref,
                                       depthwise_backprop_input_ref, depthwise_forward_ref)

pytestmark = pytest.mark.skipif(cuda_emulation.COMPILER is None, reason="no C++ compiler")
xp = cuda_emulation.xp
TOLERANCE = {np.float64: 1e-12, np.float32: 2e-5, np.float16: 2e-3}
SETTINGS = settings(max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture(autouse=True)
def own_kernels(monkeypatch):
    """These tests are of graphops' own kernels: cuDNN, where installed, stays out."""
    monkeypatch.setitem(cudnn_convs._state, "session", None)


def _ops(depthwise):
    if depthwise:
        return ((depthwise_forward, depthwise_backprop_input, depthwise_backprop_filter),
                (depthwise_forward_ref, depthwise_backprop_input_ref,
                 depthwise_backprop_filter_ref))
    return ((conv_forward, conv_backprop_input, conv_backprop_filter),
            (conv_forward_ref, conv_backprop_input_ref, conv_backprop_filter_ref))


def check_all_three(data, depthwise, dtype, channels_last, xp=xp):
    """The three ops of a drawn conv through the CUDA paths of array module ``xp`` (cuDNN's
    where it, or its emulation, is installed), against the references; the operands."""
    rank = 2 if depthwise else data.draw(st.integers(1, 3), label="rank")
    strides, dilations, pads, spatial, kernel = data.draw(geometries(rank), label="geometry")
    out_sp = tuple(output_size(*args) for args in zip(spatial, kernel, strides, dilations,
                                                      *zip(*pads)))
    n = data.draw(st.integers(1, 3), label="n")
    c, o = data.draw(st.integers(1, 4), label="c"), data.draw(st.integers(1, 4), label="o")
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    shaped = (lambda s, ch: (n, *s, ch)) if channels_last else (lambda s, ch: (n, ch, *s))
    x = rng.standard_normal(shaped(spatial, c)).astype(dtype)
    w = rng.standard_normal((*kernel, c, o)).astype(dtype)
    dy = rng.standard_normal(shaped(out_sp, c * o if depthwise else o)).astype(dtype)
    geo = (strides, dilations, pads)
    ops, refs = _ops(depthwise)
    wide = [a.astype(np.float64) for a in (x, w, dy)]
    device_x, device_w, device_dy = (xp.asarray(a) for a in (x, w, dy))
    got = [ops[0](device_x, device_w, *geo, channels_last, xp=xp),
           ops[1](device_dy, device_w, x.shape, *geo, channels_last, xp=xp),
           ops[2](device_x, device_dy, w.shape, *geo, channels_last, xp=xp)]
    want = [refs[0](wide[0], wide[1], *geo, channels_last),
            refs[1](wide[2], wide[1], x.shape, *geo, channels_last),
            refs[2](wide[0], wide[2], w.shape, *geo, channels_last)]
    for result, expected in zip(got, want):
        result = result.get() if hasattr(result, "get") else result
        assert result.dtype == dtype and result.shape == expected.shape
        scale = max(1.0, np.abs(expected).max(initial=0))
        np.testing.assert_allclose(result.astype(np.float64), expected, rtol=0,
                                   atol=TOLERANCE[dtype] * scale * 8)
    return x, w, dy


@SETTINGS
@given(data=st.data(), depthwise=st.booleans(), channels_last=st.booleans(),
       dtype=st.sampled_from([np.float64, np.float32, np.float16]))
def test_cuda_paths_match_the_references(data, depthwise, dtype, channels_last):
    check_all_three(data, depthwise, dtype, channels_last)


@SETTINGS
@given(data=st.data(), depthwise=st.booleans(),
       budget=st.sampled_from([1, 200, 3000, 60000]))
def test_chunked_launches_and_wide_indices(monkeypatch, data, depthwise, budget):
    """Chunk budgets down to one patch row per launch (and input gradients whose image
    passes the budget handed to the array-module path), grids of one to three blocks of 4
    or 32 threads so that grid-stride loops take several turns, patch rows and filter
    slices split over at most five blocks,
    filter-gradient slices of many positions, and the 64-bit index variant of every kernel
    (forced by a zero 32-bit limit): the same sums."""
    monkeypatch.setattr(layout, "GPU_CHUNK_BYTES", budget)
    monkeypatch.setattr(cuda_build, "INT32_LIMIT", data.draw(st.sampled_from([0, 2**31 - 1])))
    monkeypatch.setattr(cuda_build, "MAX_BLOCKS", data.draw(st.integers(1, 3)))
    monkeypatch.setattr(cuda_build, "THREADS", data.draw(st.sampled_from([4, 32])))
    monkeypatch.setattr(cuda_build, "MAX_GRID_Y", 5)
    monkeypatch.setattr(cuda_depthwise, "FILTER_THREADS", data.draw(st.sampled_from([1, 64])))
    check_all_three(data, depthwise, np.float64, channels_last=True)


def test_input_gradient_of_a_non_finite_filter():
    """A stride-1 input gradient with an inf tap is the gather's (the flipped forward would
    multiply the inf by dy's zero padding into NaNs the gradient does not have)."""
    rng = np.random.default_rng(0)
    w = rng.standard_normal((3, 3, 2, 2))
    w[1, 2, 0, 1] = np.inf
    dy = rng.standard_normal((1, 5, 5, 2))
    geo = ((1, 1), (1, 1), ((1, 1), (1, 1)))
    got = conv_backprop_input(dy, w, (1, 5, 5, 2), *geo, xp=xp)
    want = conv_backprop_input_ref(dy, w, (1, 5, 5, 2), *geo)
    assert np.isinf(want).any() and not np.isnan(want).any()
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_kernels_take_the_cuda_path():
    """With the emulated CuPy as the array module, the convs run the kernels (not the
    generic array-module code): a stride-1 input gradient as a forward conv (patch
    matrices), a strided one by the gather; integer convs stay on the generic code."""
    assert cuda_build.runs_on(xp, np.float32) and cuda_build.runs_on(xp, np.float64)
    assert not cuda_build.runs_on(xp, np.int64) and not cuda_build.runs_on(np, np.float32)
    assert not cuda_build.runs_on(simulated_gpu.xp, np.float32)
    calls = []
    original = cuda_build.kernel

    def spy(xp_, source, name, dtype, largest):
        calls.append(name)
        return original(xp_, source, name, dtype, largest)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cuda_build, "kernel", spy)
        x, w = np.ones((1, 5, 5, 2), np.float32), np.ones((3, 3, 2, 2), np.float32)
        geo = ((1, 1), (1, 1), ((1, 1), (1, 1)))
        conv_forward(x, w, *geo, xp=xp)
        conv_backprop_input(x, w, x.shape, *geo, xp=xp)
        conv_backprop_input(x[:, :3, :3], w, x.shape, (2, 2), (1, 1), ((1, 1), (1, 1)), xp=xp)
        depthwise_forward(x, w[..., :1], *geo, xp=xp)
        depthwise_backprop_filter(x, x, (3, 3, 2, 1), *geo, xp=xp)
        depthwise_backprop_input(x, w[..., :1], x.shape, *geo, xp=xp)
        conv_forward(x.astype(np.int32), w.astype(np.int32), *geo, xp=xp)
    assert calls == ["im2col", "im2col", "col2im", "forward", "backprop_filter",
                     "backprop_input"]


def test_empty_depthwise_operands():
    """Depthwise convs of an empty batch give empty or zero results without a launch."""
    geo = ((1, 1), (1, 1), ((1, 1), (1, 1)))
    x, w = np.ones((0, 4, 4, 2), np.float32), np.ones((3, 3, 2, 1), np.float32)
    assert depthwise_forward(x, w, *geo, xp=xp).shape == (0, 4, 4, 2)
    assert depthwise_backprop_input(x, w, x.shape, *geo, xp=xp).shape == (0, 4, 4, 2)
    dw = depthwise_backprop_filter(x, x, w.shape, *geo, xp=xp)
    assert dw.shape == w.shape and not dw.any()


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="no CUDA compiler")
@pytest.mark.parametrize("module", [cuda_patches, cuda_depthwise], ids=lambda m: m.__name__)
@pytest.mark.parametrize("scalar, index", [("float", "int"), ("double", "long long")])
def test_kernel_sources_compile_for_the_gpu(tmp_path, module, scalar, index):
    """Each source, as CuPy compiles it (the header's typedefs first), builds for a GPU too
    (NVIDIA's compiler, to PTX): C++ that the emulation's compiler takes and NVRTC would not
    shows here."""
    source = tmp_path / "kernels.cu"
    source.write_text(cuda_build.header(scalar, index) + module.SOURCE)
    built = subprocess.run(["nvcc", "-ptx", "-o", str(tmp_path / "out.ptx"),
                            str(source)], capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
