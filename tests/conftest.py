"""Fixtures shared by the test modules."""

import os

# TensorFlow, the optional oracle, reads these once, when the first module imports it:
# quiet logs, and its Eigen kernels (its oneDNN build aborts the process on some conv cases).
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

import pytest  # noqa: E402
from hypothesis import settings  # noqa: E402

# The suite draws the same hypothesis examples on every run ("derandomize"), so a result
# changes only with the code; HYPOTHESIS_PROFILE=explore draws new ones each run.
settings.register_profile("repeatable", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "repeatable"))

from graphops.kernels.conv_algorithms import tuning  # noqa: E402
from graphops.runtime import devices, execution_mode  # noqa: E402

# The suite's conv results come from the fixed rules' paths on every call, so tests that
# compare two runs bit for bit stay exact; test_conv_tuning turns tuning on where it tests it.
tuning.set_enabled(False)
from graphops.testing.simulated_gpu import simulated_gpu  # noqa: E402
from tests.op_runners import make_runner  # noqa: E402


def _real_gpu():
    gpu = devices.get_device_type("GPU")
    return gpu is not None and gpu.xp.__name__ == "cupy"


@pytest.fixture(params=["simulated", pytest.param("cuda", marks=pytest.mark.gpu)])
def gpu(request):
    """Runs a test on the simulated GPU (always) and on a real CUDA GPU (when present).

    Yields the simulated device's TransferCounter, or None on a real GPU.
    """
    if request.param == "simulated":
        with simulated_gpu() as counter:
            yield counter
    else:
        if not _real_gpu():
            pytest.skip("no CUDA GPU: CuPy is not installed or sees no device")
        yield None


@pytest.fixture(autouse=True)
def _eager_after_each_test():
    """Every test starts in eager mode, whatever the process default (graph mode, as TF 1.x)
    or the test before switched to: the suite's unit tests were written eagerly; a test that
    builds graphs says so with `with gp.Graph().as_default():` or
    `gp.disable_eager_execution()`. Eager mode is restored after the test as well."""
    execution_mode.enable_eager_execution()
    yield
    execution_mode.enable_eager_execution()


@pytest.fixture
def sim_gpu():
    """The simulated GPU only (for tests that count host<->device copies)."""
    with simulated_gpu() as counter:
        yield counter



@pytest.fixture(params=["eager", "graph"])
def run(request):
    """`run(op, **kwargs)`: one raw op, eagerly and in a Session (see tests/op_runners.py)."""
    return make_runner(request.param)


# The kernel test modules whose kernels run numba-compiled loops: numba generates them for the
# CPU it targets, so the README's test command runs these a second time with AVX2 code
# (NUMBA_CPU_NAME=haswell NUMBA_CPU_FEATURES=""), on any x86 machine: `-m compiled_loops`.
COMPILED_LOOP_MODULES = (
    "test_conv_", "test_fuzz_conv", "test_pooling_", "test_host_isa", "test_half_",
    "test_training_apply_ops", "test_activation_ops", "test_layout_transpose",
    "test_kernel_repeats", "test_normalization_ops", "test_parallelism", "test_random_ops",
    "test_everyday_array_ops", "test_variable_reads", "test_fused_elementwise",
    "test_loop_program", "test_summary_histogram", "test_channel_chain",
    "test_compiled_select", "test_sparse_xent_pass", "test_softmax_pass",
)


def pytest_collection_modifyitems(items):
    for item in items:
        module = item.path.name
        if item.path.parent.name == "kernels" and module.startswith(COMPILED_LOOP_MODULES):
            item.add_marker(pytest.mark.compiled_loops)
