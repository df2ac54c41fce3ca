"""Running on a GPU: variables and optimizers there, resource colocation, device-array feeds
and fetches, copies between host and device, eager execution, discovery without a GPU.

Most tests take the `gpu` fixture (conftest.py): they run on the simulated GPU and, when
one exists, on a real CUDA GPU. Tests that count copies use the simulated one only.
"""

import re
import sys
import types

import numpy as np
import pytest

import graphops as gp
from graphops.runtime import devices
from graphops.testing import simulated_gpu
from graphops.testing.simulated_gpu import SimArray, xp as sim_xp
from graphops.registry import OpKernel, errors, register_kernel, register_op
from tests import placement_log

def placed(capsys):
    """{node name: device type} from the log_device_placement lines printed so far."""
    return {node: devices.DeviceSpec.from_string(device).device_type
            for node, (_, device) in placement_log.parse(capsys.readouterr().err).items()}


def logging_session(graph, **kwargs):
    return gp.Session(graph=graph, log_device_placement=True, **kwargs)


# ------------------------------------------------------------------- variables + training

def _linear_model(optimizer, dtype=gp.float32, pin=None):
    """A least-squares model `y = x @ w + b` and its training op, optionally pinned."""
    rng = np.random.default_rng(0)
    np_dtype = dtype.as_numpy_dtype
    with gp.device(pin) if pin else _nothing():
        x = gp.placeholder(dtype, [None, 3], name="x")
        y = gp.placeholder(dtype, [None, 1], name="y")
        w = gp.Variable(rng.normal(size=(3, 1)).astype(np_dtype), name="w")
        b = gp.Variable(np.zeros(1, np_dtype), name="b")
        loss = gp.reduce_mean(gp.raw_ops.Square(x=gp.raw_ops.MatMul(a=x, b=w) + b - y))
        train = optimizer.minimize(loss)
    return x, y, w, b, loss, train


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _train(pin, optimizer_factory, dtype=gp.float32, steps=5):
    rng = np.random.default_rng(1)
    np_dtype = dtype.as_numpy_dtype
    data = rng.normal(size=(8, 3)).astype(np_dtype)
    target = (data @ np.array([[1.0], [-2.0], [0.5]]) + 0.3).astype(np_dtype)
    g = gp.Graph()
    with g.as_default():
        x, y, w, b, loss, train = _linear_model(optimizer_factory(), dtype, pin)
        init = gp.global_variables_initializer()
    with gp.Session(graph=g) as sess:
        sess.run(init)
        for _ in range(steps):
            sess.run(train, {x: data, y: target})
        return sess.run([w, b, loss], {x: data, y: target})


OPTIMIZERS = {
    "sgd": lambda: gp.train.GradientDescentOptimizer(0.1),
    "momentum": lambda: gp.train.MomentumOptimizer(0.05, 0.9),
    "nesterov": lambda: gp.train.MomentumOptimizer(0.05, 0.9, use_nesterov=True),
    "adam": lambda: gp.train.AdamOptimizer(0.1),
}


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
@pytest.mark.parametrize("dtype", [gp.float32, gp.float64, gp.float16])
def test_training_on_gpu_matches_cpu(gpu, name, dtype):
    on_gpu = _train("/GPU:0", OPTIMIZERS[name], dtype)
    on_cpu = _train("/CPU:0", OPTIMIZERS[name], dtype)
    tol = {gp.float16: 2e-2, gp.float32: 1e-5, gp.float64: 1e-12}[dtype]
    for a, b in zip(on_gpu, on_cpu):
        assert type(a) in (np.ndarray, np.float16, np.float32, np.float64)
        np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b, np.float64),
                                   rtol=tol, atol=tol)
    assert on_gpu[2] < _train("/GPU:0", OPTIMIZERS[name], dtype, steps=0)[2]   # it learns


