"""Eager execution: graphops.runtime.eager.execute runs one op through placement and kernel lookup."""

import numpy as np
import pytest

from graphops.runtime import devices, eager
from graphops.registry import OpKernel, dtypes, errors, get_op_def, register_kernel, register_op

CONSTRUCTED = []     # (attrs fail value, device) per kernel construction
TRANSFERS = []       # ("to" | "from", shape) per fake device copy

register_op("EagerTestAdd").input("x: T").input("n: int32").output("y: T") \
    .attr("T: {float, double}").attr("mode: string = ''")
register_op("EagerTestPair").input("x: float").output("a: float").output("b: float")
register_op("EagerTestCpuOnly").input("x: float").output("y: float")


def _check_mode(ctx):
    mode = ctx.get_attr("mode")
    if mode == "construct":
        raise errors.InvalidArgumentError("mode 'construct' is refused")
    return mode


def _compute_add(self, ctx):
    if self.mode == "compute":
        raise errors.InvalidArgumentError(f"x must be small, got shape {ctx.input(0).shape}")
    if self.mode == "memory":
        raise MemoryError("out of memory allocating 1099511627776 bytes")
    if self.mode == "numpy":
        np.zeros(-1)
    ctx.set_output(0, ctx.input(0) + ctx.input(1).astype(ctx.input(0).dtype))


@register_kernel("EagerTestAdd", device="CPU",
                 type_constraints={"T": [dtypes.float32, dtypes.float64]})
class AddCpu(OpKernel):
    def __init__(self, ctx):
        super().__init__(ctx)
        self.mode = _check_mode(ctx)
        CONSTRUCTED.append((self.mode, "CPU"))

    compute = _compute_add


@register_kernel("EagerTestPair", device="CPU")
class PairCpu(OpKernel):
    def compute(self, ctx):
        ctx.set_output(0, ctx.input(0))      # forgets output 1


@register_kernel("EagerTestCpuOnly", device="CPU")
class CpuOnly(OpKernel):
    def compute(self, ctx):
        ctx.set_output(0, ctx.input(0) * 2)


class FakeArray(np.ndarray):
    """An array 'living on' the fake accelerator."""


@register_kernel("EagerTestAdd", device="FAKE", type_constraints={"T": [dtypes.float32]},
                 host_memory=("n",))
class AddFake(OpKernel):
    def __init__(self, ctx):
        super().__init__(ctx)
        self.mode = _check_mode(ctx)
        CONSTRUCTED.append((self.mode, "FAKE"))

    def compute(self, ctx):
        assert type(ctx.input(0)) is FakeArray and type(ctx.input(1)) is np.ndarray
        _compute_add(self, ctx)


def _to_device(array, index):
    TRANSFERS.append(("to", array.shape))
    return np.array(array).view(FakeArray)


def _to_host(array):
    TRANSFERS.append(("from", array.shape))
    return np.array(array)


FAKE = devices.DeviceType("FAKE", 1, np, preference=50, to_device=_to_device, to_host=_to_host,
                          owns=lambda a: isinstance(a, FakeArray))


@pytest.fixture
def fake_device():
    devices.register_device_type(FAKE)
    TRANSFERS.clear()
    yield FAKE
    devices.unregister_device_type("FAKE")


def _add(x, n, mode="", name=None, T=dtypes.float32):
    return eager.execute(get_op_def("EagerTestAdd"), [x, n], {"T": T, "mode": mode}, name)


def test_runs_on_cpu_and_returns_numpy():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    (y,) = _add(x, np.int32(2))
    assert type(y) is np.ndarray and y.dtype == np.float32
    np.testing.assert_array_equal(y, x + 2)


def test_scalar_outputs_are_arrays():
    (y,) = _add(np.array(1.5, np.float64), np.array(1, np.int32), T=dtypes.float64)
    assert isinstance(y, np.ndarray) and y.shape == () and y == 2.5


def test_kernel_instances_are_cached_per_attrs_and_dtypes():
    CONSTRUCTED.clear()
    x = np.ones(3, np.float32)
    for _ in range(3):
        _add(x, np.int32(1), mode="cached")
    assert CONSTRUCTED == [("cached", "CPU")]
    _add(x, np.int32(1), mode="other")
    _add(x.astype(np.float64), np.int32(1), mode="cached", T=dtypes.float64)
    assert CONSTRUCTED == [("cached", "CPU"), ("other", "CPU"), ("cached", "CPU")]


