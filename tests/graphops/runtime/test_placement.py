"""Devices and placement: device specs, the device table, pins, soft placement, copies."""

import numpy as np
import pytest

import graphops as gp
from graphops.runtime import devices, placement
from graphops.registry import OpKernel, dtypes, errors, register_kernel, register_op

TRANSFERS = []        # ("to" | "from", shape) per copy across the fake device boundary
SEEN = []             # (node name, device type, input types) per compute

register_op("PlaceTestScale").input("x: T").input("factor: int32").output("y: T") \
    .attr("T: {float, double}")
register_op("PlaceTestSize").input("x: float").output("n: int32")
register_op("PlaceTestCpuOnly").input("x: float").output("y: float")


class FakeArray(np.ndarray):
    """An array 'living on' the fake accelerator."""


def _record(ctx):
    SEEN.append((ctx.node_name, ctx.device_type, tuple(type(x).__name__ for x in ctx.inputs)))


class ScaleKernel(OpKernel):
    def compute(self, ctx):
        _record(ctx)
        ctx.set_output(0, ctx.input(0) * ctx.input(1).astype(ctx.input(0).dtype))


class SizeKernel(OpKernel):
    def compute(self, ctx):
        _record(ctx)
        ctx.set_output(0, np.array(ctx.input(0).size, np.int32))


register_kernel("PlaceTestScale", "CPU", {"T": [dtypes.float32, dtypes.float64]})(ScaleKernel)
register_kernel("PlaceTestScale", "FAKE", {"T": [dtypes.float32]},
                host_memory=("factor",))(type("FakeScale", (ScaleKernel,), {}))
register_kernel("PlaceTestSize", "CPU")(SizeKernel)
register_kernel("PlaceTestSize", "FAKE", host_memory=("n",))(type("FakeSize", (SizeKernel,), {}))


@register_kernel("PlaceTestCpuOnly", "CPU")
class CpuOnly(OpKernel):
    def compute(self, ctx):
        _record(ctx)
        ctx.set_output(0, ctx.input(0) + 1)


def _to_device(array, index):
    assert type(array) is np.ndarray
    TRANSFERS.append(("to", array.shape))
    return np.array(array).view(FakeArray)


def _to_host(array):
    assert type(array) is FakeArray
    TRANSFERS.append(("from", array.shape))
    return np.array(array)


FAKE = devices.DeviceType("FAKE", 2, np, preference=50, to_device=_to_device,
                          to_host=_to_host, owns=lambda a: isinstance(a, FakeArray))


@pytest.fixture
def fake():
    devices.register_device_type(FAKE)
    TRANSFERS.clear()
    SEEN.clear()
    yield FAKE
    devices.unregister_device_type("FAKE")


# ------------------------------------------------------------------------ device specs

@pytest.mark.parametrize("spec, expected", [
    ("", ""),
    ("/cpu:0", "/device:CPU:0"),
    ("/gpu:1", "/device:GPU:1"),
    ("/GPU:0", "/device:GPU:0"),
    ("GPU:0", "/device:GPU:0"),
    ("/device:GPU:0", "/device:GPU:0"),
    ("/device:gpu:0", "/device:GPU:0"),
    ("/device:CPU:*", "/device:CPU:*"),
    ("/cpu", "/device:CPU:*"),
    (devices.LOCAL_PREFIX + "/device:CPU:0", devices.LOCAL_PREFIX + "/device:CPU:0"),
    ("/job:worker", "/job:worker"),
])
def test_device_spec_round_trip(spec, expected):
    assert devices.canonical_device(spec) == expected


@pytest.mark.parametrize("spec, message", [
    ("/foo:0", "Unknown attribute 'foo' is encountered while parsing the device spec: '/foo:0'."),
    ("/cpu:0/gpu:0", "Multiple device types are not allowed while parsing the device spec"),
    ("/gpu:x", "Invalid index 'x' in the device spec: '/gpu:x'."),
    ("/replica:a", "Invalid index 'a'"),
])
def test_device_spec_errors(spec, message):
    with pytest.raises(ValueError) as info:
        devices.DeviceSpec.from_string(spec)
    assert message in str(info.value)


def test_device_spec_merge_takes_inner_fields():
    outer = devices.DeviceSpec.from_string("/job:a/device:GPU:1")
    assert outer.make_merged_spec("/cpu:0").to_string() == "/job:a/device:CPU:0"
    assert outer.make_merged_spec("/task:3").to_string() == "/job:a/task:3/device:GPU:1"
    assert outer.make_merged_spec("/device:CPU:*").to_string() == "/job:a/device:CPU:*"