def test_unpinned_variables_and_their_ops_live_on_the_gpu(gpu, capsys):
    g = gp.Graph()
    with g.as_default():
        x, y, w, b, loss, train = _linear_model(gp.train.AdamOptimizer(0.1))
        init = gp.global_variables_initializer()
    with logging_session(g) as sess:
        sess.run(init)
        sess.run(train, {x: np.ones((2, 3), np.float32), y: np.ones((2, 1), np.float32)})
    where = placed(capsys)
    for name, device in where.items():
        if re.search(r"VarHandleOp|Read|Assign|Apply|Variable|^w$|^b$", name):
            assert device == "GPU", (name, where)
    assert any(name.startswith("Adam") and device == "GPU" for name, device in where.items())


def test_resource_ops_follow_their_variable(gpu, capsys):
    """A read pinned elsewhere is colocated with the variable, as TF's placer does."""
    g = gp.Graph()
    with g.as_default():
        with gp.device("/CPU:0"):
            v = gp.Variable(np.arange(3, dtype=np.float32), name="v")
        with gp.device("/GPU:0"):
            read = gp.raw_ops.ReadVariableOp(resource=v.handle, dtype=gp.float32, name="read")
            doubled = gp.raw_ops.Mul(x=read, y=2.0, name="doubled")
    with logging_session(g) as sess:
        sess.run(v.initializer)
        np.testing.assert_array_equal(sess.run(doubled), [0.0, 2.0, 4.0])
    where = placed(capsys)
    assert where["v"] == where["read"] == "CPU" and where["doubled"] == "GPU"


class _PeekKernel(OpKernel):
    """Reads a variable through its handle (a CPU-only user-defined op)."""

    def compute(self, ctx):
        from graphops.kernels.ops.state import lookup_var
        ctx.set_output(0, lookup_var(ctx, 0).checked_value().copy())


register_op("ColocTestPeek").input("resource: resource").output("value: float")
register_kernel("ColocTestPeek", "CPU")(_PeekKernel)


def test_a_cpu_only_user_pulls_the_variable_to_the_cpu(gpu, capsys):
    g = gp.Graph()
    with g.as_default():
        v = gp.Variable(np.ones(2, np.float32), name="v")
        peek = gp.raw_ops.ColocTestPeek(resource=v.handle, name="peek")
    with logging_session(g) as sess:
        sess.run(v.initializer)
        assert sess.run(peek).tolist() == [1.0, 1.0]
    where = placed(capsys)
    assert where["v"] == where["v/Assign"] == where["peek"] == "CPU"
    with g.as_default():
        with gp.device("/GPU:0"):
            w = gp.Variable(np.ones(2, np.float32), name="w")
        peek_w = gp.raw_ops.ColocTestPeek(resource=w.handle, name="peek_w")
    with gp.Session(graph=g, allow_soft_placement=False) as sess:
        sess.run(w.initializer)          # pinned to the GPU, as asked
        with pytest.raises(errors.InvalidArgumentError) as info:
            sess.run(peek_w)
    assert "Cannot assign a device for operation peek_w" in info.value.message
    assert "no supported kernel for GPU devices is available" in info.value.message


def test_a_bfloat16_variable_stays_on_the_cpu(gpu, capsys):
    g = gp.Graph()
    with g.as_default():
        v = gp.Variable(np.ones(2, gp.bfloat16.as_numpy_dtype), name="v")
        inc = v.assign_add(np.ones(2, gp.bfloat16.as_numpy_dtype))
    with logging_session(g) as sess:
        sess.run(v.initializer)
        assert sess.run(inc).tolist() == [2.0, 2.0]
    where = placed(capsys)
    assert {where[n] for n in ("v", "v/Assign")} == {"CPU"}