def test_kernel_op_error_keeps_class_and_names_op():
    with pytest.raises(errors.InvalidArgumentError) as info:
        _add(np.ones((2, 2), np.float32), np.int32(1), mode="compute", name="adder")
    message = info.value.message
    assert "x must be small, got shape (2, 2)" in message
    assert message.endswith(" [Op:EagerTestAdd] name: adder")
    assert "float32[2,2], int32[]" in message
    assert "/job:localhost/replica:0/task:0/device:CPU:0" in message
    assert info.value.__cause__ is None


def test_unnamed_op_error_ends_with_op_type():
    with pytest.raises(errors.InvalidArgumentError, match=r"\[Op:EagerTestAdd\]$"):
        _add(np.ones(2, np.float32), np.int32(1), mode="compute")


def test_numpy_error_becomes_internal_error():
    with pytest.raises(errors.InternalError) as info:
        _add(np.ones(2, np.float32), np.int32(1), mode="numpy")
    assert "ValueError: negative dimensions are not allowed" in info.value.message
    assert "EagerTestAdd" in info.value.message and "device:CPU:0" in info.value.message
    assert isinstance(info.value.__cause__, ValueError)


def test_out_of_memory_becomes_resource_exhausted():
    """A kernel's MemoryError (CuPy's OutOfMemoryError is one) is TF's ResourceExhaustedError
    ("OOM when allocating"), naming the op and device, not an internal error."""
    with pytest.raises(errors.ResourceExhaustedError) as info:
        _add(np.ones(2, np.float32), np.int32(1), mode="memory")
    message = info.value.message
    assert "OOM when allocating: MemoryError: out of memory allocating 1099511627776" in message
    assert "EagerTestAdd" in message and "device:CPU:0" in message


def test_constructor_error_is_raised_with_op_info():
    with pytest.raises(errors.InvalidArgumentError, match="mode 'construct' is refused"):
        _add(np.ones(2, np.float32), np.int32(1), mode="construct")


def test_missing_output_is_internal_error():
    with pytest.raises(errors.InternalError, match="did not set output 1"):
        eager.execute(get_op_def("EagerTestPair"), [np.ones(2, np.float32)], {})


def test_no_kernel_is_not_found_listing_kernels():
    with pytest.raises(errors.NotFoundError) as info:
        _add(np.ones(2, np.int32), np.int32(1), T=dtypes.int32)
    assert "No registered 'EagerTestAdd' OpKernel for 'CPU' devices" in info.value.message
    assert "device='CPU'; T in [DT_FLOAT, DT_DOUBLE]" in info.value.message


def test_prefers_accelerator_and_moves_inputs(fake_device):
    CONSTRUCTED.clear()
    x = np.arange(4, dtype=np.float32)
    (y,) = _add(x, np.int32(3))
    assert CONSTRUCTED == [("", "FAKE")]
    assert type(y) is FakeArray        # outputs stay on the device, as CuPy arrays would
    np.testing.assert_array_equal(np.asarray(y), x + 3)
    assert TRANSFERS == [("to", (4,))]    # n is host memory: not copied
    TRANSFERS.clear()
    (z,) = _add(y, np.int32(1))          # already on the device: no copy
    assert TRANSFERS == []
    np.testing.assert_array_equal(np.asarray(z), x + 4)


def test_device_arrays_come_back_for_cpu_kernels(fake_device):
    y = np.arange(3, dtype=np.float32).view(FakeArray)
    (z,) = eager.execute(get_op_def("EagerTestCpuOnly"), [y], {})
    assert type(z) is np.ndarray and TRANSFERS == [("from", (3,))]
    np.testing.assert_array_equal(z, [0, 2, 4])


def test_falls_back_to_cpu_when_accelerator_lacks_dtype(fake_device):
    CONSTRUCTED.clear()
    (y,) = _add(np.ones(2, np.float64), np.int32(1), mode="f64", T=dtypes.float64)
    assert CONSTRUCTED == [("f64", "CPU")] and type(y) is np.ndarray