def test_cpu_always_listed_and_fake_type_pluggable(fake):
    names = [d.name for d in devices.list_physical_devices()]
    assert names[0] == "/physical_device:CPU:0"
    assert "/physical_device:FAKE:1" in names
    assert devices.list_physical_devices("fake") == [
        devices.PhysicalDevice("/physical_device:FAKE:0", "FAKE"),
        devices.PhysicalDevice("/physical_device:FAKE:1", "FAKE")]
    assert devices.get_device_type("CPU").is_host and not FAKE.is_host


def test_no_gpu_without_cupy():
    try:
        import cupy  # noqa: F401
        pytest.skip("CuPy is installed")
    except ImportError:
        pass
    assert devices.get_device_type("GPU") is None
    assert devices.list_physical_devices("GPU") == []


# ------------------------------------------------------------------ per-node decisions

F32 = {"T": dtypes.float32}
F64 = {"T": dtypes.float64}


def test_unpinned_prefers_accelerator_with_kernel(fake):
    assert placement.place_node("a", "PlaceTestScale", F32).device.short_name == "FAKE:0"
    assert placement.place_node("b", "PlaceTestScale", F64).device.short_name == "CPU:0"
    assert placement.place_node("c", "PlaceTestCpuOnly", {}).device.short_name == "CPU:0"


def test_without_accelerator_everything_is_cpu():
    placed = placement.place_node("a", "PlaceTestScale", F32)
    assert placed.device.name == "/job:localhost/replica:0/task:0/device:CPU:0"
    assert placed.kernel_def.kernel_class is ScaleKernel


def test_pins_are_honoured(fake):
    def where(pin):
        return placement.place_node("a", "PlaceTestScale", F32, pin).device.short_name
    assert where("/device:FAKE:1") == "FAKE:1"
    assert where("/cpu:0") == "CPU:0"
    assert where("/job:localhost") == "FAKE:0"       # no device type: the unpinned choice


def test_impossible_pin_without_soft_placement_names_kernels(fake):
    with pytest.raises(errors.InvalidArgumentError) as info:
        placement.place_node("a_fake", "PlaceTestScale", F64, "/device:FAKE:0",
                             allow_soft_placement=False)
    assert info.value.message == (
        "Cannot assign a device for operation a_fake: Could not satisfy explicit device "
        "specification '/device:FAKE:0' because no supported kernel for FAKE devices is "
        "available.\nRegistered kernels:\n"
        "  device='CPU'; T in [DT_FLOAT, DT_DOUBLE]\n"
        "  device='FAKE'; T in [DT_FLOAT]")


def test_missing_device_without_soft_placement(fake):
    with pytest.raises(errors.InvalidArgumentError) as info:
        placement.place_node("g", "PlaceTestCpuOnly", {}, "/gpu:0", allow_soft_placement=False)
    assert info.value.message.startswith(
        "Cannot assign a device for operation g: {{node g}} was explicitly assigned to "
        "/device:GPU:0 but available devices are [ /job:localhost/replica:0/task:0/device:FAKE:0, ")
    with pytest.raises(errors.InvalidArgumentError, match="explicitly assigned to /device:FAKE:2"):
        placement.place_node("g", "PlaceTestScale", F32, "/device:FAKE:2",
                             allow_soft_placement=False)


def test_soft_placement_falls_back_and_logs(fake, capsys):
    placed = placement.place_node("a", "PlaceTestScale", F64, "/device:FAKE:0",
                                  log_device_placement=True)
    assert placed.device.short_name == "CPU:0"
    err = capsys.readouterr().err
    assert err == ("a: (PlaceTestScale): /job:localhost/replica:0/task:0/device:CPU:0 "
                   "(soft placement: '/device:FAKE:0' could not be used)\n")


def test_no_kernel_anywhere_is_not_found(fake):
    with pytest.raises(errors.NotFoundError, match="No registered 'PlaceTestScale' OpKernel"):
        placement.place_node("a", "PlaceTestScale", {"T": dtypes.int32})


# --------------------------------------------------------------- whole graphs in a Session

def _scale(x, factor, name=None):
    return gp.raw_ops.PlaceTestScale(x=x, factor=factor, name=name)


