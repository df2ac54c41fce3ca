"""The pure-Python half of graphops.distributed (no Dask needed): ClusterSpec,
replica_device_setter, job/task devices, and the partitioning of a graph over tasks."""

import subprocess
import sys

import numpy as np
import pytest

import graphops as gp
from graphops.distributed.partition import partition

PS0, W0, W1 = ("/job:ps/replica:0/task:0", "/job:worker/replica:0/task:0",
               "/job:worker/replica:0/task:1")
TASKS = {PS0: "ps0", W0: "w0", W1: "w1"}


def test_import_graphops_imports_no_dask():
    code = "import sys, graphops as gp; gp.train.ClusterSpec({'w': ['a']}); " \
           "print(sorted(m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, check=True).stdout
    assert out.strip() == "[]"


# ----------------------------------------------------------------------- ClusterSpec

def test_cluster_spec_as_tf_has_it():
    spec = gp.train.ClusterSpec({"worker": ["w0:2222", "w1:2222"], "ps": {1: "ps1:2222"}})
    assert spec.jobs == ["ps", "worker"]
    assert spec.num_tasks("worker") == 2 and spec.task_indices("ps") == [1]
    assert spec.task_address("worker", 1) == "w1:2222"
    assert spec.job_tasks("ps") == [None, "ps1:2222"]
    assert spec.as_dict() == {"worker": ["w0:2222", "w1:2222"], "ps": {1: "ps1:2222"}}
    assert gp.train.ClusterSpec(spec) == spec and bool(spec)
    assert not gp.train.ClusterSpec({})
    with pytest.raises(ValueError, match="No such job in cluster: 'chief'"):
        spec.num_tasks("chief")
    with pytest.raises(ValueError, match="No task with index 0 in job 'ps'"):
        spec.task_address("ps", 0)
    with pytest.raises(TypeError, match="must be a dictionary"):
        gp.train.ClusterSpec(["w0:2222"])


# ------------------------------------------------------------------ devices and setter

def test_job_task_devices_merge_as_tf_merges_them():
    g = gp.Graph()
    with g.as_default():
        with gp.device("/job:worker/task:1/device:CPU:0"):
            with gp.device("/job:ps"):
                a = gp.constant(1.0, name="a")
            with gp.device("/task:0"):
                b = gp.constant(2.0, name="b")
        scope = gp.Scope.new_root_scope().with_device("/job:ps/task:1/cpu:0")
    assert a.op.device == "/job:ps/task:1/device:CPU:0"
    assert b.op.device == "/job:worker/task:0/device:CPU:0"
    assert scope.device == "/job:ps/task:1/device:CPU:0"
    imported = gp.Graph()
    with imported.as_default():
        gp.import_graph_def(g.as_graph_def(), name="")
    assert imported.get_operation_by_name("a").device == "/job:ps/task:1/device:CPU:0"


def test_in_process_session_ignores_jobs_and_tasks():
    g = gp.Graph()
    with g.as_default():
        with gp.device("/job:ps/task:0"):
            v = gp.Variable(np.float32(3.0), name="v")
        with gp.device("/job:worker/task:1/cpu:0"):
            y = v * 2.0
        init = gp.global_variables_initializer()
    with gp.Session(graph=g) as sess:
        sess.run(init)
        assert sess.run(y) == 6.0


def test_replica_device_setter_puts_variables_on_ps_tasks_round_robin():
    cluster = gp.train.ClusterSpec({"ps": ["p0", "p1"], "worker": ["w0", "w1"]})
    g = gp.Graph()
    with g.as_default(), gp.device(gp.train.replica_device_setter(cluster=cluster)):
        variables = [gp.Variable(np.float32(i), name=f"v{i}") for i in range(3)]
        y = variables[0] + variables[1]
        with gp.device("/device:CPU:0"):
            z = y * 2.0
        with gp.device("/job:ps/task:1"):
            pinned = gp.Variable(np.float32(0), name="pinned")
    devices = [g.get_operation_by_name(f"v{i}").device for i in range(3)]
    assert devices == ["/job:ps/task:0", "/job:ps/task:1", "/job:ps/task:0"]
    assert y.op.device == "/job:worker"
    assert z.op.device == "/job:worker/device:CPU:0"
    assert g.get_operation_by_name("pinned").device == "/job:ps/task:1"
    assert gp.train.replica_device_setter(ps_tasks=0) is None
    assert gp.train.replica_device_setter(cluster={"worker": ["w0"]}) is None


# ---------------------------------------------------------------------- partitioning