def test_variable_on_another_device_is_refused(gpu):
    """Two handles to one shared variable on different devices: TF's access error."""
    g = gp.Graph()
    with g.as_default():
        with gp.device("/GPU:0"):
            on_gpu = gp.raw_ops.VarHandleOp(dtype=gp.float32, shape=[2], shared_name="shared")
            init = gp.raw_ops.AssignVariableOp(resource=on_gpu, value=[1.0, 2.0])
        with gp.device("/CPU:0"):
            on_cpu = gp.raw_ops.VarHandleOp(dtype=gp.float32, shape=[2], shared_name="shared",
                                            name="cpu_handle")
            read = gp.raw_ops.ReadVariableOp(resource=on_cpu, dtype=gp.float32, name="read")
    with gp.Session(graph=g) as sess:
        sess.run(init)
        with pytest.raises(errors.InvalidArgumentError) as info:
            sess.run(read)
    assert ("Trying to access resource shared located in device "
            "/job:localhost/replica:0/task:0/device:GPU:0 from device "
            "/job:localhost/replica:0/task:0/device:CPU:0") in info.value.message
    assert info.value.op is read.op


def test_variable_storage_is_a_device_array(sim_gpu):
    g = gp.Graph()
    with g.as_default():
        v = gp.Variable(np.arange(4, dtype=np.float32), name="v")
    with gp.Session(graph=g) as sess:
        sess.run(v.initializer)
        stored = sess._resources.lookup("v").value
        assert type(stored) is SimArray
        before = sim_gpu.to_device
        for _ in range(3):
            np.testing.assert_array_equal(sess.run(v.assign_add([1.0, 1.0, 1.0, 1.0])),
                                          np.arange(4) + 1 + _)
        # nothing travels: the constant delta lives on the device, and so does the variable
        assert sim_gpu.to_device == before


# ------------------------------------------------------------- feeds, fetches and copies

def _fed_graph(dtype, shape, device, make_y):
    """(graph, placeholder x, y = make_y(x) pinned to `device`)."""
    g = gp.Graph()
    with g.as_default():
        x = gp.placeholder(dtype, shape, name="x")
        with gp.device(device):
            y = make_y(x)
    return g, x, y


def test_fed_device_array_goes_straight_to_gpu_readers(sim_gpu):
    g, x, y = _fed_graph(gp.float32, [3], "/GPU:0", lambda x: gp.raw_ops.Mul(x=x, y=3.0))
    with gp.Session(graph=g) as sess:
        fed = sim_xp.asarray(np.array([1.0, 2.0, 3.0], np.float32))
        sim_gpu.reset()
        out = sess.run(y, {x: fed})
    assert type(out) is np.ndarray and out.tolist() == [3.0, 6.0, 9.0]
    assert (sim_gpu.to_device, sim_gpu.to_host) == (0, 1)   # x is already there; y comes back


def test_fed_device_array_reaches_host_readers_and_fetches(sim_gpu):
    g, x, y = _fed_graph(gp.float64, [2], "/CPU:0", lambda x: gp.raw_ops.AddV2(x=x, y=1.0))
    with gp.Session(graph=g) as sess:
        fed = sim_xp.asarray(np.array([1, 2], np.int64))     # converted to float64 on device
        out_y, out_x = sess.run([y, x], {x: fed})
    assert type(out_y) is np.ndarray and out_y.tolist() == [2.0, 3.0]
    assert type(out_x) is np.ndarray and out_x.dtype == np.float64 and out_x.tolist() == [1, 2]


def test_fed_device_array_with_wrong_shape_or_type(sim_gpu):
    g = gp.Graph()
    with g.as_default():
        x = gp.placeholder(gp.float32, [2], name="x")
        y = gp.raw_ops.Identity(input=x)
    with gp.Session(graph=g) as sess:
        with pytest.raises(errors.InvalidArgumentError,
                           match=r"Cannot feed value of shape \(3,\) for Tensor 'x:0'"):
            sess.run(y, {x: sim_xp.zeros(3, np.float32)})
        with pytest.raises(TypeError, match="Cannot feed a complex value"):
            sess.run(y, {x: sim_xp.zeros(2, np.complex64)})