def test_copies_once_per_crossing_edge(fake):
    g = gp.Graph()
    with g.as_default():
        x = gp.placeholder(gp.float32, shape=(3,), name="x")
        f = gp.constant(2, dtype=gp.int32, name="f")
        a = _scale(x, f, name="a")                  # FAKE (x copied to the device once)
        b = _scale(a, f, name="b")                  # FAKE, reads a on the device
        c1 = gp.raw_ops.PlaceTestCpuOnly(x=a, name="c1")   # CPU: a copied back once ...
        c2 = gp.raw_ops.PlaceTestCpuOnly(x=a, name="c2")   # ... and shared with c2
    with gp.Session(graph=g) as sess:
        out = sess.run([b, c1, c2], {x: [1.0, 2.0, 3.0]})
    np.testing.assert_array_equal(out[0], [4.0, 8.0, 12.0])
    np.testing.assert_array_equal(out[1], [3.0, 5.0, 7.0])
    assert all(type(v) is np.ndarray for v in out)            # fetched results are NumPy
    assert sorted(TRANSFERS) == [("from", (3,)), ("from", (3,)), ("to", (3,))]  # a, b, x
    seen = dict((name, (dev, types)) for name, dev, types in SEEN)
    assert seen["a"] == ("FAKE", ("FakeArray", "ndarray"))   # factor is host memory
    assert seen["b"] == ("FAKE", ("FakeArray", "ndarray"))
    assert seen["c1"] == ("CPU", ("ndarray",))


def test_host_memory_output_needs_no_copy(fake):
    g = gp.Graph()
    with g.as_default():
        x = gp.placeholder(gp.float32, shape=(None,), name="x")
        n = gp.raw_ops.PlaceTestSize(x=x, name="n")        # FAKE, output n in host memory
        y = _scale(x, n, name="y")                          # FAKE: factor is host memory
    with gp.Session(graph=g) as sess:
        out = sess.run([n, y], {x: np.ones(4, np.float32)})
    assert out[0] == 4 and out[1].tolist() == [4.0] * 4
    # x crosses to the device once (shared by n and y); y comes back; n never moves.
    assert sorted(TRANSFERS) == [("from", (4,)), ("to", (4,))]


def test_pins_and_soft_placement_in_a_session(fake, capsys):
    g = gp.Graph()
    with g.as_default():
        x = gp.placeholder(gp.float64, shape=(), name="x")
        f = gp.constant(3, dtype=gp.int32)
        with gp.device("/device:FAKE:1"):
            y = _scale(x, f, name="y")          # no FAKE kernel for float64
    with gp.Session(graph=g, log_device_placement=True) as sess:
        assert sess.run(y, {x: 2.0}) == 6.0
    assert ("y: (PlaceTestScale): /job:localhost/replica:0/task:0/device:CPU:0 "
            "(soft placement: '/device:FAKE:1' could not be used)") in capsys.readouterr().err
    with gp.Session(graph=g, allow_soft_placement=False) as sess:
        with pytest.raises(errors.InvalidArgumentError) as info:
            sess.run(y, {x: 2.0})
        assert info.value.op is y.op
        assert "Could not satisfy explicit device specification '/device:FAKE:1' because no " \
               "supported kernel for FAKE devices is available." in info.value.message


def test_pinned_to_second_accelerator(fake):
    g = gp.Graph()
    with g.as_default():
        x = gp.placeholder(gp.float32, shape=(), name="x")
        with gp.device("/device:FAKE:1"):
            y = _scale(x, gp.constant(3, dtype=gp.int32), name="y")
    with gp.Session(graph=g) as sess:
        assert sess.run(y, {x: 2.0}) == 6.0
    assert ("y", "FAKE", ("FakeArray", "ndarray")) in SEEN


@pytest.mark.parametrize("failure, error", [(MemoryError, errors.ResourceExhaustedError),
                                             (RuntimeError, errors.InternalError)])
def test_failed_copy_names_the_tensor(fake, failure, error):
    """A copy that fails for want of device memory is ResourceExhaustedError (TF's OOM);
    any other failure an internal error. Both name the tensor and the two places."""
    def broken(array, index):
        raise failure("out of device memory")
    broken_type = devices.DeviceType("FAKE", 2, np, preference=50, to_device=broken,
                                     to_host=_to_host, owns=FAKE.owns)
    devices.register_device_type(broken_type)
    g = gp.Graph()
    with g.as_default():
        x = gp.placeholder(gp.float32, shape=(), name="x")
        y = _scale(x, gp.constant(2, dtype=gp.int32), name="y")
    with gp.Session(graph=g) as sess, pytest.raises(error) as info:
        sess.run(y, {x: 1.0})
    assert type(info.value) is error and info.value.message == (
        "Copying tensor 'x:0' from host memory to /job:localhost/replica:0/task:0/device:FAKE:0 "
        f"failed: {failure.__name__}: out of device memory")
    assert info.value.op is x.op
