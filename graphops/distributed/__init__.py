"""graphops.distributed: TF1's distributed master/worker model on Dask distributed.

    cluster = gp.train.ClusterSpec({"ps": ["ps0"], "worker": ["w0", "w1"]})   # Dask names
    with gp.device(gp.train.replica_device_setter(cluster=cluster)):
        ...                                             # variables on /job:ps/task:0
    sess = gp.Session(target=dask_client, cluster=cluster)   # or "dask://host:port"

Importing this package imports no Dask: it installs `ClusterSpec` and
`replica_device_setter` into `gp.train` and lets `gp.Session(target=...)` open a
DistributedSession (session.py, which needs `pip install graphops[distributed]`).
"""

from graphops.training import train
from graphops.client.session import add_remote_target
from graphops.distributed.cluster_spec import ClusterSpec
from graphops.distributed.device_setter import replica_device_setter


def _is_dask_target(target):
    """A "dask://host:port" address or a dask.distributed Client."""
    if isinstance(target, str):
        return target.startswith("dask://")
    return type(target).__module__.split(".")[0] == "distributed"


def _distributed_session_class():
    try:
        from graphops.distributed.session import DistributedSession
    except ImportError as e:
        raise ImportError(f"A Dask target needs dask.distributed ({e}): "
                          "pip install graphops[distributed]") from None
    return DistributedSession


add_remote_target(_is_dask_target, _distributed_session_class)
train.ClusterSpec = ClusterSpec
train.replica_device_setter = replica_device_setter

__all__ = ["ClusterSpec", "replica_device_setter"]