def test_one_copy_per_tensor_and_destination(sim_gpu):
    g = gp.Graph()
    with g.as_default():
        x = gp.placeholder(gp.float32, [4], name="x")
        with gp.device("/GPU:0"):
            outs = [x * float(k) for k in range(1, 4)]
            total = outs[0] + outs[1] + outs[2]
    with gp.Session(graph=g) as sess:
        sim_gpu.reset()
        result = sess.run(total, {x: np.ones(4, np.float32)})
    assert result.tolist() == [6.0] * 4
    # x once for its three readers (the constants live on the device); the result comes back
    assert (sim_gpu.to_device, sim_gpu.to_host) == (1, 1)


def test_make_callable_on_gpu(gpu):
    g = gp.Graph()
    with g.as_default():
        x = gp.placeholder(gp.float32, [2, 2], name="x")
        y = gp.raw_ops.MatMul(a=x, b=x)
    with gp.Session(graph=g) as sess:
        run = sess.make_callable(y, [x])
        out = run(np.eye(2, dtype=np.float32) * 2)
    assert type(out) is np.ndarray and out.tolist() == [[4.0, 0.0], [0.0, 4.0]]


class _WhereKernel(OpKernel):
    """Outputs the index of the simulated device that is current while it runs."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.built_on = simulated_gpu.current_device()

    def compute(self, ctx):
        ctx.set_output(0, ctx.xp.asarray([self.built_on, simulated_gpu.current_device()],
                                         dtype=np.int32))


register_op("DeviceTestWhere").output("index: int32").set_is_stateful()
register_kernel("DeviceTestWhere", ("CPU", "GPU"))(_WhereKernel)


def test_kernels_build_and_run_with_their_device_current():
    with simulated_gpu.simulated_gpu(count=2):
        g = gp.Graph()
        with g.as_default():
            with gp.device("/GPU:1"):
                on_1 = gp.raw_ops.DeviceTestWhere()
            with gp.device("/GPU:0"):
                on_0 = gp.raw_ops.DeviceTestWhere()
        with gp.Session(graph=g) as sess:
            assert [v.tolist() for v in sess.run([on_1, on_0])] == [[1, 1], [0, 0]]
    assert simulated_gpu.current_device() == 0


# ----------------------------------------------------------------------------- eager

def test_eager_runs_on_the_gpu_and_variables_stay_there(sim_gpu):
    from graphops.runtime import eager
    from graphops.registry.op_registry import get_op_def

    x = np.arange(4, dtype=np.float32)
    (y,) = eager.execute(get_op_def("Mul"), [x, np.float32(2)], {"T": gp.float32})
    assert type(y) is SimArray and y.get().tolist() == [0.0, 2.0, 4.0, 6.0]
    (handle,) = eager.execute(get_op_def("VarHandleOp"), [],
                              {"dtype": gp.float32, "shape": gp.TensorShape([4]),
                               "container": "", "shared_name": "eager_gpu_var",
                               "debug_name": "", "allowed_devices": []})
    assert "GPU" in handle.item().device
    eager.execute(get_op_def("AssignVariableOp"), [handle, y],
                  {"dtype": gp.float32, "validate_shape": False})
    (read,) = eager.execute(get_op_def("ReadVariableOp"), [handle], {"dtype": gp.float32})
    assert type(read) is SimArray and read.get().tolist() == [0.0, 2.0, 4.0, 6.0]


# ------------------------------------------------------------------ discovery, no GPU

@pytest.mark.parametrize("failure", ["import", "driver", "no devices"])
def test_cupy_problems_mean_no_gpu(monkeypatch, failure):
    fake = types.ModuleType("cupy")
    runtime = types.SimpleNamespace()
    if failure == "driver":
        def count():
            raise RuntimeError("cudaErrorInsufficientDriver: CUDA driver version is "
                               "insufficient for CUDA runtime version")
        runtime.getDeviceCount = count
    else:
        runtime.getDeviceCount = lambda: 0
    fake.cuda = types.SimpleNamespace(runtime=runtime)
    monkeypatch.setitem(sys.modules, "cupy", None if failure == "import" else fake)
    assert devices._discover_gpu() is None


def test_discovered_gpu_type(monkeypatch):
    fake = types.ModuleType("cupy")
    fake.cuda = types.SimpleNamespace(runtime=types.SimpleNamespace(getDeviceCount=lambda: 2),
                                      Device=simulated_gpu._activate)
    fake.ndarray = SimArray
    fake.asnumpy = SimArray.get
    monkeypatch.setitem(sys.modules, "cupy", fake)
    gpu = devices._discover_gpu()
    assert (gpu.name, gpu.count, gpu.xp, gpu.is_host) == ("GPU", 2, fake, False)
    assert gpu.preference > devices.CPU.preference
    assert gpu.owns(sim_xp.zeros(1)) and not gpu.owns(np.zeros(1))
    assert gpu.activate is simulated_gpu._activate     # kernels run with their GPU current


# ------------------------------------------------------------------- a whole CNN training step

def _cnn_losses(device, steps=3):
    """Losses of a small NCHW conv + depthwise + dense net trained with Adam on `device`."""
    rng = np.random.default_rng(7)
    images = rng.normal(size=(4, 3, 10, 10)).astype(np.float32)
    labels = np.array([0, 1, 2, 1], np.int64)
    g = gp.Graph()
    with g.as_default(), gp.device(device):
        x = gp.placeholder(gp.float32, [None, 3, 10, 10], name="x")
        y = gp.placeholder(gp.int64, [None], name="y")
        w1 = gp.Variable(rng.normal(size=(3, 3, 3, 8)).astype(np.float32) * 0.3, name="w1")
        w2 = gp.Variable(rng.normal(size=(3, 3, 8, 2)).astype(np.float32) * 0.3, name="w2")
        w3 = gp.Variable(rng.normal(size=(16 * 5 * 5, 3)).astype(np.float32) * 0.1, name="w3")
        h = gp.nn.relu(gp.nn.conv2d(x, w1, strides=1, padding="SAME", data_format="NCHW",
                                    dilations=[1, 1, 1, 1]))
        h = gp.nn.relu(gp.nn.depthwise_conv2d_native(h, w2, strides=[1, 1, 2, 2],
                                                     padding=[[0, 0], [0, 0], [1, 0], [1, 0]],
                                                     data_format="NCHW"))
        logits = gp.raw_ops.MatMul(a=gp.raw_ops.Reshape(tensor=h, shape=np.int32([-1, 400])),
                                   b=w3)
        loss = gp.reduce_mean(gp.nn.sparse_softmax_cross_entropy_with_logits(labels=y,
                                                                              logits=logits))
        train = gp.train.AdamOptimizer(0.01).minimize(loss)
        init = gp.global_variables_initializer()
    with gp.Session(graph=g, log_device_placement=True) as sess:
        sess.run(init)
        return [sess.run([loss, train], {x: images, y: labels})[0] for _ in range(steps)]


def test_a_cnn_trains_on_the_gpu_as_on_the_cpu(gpu, capsys):
    """Forward, every conv gradient, the loss and Adam all run on the GPU, and give what the
    CPU gives."""
    on_gpu = _cnn_losses("/GPU:0")
    where = placed(capsys)
    off_gpu = sorted(name for name, device in where.items() if device != "GPU")
    assert off_gpu == [], off_gpu
    assert any("Conv2DBackpropFilter" in name for name in where)
    assert any("DepthwiseConv2dNativeBackpropInput" in name for name in where)
    on_cpu = _cnn_losses("/CPU:0")
    np.testing.assert_allclose(on_gpu, on_cpu, rtol=1e-5)
    assert on_gpu[-1] < on_gpu[0]


def test_scope_api_pins_a_conv_to_the_gpu(gpu, capsys):
    root = gp.Scope.new_root_scope()
    on_gpu = root.with_device("/gpu:0")
    x = gp.ops.Const(on_gpu, np.ones((1, 4, 4, 2), np.float32))
    w = gp.ops.Const(on_gpu, np.ones((2, 2, 2, 3), np.float32))
    y = gp.ops.Conv2D(on_gpu.with_op_name("conv"), x, w, [1, 1, 1, 1], "VALID")
    out, = gp.ClientSession(root, log_device_placement=True).run([y.output])
    assert type(out) is np.ndarray and out.shape == (1, 3, 3, 3) and (out == 8.0).all()
    assert placed(capsys)["conv"] == "GPU"


def test_an_eager_gpu_result_becomes_a_graph_constant(sim_gpu):
    result = gp.raw_ops.AddV2(x=np.ones(3, np.float32), y=np.float32(1))
    assert type(result) is SimArray
    g = gp.Graph()
    with g.as_default():
        doubled = gp.constant(result) * 2.0
    with gp.Session(graph=g) as sess:
        assert sess.run(doubled).tolist() == [4.0, 4.0, 4.0]


def test_discovered_gpu_moves_arrays_between_gpus_through_the_host(monkeypatch):
    """cupy.asarray keeps another GPU's array where it is; to_device must really move it."""
    current = [0]

    class FakeCupyArray:
        def __init__(self, value):
            self.value, self.device = np.array(value), types.SimpleNamespace(id=current[0])

    class Device:
        def __init__(self, index):
            self.index = index

        def __enter__(self):
            self.previous, current[0] = current[0], self.index

        def __exit__(self, *exc):
            current[0] = self.previous

    fake = types.ModuleType("cupy")
    fake.ndarray = FakeCupyArray
    fake.asnumpy = lambda a: a.value.copy()
    fake.asarray = lambda a: a if isinstance(a, FakeCupyArray) else FakeCupyArray(a)
    fake.cuda = types.SimpleNamespace(runtime=types.SimpleNamespace(getDeviceCount=lambda: 2),
                                      Device=Device)
    monkeypatch.setitem(sys.modules, "cupy", fake)
    gpu = devices._discover_gpu()
    on_0 = gpu.to_device(np.arange(3), 0)
    assert on_0.device.id == 0 and gpu.to_device(on_0, 0) is on_0     # same GPU: no copy
    on_1 = gpu.to_device(on_0, 1)
    assert on_1.device.id == 1 and on_1.value.tolist() == [0, 1, 2]


