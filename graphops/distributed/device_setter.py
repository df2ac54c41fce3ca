"""`replica_device_setter`: TF1's device function putting variables on ps tasks round-robin
and every other op on the worker device."""

from graphops.distributed.cluster_spec import ClusterSpec
from graphops.runtime.devices import DeviceSpec

# TF's STANDARD_PS_OPS: the ops that hold state and so belong on a ps task.
STANDARD_PS_OPS = ("Variable", "VariableV2", "AutoReloadVariable", "MutableHashTable",
                   "MutableHashTableV2", "MutableHashTableOfTensors",
                   "MutableHashTableOfTensorsV2", "MutableDenseHashTable",
                   "MutableDenseHashTableV2", "VarHandleOp")


class _RoundRobinStrategy:
    """Hands out ps task indices 0, 1, ..., n-1, 0, ... (TF's default ps_strategy)."""

    def __init__(self, num_tasks):
        self._num_tasks = num_tasks
        self._next = 0

    def __call__(self, unused_op):
        task = self._next
        self._next = (self._next + 1) % self._num_tasks
        return task


def replica_device_setter(ps_tasks=0, ps_device="/job:ps", worker_device="/job:worker",
                          merge_devices=True, cluster=None, ps_ops=None, ps_strategy=None):
    """A device function for `gp.device(...)`, as `tf.train.replica_device_setter`.

    With `cluster` (a ClusterSpec or dict), `ps_tasks` is the number of tasks of its "ps"
    job. Returns None when there are no ps tasks (TF's behaviour).
    """
    if cluster is not None:
        cluster = ClusterSpec(cluster)
        ps_job = DeviceSpec.from_string(ps_device).job if ps_device else None
        ps_tasks = cluster.num_tasks(ps_job) if ps_job in cluster.jobs else 0
    if ps_tasks == 0:
        return None
    if ps_strategy is None:
        ps_strategy = _RoundRobinStrategy(ps_tasks)
    elif not callable(ps_strategy):
        raise TypeError("ps_strategy must be callable")
    ps_ops = list(ps_ops or STANDARD_PS_OPS)
    ps_spec = DeviceSpec.from_string(ps_device) if ps_device else None
    worker_spec = DeviceSpec.from_string(worker_device or "")

    def device_function(op):
        """ps ops to the ps device (a task chosen by the strategy), the rest to the worker
        device; a device the op already has wins field by field."""
        if not merge_devices and op.device:
            return op.device
        current = DeviceSpec.from_string(op.device or "")
        if ps_spec is not None and op.type in ps_ops:
            chosen = ps_spec
            if ps_spec.job and (not current.job or current.job == ps_spec.job):
                chosen = ps_spec.make_merged_spec(DeviceSpec(task=ps_strategy(op)))
            return chosen.make_merged_spec(current).to_string()
        return worker_spec.make_merged_spec(current).to_string()

    return device_function