def _ps_worker_graph():
    """a (ps) -> b (worker 0) -> c (ps) -> d (worker 1): a cycle between tasks."""
    g = gp.Graph()
    with g.as_default():
        x = gp.placeholder(gp.float32, [2], name="x")
        with gp.device("/job:ps/task:0"):
            a = gp.add(x, 1.0, name="a")
        with gp.device("/job:worker/task:0"):
            b = gp.multiply(a, 2.0, name="b")
        with gp.device("/job:ps/task:0"):
            c = gp.subtract(b, a, name="c")
        with gp.device("/job:worker/task:1"):
            d = gp.square(c, name="d")
    return g, x, a, b, c, d


def test_partition_cuts_cross_task_edges_into_ordered_stages():
    g, x, a, b, c, d = _ps_worker_graph()
    parts = partition(g, [x], [d], [], TASKS, W0)
    assert [s.task for s in parts.stages] == [PS0, W0, PS0, W1]
    ps_nodes = {n["name"]: n for n in parts.graph_defs[PS0]["node"]}
    # x is fed (a Placeholder standing for it), b comes from worker 0, a from stage 0
    assert ps_nodes["x/recv_0"]["op"] == "Placeholder"
    assert ps_nodes["b/recv_0"]["op"] == "Placeholder"
    assert ps_nodes["c"]["input"] == ["b/recv_0", "a"]
    assert ps_nodes["a"]["device"] == ""
    assert parts.stages[0].sources == [("feed", 0)]
    assert parts.stages[0].fetch_names == ["a:0"]
    assert parts.stages[1].sources == [("stage", 0, 0)]
    assert parts.stages[2].feed_names == ["b/recv_0:0", "a:0"]
    assert parts.stages[2].sources == [("stage", 1, 0), ("stage", 0, 0)]
    assert parts.fetch_sources == [("stage", 3, 0)]
    assert set(parts.graph_defs) == {PS0, W0, W1}


def test_partition_colocates_variable_users_and_copies_constants():
    g = gp.Graph()
    with g.as_default():
        with gp.device("/job:ps/task:0"):
            v = gp.Variable(np.ones(3, np.float32), name="v")
            k = gp.constant(np.float32(5.0), name="k")
        with gp.device("/job:worker/task:1"):
            y = gp.multiply(v.read_value(), k, name="y")
    parts = partition(g, [], [y], [], TASKS, W0)
    w1_nodes = {n["name"]: n for n in parts.graph_defs[W1]["node"]}
    assert "k" in w1_nodes and w1_nodes["k"]["op"] == "Const"      # copied, not received
    ps_ops = {n["op"] for n in parts.graph_defs[PS0]["node"]}
    assert {"VarHandleOp", "ReadVariableOp"} <= ps_ops              # the read is on ps
    handle = next(n for n in parts.graph_defs[PS0]["node"] if n["op"] == "VarHandleOp")
    assert handle["attr"]["shared_name"] == "v"


def test_partition_names_the_node_pinned_to_a_missing_task():
    g = gp.Graph()
    with g.as_default(), gp.device("/job:ps/task:3"):
        y = gp.constant(1.0, name="y") * 2.0
    with pytest.raises(gp.errors.InvalidArgumentError,
                       match=r"Cannot assign a device for operation y: .*/job:ps/task:3 but"):
        partition(g, [], [y], [], TASKS, W0)


def test_an_unsupported_target_is_unimplemented():
    with pytest.raises(gp.errors.UnimplementedError, match="target 'grpc://w0:2222' is not "
                       "supported: .*'dask://host:port'"):
        gp.Session(target="grpc://w0:2222")


def test_run_options_deadline_in_process():
    g = gp.Graph()
    with g.as_default():
        start = gp.placeholder_with_default(gp.zeros([200, 200]), [200, 200])  # not folded
        h = start
        for _ in range(1000):
            h = h + 1.0
    with gp.Session(graph=g) as sess:
        with pytest.raises(gp.errors.DeadlineExceededError, match="within 1 ms"):
            sess.run(h, options=gp.RunOptions(timeout_in_ms=1))
        result = sess.run(h, options=gp.RunOptions(timeout_in_ms=60000))
        assert result[0, 0] == 1000.0
        call = sess.make_callable(h, accept_options=True)
        with pytest.raises(gp.errors.DeadlineExceededError):
            call(options=gp.RunOptions(timeout_in_ms=1))


def test_a_task_holder_runs_each_stage_of_a_step_once():
    """Dask re-runs a task whose result was lost with a worker: a stage (which may update
    variables) is claimed once per step and refused after."""
    from graphops.distributed import task_holder
    holder = task_holder._TaskHolder()
    assert holder.claim("step1", 0) and holder.claim("step1", 1) and holder.claim("step2", 0)
    assert not holder.claim("step1", 0)