@pytest.mark.parametrize("how", ["keyword", "config"])
def test_fetches_may_stay_on_the_device(sim_gpu, how):
    g = gp.Graph()
    with g.as_default():
        x = gp.placeholder(gp.float32, [2], name="x")
        with gp.device("/GPU:0"):
            y = gp.raw_ops.Mul(x=x, y=2.0)
            shape = gp.raw_ops.Shape(input=y)             # host memory even on the GPU
            c = gp.constant([1.0, 2.0])
        with gp.device("/CPU:0"):
            z = gp.raw_ops.Neg(x=x)
    kwargs = ({"fetch_device_arrays": True} if how == "keyword"
              else {"config": {"fetch_device_arrays": True}})
    with gp.Session(graph=g, **kwargs) as sess:
        sim_gpu.reset()
        out_y, out_shape, out_z, out_c = sess.run([y, shape, z, c], {x: [1.0, 2.0]})
        assert sim_gpu.to_host == 0
        assert type(out_y) is SimArray and out_y.get().tolist() == [2.0, 4.0]
        assert type(out_shape) is np.ndarray and type(out_z) is np.ndarray
        out_c[0] = 9.0                                    # the caller's copy, not the constant
        assert sess.run(c).get().tolist() == [1.0, 2.0]
        run = sess.make_callable(y, [x])
        assert type(run([3.0, 4.0])) is SimArray
