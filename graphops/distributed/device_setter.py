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


class _ReplicaDeviceChooser:
    """The device function: ps ops to the ps device (a task chosen by the strategy), the
    rest to the worker device; a device the op already has wins field by field."""

    def __init__(self, ps_tasks, ps_device, worker_device, merge_devices, ps_ops, strategy):
        self._ps_tasks = ps_tasks
        self._ps_device = ps_device
        self._worker_device = worker_device
        self._merge_devices = merge_devices
        self._ps_ops = ps_ops
        self._strategy = strategy

    def device_function(self, op):
        if not self._merge_devices and op.device:
            return op.device
        current = DeviceSpec.from_string(op.device or "")
        if self._ps_tasks and self._ps_device and op.type in self._ps_ops:
            ps_device = DeviceSpec.from_string(self._ps_device)
            if ps_device.job and (not current.job or current.job == ps_device.job):
                ps_device = ps_device.make_merged_spec(
                    DeviceSpec(task=self._strategy(op)))
            return ps_device.make_merged_spec(current).to_string()
        worker_device = DeviceSpec.from_string(self._worker_device or "")
        return worker_device.make_merged_spec(current).to_string()


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
    chooser = _ReplicaDeviceChooser(ps_tasks, ps_device, worker_device, merge_devices,
                                    list(ps_ops or STANDARD_PS_OPS), ps_strategy)
    return chooser.device_function
