"""Fixtures shared by the test modules."""

import pytest

from graphops.runtime import devices
from graphops.testing.simulated_gpu import simulated_gpu
from tests.op_runners import make_runner


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


@pytest.fixture
def sim_gpu():
    """The simulated GPU only (for tests that count host<->device copies)."""
    with simulated_gpu() as counter:
        yield counter



@pytest.fixture(params=["eager", "graph"])
def run(request):
    """`run(op, **kwargs)`: one raw op, eagerly and in a Session (see tests/op_runners.py)."""
    return make_runner(request.param)
