"""ClusterSpec: TF1's map of job names to task addresses (`tf.train.ClusterSpec`).

Here an address names a Dask worker: its address ("tcp://127.0.0.1:40331", or TF's
"127.0.0.1:40331") or its name (a Dask worker's `name`, which a restarted worker keeps).
Pure Python: importing it imports no Dask.
"""

from graphops.runtime.devices import DeviceSpec


class ClusterSpec:
    """Jobs and their tasks, as `tf.train.ClusterSpec({"ps": [...], "worker": [...]})`.

    A job's tasks are a list (indices 0..n-1) or a dict {task index: address}.
    """

    def __init__(self, cluster):
        if isinstance(cluster, ClusterSpec):
            cluster = cluster.as_dict()
        if not isinstance(cluster, dict):
            raise TypeError("`cluster` must be a dictionary mapping one or more job names to "
                            "lists of network addresses, or a `ClusterSpec`")
        self._jobs = {}
        for job, tasks in cluster.items():
            if not isinstance(job, str) or not job:
                raise TypeError(f"Job names must be non-empty strings, got {job!r}")
            if isinstance(tasks, (list, tuple)):
                tasks = dict(enumerate(tasks))
            elif not isinstance(tasks, dict):
                raise TypeError(f"The tasks for job {job!r} must be a list or a dict from "
                                f"task index to address, got {type(tasks).__name__}")
            for index, address in tasks.items():
                if not isinstance(index, int) or index < 0:
                    raise TypeError(f"Task index must be a non-negative integer, got {index!r}")
                if not isinstance(address, str):
                    raise TypeError(f"Task address must be a string, got {address!r}")
            self._jobs[job] = dict(sorted(tasks.items()))

    def __bool__(self):
        return bool(self._jobs)

    def __eq__(self, other):
        return isinstance(other, ClusterSpec) and self.as_dict() == other.as_dict()

    def __repr__(self):
        return f"ClusterSpec({self.as_dict()!r})"

    @property
    def jobs(self):
        """The job names, sorted."""
        return sorted(self._jobs)

    def _tasks(self, job_name):
        try:
            return self._jobs[job_name]
        except KeyError:
            raise ValueError(f"No such job in cluster: {job_name!r}") from None

    def num_tasks(self, job_name):
        return len(self._tasks(job_name))

    def task_indices(self, job_name):
        return list(self._tasks(job_name))

    def task_address(self, job_name, task_index):
        try:
            return self._tasks(job_name)[task_index]
        except KeyError:
            raise ValueError(f"No task with index {task_index!r} in job {job_name!r}") from None

    def job_tasks(self, job_name):
        """The job's addresses by task index; None where an index has no task."""
        tasks = self._tasks(job_name)
        return [tasks.get(i) for i in range(max(tasks) + 1)] if tasks else []

    def as_dict(self):
        """{job: [addresses]} when a job's indices are 0..n-1, else {job: {index: address}}."""
        return {job: list(tasks.values()) if list(tasks) == list(range(len(tasks)))
                else dict(tasks) for job, tasks in self._jobs.items()}


def task_device(job, task):
    """The canonical device prefix of a task: "/job:ps/replica:0/task:1"."""
    return DeviceSpec(job=job, replica=0, task=task).to_string()


def task_devices(cluster):
    """{task device: address} for every task of `cluster`."""
    return {task_device(job, index): cluster.task_address(job, index)
            for job in cluster.jobs for index in cluster.task_indices(job)}
