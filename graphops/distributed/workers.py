"""Which Dask worker runs each task: ClusterSpec entries matched to the client's workers."""

from graphops.distributed.cluster_spec import ClusterSpec
from graphops.registry.errors import UnavailableError


def worker_names(client):
    """{address: name} of the workers the scheduler knows now: asked of the scheduler
    directly, since `client.scheduler_info()` returns a cache that the client's periodic
    refresh may have just replaced with one listing no workers."""
    workers = client.sync(client.scheduler.identity, n_workers=-1)["workers"]
    return {address: str(info.get("name", address)) for address, info in workers.items()}


def _address_order(address):
    host, _, port = address.rpartition(":")
    return (host, int(port) if port.isdigit() else 0)


def default_cluster(client):
    """Job "worker" whose task i is the client's i-th worker in address order, named by
    its Dask name (a worker restarted by its nanny keeps the name, so takes its task back)."""
    names = worker_names(client)
    if not names:
        raise UnavailableError("The Dask cluster has no workers")
    return ClusterSpec({"worker": [names[a] for a in sorted(names, key=_address_order)]})


def _matches(entry, address, name):
    return entry in (address, name) or entry == address.split("://", 1)[-1]


def task_addresses(task_entries, names):
    """{task device: worker address} for every task of ``task_entries`` ({task device:
    cluster entry}, ``cluster_spec.task_devices``), given {address: name}; UnavailableError
    naming the first task no worker matches."""
    found = {}
    for task, entry in task_entries.items():
        address = next((a for a, n in names.items() if _matches(entry, a, n)), None)
        if address is None:
            raise UnavailableError(f"{task} is unavailable: no Dask worker has the address "
                                   f"or name {entry!r} (workers: {sorted(names.values())})")
        found[task] = address
    return found
